"""`--mode=6` / `--display_model_info=1`: GE's PrintModelInfo block, then a report a deployer can act on:
inputs/outputs, memory (planned, lower bound, workspace, tiling data, weights), streams, events, tasks by
type, ops by engine, partitions and tiling-sink decisions."""
from __future__ import annotations

from collections import Counter

from ..ir.formats import DEVICE_FORMATS
from ..proto import ge_ir_pb2 as ge
from ..proto import task_pb2
from . import partitions as pt
from .attrs import from_attr
from .container import OmFile
from .task_types import HCCL, TASK_TYPE_NAMES


def _parse(m):
    md = ge.ModelDef.FromString(m.get(pt.MODEL_DEF) or b"")
    ti = m.get(pt.TASK_INFO)
    mtd = task_pb2.ModelTaskDef.FromString(ti) if ti else task_pb2.ModelTaskDef()
    return md, mtd, {k: from_attr(v) for k, v in md.attr.items()}


def _n(a: dict, key: str) -> int:
    """A numeric model attribute as the report shows it: anything but an integer (a hostile or damaged file)
    reads as 0, never an exception."""
    v = a.get(key, 0)
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def _shape(d, dims=None) -> str:
    name = ge.DataType.Name(d.dtype) if d.dtype in ge.DataType.values() else f"DT_{d.dtype}"
    dims = dims if isinstance(dims, list) and len(dims) == len(d.shape.dim) else d.shape.dim
    return f"{name}[{','.join(map(str, dims))}] {d.layout}".strip()


GEAR_KINDS = {1: "dynamic batch (--dynamic_batch_size)", 2: "dynamic image size (--dynamic_image_size)",
              3: "dynamic dims (--dynamic_dims)"}


def _gear_lines(a: dict) -> list[str]:
    """A gear model's gears and, per gear, the shapes its branch reads and writes (display only: a damaged
    attribute shows as such)."""
    import json
    kind, info = a.get("mbatch_dynamic_type"), a.get("all_gears_info")
    if kind not in GEAR_KINDS or not isinstance(info, str):
        return []
    gears = info.split(";")
    lines = [f"gears    : {GEAR_KINDS[kind]}, {len(gears)} gears {info[:400]}; the gear is chosen through input "
             "ascend_mbatch_shape_data (om-run --dymBatch / --dymHW / --dymDims)"]
    try:
        ins, outs = json.loads(a.get("_mbatch_input_shapes", "")), json.loads(a.get("_mbatch_output_shapes", ""))
        for k, (i, o) in enumerate(zip(ins[:100], outs[:100])):
            lines.append(f"  gear {k:<3}: {gears[k] if k < len(gears) else '?'}: inputs "
                         f"{' '.join('[' + ','.join(map(str, s)) + ']' for s in i)} -> outputs "
                         f"{' '.join('[' + ','.join(map(str, s)) + ']' for s in o)}")
    except (ValueError, TypeError):
        lines.append("  (per-gear shapes unreadable)")
    return lines


def _autofuse_line(g) -> list[str]:
    """Fused nodes (automatic fusion) and how many of the model's ops they replace."""
    fused = [op for op in g.op if op.type in ("AscBackend", "FusedAscBackend")]
    if not fused:
        return []
    kinds = Counter(op.type for op in fused)
    names = 0
    for op in fused:
        v = from_attr(op.attr["_datadump_original_op_names"]) if "_datadump_original_op_names" in op.attr else None
        names += len(v) if isinstance(v, list) else 0
    return ["  autofuse : " + ", ".join(f"{k}[{v}]" for k, v in sorted(kinds.items())) + f", original ops[{names}]"]


def _formats_line(g) -> list[str]:
    """Device formats (passes/formats.py): the TransData ops and the op outputs in each device format."""
    trans = sum(1 for op in g.op if op.type == "TransData")
    layouts = Counter(d.layout for op in g.op for d in op.output_desc if d.layout in DEVICE_FORMATS)
    if not trans and not layouts:
        return []
    return ["  formats  : " + ", ".join([f"TransData[{trans}]"] + [f"{k} tensors[{v}]"
                                                                  for k, v in sorted(layouts.items())])]


def _engine(op) -> str:
    """An op's kernel library and core type ("AIcoreEngine/AIC"); a library on no core (HCCL's) alone."""
    lib = from_attr(op.attr["_ge_attr_op_kernel_lib_name"])
    core = from_attr(op.attr["_cube_vector_core_type"]) if "_cube_vector_core_type" in op.attr else None
    return f"{lib}/{core}" if core else f"{lib}"


HCCL_SHOWN = 16           # HCCL tasks listed one a line; the rest counted
HCCL_ATTRS = ("rank_size", "rank_ids", "reduction", "root_rank", "sr_tag", "dest_rank", "src_rank")


def _group(op) -> str:
    """The group a collective communicates in: its attribute, else the one task generation recorded."""
    if "group" in op.attr:
        return str(from_attr(op.attr["group"]))
    groups = from_attr(op.attr["_hccl_group_id_list"]) if "_hccl_group_id_list" in op.attr else None
    return str(groups[0]) if isinstance(groups, list) and groups else "?"


def _hccl_lines(md, mtd) -> list[str]:
    """The collectives: each HCCL task's kernel_hccl (op_index, hccl_type), its stream and its op's group."""
    hccl = [t for t in mtd.task if t.type == HCCL]
    if not hccl:
        return []
    ops = {op.id: op for sub in md.graph for op in sub.op}
    lines = [f"  hccl     : {len(hccl)} task(s)"]
    for t in hccl[:HCCL_SHOWN]:
        d = t.kernel_hccl
        op = ops.get(d.op_index)
        what = ", ".join([f"group {_group(op)}"] + [f"{k} {from_attr(op.attr[k])}" for k in HCCL_ATTRS if k in op.attr]) \
            if op is not None else ""
        lines.append(f"    task {t.id} stream {t.stream_id}: {d.hccl_type} op_index {d.op_index} "
                     f"({op.name if op is not None else 'no such op'}{'; ' + what if what else ''}), "
                     f"aiv_block_dim {d.aiv_block_dim}")
    if len(hccl) > HCCL_SHOWN:
        lines.append(f"    ... {len(hccl) - HCCL_SHOWN} more")
    return lines


def _model_lines(label: str, m, md, mtd, a) -> list[str]:
    g = md.graph[0] if md.graph else ge.GraphDef()
    lines = [f"[{label}] {md.name}"]
    if a.get("_is_unknown_shape"):
        ops = Counter(op.type for op in g.op if op.type not in ("Data", "Const", "NetOutput"))
        lines.append(f"  dynamic (host executor): {sum(ops.values())} ops: " +
                     ", ".join(f"{k}[{v}]" for k, v in sorted(ops.items())) + f"; weights {a.get('weight_size', 0)} B")
        return lines + _autofuse_line(g)
    if any(op.type == "PartitionedCall" for op in g.op):
        for op in g.op:
            if op.type == "PartitionedCall":
                kind = "dynamic" if op.attr["_is_unknown_shape"].b else "static"
                lines.append(f"  calls {', '.join(op.subgraph_name) or '?'} ({kind})")
        return lines
    planned, bound = _n(a, "memory_size"), _n(a, "_fm_lower_bound")
    ratio = f"{planned / bound:.3f}" if bound else "n/a"
    lines.append(f"  memory   : feature map {planned} B planned, lower bound {bound} B (ratio {ratio}), workspace "
                 f"{_n(a, '_workspace_size')} B, tiling data {_n(a, '_tiling_data_size')} B, weights "
                 f"{_n(a, 'weight_size')} B; in-place outputs {_n(a, '_inplace_outputs')}, reuse "
                 f"{'on' if a.get('_reuse_memory', True) else 'off'}")
    lines.append(f"  streams  : {a.get('stream_num', 0)} (events {a.get('event_num', 0)})")
    tasks = Counter(TASK_TYPE_NAMES.get(t.type, str(t.type)) for t in mtd.task)
    lines.append("  tasks    : " + ", ".join(f"{k}[{v}]" for k, v in sorted(tasks.items())) + f", total[{len(mtd.task)}]")
    per_stream = Counter(t.stream_id for t in mtd.task)
    lines.append("  per stream: " + ", ".join(f"stream {s}: {n}" for s, n in sorted(per_stream.items())))
    engines = Counter(_engine(op) for sub in md.graph for op in sub.op
                      if "_ge_attr_op_kernel_lib_name" in op.attr)  # subgraphs too
    lines.append("  ops      : " + ", ".join(f"{k}[{v}]" for k, v in sorted(engines.items())))
    return lines + _hccl_lines(md, mtd) + _formats_line(g) + _autofuse_line(g)


def model_info(om: OmFile) -> str:
    md, mtd, a = _parse(om.models[0])
    info = a.get("om_info_list")
    info = [x if isinstance(x, int) else 0 for x in info] if isinstance(info, list) else []
    info += [0] * 5
    lines = ["============ Display Model Info start ============",
             f"Original Atc command line: {a.get('atc_cmdline', '')}",
             f"system   info: atc_version[{a.get('atc_version', '')}], soc_version[{a.get('soc_version', '')}], "
             f"framework_type[{a.get('framework_type', '')}].",
             f"resource info: memory_size[{a.get('memory_size', 0)} B], weight_size[{a.get('weight_size', 0)} B], "
             f"stream_num[{a.get('stream_num', 0)}], event_num[{a.get('event_num', 0)}].",
             f"om       info: modeldef_size[{len(om.models[0].get(pt.MODEL_DEF) or b'')} B], weight_data_size[{info[0]} B], "
             f"tbe_kernels_size[{info[1]} B], cust_aicpu_kernel_store_size[{info[2]} B], "
             f"task_info_size[{info[3]} B], so_store_size[{info[4]} B].",
             "------------ atc-py report ------------",
             f"models   : {om.header.model_num} (is_unknow_model {om.header.is_unknow_model})"]
    g = md.graph[0] if md.graph else ge.GraphDef()
    for op in g.op:
        if op.type == "Data":
            dims = from_attr(op.attr["_mbatch_origin_input_dims"]) if "_mbatch_origin_input_dims" in op.attr else None
            for d in op.output_desc[:1]:
                lines.append(f"input    : {d.name or op.name} {_shape(d, dims)} ({d.size} B)")
    for op in g.op:
        if op.type == "NetOutput":
            for k, d in enumerate(op.input_desc):
                name = d.name or (op.input[k] if k < len(op.input) else f"output {k}")
                lines.append(f"output   : {name} {_shape(d)} ({d.size} B)")
    lines += _gear_lines(a)
    for k, m in enumerate(om.models):
        sub_md, sub_mtd, sub_a = (md, mtd, a) if k == 0 else _parse(m)
        lines += _model_lines("root" if len(om.models) > 1 and k == 0 else f"model {k}", m, sub_md, sub_mtd, sub_a)
    decisions = a.get("_sink_decisions")
    decisions = [str(d) for d in decisions] if isinstance(decisions, list) else []
    lines.append(f"tiling sink: {len(decisions)} tiling-dependent op(s)" + (":" if decisions else ""))
    lines += [f"  {d}" for d in decisions]
    lines.append("============ Display Model Info end   ============")
    return "\n".join(lines)
