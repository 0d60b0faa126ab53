"""The compile pipeline as a Python API: build(model, options) -> BuildResult (the .om bytes + summary).

Options use GE's names (ge.socVersion, ge.frameworkType, input_shape, ge.outputNodeName,
ge.tiling_schedule_optimize, ge.buildGraphMode, ge.exec.static_model_ops_lower_limit, ...); they are parsed
once into a BuildOptions (atc_py/options/build_options.py), which is what every stage below reads.
"""
from __future__ import annotations

import gc
import json
import pathlib
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, Mapping

from .autofuse.fusion import FuseStats
from .common.atomic_write import write_atomic
from .common.errors import AtcError
from .common.progress import NoProgress, Progress
from .engines.modeldef import model_def
from .engines.static_model import (
    StaticModel,
    compile_static,
    kernel_partitions,
    task_info,
)
from .frontend.import_budget import ImportBudget
from .frontend.onnx import convert_onnx, load_onnx_lazy
from .frontend.onnx import onnx_lite as onnx
from .ir.dtypes import dtype_by_name
from .ir.graph import Graph, all_graphs, all_nodes
from .om import OmModel, write_om
from .om import partitions as pt
from .om.container import OmImage
from .om.inout_info import IoDesc, build_inout, gear_blocks
from .om.task_types import ENGINE_LIB_NAME
from .ops import get_op
from .ops.core.impl_modes import IMPL_ATTR, flag_mode
from .options.build_options import FRAMEWORK_ONNX, FRAMEWORK_TF, BuildOptions
from .options.pass_table import PASSES
from .options.shapes import InputShapes
from .passes.aipp import feed_fp16, insert_aipp
from .passes.aipp_fusion import aipp_output
from .passes.attr_config import apply_attr_config
from .passes.const_jobs import ConstJobs
from .passes.engine import assign_engines, engine_counts, fallbacks
from .passes.memory import WEIGHT_BASE, MemoryPlan, plan_weights_only
from .passes.multi_batch import BRANCH_SUFFIX, ORIGIN_DIMS, assemble, gear_attrs
from .passes.optimize import PassInputs, optimize, pass_function, run_pass
from .passes.out_nodes import apply_out_nodes
from .passes.partition import PartitionResult, partition
from .passes.soc_kernels import mark_implementations, mark_internal_dtypes
from .passes.static_cache_attention import lower_static_cache_attention
from .passes.tiling_sink import decide_tiling_sink, summary_line
from .plugins import load_plugins
from .proto import task_pb2
from .version import __version__


@dataclass
class BuildResult:
    image: OmImage
    summary: dict = field(default_factory=dict)
    graph: Graph | None = None

    @cached_property
    def om(self) -> bytes:
        """The whole file in memory (tests, --display_model_info); `save` writes without joining it."""
        return self.image.tobytes()

    def save(self, path, progress: Progress | None = None) -> None:
        """Writes the .om (through a temp file: a failure leaves nothing); streamed weights are read from the
        model's data file now, one tensor at a time. `progress` shows the bytes written on a terminal."""
        progress = progress if progress is not None else NoProgress()
        progress.start("writing the .om", self.image.size)
        write_atomic(pathlib.Path(path), self.image, progress)


class _Stages:
    """Stage timing for --log=info; each stage is shown on the progress line (a terminal's, when compiling is
    slow)."""

    def __init__(self, log: Callable[[str, str], None], progress: Progress | None = None):
        self.log = log
        self.progress = progress if progress is not None else NoProgress()
        self.times: dict[str, float] = {}

    def run(self, name: str, fn, *args):
        self.progress.start(name)
        t0 = time.perf_counter()
        res = fn(*args)
        self.times[name] = time.perf_counter() - t0
        self.log("info", f"stage {name}: {self.times[name] * 1e3:.1f} ms")
        return res


def _no_log(level: str, msg: str) -> None:
    pass


@dataclass(frozen=True)
class LoadedOnnx:
    """An ONNX model already in memory with its weights as load_onnx_lazy gives them (the pre-check's model
    without its unsupported nodes): built as the file at `path` would be."""
    proto: object
    weights: dict
    path: str


def _load(model, opts: BuildOptions, st: _Stages):
    """The framework's model in memory: (framework, proto, external weights, path)."""
    if isinstance(model, LoadedOnnx):
        return FRAMEWORK_ONNX, model.proto, model.weights, model.path
    path = model if isinstance(model, str) else ""
    if opts.framework == FRAMEWORK_TF:
        from .frontend.tensorflow.loader import (
            load_tf,  # an ONNX compile does not import the TF frontend
        )
        return FRAMEWORK_TF, (st.run("load", load_tf, model) if path else model), {}, path
    proto, weights = st.run("load", load_onnx_lazy, model) if path else (model, {})
    return FRAMEWORK_ONNX, proto, weights, path


def _convert(loaded, opts: BuildOptions, shapes: InputShapes, st: _Stages, budget: ImportBudget) -> Graph:
    framework, proto, weights, path = loaded
    if framework == FRAMEWORK_TF:
        from .frontend.tensorflow.converter import convert_tf
        graph, info = st.run("parse", convert_tf, proto, shapes, opts.default_input_format, path, opts.soc, budget)
    else:
        graph, info = st.run("parse", convert_onnx, proto, shapes, weights, path, opts.fold_limit, opts.soc, budget)
    apply_out_nodes(graph, list(opts.out_nodes), info["node_outputs"], info["values"])
    apply_attr_config(graph, opts.attr_config)
    _input_format(graph, opts.input_format)
    graph.counters["aipp_inserted"] = insert_aipp(graph, opts.aipp)
    feed_fp16(graph, list(opts.precision.fp16_inputs))
    return graph


def _copy(loaded):
    """Each gear converts its own copy of the framework model (a converter may annotate the proto it reads)."""
    framework, proto, weights, path = loaded
    dup = type(proto)()
    dup.CopyFrom(proto)
    return framework, dup, weights, path


def frontend(model, opts: BuildOptions, st: _Stages) -> Graph:
    """The model as a Graph. With gears, the model is converted once per gear (each at static shapes) and the
    gear graphs become the branches of GE's multi-batch Case (passes/multi_batch.py)."""
    load_plugins(opts.op_plugin, st.log)
    loaded = _load(model, opts, st)
    budget = ImportBudget(loaded[3])    # one for the build: every gear's copy draws on it
    gears = opts.gears
    if gears is None:
        return _convert(loaded, opts, opts.input_shapes, st, budget)
    graphs = [_convert(_copy(loaded), opts, gears.input_shapes(opts.input_shapes, g), st, budget)
              for g in gears.gears]
    return st.run("multi_batch", assemble, graphs, gears)


def _input_format(graph: Graph, fmt: str) -> None:
    """--input_format is recorded on the inputs it describes (rank 4 for NCHW/NHWC, 5 for NCDHW/NDHWC)."""
    rank = {"NCHW": 4, "NHWC": 4, "NCDHW": 5, "NDHWC": 5}.get(fmt)
    for node in graph.data_nodes if fmt else []:
        d = node.outputs[0].desc
        if fmt == "ND" or len(d.shape) == rank:
            d.format = d.origin_format = fmt


@dataclass
class ModelRecord:
    """What the .om's model attributes say about the build beyond the graph: the options as given and resolved,
    the gears and the tiling-sink decisions (filled in as the build learns them)."""
    opts: BuildOptions
    keep_dtype: list[str] = field(default_factory=list)     # --keep_dtype resolved to node names
    gear_attrs: dict = field(default_factory=dict)
    sink_decisions: list[str] = field(default_factory=list)

    def knobs(self) -> dict:
        """The precision and fusion knobs as the .om records them."""
        out = dict(self.opts.recorded)
        if self.keep_dtype:
            out["keep_dtype"] = self.keep_dtype
        if self.opts.precision.mix_doc:
            out["modify_mixlist"] = json.dumps(self.opts.precision.mix_doc, sort_keys=True)
        if self.opts.fusion_switch_doc:
            out["fusion_switch_file"] = self.opts.fusion_switch_doc
        return out


def _model_attrs(record: ModelRecord, streams: int, events: int, labels: int = 0) -> dict:
    opts = record.opts
    return {"stream_num": streams, "event_num": events, "label_num": labels, "batch_num": 0,
            **record.gear_attrs, "_sink_decisions": record.sink_decisions,
            "soc_version": opts.soc.soc_version, "core_type": "AiCore", "framework_type": int(opts.framework),
            "precision_mode": opts.precision.mode, **record.knobs(),
            **({"buffer_optimize": opts.buffer_optimize} if opts.buffer_optimize != "l2_optimize" else {}),
            "atc_version": f"atc-py {__version__}", "atc_cmdline": opts.atc_cmdline}


def _keep_dtype(graph: Graph, names, types) -> frozenset:
    """--keep_dtype: the named nodes and every node of the listed op types keep their model dtype."""
    nodes = all_nodes(graph)
    present = {_gear_free(n.name): n.name for n in nodes}
    keep = set()
    for name in names:
        safe = name.replace("/", "_").replace(":", "_")
        if name not in present and safe not in present:
            raise AtcError("E10016", opname=name, parameter="keep_dtype")
        base = name if name in present else safe
        keep |= {n.name for n in nodes if _gear_free(n.name) == base}
    keep |= {n.name for n in nodes if n.op_type in set(types)}
    return frozenset(keep)


def _per_op_precision(graph: Graph, prec, keep: frozenset, log) -> tuple[frozenset, dict[str, str]]:
    """--op_precision_mode and --customize_dtypes on the graph's nodes: each mode lands in `_op_impl_mode` (over
    --op_select_implmode's); keep_fp16 and a customized fp16/bf16 compute dtype make the node compute low
    (returned as name -> dtype), enable_float_32_execution and a customized fp32 keep it in fp32. Customized
    dtypes win over --keep_dtype. Names the graph lacks are warned about (fusion may have renamed them)."""
    keep, low = set(keep), {}
    seen_modes, seen_custom = set(), set()
    for node in all_nodes(graph):
        base = _gear_free(node.name)
        mode = prec.op_modes.of(base, node.op_type)
        if mode:
            seen_modes.add(base)
            node.attrs[IMPL_ATTR] = mode
            if mode == "keep_fp16":
                low[node.name] = "float16"
            elif mode in ("enable_float_32_execution", "enable_hi_float_32_execution"):
                keep.add(node.name)
        custom = prec.custom_dtypes.of(base, node.op_type)
        if custom is not None:
            seen_custom.add(base)
            node.attrs["_customize_dtypes"] = ",".join(custom.inputs) + ";" + ",".join(custom.outputs)
            if custom.compute == "float32":
                keep.add(node.name)
                low.pop(node.name, None)
            elif custom.compute:
                low[node.name] = custom.compute
                keep.discard(node.name)
    for flag, names, seen in (("--op_precision_mode", prec.op_modes.by_name, seen_modes),
                              ("--customize_dtypes", prec.custom_dtypes.by_name, seen_custom)):
        for name in sorted(set(names) - seen):
            log("warning", f"{flag}: node {name} is not in the graph; its entry is ignored")
    return frozenset(keep), low


def _gear_free(name: str) -> str:
    """A node's name in the model (a gear's copy carries GE's _ascend_mbatch_batch_<i> suffix)."""
    head, sep, tail = name.rpartition(BRANCH_SUFFIX)
    return head if sep and tail.isdigit() else name


def _ids(graph: Graph) -> dict[str, int]:
    """Op ids over the graph and its subgraphs (a control node's subgraphs follow in the .om)."""
    return {n.name: k for k, n in enumerate(all_nodes(graph))}


def tiling_data_size(sm: StaticModel) -> int:
    """Device memory the runtime sets aside per sink op: tiling data (capacity + TilingData header) and the
    workspace vector of the device tiling context (GE ArgsFormatUtils::SinkTilingContext)."""
    from .engines.sink import MAX_TILING_DATA_SIZE
    return len(sm.sink_ops) * (MAX_TILING_DATA_SIZE + 64 + 192)


def static_partitions(sm: StaticModel, name: str, record: ModelRecord) -> dict[int, bytes]:
    tbe, cust = kernel_partitions(sm)
    tasks = task_info(sm)
    attrs = _model_attrs(record, sm.stream_num, sm.event_num, sm.label_num)
    attrs.update({"_fm_lower_bound": sm.plan.lower_bound, "_workspace_size": sm.plan.workspace_size,
                  "_tiling_data_size": tiling_data_size(sm), "_inplace_outputs": sm.plan.inplace,
                  "_reuse_memory": record.opts.reuse_memory})
    attrs["om_info_list"] = [sm.plan.weight_size, len(tbe), len(cust), len(tasks), 0]
    md = model_def(sm.graph, sm.ids, sm.plan, attrs, sm.node_attrs, name)
    return {pt.MODEL_DEF: md.SerializeToString(deterministic=True), pt.WEIGHTS_DATA: sm.plan.weights,
            pt.TBE_KERNELS: tbe, pt.CUST_AICPU_KERNELS: cust, pt.TASK_INFO: tasks}


def dynamic_partitions(graph: Graph, name: str, record: ModelRecord) -> dict[int, bytes]:
    """What the host executor needs: the graph with its attributes and its weights; no tasks."""
    plan = plan_weights_only(graph)
    tasks = task_pb2.ModelTaskDef(version="2.0", weight_size=plan.weight_size, weight_addr=WEIGHT_BASE)
    task_bytes = tasks.SerializeToString(deterministic=True)
    node_attrs = {n.name: {"_ge_attr_op_kernel_lib_name": ENGINE_LIB_NAME.get(n.meta["engine"], "aicpu_ascend_kernel"),
                           **({"_cube_vector_core_type": n.meta["core_type"]} if n.meta["core_type"] != "NONE" else {})}
                  for n in graph.nodes if n.meta.get("engine") not in (None, "NONE")}
    attrs = _model_attrs(record, 0, 0)
    attrs["om_info_list"] = [plan.weight_size, 0, 0, len(task_bytes), 0]
    attrs["_is_unknown_shape"] = True
    md = model_def(graph, _ids(graph), plan, attrs, node_attrs, name)
    return {pt.MODEL_DEF: md.SerializeToString(deterministic=True), pt.WEIGHTS_DATA: plan.weights,
            pt.TASK_INFO: task_bytes}


def _om_model(parts: dict[int, bytes]) -> OmModel:
    return OmModel([(t, parts[t]) for t in pt.STATIC_ORDER if parts.get(t)])


def _io_descs(graph: Graph, inputs: bool) -> list[IoDesc]:
    if inputs:
        vals = [(n.outputs[0].name, n.outputs[0]) for n in graph.data_nodes]
    else:
        net = graph.net_output
        vals = list(zip(net.attrs.get("output_names", [v.name for v in net.inputs]), net.inputs))
    # a gear model's input shows its --input_shape dims (-1 where the gears differ), sized for the largest gear
    return [IoDesc(name, tuple(v.producer.attrs.get(ORIGIN_DIMS, v.desc.shape)) if inputs else v.desc.shape,
                   dtype_by_name(v.desc.dtype).cpp, v.desc.format,
                   v.desc.nbytes if v.desc.known else 0)  # unknown: sized when the model runs
            for name, v in vals]


def build(model: str | onnx.ModelProto | LoadedOnnx, options: Mapping[str, str] | BuildOptions, online: bool = False, device=None,
          log: Callable[[str, str], None] = _no_log, progress: Progress | None = None) -> BuildResult:
    """Compile a model. Python's cyclic garbage collector is paused meanwhile: the passes create and drop
    graph objects by the hundred thousand, each collection walks every live one (IR nodes and values point at
    each other), and that was 30-40% of DenseNet-121's compile; the build's own cycles are collected after
    it (peak memory measured the same: the big arrays are freed by reference counting)."""
    paused = gc.isenabled()
    gc.disable()
    try:
        return _build(model, options, online, device, log, progress)
    finally:
        if paused:
            gc.enable()


def _build(model, options, online: bool, device, log: Callable[[str, str], None],
           progress: Progress | None = None) -> BuildResult:
    opts = options if isinstance(options, BuildOptions) else BuildOptions.parse(options, online, log)
    soc = opts.soc
    if opts.sink_nops is not None:
        log("alert", f"--debug_sink_nops={opts.sink_nops} overrides the SoC's prefetch_num "
                     f"({soc.prefetch_num}) NOPs before each tiling-sink kernel: the model may run a kernel "
                     "prefetched before its UPDATE (debug only, never deploy it)")
    st = _Stages(log, progress)
    graph = frontend(model, opts, st)
    for warning in graph.warnings:
        log("warning", warning)
    prec = opts.precision
    keep = _keep_dtype(graph, prec.keep_names, prec.keep_types)
    for node in all_nodes(graph):
        mode = flag_mode(prec.impl_mode, prec.impl_types, node.op_type)
        if mode:
            node.attrs[IMPL_ATTR] = mode
    keep, low = _per_op_precision(graph, prec, keep, log)
    record = ModelRecord(opts, sorted(keep))
    late = ConstJobs(graph)   # the fp16 weight casts: the .om's weights wait for them, compiling does not
    stats = optimize(graph, soc, st, dict(opts.switches), prec.mode, opts.output_types, late, opts.fold_limit,
                     prec.mix, keep, low)
    gears = opts.gears
    if gears is not None:
        record.gear_attrs = gear_attrs(graph, gears)
    if opts.tiling_sink:   # decode attention over a static KV cache: IncreFlashAttention, whose tiling sinks
        lowering = st.run("static_cache_attention", lower_static_cache_attention, graph)
        stats["static_cache_attention"] = lowering.count
        stats["static_cache_attention_unfused"] = [u.__dict__ for u in lowering.unfused]
    engines = st.run("engines", assign_engines, graph)
    decisions = st.run("tiling_sink", decide_tiling_sink, graph, opts.tiling_sink, opts.offline,
                       None if opts.offline else device)
    for d in decisions:
        log("info", d.line())
    part = st.run("partition", partition, graph, opts.static_ops_lower_limit)
    if gears is not None and part is not None:
        raise AtcError("E10055", reason="a gear of --dynamic_batch_size / --dynamic_image_size / --dynamic_dims has "
                                        "ops whose shapes depend on values (a dynamic-shape partition); atc-py builds "
                                        "gears of static models only")
    name = opts.om_name or graph.name
    record.sink_decisions = [d.line() for d in decisions]
    fused = FuseStats()
    if part is None:
        compiled = compile_model(graph, opts, st, fused)
        stats.update(compiled.stats)
        engines, sm = compiled.engines, compiled.static
        parts = st.run("model_def", static_partitions, sm, name, record)
        parts[pt.MODEL_INOUT_INFO] = build_inout(_io_descs(graph, True), _io_descs(graph, False),
                                                 gear_blocks(record.gear_attrs))
        om = st.run("om", write_om, [_om_model(parts)], name)
        statics, dynamics = [sm], []
    else:
        om, statics, dynamics = _build_partitioned(part, name, record, st, fused)
    stats.update({"autofused_ops": fused.ops_fused, "ascbackend_nodes": fused.asc_backend,
                  "fused_ascbackend_nodes": fused.fused_asc_backend})
    st.run("weights", late.wait)   # a failing cast is reported here, not from the hashing thread
    tasks = [t for sm in statics for t in sm.tasks]
    from .om.task_types import TASK_TYPE_NAMES
    summary = {
        "soc_version": soc.soc_version,
        "ops": sum(1 for n in all_nodes(graph) if not get_op(n.op_type).no_task
                   and get_op(n.op_type).task_kind in ("kernel", "hccl")),
        "labels": sum(sm.label_num for sm in statics),
        "ops_by_engine": engines, "tasks": len(tasks),
        "tasks_by_type": dict(sorted(Counter(TASK_TYPE_NAMES.get(t.type, str(t.type)) for t in tasks).items())),
        "memory_size": sum(sm.plan.memory_size for sm in statics),
        "memory_lower_bound": sum(sm.plan.lower_bound for sm in statics),
        "memory_ratio": round(sum(sm.plan.memory_size for sm in statics) /
                              max(1, sum(sm.plan.lower_bound for sm in statics)), 3),
        "workspace_size": max([sm.plan.workspace_size for sm in statics] or [0]),
        "tiling_data_size": sum(tiling_data_size(sm) for sm in statics),
        "inplace_outputs": sum(sm.plan.inplace for sm in statics),
        "weight_size": sum(sm.plan.weight_size for sm in statics),
        "stream_num": max([sm.stream_num for sm in statics] or [0]),
        "event_num": sum(sm.event_num for sm in statics),
        "models": 1 if part is None else 1 + len(part.subgraphs),
        "known_subgraphs": len(statics) if part is not None else 0, "unknown_subgraphs": len(dynamics),
        "tiling_sink": summary_line(decisions), "sink_decisions": [d.__dict__ for d in decisions], **stats,
        "values_at_import": graph.counters.get("values_at_import", 0), "warnings": list(graph.warnings),
        "fp16_saturated": late.saturated,
        "aicpu_fallback": fallbacks(graph) + [f for p in ([] if part is None else part.subgraphs)
                                              for f in fallbacks(p.graph) if p.graph is not graph],
        "stage_ms": {k: round(v * 1e3, 2) for k, v in st.times.items()},
    }
    return BuildResult(om, summary, graph)


@dataclass
class CompiledModel:
    """One model of the .om compiled: the counts of its per-model passes, its ops by engine and, for a static model,
    its tasks and memory (a dynamic-shape subgraph's graph is what the host executor runs)."""
    stats: dict[str, int]
    engines: dict[str, int] = field(default_factory=dict)
    static: StaticModel | None = None


def compile_model(graph: Graph, opts: BuildOptions, st: _Stages, fused: FuseStats, known: bool = True,
                  label: str = "") -> CompiledModel:
    """The per-model sequence, the same for a single static model and for each subgraph of a partitioned one: the
    kernel implementations, automatic fusion, the kernels' internal dtypes, then for a static (`known`) model the
    device formats with the AIPP fusion and the tasks. `label` names the subgraph in the stage names."""
    mark_implementations(graph, opts.soc)
    fuse_model(graph, opts.switch("autofuse"), st, fused)
    stats = {"internal_dtype_ops": mark_internal_dtypes(graph, opts.soc)}
    if not known:
        return CompiledModel(stats)
    stats.update(_device_formats(graph, opts, st, label))
    engines = engine_counts(graph)
    sm = st.run(f"compile{label}", compile_static, graph, _ids(graph), opts.soc, opts.single_stream,
                opts.reuse_memory, opts.sink_nops)
    return CompiledModel(stats, engines, sm)


def fuse_model(graph: Graph, enabled: bool, st: _Stages, total: FuseStats) -> None:
    """Automatic fusion per model, after partitioning (as GE fuses per subgraph compile):
    --static_model_ops_lower_limit counts the graph's own ops; control-flow bodies fuse too. Dynamic subgraphs
    fuse too (a dim unknown until run time is a size variable): the host executor runs each fused node's
    tiling for the shapes it meets. `enabled`: the autofuse switch (--optimization_switch, or
    --fusion_switch_file's TbeElemwiseFusion)."""
    if not enabled:
        return
    autofuse = pass_function("autofuse")
    for g in all_graphs(graph):   # bodies of If / While / Case too
        s = st.run(f"autofuse {g.name}", autofuse, g)
        total.ops_fused += s.ops_fused
        total.asc_backend += s.asc_backend
        total.fused_asc_backend += s.fused_asc_backend


def _device_formats(graph: Graph, opts: BuildOptions, st: _Stages, label: str = "") -> dict[str, int]:
    """Formats and TransData (passes/formats.py), then AIPP writing the first convolution's input or fused into it
    (passes/aipp_fusion.py), on a static graph."""
    inputs = PassInputs(soc=opts.soc, small_channel=opts.small_channel,
                        pool_fusion=opts.switch("aipp_conv_pool_fusion"))
    formats, aipp_conv = PASSES["formats"], PASSES["aipp_conv_fusion"]
    return {formats.stat: st.run(f"formats{label}", run_pass, formats, graph, inputs)
            if opts.switch(formats.name) else 0,
            "aipp_outputs_folded": st.run(f"aipp_output{label}", aipp_output, graph),
            aipp_conv.stat: st.run(f"aipp_conv_fusion{label}", run_pass, aipp_conv, graph, inputs)
            if opts.switch(aipp_conv.name) else 0}


def _build_partitioned(part: PartitionResult, name: str, record: ModelRecord, st: _Stages, fused: FuseStats):
    root_plan = MemoryPlan()
    root_attrs = _model_attrs(record, 0, 0)
    opts = record.opts
    root_attrs["_dynamic_shape_partitioned"] = True
    root_md = model_def(part.root, _ids(part.root), root_plan, root_attrs, {}, name)
    models = [_om_model({pt.MODEL_INOUT_INFO: build_inout(_io_descs(part.root, True), _io_descs(part.root, False)),
                         pt.MODEL_DEF: root_md.SerializeToString(deterministic=True)})]
    statics, dynamics = [], []
    for sub in part.subgraphs:
        sm = compile_model(sub.graph, opts, st, fused, sub.known, f" {sub.name}").static
        if sm is not None:
            statics.append(sm)
            models.append(_om_model(static_partitions(sm, sub.name, record)))
        else:
            dynamics.append(sub.name)
            models.append(_om_model(dynamic_partitions(sub.graph, sub.name, record)))
    return write_om(models, name, is_unknown=True), statics, dynamics
