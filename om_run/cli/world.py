"""`om-run MODEL.om --world-size N` / `--rank-table FILE`: the model on every rank of a machine of simulated
devices (the same .om on each, as HCCL's launchers start one process per device), joined by its collectives.
Each rank's inputs are --input's (a `{rank}` in the paths names each rank's own files) or random with seed + rank;
its outputs go to <--output>/rank_<r>/; the collectives print as they ran."""
from __future__ import annotations

import json
import os

import click
import numpy as np

from atc_py.common.atomic_write import make_output_dir, write_atomic, write_in_folder
from atc_py.common.errors import AtcError
from atc_py.platform.topology import load_topology, topology_for_soc

from ..hccl.calibration import load_link_calibration
from ..hccl.rank_table import dense_placement, parse_rank_table
from ..run.msame_inputs import input_batches, input_shapes
from ..run.options import RunOptions, parse_inputs
from ..run.output_files import write_outputs
from ..run.world_run import link_cost, run_world, world_simulations
from ..sim.execute import check_inputs
from ..sim.report import summary_json, write_profile

RANK_TABLE_ENV = "RANK_TABLE_FILE"     # HCCL's variable naming the rank table


def _bad(flag: str, value, reason: str) -> AtcError:
    return AtcError("E10001", value=str(value), parameter=flag, reason=reason)


def machine(opts: RunOptions, soc_version: str):
    """(topology, rank placement) of the run: --topology or the SoC's product, the rank table or N ranks filling
    its servers in order; every size checked against the product."""
    if opts.topology:
        topo = load_topology(opts.topology)
    else:
        topo = topology_for_soc(soc_version)
    if topo.soc_version.rstrip("0123456789") != soc_version.rstrip("0123456789"):
        raise _bad("--topology", topo.name, f"its devices are {topo.soc_version}; the model was built for "
                                            f"{soc_version}")
    if opts.link_calibration:
        topo = topo.with_link_params(load_link_calibration(opts.link_calibration, topo))
    table_path = opts.rank_table or os.environ.get(RANK_TABLE_ENV) or None
    if table_path:
        placement = parse_rank_table(table_path, topo)
        if opts.world_size not in (None, placement.size):
            raise _bad("--world-size", opts.world_size, f"the rank table {table_path} has {placement.size} ranks")
        return topo, placement
    n = opts.world_size or 1
    if n > topo.chips_per_server:
        raise _bad("--world-size", n, f"{topo.product} ({topo.name}) has {topo.chips_per_server} devices; ranks on "
                                      "several servers are placed by a rank table (--rank-table)")
    return topo, dense_placement(n, topo)


def _rank_inputs(opts: RunOptions, model, rank: int):
    """Rank r's arrays: --input with {rank} replaced, or the same files, or random with seed + rank."""
    files = opts.inputs
    if opts.input_template and "{rank}" in opts.input_template:
        files = parse_inputs(opts.input_template.replace("{rank}", str(rank)))
    if not opts.compute and files is None:
        return None
    batches = list(input_batches(model, files, opts.seed + rank, {}, "random"))
    if len(batches) != 1:
        raise AtcError("E30002", reason="--world-size runs one execution per rank: give one file per input")
    arrays = batches[0].arrays
    if arrays is not None:
        check_inputs(model, arrays)
    return arrays


def write_reports(opts: RunOptions, model, res) -> None:
    """--summary-json: one summary per rank and the collectives; --profile: each rank's op_summary.csv and trace
    under <dir>/rank_<r>/ (as a profile is collected per device)."""
    if opts.summary_path:
        doc = {"world_size": len(res.stats), "e2e_us": res.e2e_ns / 1000, "collectives": res.collectives,
               "ranks": [summary_json([st], model.name, model.soc_version) for st in res.stats]}
        write_atomic(opts.summary_path, (json.dumps(doc, indent=1, default=str) + "\n").encode())
        click.echo(f"[INFO] wrote {opts.summary_path}")
    if opts.profile_dir:
        for r, st in enumerate(res.stats):
            folder = make_output_dir(os.path.join(opts.profile_dir, f"rank_{r}"), "--profile")
            for p in write_profile(folder, st, model.name, write_in_folder):
                click.echo(f"[INFO] wrote {p}")


def run_world_model(opts: RunOptions, model) -> None:
    for flag, on in (("--generate", opts.generate is not None), ("--dump / --acl_json", opts.dump is not None),
                     ("--expected", bool(opts.expected)), ("ais_bench's --device list", len(opts.devices) > 1),
                     ("--check-overflow", bool(opts.check_overflow)), ("--dymShape / gears", bool(opts.dym_shape)
                                                                       or opts.gear is not None)):
        if on:
            raise AtcError("E30002", reason=f"{flag} runs on one device: not with --world-size / --rank-table")
    topo, placement = machine(opts, model.soc_version)
    n = placement.size
    click.echo(f"[INFO] world of {n} rank(s) on {topo.product} ({topo.name}): "
               f"{topo.intra_link.name} {topo.intra_link.bandwidth_gbps.value:g} GB/s, "
               f"{topo.intra_link.latency_ns.value:g} ns a step")
    if not opts.compute and input_shapes(model, {}) is None:
        raise AtcError("E30002", reason="the model has dynamic inputs: give them with --input to run it")
    inputs = [_rank_inputs(opts, model, r) for r in range(n)]
    timing_only = any(a is None for a in inputs)
    sims = world_simulations([model] * n, opts.profile, not timing_only, allow_hazards=opts.allow_hazards,
                             max_loop_iterations=opts.max_loop_iterations, max_tasks=opts.max_tasks)
    cost = link_cost(topo, placement)
    res = None
    for _ in range(opts.loop):
        res = run_world(sims, cost, None if timing_only else inputs)
    for row in res.collectives:
        click.echo(f"[INFO] collective {row['op_type']} '{row['op']}' ranks {row['ranks']}: {row['bytes']} B "
                   f"{row['dtype']}, arrivals {min(row['arrive'].values()) / 1000:.3f}.."
                   f"{max(row['arrive'].values()) / 1000:.3f} us, runs {row['start'] / 1000:.3f} -> "
                   f"{row['end'] / 1000:.3f} us")
    for r, st in enumerate(res.stats):
        click.echo(f"[INFO] rank {r}: end-to-end {st.e2e_ns / 1000:.3f} us, device {st.device_ns / 1000:.3f} us")
    click.echo(f"[INFO] world: end-to-end {res.e2e_ns / 1000:.3f} us (the slowest rank)")
    write_reports(opts, model, res)
    if res.outputs[0] is None:
        return
    for r, outs in enumerate(res.outputs):
        for io, arr in zip(model.outputs, outs):
            a = arr.astype(np.float64) if arr.size else np.zeros(1)
            click.echo(f"[INFO] rank {r} output {io.name}: {io.desc.dtype}[{','.join(map(str, arr.shape))}] "
                       f"min {a.min():.6g} max {a.max():.6g} mean {a.mean():.6g}")
        if opts.output_dir:
            for p in write_outputs(outs, os.path.join(opts.output_dir, f"rank_{r}"), opts.outfmt, "output"):
                click.echo(f"[INFO] wrote {p}")
