"""An om-run run with its flags parsed: load the model, then on each device (one, or ais_bench's list) choose the
gear and inputs, simulate, print the lines of the tool whose conventions the run follows, write the outputs where
that tool writes them and compare them with the expected ones."""
from __future__ import annotations

import datetime
import json
import os
import time
from collections import Counter

import click
import numpy as np

from atc_py.common.atomic_write import make_output_dir, write_atomic, write_in_folder
from atc_py.common.errors import AtcError
from atc_py.common.progress import StageProgress
from atc_py.om.task_types import TASK_TYPE_NAMES
from atc_py.plugins import load_plugins

from ..compare.outputs import compare_outputs, default_tolerance
from ..generate.command import refuse_other_modes, run_generate
from ..load.loader import load_model
from ..load.model import DeviceModel, RootModel
from ..run.ais_bench_report import AisBenchSummary, multidevice_lines, summary_json_path
from ..run.conventions import device_folder
from ..run.gears import BUILT_WITH, read_gears, refuse_gear_flag
from ..run.io import load_expected
from ..run.msame_inputs import Batch, check_dym_shape, input_batches, input_shapes
from ..run.options import RunOptions
from ..run.output_files import PURE_INFER_STEM, stem_of, write_outputs
from ..run.simulate import simulate
from ..sim.execute import check_inputs
from ..sim.report import (
    ais_bench_lines,
    ais_bench_summary,
    console,
    msame_lines,
    overflow_lines,
    summary_json,
    write_profile,
)
from ..sim.threads import LoadProbe
from ..tasks.table import VALUE_BRANCH_KINDS


def _shape(io) -> str:
    return f"{io.desc.dtype}[{','.join(map(str, io.desc.shape))}]"


def print_model(model) -> None:
    if isinstance(model, RootModel):
        known = sum(isinstance(s, DeviceModel) for s in model.subs.values())
        click.echo(f"[INFO] model {model.name} (soc {model.soc_version}): multi-model om, {len(model.subs)} subgraphs "
                   f"({known} static on the device, {len(model.subs) - known} dynamic on the host executor)")
    click.echo(f"[INFO] model {model.name} (soc {model.soc_version}): {len(model.tasks)} device tasks on "
               f"{model.stream_num} stream(s), feature map {model.memory_size} B, weights {len(model.weights)} B")
    kinds = Counter(TASK_TYPE_NAMES.get(t.type, str(t.type)) for t in model.tasks)
    if kinds:
        click.echo("[INFO] tasks: " + ", ".join(f"{k} x{v}" for k, v in sorted(kinds.items())))
    for io in model.inputs:
        click.echo(f"[INFO] input  {io.name}: {_shape(io)}")


def compare(model, outputs, expected, rtol: float, atol: float) -> bool:
    ok = True
    for err in compare_outputs(model, outputs, expected, rtol, atol):
        if not err.shape_ok:
            click.echo(f"[ERROR] output {err.name}: shape {list(err.shape)} != expected {list(err.expected_shape)}")
            ok = False
            continue
        status = "PASS" if err.ok else f"FAIL ({err.mismatched} of {err.size} elements)"
        click.echo(f"[INFO] compare {err.name}: max abs err {err.max_abs:.3e}, "
                   f"max rel err {err.max_rel:.3e} (rtol {rtol}, atol {atol}): {status}")
        ok &= err.ok
    return ok


def _needs_values(model) -> bool:
    """A model whose control flow reads device memory: --no-compute still needs its inputs."""
    return any(t.type in VALUE_BRANCH_KINDS for t in getattr(model, "tasks", []))


def check_output_size(model, outputs, sizes: tuple[int, ...] | None, exact: bool = True) -> None:
    """--outputSize: the output buffers. msame wants one size per output; ais_bench takes the first ones in output
    order and gives the outputs without one their model size (CreateOutMemoryData). A buffer must hold its output."""
    if sizes is None:
        return
    if exact and len(sizes) != len(model.outputs):
        raise AtcError("E30002", reason=f"--outputSize gives {len(sizes)} sizes; the model has {len(model.outputs)} "
                                        "outputs")
    for io, arr, size in zip(model.outputs, outputs, sizes):
        if arr.nbytes > size:
            raise AtcError("E30004", task="output copy", reason=f"output '{io.name}' has {arr.nbytes} bytes, more "
                                                                f"than its --outputSize buffer of {size}")


def check_batchsize_axis(model, axis: int | None) -> None:
    """ais_bench --output_batchsize_axis: the axis its outputs would be split along must be one of each output's."""
    for k, io in enumerate(model.outputs if axis is not None else []):
        if axis >= len(io.desc.shape):
            raise AtcError("E30002", reason=f"--output_batchsize_axis {axis}: output {k} '{io.name}' has "
                                            f"{len(io.desc.shape)} dims (ais_bench refuses an axis the output lacks)")


def run(opts: RunOptions, probe: LoadProbe | None = None) -> None:
    """Load the model, then run it on each device of --device (one unless ais_bench's list gives several)."""
    refuse_other_modes(opts)
    if opts.generate is not None and len(opts.devices) > 1:
        raise AtcError("E30002", reason="--generate runs on one device: give one --device")
    load_plugins(opts.op_plugin)
    with StageProgress(f"loading {opts.model_path}") as progress:   # a large .om: on a terminal only
        model = load_model(opts.model_path, verify=opts.verify, progress=progress)
    if opts.several_devices:
        from .world import run_world_model
        print_model(model)
        run_world_model(opts, model)
        click.echo("[INFO] om-run finished successfully")
        return
    folder = opts.conventions.folder(opts.output_dir, opts.output_dirname, datetime.datetime.now())
    multi = len(opts.devices) > 1
    if multi:
        click.echo(f"[INFO] multidevice:{list(opts.devices)} run begin")
    results = []
    for i, device in enumerate(opts.devices):
        if multi:
            click.echo(f"[INFO] subprocess_{i} main run")
        start = time.time()
        throughput = run_on_device(opts, model, probe, device, device_folder(folder, opts.devices, i), i == 0)
        results.append((throughput, start, time.time()))
    if multi:
        for line in multidevice_lines(opts.devices, results):
            click.echo(line)
    click.echo("[INFO] om-run finished successfully")


def _batchsize(opts: RunOptions, user, arrays) -> int:
    """--batchsize, else the first input's first dim (ais_bench's get_batchsize), else 1."""
    if opts.batchsize:
        return opts.batchsize
    if arrays and getattr(arrays[0], "ndim", 0):
        return int(arrays[0].shape[0])
    shape = user.inputs[0].desc.shape if user.inputs else ()
    return int(shape[0]) if shape and shape[0] > 0 else 1


def run_on_device(opts: RunOptions, model, probe, device: int, folder: str | None, first: bool) -> float:
    """One device's run (every input); returns its ais_bench throughput."""
    conv, tool = opts.conventions, opts.tool
    click.echo(f"[INFO] open device {device} success")
    click.echo(f"[INFO] load model {opts.model_path} success")
    if first:
        print_model(model)
    gears = read_gears(model, opts.model_path)
    if gears is None:
        refuse_gear_flag(model, opts.gear)
    user = model
    gear = None
    if gears is not None:
        click.echo(f"[INFO] gears ({BUILT_WITH[gears.kind]}): {gears.listing}")
        user = gears.view(model, None)
        gear = gears.from_flags(opts.gear, check_dym_shape(opts.dym_shape, user), model)
        if conv.warn_unknown_dims_name:
            for name in gears.unknown_names(opts.gear, model):   # ais_bench's backend warns and goes on
                click.echo(f"[WARN] find no in names:{name}")
        if gear is None and opts.inputs is None:
            gear = gears.largest(model)
        user = gears.view(model, gear) if gear is not None else user
        dym = {}
    else:
        dym = check_dym_shape(opts.dym_shape, model)
    if opts.generate is not None:
        run_generate(opts, model, gears, opts.threads or (probe.idle_cores() if probe else None))
        return 0.0
    if folder is not None:
        check_batchsize_axis(user, tool.output_batchsize_axis)
        if conv.tool == "ais_bench":
            click.echo(f"[INFO] output path:{folder}")
        elif conv.tool == "msame":
            click.echo(folder)
    tol = default_tolerance(model)
    rtol, atol = (tol if opts.rtol is None else opts.rtol), (tol if opts.atol is None else opts.atol)
    pure = "bytes" if tool.random_bytes else "zero" if conv.zero_inputs else "random"
    if not opts.compute and not _needs_values(model):
        batches = [Batch(None, None)]
        shapes = input_shapes(model, dym)
    else:
        batches = input_batches(user, opts.inputs, opts.seed, dym, pure)
        shapes = None
        if opts.inputs is None:
            click.echo({"random": f"[INFO] inputs: random (seed {opts.seed})",
                        "zero": "[INFO] inputs: zeros (ais_bench's pure inference)",
                        "bytes": f"[INFO] inputs: random bytes 0..255 (seed {opts.seed})"}[pure])
    threads = opts.threads or (probe.idle_cores() if probe else None)
    if threads is not None:
        click.echo(f"[INFO] threads: {threads}" + ("" if opts.threads else " (the idle cores om-run may use)"))
    dumper = None
    if opts.dump is not None:
        from ..sim.dump import Dumper
        dumper = Dumper(opts.dump)
        names = {op.name for op in model.ops.values()} | {op.name for sub in getattr(model, "subs", {}).values()
                                                          for op in sub.ops.values()}
        dumper.start(model.name, names)
    naming = conv.file_names(opts.output_dirname is not None)
    bench = AisBenchSummary(list(tool.argv))
    bsize = None
    ok = True
    for k, batch in enumerate(batches):
        arrays, transfer = batch.arrays, None
        if gears is not None:
            g = gear if gear is not None else gears.from_arrays(arrays, model)
            user = gears.view(model, g)
            check_inputs(user, arrays)
            click.echo(f"[INFO] gear {g}: {gears.label(g)}")
            arrays = gears.device_inputs(model, g, arrays)
            transfer = gears.transfer_bytes(model, g)
        if arrays is not None:
            check_inputs(model, arrays)
        if bsize is None:
            bsize = _batchsize(opts, user, batch.arrays)
            if conv.ais_bench_block == "ais_bench" and not opts.batchsize:
                click.echo(f"[INFO] try get model batchsize:{bsize}")
        if batch.stem:
            click.echo(f"[INFO] start to process file: {batch.stem}")
        warmups = opts.warmup_count if k == 0 else 0     # ais_bench warms up once, with the first input
        outputs, loops, walls = simulate(model, opts.profile, arrays, opts.loop + warmups, opts.compute,
                                         opts.allow_hazards,
                                         opts.tiling_cache, opts.host_threads, shapes, timed=True,
                                         max_loop_iterations=opts.max_loop_iterations, transfer_bytes=transfer,
                                         max_tasks=opts.max_tasks, check_overflow=opts.check_overflow,
                                         dumper=dumper,
                                         threads=threads)
        if gears is not None and outputs is not None:
            outputs = gears.gear_outputs(g, outputs)
        if warmups:    # ais_bench: the warm-up executions are in no figure
            loops, walls = loops[warmups:], walls[warmups:]
            if conv.ais_bench_block == "ais_bench":
                click.echo(f"[INFO] warm up {warmups} done")
        bench.add_loops(loops)
        lines = msame_lines(loops, walls) if conv.msame_lines else []
        for line in lines + console(loops, opts.host_threads, opts.tiling_cache):
            click.echo(line)
        per_batch = ais_bench_summary(loops, bsize)
        if conv.ais_bench_block == "om-run":
            for line in ais_bench_lines(per_batch):
                click.echo(line)
        for line in overflow_lines(loops[-1]):
            click.echo(line)
        if dumper is not None:
            click.echo(f"[INFO] wrote {len(dumper.index)} dump file(s) and {dumper.finish()}")
        if opts.summary_path:
            write_atomic(opts.summary_path, (json.dumps({**summary_json(loops, model.name, model.soc_version),
                                                         "ais_bench": per_batch}, indent=1) + "\n").encode())
            click.echo(f"[INFO] wrote {opts.summary_path}")
        if opts.profile_dir:
            make_output_dir(opts.profile_dir, "--profile")
            for p in write_profile(opts.profile_dir, loops[-1], model.name, write_in_folder):
                click.echo(f"[INFO] wrote {p}")
        if outputs is None:
            continue
        check_output_size(user, outputs, opts.output_size, conv.exact_output_size)
        for io, arr in zip(user.outputs, outputs):
            a = arr.astype(np.float64) if arr.size else np.zeros(1)
            click.echo(f"[INFO] output {io.name}: {io.desc.dtype}[{','.join(map(str, arr.shape))}] min {a.min():.6g} "
                       f"max {a.max():.6g} mean {a.mean():.6g}")
        if folder is not None:
            stem = stem_of(naming, user, opts.model_path, batch.files, batch.stem is not None)
            paths = write_outputs(outputs, folder, opts.outfmt, stem, conv.tool)
            for p in paths:
                click.echo(f"[INFO] wrote {p}")
            click.echo("[INFO] output data success")
            bench.add_sample(list(batch.files) or [PURE_INFER_STEM] * len(user.inputs),
                             [os.path.join(folder, p.name) for p in paths])
        if opts.expected:
            ok &= compare(user, outputs, load_expected(user, opts.expected), rtol, atol)
    if conv.ais_bench_block == "ais_bench":
        for line in bench.lines(bsize, tool.display_all_summary):
            click.echo(line)
        if folder is not None:
            make_output_dir(folder)
            write_in_folder(summary_json_path(folder), bench.json_bytes(bsize))
    if not ok:
        raise AtcError("E30003", reason="some outputs differ from the expected values beyond the tolerance")
    return bench.throughput(bsize or 1)
