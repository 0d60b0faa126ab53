"""Link calibration: a hccl_test output read as the binary prints it, alpha and beta fitted, the fit reproducing the
sample within 5 %; a real published output that one latency and bandwidth cannot follow is fitted and flagged."""
from __future__ import annotations

import pytest

from atc_py.common.errors import AtcError
from atc_py.platform import Figure, LinkParams, load_topology
from om_run.hccl import hccl_test as ht
from om_run.hccl.algorithms import collective_cost
from om_run.hccl.calibration import TOLERANCE, Row, calibrate, describe, load_link_calibration, parse_hccl_test_output
from tests.helpers import DATA

SYNTHETIC = DATA / "hccl" / "all_reduce_8p_synthetic.txt"
DOCS_EXAMPLE = DATA / "hccl" / "hccl_test_docs_example.txt"
A2, DUO = load_topology("atlas-800-a2"), load_topology("atlas-300i-duo")


def test_the_fit_reproduces_the_sample_within_5_percent():
    cal = calibrate(str(SYNTHETIC), A2)
    assert (cal.op, cal.ranks, cal.algorithm, len(cal.rows)) == ("all_reduce", 8, "mesh", 14)
    assert cal.max_error < TOLERANCE
    # the sample was written with 7500 ns and 24 GB/s (tests/data/hccl/README.md): the fit finds them again
    assert cal.link.latency_ns.value == pytest.approx(7500, rel=0.05)
    assert cal.link.bandwidth_gbps.value == pytest.approx(24, rel=0.03)
    assert cal.link.latency_ns.label == cal.link.bandwidth_gbps.label == "calibrated"
    assert cal.link.reduce_gbps == A2.intra_link.reduce_gbps          # held, not fitted
    assert not any(line.startswith("[WARNING]") for line in describe(cal))


def test_load_link_calibration_gives_link_params_a_topology_takes():
    link = load_link_calibration(str(SYNTHETIC))
    assert isinstance(link, LinkParams) and link.name == "hccs-910b"
    fitted = A2.with_link_params(link)
    ours = collective_cost("all_reduce", 1 << 26, range(8), fitted).ns
    assert ours / 1e3 == pytest.approx(826.32, rel=TOLERANCE)       # the sample's 64 MB row


def test_the_published_docs_example_is_read_fitted_and_flagged():
    out = parse_hccl_test_output(DOCS_EXAMPLE.read_text())
    assert (out.op, out.ranks, len(out.rows)) == ("all_reduce", 8, 14)       # its header says avg_time(us)
    assert out.rows[0] == Row(8192, 764.55, 0.00998, "success")
    cal = calibrate(str(DOCS_EXAMPLE), A2)
    assert cal.max_error > TOLERANCE
    assert any(line.startswith("[WARNING]") for line in describe(cal))


def test_a_ring_link_is_fitted_on_pcie(tmp_path):
    link = DUO.intra_link.replace(latency_ns=Figure(20000.0, "assumed", "t"),
                                  bandwidth_gbps=Figure(12.0, "assumed", "t"))
    truth = DUO.with_link_params(link)
    lines = ["mpirun -n 2 ./bin/reduce_scatter_test -b 64K -e 16M -f 4 -p 2", ht.header()]
    for size in ht.sweep("reduce_scatter", 2, 64 << 10, 16 << 20, 4.0, None).sizes:
        us = collective_cost("reduce_scatter", size, range(2), truth).ns / 1e3
        lines.append(ht.row(size, us, ht.alg_bandwidth(size, us), "success"))
    path = tmp_path / "rs.txt"
    path.write_text("\n".join(lines))
    cal = calibrate(str(path), DUO)
    assert cal.algorithm == "ring" and cal.max_error < 1e-3
    assert cal.link.bandwidth_gbps.value == pytest.approx(12.0, rel=1e-3)


def test_op_and_ranks_from_the_caller_when_the_file_has_no_command_line(tmp_path):
    rows = [line for line in SYNTHETIC.read_text().splitlines() if not line.startswith("#")]
    path = tmp_path / "bare.txt"
    path.write_text("\n".join(rows))
    with pytest.raises(AtcError, match="command line"):
        calibrate(str(path), A2)
    assert calibrate(str(path), A2, op="all_reduce_test", ranks=8).max_error < TOLERANCE


@pytest.mark.parametrize("text,phrase", [
    ("no table here\n", "0 hccl_test row(s)"),
    ("mpirun -n 8 ./bin/all_reduce_test -p 8\n8192 | 20.00 | 0.4 | success\n", "1 hccl_test row(s)"),
    ("mpirun -n 16 ./bin/all_reduce_test -p 8\n8192 | 20.00 | 0.4 | success\n16384 | 21.00 | 0.8 | success\n",
     "one atlas-800-a2 server"),
    ("mpirun -n 8 ./bin/all_reduce_test -p 8\n8192 | 30.00 | 0.4 | success\n1048576 | 20.00 | 50 | success\n",
     "do not grow"),
])
def test_bad_calibration_files(tmp_path, text, phrase):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(AtcError) as e:
        calibrate(str(path), A2)
    assert e.value.code == "E10001" and "--link-calibration" in str(e.value) and phrase in str(e.value)
