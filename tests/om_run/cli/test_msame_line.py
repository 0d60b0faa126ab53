"""`python -m om_run.msame`: msame's line with `./msame` replaced, run with msame's conventions — a new
--output/<YYYYMD_h_m_s_us>/ folder (printed), BIN files named <.om name>_output_<k> (batch mode: <input file name up
to its last dot>_output_<k>), TXT as msame prints numbers, one --outputSize per output, its timing lines only, its
flag checks as E30002."""
import datetime
import re

import numpy as np
import pytest

from tests.helpers import MODELS, compile_om

STAMP = re.compile(r"(\d{4})(\d{1,2})(\d{1,2})_(\d{1,2})_(\d{1,2})_(\d{1,2})_\d{1,6}")


@pytest.fixture(scope="module")
def cnn(tmp_path_factory):
    d = tmp_path_factory.mktemp("cnn")
    (d / "cnn.om").write_bytes(compile_om(MODELS / "small_cnn.onnx"))
    (d / "inputs").mkdir()
    for k in range(2):
        np.random.default_rng(k).standard_normal((1, 3, 32, 32)).astype(np.float32).tofile(d / "inputs" / f"a.{k}.bin")
    return d


def _stamp_time(name: str) -> datetime.datetime:
    """msame's folder name read back; its month and day are not zero-padded, so 2024111 could be Jan 11 or Nov 1:
    the reading that is a date of today or yesterday is the one."""
    m = STAMP.fullmatch(name)
    assert m, name
    year, rest = m.group(1), name[4:name.index("_")]
    hms = [int(m.group(k)) for k in (4, 5, 6)]
    for cut in range(1, len(rest)):
        try:
            when = datetime.datetime(int(year), int(rest[:cut]), int(rest[cut:]), *hms)
        except ValueError:
            continue
        if abs((datetime.datetime.now() - when).total_seconds()) < 86400:
            return when
    raise AssertionError(name)


def test_outputs_go_to_msames_timestamp_folder_named_after_the_om(tool_line, om_run, cnn, tmp_path):
    out = tmp_path / "out"
    before = datetime.datetime.now().replace(microsecond=0)
    code, stdout, err = tool_line("msame", "--model", str(cnn / "cnn.om"), "--input", str(cnn / "inputs" / "a.0.bin"),
                                  "--output", str(out), "--loop", "2")
    after = datetime.datetime.now()
    assert code == 0, stdout + err
    (folder,) = list(out.iterdir())
    assert before <= _stamp_time(folder.name) <= after
    assert str(folder) in stdout.splitlines()                       # msame prints the folder it made
    assert [p.name for p in folder.iterdir()] == ["cnn_output_0.bin"]     # the .om's name, BIN by default
    assert "Inference average time without first time" in stdout and "Performance Summary" not in stdout
    code, _, _ = om_run("--model", str(cnn / "cnn.om"), "--input", str(cnn / "inputs" / "a.0.bin"), "--output",
                        str(tmp_path / "ref"))
    np.testing.assert_array_equal(np.fromfile(folder / "cnn_output_0.bin", np.float32),
                                  np.load(tmp_path / "ref" / "small_cnn_output_0.npy").reshape(-1))


def test_batch_mode_names_and_msames_text_format(tool_line, om_run, cnn, tmp_path):
    out = tmp_path / "out"
    code, stdout, err = tool_line("msame", "--mod", str(cnn / "cnn.om"), "--input", str(cnn / "inputs"),
                                  "--output", str(out), "--outf=TXT")
    assert code == 0, stdout + err
    (folder,) = list(out.iterdir())
    assert sorted(p.name for p in folder.iterdir()) == ["a.0_output_0.txt", "a.1_output_0.txt"]
    om_run("--model", str(cnn / "cnn.om"), "--input", str(cnn / "inputs" / "a.0.bin"), "--output", str(tmp_path / "r"))
    want = np.load(tmp_path / "r" / "small_cnn_output_0.npy")       # [1, 10]: one row, C++'s 6 significant digits
    assert (folder / "a.0_output_0.txt").read_text() == "".join("%g " % v for v in want.reshape(-1).tolist()) + "\n"
    code, _, _ = tool_line("msame", "--model", str(cnn / "cnn.om"), "--output", str(tmp_path / "n"), "--outfmt", "NPY")
    assert code == 0 and [p.suffix for p in next((tmp_path / "n").iterdir()).iterdir()] == [".bin"]  # not TXT: bytes


@pytest.mark.parametrize("argv,message", [
    (("--outputSize", "40,8"), "--outputSize gives 2 sizes; the model has 1 outputs"),
    (("--loop", "101"), "not an integer in [1, 100]"),
    (("--outp", "o"), "ambiguous option: --outp could match --output, --outputSize"),
    (("--dump", "true"), "give --output"),
    (("--device", "0,1"), "not an integer in [0, 255]"),
])
def test_what_msame_refuses_is_an_e30002(tool_line, cnn, tmp_path, argv, message):
    code, stdout, err = tool_line("msame", "--model", str(cnn / "cnn.om"), *argv)
    assert code == 1 and "E30002" in err and message in err and "Traceback" not in stdout + err, err
    code, _, err = tool_line("msame", "--model", str(cnn / "cnn.bin"))
    assert code == 1 and "input model file type is not .om" in err
