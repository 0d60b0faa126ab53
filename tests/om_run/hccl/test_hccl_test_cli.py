"""`om-run hccl-test` as a user runs it: hccl_test's flags, its table (columns, sizes, times from the collective's
cost, bandwidth = bytes / time), the check, a rank table and a link calibration; each bad flag one error and no
table."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from click.testing import CliRunner

from atc_py.ops import collective_math
from atc_py.platform import load_topology
from om_run.hccl.algorithms import collective_cost
from om_run.hccl.command import hccl_test_main
from tests.helpers import DATA, ROOT

HEADER = "data_size(Bytes): | aveg_time(us): | alg_bandwidth(GB/s): | check_result:"
ROW = re.compile(r"^(\d+) +\| (\d+\.\d\d) +\| (\d+\.\d{5}) +\| (success|failed|NULL)$")


def run(*args):
    return CliRunner().invoke(hccl_test_main, list(map(str, args)))


def rows(output: str):
    return [ROW.match(line).groups() for line in output.splitlines() if ROW.match(line)]


def test_the_documented_command_gives_hccl_tests_table():
    res = run("all_reduce_test", "-b", "8K", "-e", "64M", "-f", "2", "-d", "fp32", "-o", "sum", "-p", "8")
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert "the minbytes is 8192, maxbytes is 67108864, iters is 20, warmup_iters is 5" in lines
    assert lines[lines.index(HEADER) - 1].startswith("the minbytes")
    table = rows(res.output)
    assert [int(r[0]) for r in table] == [8192 << k for k in range(14)]
    a2 = load_topology("atlas-800-a2")
    for size, us, bw, check in table:
        cost = collective_cost("all_reduce", int(size), range(8), a2)
        assert float(us) == pytest.approx(cost.ns / 1e3, abs=0.005)
        assert float(bw) == pytest.approx(int(size) / (cost.ns / 1e3) * 1e-3, rel=1e-3)
        assert check == "success"
    first = next(line for line in lines if ROW.match(line))
    assert re.match(r"^8192 {14}\| \d+\.\d\d +\| \d+\.\d{5} +\| success$", first)   # %-17llu | %-14.2f | %-20.5f


def test_the_subcommand_is_registered_in_om_run():
    p = subprocess.run([sys.executable, "-m", "om_run", "hccl-test", "broadcast", "-b", "1M", "-e", "1M", "-p", "4",
                        "-r", "3"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert p.returncode == 0, p.stderr
    assert len(rows(p.stdout)) == 1 and HEADER in p.stdout


def test_check_0_prints_null_and_a_wrong_result_fails(monkeypatch):
    assert {r[3] for r in rows(run("all_reduce", "-b", "1K", "-e", "4K", "-f", "2", "-c", "0").output)} == {"NULL"}

    def off_by_one(xs, reduction="sum"):
        return [x + 1 for x in collective_math.reduce(xs, reduction)[None].repeat(len(xs), 0)]
    monkeypatch.setattr(collective_math, "all_reduce", off_by_one)
    res = run("all_reduce", "-b", "1K", "-e", "4K", "-f", "2", "-d", "int32")
    assert {r[3] for r in rows(res.output)} == {"failed"}


@pytest.mark.parametrize("binary", ["all_gather_test", "reduce_scatter_test", "alltoall_test", "broadcast"])
@pytest.mark.parametrize("dtype", ["fp16", "bfp16", "int8", "uint64"])
def test_every_collective_and_dtype_checks(binary, dtype):
    res = run(binary, "-b", "4K", "-e", "16K", "-f", "2", "-d", dtype, "-p", "3")
    assert res.exit_code == 0, res.output
    assert [r[3] for r in rows(res.output)] == ["success"] * 3


def test_step_bytes_and_the_default_step():
    assert len(rows(run("all_reduce", "-b", "1000", "-e", "2000").output)) == 11       # (max - min) / 10
    assert [r[0] for r in rows(run("all_reduce", "-b", "1000", "-e", "2000", "-i", "400").output)] == \
        ["1000", "1400", "1800"]
    assert len(rows(run("all_reduce", "-b", "8K", "-e", "8K").output)) == 1


def test_split_collectives_round_sizes_to_the_ranks():
    res = run("reduce_scatter_test", "-b", "1000", "-e", "1000", "-p", "3")
    assert "the minbytes is 999, maxbytes is 999" in res.output and rows(res.output)[0][0] == "999"


def test_the_reduction_flag_on_a_gather_warns_as_hccl_test_does():
    res = run("all_gather", "-b", "8K", "-e", "8K", "-o", "max")
    assert "Warning: The -o,--op <sum/prod/min/max> option does not take effect." in res.output


def test_pcie_presets_run_ring_but_a_310p3_all_reduce_the_sdma_engine_reduces_runs_doubling():
    # HCCL on a Duo card: two ranks always by Doubling when the SDMA engine can reduce (sum), else Ring; 4 ranks
    # of a 1 MB buffer: Ring (Doubling only up to 256 KB)
    duo = ("--topology", "atlas-300i-duo")
    res = run("all_reduce", "-b", "1M", "-e", "1M", *duo, "-p", "2")
    assert res.exit_code == 0 and "by doubling" in res.output
    assert "by ring" in run("all_reduce", "-b", "1M", "-e", "1M", *duo, "-p", "2", "-o", "max").output
    assert "by ring" in run("all_reduce", "-b", "1M", "-e", "1M", *duo, "-p", "4").output
    assert "by doubling" in run("all_reduce", "-b", "64K", "-e", "64K", *duo, "-p", "4").output


def test_a_rank_table_gives_the_ranks(tmp_path):
    table = {"status": "completed", "version": "1.0", "server_count": "2", "server_list": [
        {"server_id": f"node_{s}", "device": [{"device_id": str(d), "device_ip": f"10.0.{s}.{d + 1}",
                                               "rank_id": str(8 * s + d)} for d in range(8)]} for s in range(2)]}
    path = tmp_path / "rank_table.json"
    path.write_text(json.dumps(table))
    res = run("all_reduce", "-b", "1M", "-e", "1M", "--rank-table", path)
    assert res.exit_code == 0, res.output
    assert "(16 ranks)" in res.output and "level1" in res.output


def test_a_link_calibration_is_printed_and_used():
    res = run("all_reduce_test", "-b", "64M", "-e", "64M", "-p", "8", "--link-calibration",
              DATA / "hccl" / "all_reduce_8p_synthetic.txt")
    assert res.exit_code == 0, res.output
    assert "latency_ns     = " in res.output and "bandwidth_gbps = " in res.output
    assert float(rows(res.output)[0][1]) == pytest.approx(826.32, rel=0.05)   # the sample's own 64 MB time


BAD_FLAGS = {
    "size suffix": (["all_reduce", "-b", "8X", "-e", "64M"], "-b/--minbytes"),
    "max below min": (["all_reduce", "-b", "64M", "-e", "8K"], "maxbytes < minbytes"),
    "too many npus": (["all_reduce", "-b", "8K", "-e", "8K", "-p", "9"], "-p/--npus"),
    "one npu": (["all_reduce", "-b", "8K", "-e", "8K", "-p", "1"], "-p/--npus"),
    "factor": (["all_reduce", "-b", "8K", "-e", "64M", "-f", "1"], "greater than 1.0"),
    "dtype not simulated": (["all_reduce", "-b", "8K", "-e", "8K", "-d", "int128"], "does not simulate"),
    "dtype": (["all_reduce", "-b", "8K", "-e", "8K", "-d", "fp8"], "-d/--datatype"),
    "reduction": (["all_reduce", "-b", "8K", "-e", "8K", "-o", "avg"], "-o/--op"),
    "root": (["broadcast", "-b", "8K", "-e", "8K", "-p", "4", "-r", "4"], "-r/--root"),
    "iters": (["all_reduce", "-b", "8K", "-e", "8K", "-n", "many"], "-n/--iters"),
    "check": (["all_reduce", "-b", "8K", "-e", "8K", "-c", "2"], "0 or 1"),
    "no sizes": (["all_reduce"], "-b/--minbytes"),
    "binary": (["reduce_test", "-b", "8K", "-e", "8K"], "hccl_test's binaries"),
    "topology": (["all_reduce", "-b", "8K", "-e", "8K", "--topology", "dgx"], "--topology"),
    "duo npus": (["all_reduce", "-b", "8K", "-e", "8K", "--topology", "atlas-300i-pro", "-p", "16"], "-p/--npus"),
}


@pytest.mark.parametrize("case", sorted(BAD_FLAGS))
def test_bad_flags_are_one_error_and_no_table(case):
    args, phrase = BAD_FLAGS[case]
    res = run(*args)
    assert res.exit_code == 1
    assert "[ERROR] E10001" in res.output and phrase in res.output, res.output
    assert HEADER not in res.output and "Traceback" not in res.output
