"""Link calibration: a real hccl_test output in, the link's alpha and beta fitted to it out.

The output is read as the binary prints it (hccl_test's print_execution_time: "data_size(Bytes): | aveg_time(us): |
alg_bandwidth(GB/s): | check_result:" then one "size | time | bandwidth | result" row per size), with whatever
surrounds it (mpirun's lines, "the minbytes is ..." banner, warnings). hccl_test prints neither the collective nor
the rank count, so they come from the command line pasted above the table (./bin/all_reduce_test ... -p 8, mpirun
-n 8), or from the caller.

Fitted: the intra-server link's latency_ns (alpha, per step) and bandwidth_gbps (1/beta), by least squares on the
relative error of each row's time against the alpha-beta cost of the algorithm the topology uses (Mesh on a full
HCCS mesh, Ring on PCIe): t = steps * alpha + link_bytes * beta + reduce_bytes * gamma. The reduction's rate
(gamma) stays the preset's: for one collective it moves with the bytes like beta and cannot be told apart.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from atc_py.common.errors import AtcError
from atc_py.common.userfiles import read_bytes
from atc_py.platform.topology import Figure, LinkParams, Topology, load_topology

from .algorithms import collective_cost
from .op_names import canonical_op

PARAMETER = "--link-calibration"
MAX_BYTES = 4 << 20
TOLERANCE = 0.05           # the fit should reproduce every row within 5 %
DEFAULT_TOPOLOGY = "atlas-800-a2"

_ROW = re.compile(r"^\s*(\d+)\s*\|\s*([0-9]+(?:\.[0-9]*)?)\s*\|\s*([0-9.eE+-]+)\s*\|\s*(success|failed|NULL)\s*$")
_BINARY = re.compile(r"\b([a-z_]+)_test\b")
_NPUS = re.compile(r"(?:^|\s)(?:-p|--npus)[=\s]+(\d+)\b")
_MPI_N = re.compile(r"\bmpirun\b.*?\s-(?:n|np)\s+(\d+)\b")


@dataclass(frozen=True)
class Row:
    data_size: int
    time_us: float
    bandwidth: float
    check: str


@dataclass(frozen=True)
class HcclTestOutput:
    rows: tuple[Row, ...]
    op: str | None            # from the command line, when pasted
    ranks: int | None


@dataclass(frozen=True)
class Calibration:
    link: LinkParams
    op: str
    ranks: int
    algorithm: str
    rows: tuple[Row, ...]
    model_us: tuple[float, ...]

    @property
    def errors(self) -> tuple[float, ...]:
        return tuple(m / r.time_us - 1 for m, r in zip(self.model_us, self.rows))

    @property
    def max_error(self) -> float:
        return max(abs(e) for e in self.errors)


def _fail(path: str, reason: str) -> AtcError:
    return AtcError("E10001", value=path, parameter=PARAMETER, reason=reason)


def parse_hccl_test_output(text: str) -> HcclTestOutput:
    rows, op, ranks, mpi_n = [], None, None, None
    for line in text.splitlines():
        m = _ROW.match(line)
        if m:
            rows.append(Row(int(m[1]), float(m[2]), float(m[3]), m[4]))
            continue
        if (b := _BINARY.search(line)) and op is None:
            try:
                op = canonical_op(b[1])
            except AtcError:
                pass
        if (p := _NPUS.search(line)) and ranks is None:
            ranks = int(p[1])
        if (n := _MPI_N.search(line)) and mpi_n is None:
            mpi_n = int(n[1])
    return HcclTestOutput(tuple(rows), op, mpi_n or ranks)   # mpirun -n is the rank count; -p the NPUs per node


def fit(output: HcclTestOutput, topology: Topology, op: str, ranks: int, source: str) -> Calibration:
    """Least squares of alpha and beta (relative errors) over the rows; gamma held at the preset's."""
    link = topology.intra_link
    costs = [collective_cost(op, r.data_size, range(ranks), topology) for r in output.rows]
    steps = np.array([c.steps for c in costs], dtype=float)
    moved = np.array([c.bytes_on_busiest_link for c in costs])
    reduce_ns = np.array([c.reduce_bytes for c in costs]) / link.reduce_gbps.value
    t = np.array([r.time_us * 1e3 for r in output.rows])
    a, y = np.stack([steps / t, moved / t], axis=1), (t - reduce_ns) / t
    (alpha, beta), *_ = np.linalg.lstsq(a, y, rcond=None)
    if alpha < 0:                              # no room for a latency: all of it is bandwidth
        alpha = 0.0
        beta = float(np.dot(a[:, 1], y) / np.dot(a[:, 1], a[:, 1]))
    if not beta > 0:
        raise _fail(source, "the times do not grow with the size: no bandwidth fits them")
    how = (f"fitted to {len(output.rows)} hccl_test rows of {source} ({op}, {ranks} ranks, "
           f"{costs[0].algorithm}) by least squares on relative errors")
    fitted = link.replace(latency_ns=Figure(float(alpha), "calibrated", how),
                          bandwidth_gbps=Figure(float(1 / beta), "calibrated", how))
    model = [fitted.step_ns(c.steps, c.bytes_on_busiest_link, c.reduce_bytes) / 1e3 for c in costs]
    return Calibration(fitted, op, ranks, costs[0].algorithm, output.rows, tuple(model))


def calibrate(path: str, topology: Topology | None = None, op: str | None = None,
              ranks: int | None = None) -> Calibration:
    """The fit of `path` (an hccl_test output): op and ranks from its command line, else from the arguments."""
    topology = topology or load_topology(DEFAULT_TOPOLOGY)
    text = read_bytes(path, lambda reason: _fail(path, reason), MAX_BYTES).decode("utf-8", "replace")
    out = parse_hccl_test_output(text)
    if len(out.rows) < 2 or len({r.data_size for r in out.rows}) < 2:
        raise _fail(path, f"{len(out.rows)} hccl_test row(s) found; a fit needs rows of at least two sizes "
                          "(lines 'data_size | aveg_time | alg_bandwidth | check_result')")
    op = out.op or (canonical_op(op) if op else None)
    ranks = out.ranks or ranks
    if op is None or ranks is None:
        raise _fail(path, "say which collective and how many NPUs ran: paste hccl_test's command line above the "
                          "table (mpirun -n 8 ./bin/all_reduce_test ... -p 8)")
    if op in ("send", "recv"):
        raise _fail(path, "calibrate from a collective (all_reduce_test ...), not send/recv")
    if not 2 <= ranks <= topology.chips_per_server:
        raise _fail(path, f"{ranks} ranks: calibration fits the link inside one {topology.name} server "
                          f"(2..{topology.chips_per_server} ranks)")
    if any(r.time_us <= 0 for r in out.rows):
        raise _fail(path, "a row's aveg_time is 0")
    return fit(out, topology, op, ranks, path)


def load_link_calibration(path: str, topology: Topology | None = None, op: str | None = None,
                          ranks: int | None = None) -> LinkParams:
    """The intra-server link fitted to a real hccl_test output; Topology.with_link_params(...) puts it in use."""
    return calibrate(path, topology, op, ranks).link


def describe(cal: Calibration) -> list[str]:
    """The lines om-run prints about a fit: the fitted parameters, the one held, how well it reproduces the rows."""
    link = cal.link
    lines = [f"[INFO] link calibration: {link.name} ({link.kind}) fitted to {len(cal.rows)} rows of {cal.op} on "
             f"{cal.ranks} ranks ({cal.algorithm})",
             f"[INFO]   latency_ns     = {link.latency_ns.value:.1f} (calibrated)",
             f"[INFO]   bandwidth_gbps = {link.bandwidth_gbps.value:.3f} (calibrated)",
             f"[INFO]   reduce_gbps    = {link.reduce_gbps.value:g} (held: {link.reduce_gbps.label})",
             f"[INFO]   worst row error {cal.max_error * 100:.2f} %"]
    if cal.max_error > TOLERANCE:
        worst = max(range(len(cal.rows)), key=lambda i: abs(cal.errors[i]))
        lines.append(f"[WARNING] the alpha-beta model reproduces these times only within "
                     f"{cal.max_error * 100:.1f} % (worst at {cal.rows[worst].data_size} bytes): the output has "
                     "steps or noise one latency and one bandwidth cannot follow")
    return lines

