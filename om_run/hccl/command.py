"""`om-run hccl-test OP [hccl_test's flags]`: hccl_test's command line and table, on the simulated machine.

OP is hccl_test's binary (all_reduce_test, all_gather_test, reduce_scatter_test, broadcast_test, alltoall_test; the
_test may be left out); the flags are the binary's (-b -e -f -i -o -d -n -w -c -r -p). Ours: --topology (a preset),
--rank-table (HCCL's RANK_TABLE_FILE: the ranks and where they are) and --link-calibration (a real hccl_test output
whose times the intra-server link is fitted to before the run). Everything is checked before the first line.
"""
from __future__ import annotations

import click

from atc_py.platform.topology import load_topology, preset_names

from . import hccl_test as ht
from .algorithms import collective_cost
from .calibration import calibrate, describe
from .op_names import REDUCING
from .rank_table import parse_rank_table

DEFAULT_TOPOLOGY = "atlas-800-a2"
REDUCTIONS = ("sum", "prod", "max", "min")


def _digits(flag: str, value: str | None, default: int) -> int:
    if value is None:
        return default
    if not value.isdigit() or len(value) > 9:
        raise ht.bad(flag, value, "must be a non-negative integer")
    return int(value)


def _factor(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        raise ht.bad("-f/--stepfactor", value, "the step factor is a number greater than 1.0") from None


@click.command(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 120})
@click.argument("op_name", metavar="OP")
@click.option("-b", "--minbytes", help="Smallest size (bytes; K, M, G suffixes).")
@click.option("-e", "--maxbytes", help="Largest size.")
@click.option("-f", "--stepfactor", help="Multiply the size by this (> 1.0) each row; wins over -i.")
@click.option("-i", "--stepbytes", help="Add this many bytes each row (default (max - min) / 10).")
@click.option("-o", "--op", "reduction", help="Reduction: sum, prod, max, min (default sum).")
@click.option("-d", "--datatype", default="fp32", show_default=True,
              help="int8 int16 int32 fp16 fp32 int64 uint64 uint8 uint16 uint32 fp64 bfp16.")
@click.option("-n", "--iters", help="Timed iterations (default 20; simulated time is the same each one).")
@click.option("-w", "--warmup_iters", "warmup", help="Warm-up iterations (default 5).")
@click.option("-c", "--check", help="1: check the results (default), 0: do not (check_result NULL).")
@click.option("-r", "--root", help="Root rank of broadcast (default 0).")
@click.option("-p", "--npus", help="NPUs (ranks) on the server (default: the topology's chips per server).")
@click.option("--topology", default=None, help="Topology preset: " + ", ".join(preset_names())
                                                 + f" (default {DEFAULT_TOPOLOGY}).")
@click.option("--rank-table", "rank_table", default=None, help="HCCL's rank table JSON: the ranks and their devices.")
@click.option("--link-calibration", "calibration", default=None,
              help="A real hccl_test output: fit the link's latency and bandwidth to it and use them.")
def hccl_test_main(**flags):
    """Simulated hccl_test: each size's time from the collective's cost over the topology's links, and the check
    of its numbers."""
    from ..errors import guarded
    guarded(lambda: run(flags))


def run(flags: dict) -> None:
    op = ht.binary_op(flags["op_name"])
    topology = load_topology(flags["topology"] or DEFAULT_TOPOLOGY)
    if flags["minbytes"] is None or flags["maxbytes"] is None:
        raise ht.bad("-b/--minbytes, -e/--maxbytes", "(missing)", "both are needed: the sizes to run (-b 8K -e 64M)")
    min_bytes = ht.parse_size(flags["minbytes"], "-b/--minbytes")
    max_bytes = ht.parse_size(flags["maxbytes"], "-e/--maxbytes")
    table = parse_rank_table(flags["rank_table"], topology) if flags["rank_table"] else None
    npus = _digits("-p/--npus", flags["npus"], 0)
    if table is not None:
        ranks = table.size
        if npus and npus != table.devices_per_server():
            raise ht.bad("-p/--npus", npus, f"the rank table has {table.devices_per_server()} devices per server")
    else:
        ranks = npus or topology.chips_per_server
        if not 2 <= ranks <= topology.chips_per_server:
            raise ht.bad("-p/--npus", ranks, f"one {topology.name} server has {topology.chips_per_server} chips; a "
                                             f"collective needs 2 to {topology.chips_per_server} of them")
    if flags["datatype"] in ht.NOT_SIMULATED:
        raise ht.bad("-d/--datatype", flags["datatype"], "hccl_test knows it, om-run does not simulate it")
    if flags["datatype"] not in ht.DTYPES:
        raise ht.bad("-d/--datatype", flags["datatype"], "one of " + ", ".join(ht.DTYPES))
    dtype = ht.DTYPES[flags["datatype"]]
    reduction = flags["reduction"] or "sum"
    if reduction not in REDUCTIONS:
        raise ht.bad("-o/--op", reduction, "one of " + ", ".join(REDUCTIONS))
    iters = _digits("-n/--iters", flags["iters"], 20)
    warmup = _digits("-w/--warmup_iters", flags["warmup"], 5)
    check = _digits("-c/--check", flags["check"], 1)
    if check not in (0, 1):
        raise ht.bad("-c/--check", check, "check should be 0 or 1")
    root = _digits("-r/--root", flags["root"], 0)
    if root >= ranks:
        raise ht.bad("-r/--root", root, f"the root rank must be 0..{ranks - 1}")
    stepbytes = _digits("-i/--stepbytes", flags["stepbytes"], 0) if flags["stepbytes"] is not None else None
    sw = ht.sweep(op, ranks, min_bytes, max_bytes, _factor(flags["stepfactor"]), stepbytes)
    lines = []
    if flags["calibration"]:
        cal = calibrate(flags["calibration"], topology, op, ranks if ranks <= topology.chips_per_server else None)
        lines += describe(cal)
        topology = topology.with_link_params(cal.link)
    itemsize = ht.np.dtype(dtype).itemsize
    costs = [collective_cost(op, ht.counted_bytes(op, s, itemsize, ranks), range(ranks), topology, dtype=dtype,
                             placement=table, reduction=reduction) for s in sw.sizes]
    link = topology.intra_link
    lines.append(f"[INFO] hccl-test on {topology.name} ({ranks} ranks): {op} by {costs[0].algorithm}; {link.name} "
                 f"{link.bandwidth_gbps.value:g} GB/s, {link.latency_ns.value:g} ns a step")
    lines += list(costs[0].notes)
    lines.append(ht.banner(sw, iters, warmup))
    if flags["reduction"] is not None and op not in REDUCING:
        lines.append("Warning: The -o,--op <sum/prod/min/max> option does not take effect. Check the cmd parameter.")
    lines.append(ht.header())
    for size, cost in zip(sw.sizes, costs):
        time_us = cost.ns / 1e3
        result = "NULL" if check == 0 else ("success" if ht.check(op, reduction, dtype, ranks, root, size)
                                            else "failed")
        lines.append(ht.row(size, time_us, ht.alg_bandwidth(cost.nbytes, time_us), result))
    click.echo("\n".join(lines))
