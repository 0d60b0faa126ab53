"""`om-run compare -gm MODEL.onnx|.pb -om MODEL.om [-i INPUTS] -o DIR`: msit debug compare's command line.

Writes under DIR/<timestamp>/ what msit writes: dump_data/npu/ (the .om's dumps, dump_index.json),
dump_data/onnx/ or dump_data/tf/ (the framework tensors compared, <node>.<k>.<timestamp>.npy),
result_<timestamp>.csv, plus summary.json (counts, match ratio, first divergent node)."""
from __future__ import annotations

import io
import json
import os
import time

import click
import numpy as np

from atc_py.common.atomic_write import make_output_dir, safe_stem, write_in_folder
from atc_py.common.errors import AtcError

from ..load.loader import load_model
from ..run.msame_inputs import check_dym_shape, input_batches
from ..run.options import parse_inputs, parse_named_shapes
from ..sim.dump import DumpConfig, Dumper
from ..sim.profile import RuntimeProfile
from .compile_time import compile_time_values
from .golden import onnx_golden, tf_golden
from .locate import locate
from .match import Matcher
from .metrics import fmt
from .om_side import OmKernels, load_entry, read_dumps
from .report import counts, csv_bytes, summary, table

FRAMEWORKS = {".onnx": "onnx", ".pb": "tf"}


def _bad(reason: str) -> AtcError:
    return AtcError("E30002", reason=reason)


def framework_of(path: str, chosen: str | None) -> str:
    if chosen:
        return chosen
    fw = FRAMEWORKS.get(os.path.splitext(path)[1].lower())
    if fw is None:
        raise _bad(f"-gm {path}: the golden model's framework is not known from its suffix (.onnx or .pb); "
                   "give --framework onnx|tf")
    return fw


def _timestamp(root: str) -> tuple[str, str]:
    """msit's folder name (the time, %Y%m%d%H%M%S), made unique within `root`."""
    ts = time.strftime("%Y%m%d%H%M%S")
    name, k = ts, 1
    while os.path.lexists(os.path.join(root, name)):
        name, k = f"{ts}_{k}", k + 1
    return name, ts


def run_compare(golden_path: str, om_path: str, inputs: str | None, output: str, framework: str | None,
                threshold: float, locat: bool, seed: int, input_shape: str | None, rows_shown: int) -> dict:
    fw = framework_of(golden_path, framework)
    if not os.path.isfile(golden_path):
        raise _bad(f"-gm {golden_path}: not a regular file")
    model = load_model(om_path)
    dym = check_dym_shape(parse_named_shapes("-is", input_shape, 9), model)
    batch = next(iter(input_batches(model, parse_inputs(inputs), seed, dym)))
    arrays = batch.arrays
    click.echo(f"[INFO] inputs: {'random (seed %d)' % seed if inputs is None else inputs}")
    # the framework first: a golden model that does not fit the .om's inputs stops before anything is written
    named = {io.name: a for io, a in zip(model.inputs, arrays)}
    input_format = model.attrs.get("input_format") or "NHWC"
    if fw == "onnx":
        golden = onnx_golden(golden_path, named, list(arrays))
    else:
        golden = tf_golden(golden_path, named, list(arrays), input_format, OmKernels(model).soc)
    click.echo(f"[INFO] golden: {golden.engine}, {len(golden.nodes)} nodes of {golden_path}")
    root = str(make_output_dir(output, "-o"))
    name, ts = _timestamp(root)
    out_dir = str(make_output_dir(os.path.join(root, name), "-o"))
    dumper = Dumper(DumpConfig(os.path.join(out_dir, "dump_data", "npu"), "all"))
    names = {op.name for op in model.ops.values()} | {op.name for sub in getattr(model, "subs", {}).values()
                                                      for op in sub.ops.values()}
    dumper.start(model.name, names)
    from ..run.simulate import simulate
    simulate(model, RuntimeProfile(), arrays, 1, True, dumper=dumper)
    dumper.finish()
    ops = read_dumps(dumper.root)
    click.echo(f"[INFO] .om: {len(ops)} ops dumped to {dumper.root}")
    kernels = OmKernels(model)
    shapes = {io.name: tuple(a.shape) for io, a in zip(model.inputs, arrays)}
    matcher = Matcher(golden, ops, kernels, load_entry, threshold,
                      lambda wanted: compile_time_values(fw, golden_path, shapes, input_format, kernels.soc, wanted))
    rows = matcher.rows()
    first = next((r for r in rows if r.status == "first_divergent"), None)
    if first is not None and locat:
        first.locate, _ = locate(matcher, first, kernels)
    _write_golden(os.path.join(out_dir, "dump_data", "onnx" if fw == "onnx" else "tf"), golden, rows, ts)
    result = os.path.join(out_dir, f"result_{ts}.csv")
    write_in_folder(result, csv_bytes(rows))
    doc = summary(rows, golden.engine, om_path, golden_path, threshold)
    write_in_folder(os.path.join(out_dir, "summary.json"), (json.dumps(doc, indent=1) + "\n").encode())
    _print(rows, doc, rows_shown)
    click.echo(f"[INFO] wrote {result}")
    return doc


def _write_golden(folder: str, golden, rows, ts: str) -> None:
    make_output_dir(folder, "golden dump")
    for r in rows:
        buf = io.BytesIO()
        np.save(buf, golden.tensors[r.tensor])
        write_in_folder(os.path.join(folder, f"{safe_stem(r.node.name, 128)}.{r.out_index}.{ts}.npy"),
                        buf.getvalue())


def _print(rows, doc: dict, limit: int) -> None:
    c = counts(rows)
    click.echo(f"[INFO] compared {len(rows)} framework tensors: ok {c['ok']}, divergent "
               f"{c['divergent'] + c['first_divergent']}, fused {c['fused']}, not comparable {c['not_comparable']} "
               f"(matched {100 * doc['matched_ratio']:.1f}%)")
    for line in table(rows, limit):
        click.echo("  " + line)
    first = doc.get("first_divergent")
    if first is None:
        click.echo(f"[INFO] no divergent tensor (cosine threshold {doc['cosine_threshold']})")
        return
    row = next(r for r in rows if r.status == "first_divergent")
    m = row.metrics
    click.echo(f"[WARNING] first divergent node: {first['node']} ({first['op_type']}) output {first['tensor']}, "
               f"in .om op {first['om_op']} ({first['om_op_type']}): cosine {fmt(m.cosine)}, max abs err "
               f"{fmt(m.max_abs)}{', inf/NaN where the framework is finite' if m.nonfinite else ''}")
    if first["locate"]:
        click.echo(f"[WARNING]   {first['locate']}")


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-gm", "--golden-model", "golden", required=True, help="The framework model (.onnx, or a frozen .pb).")
@click.option("-om", "--om-model", "om", required=True, help="The .om compiled from it.")
@click.option("-i", "--input", "inputs", help="Inputs: comma-separated .npy/.bin files, one per input, or one .npz "
                                              "(random inputs without it).")
@click.option("-o", "--output", "output", required=True, help="Folder of the results (a timestamped folder in it).")
@click.option("-is", "--input-shape", "input_shape", help='Shapes of a dynamic .om\'s inputs, "x:1,3,224,224;y:1,8".')
@click.option("--framework", type=click.Choice(["onnx", "tf"]), default=None,
              help="The golden model's framework (default: from its suffix).")
@click.option("--cos-threshold", "threshold", type=click.FloatRange(-1.0, 1.0), default=0.99, show_default=True,
              help="A matched tensor whose cosine similarity is below this (or that holds inf/NaN the framework's "
                   "does not) is divergent.")
@click.option("--locat", type=click.BOOL, default=True, show_default=True,
              help="Rerun the first divergent op with the framework's inputs: its own error, or inherited.")
@click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=0, show_default=True,
              help="Seed of the random inputs.")
@click.option("--rows", "rows_shown", type=click.IntRange(0, 10_000), default=20, show_default=True,
              help="Rows of the terminal table (divergent tensors first, then the lowest cosines).")
@click.option("-c", "--cann-path", "cann_path", default=None, help="msit's CANN path: accepted, not needed.")
@click.option("-d", "--device", "device", default=None, help="msit's device id: accepted (the simulated device).")
def compare_main(golden, om, inputs, output, input_shape, framework, threshold, locat, seed, rows_shown,
                 cann_path, device):
    """Layer-by-layer accuracy comparison of an .om with its framework model (msit debug compare's flags)."""
    from ..errors import guarded
    guarded(lambda: run_compare(golden, om, inputs, output, framework, threshold, locat, seed, input_shape,
                                rows_shown))
