"""The tools' command lines read as the tools read them: ais_bench's argparse (an unambiguous prefix is the flag,
`=` or the next word is the value, `-o` is --output and takes a glued value, a value may not look like an option),
msame's getopt_long (prefixes too; the next word is the value whatever it is), and what each refuses as an E30002;
om-run's own options pass when spelt in full."""
import pytest

from atc_py.common.errors import AtcError
from om_run.cli import ais_bench_line, msame_line
from om_run.cli.main import main
from om_run.cli.tool_argv import own_options, parse_line


def ais(*argv):
    return parse_line(list(argv), ais_bench_line.AIS_BENCH_FLAGS, own_options(main), "ais_bench")


def test_argparse_prefixes_and_short_options():
    p = ais("-m", "m.om", "-oout", "--output_dir", "./result/", "--lo=3", "--outf", "TXT", "-d", "0,1",
            "--infer_queue", "1", "--output_batch", "1", "--display", "true")
    assert p.values == {"--model": "m.om", "--output": "out", "--output_dirname": "./result/", "--loop": 3,
                        "--outfmt": "TXT", "--device": "0,1", "--infer_queue_count": 1, "--output_batchsize_axis": 1,
                        "--display_all_summary": True}
    assert ais("--output_dirnam", "r").values == {"--output_dirname": "r"}
    assert ais("--model=a=b.om").values == {"--model": "a=b.om"}       # the value holds everything after the first =


def test_om_runs_own_options_pass_when_spelt_in_full():
    p = ais("--model", "m.om", "--expected", "e.npz", "--no-compute", "--summary-json=s.json")
    assert p.own == ("--expected", "e.npz", "--no-compute", "--summary-json", "s.json")
    assert ais("--model", "m.om", "--threads", "3").values["--threads"] == 3   # ais_bench's own --threads wins


@pytest.mark.parametrize("argv,message", [
    (("--out", "o"), "ambiguous option: --out could match --output, --output_dirname, --outfmt, --outputSize"),
    (("--dym", "x"), "ambiguous option: --dym could match"),
    (("--bogus", "1"), "unrecognized arguments: --bogus"),
    (("m.om",), "unrecognized arguments: m.om"),
    (("--loop",), "argument --loop/-l: expected one argument"),
    (("--loop", "--model", "m.om"), "argument --loop/-l: expected one argument"),
    (("--loop", "0"), "not an integer in [1, 100000]"),
    (("--outfmt", "bin"), "invalid choice: 'bin'"),
    (("--debug", "maybe"), "Boolean value expected"),
    (("--device", "256"), "valid value range is [0, 255]"),
    (("--dymDims", "x:1,2 y"), "is not a legal string"),
])
def test_what_argparse_refuses_is_an_e30002(argv, message):
    with pytest.raises(AtcError) as e:
        ais(*argv)
    assert e.value.code == "E30002" and "ais_bench: " in str(e.value) and message in str(e.value), str(e.value)


def test_getopt_takes_prefixes_and_any_next_word():
    p = parse_line(["--mod", "m.om", "--dymS", "-x:1", "--outputS=8"], msame_line.MSAME_FLAGS, own_options(main),
                   "msame", style="getopt")
    assert p.values == {"--model": "m.om", "--dymShape": "-x:1", "--outputSize": "8"}
    with pytest.raises(AtcError, match="ambiguous option: --dym could match --dymBatch, --dymDims, --dymHW"):
        parse_line(["--dym", "1"], msame_line.MSAME_FLAGS, {}, "msame", style="getopt")
