"""`--mode=6` / `--display_model_info=1`: a readable report of an .om (GE's PrintModelInfo, extended)."""
from __future__ import annotations

from collections import Counter

from ..engines.task_types import TASK_TYPE_NAMES
from ..proto import ge_ir_pb2 as ge
from ..proto import task_pb2
from . import partitions as pt
from .attrs import from_attr
from .container import OmFile


def model_info(om: OmFile) -> str:
    m = om.models[0]
    md = ge.ModelDef()
    md.ParseFromString(m.get(pt.MODEL_DEF) or b"")
    mtd = task_pb2.ModelTaskDef()
    mtd.ParseFromString(m.get(pt.TASK_INFO) or b"")
    a = {k: from_attr(v) for k, v in md.attr.items()}
    info = a.get("om_info_list", [0, 0, 0, 0, 0]) + [0] * 5
    lines = ["============ Display Model Info start ============",
             f"Original Atc command line: {a.get('atc_cmdline', '')}",
             f"system   info: atc_version[{a.get('atc_version', '')}], soc_version[{a.get('soc_version', '')}], "
             f"framework_type[{a.get('framework_type', '')}].",
             f"resource info: memory_size[{a.get('memory_size', 0)} B], weight_size[{a.get('weight_size', 0)} B], "
             f"stream_num[{a.get('stream_num', 0)}], event_num[{a.get('event_num', 0)}].",
             f"om       info: modeldef_size[{len(m.get(pt.MODEL_DEF) or b'')} B], weight_data_size[{info[0]} B], "
             f"tbe_kernels_size[{info[1]} B], cust_aicpu_kernel_store_size[{info[2]} B], "
             f"task_info_size[{info[3]} B], so_store_size[{info[4]} B]."]
    g = md.graph[0] if md.graph else ge.GraphDef()
    for op in g.op:
        if op.type == "Data":
            d = op.output_desc[0]
            lines.append(f"input    info: {d.name or op.name} {ge.DataType.Name(d.dtype)} {list(d.shape.dim)} {d.layout}")
        if op.type == "NetOutput":
            for k, d in enumerate(op.input_desc):
                lines.append(f"output   info: {d.name or op.input[k]} {ge.DataType.Name(d.dtype)} {list(d.shape.dim)}")
    tasks = Counter(TASK_TYPE_NAMES.get(t.type, str(t.type)) for t in mtd.task)
    lines.append("task     info: " + ", ".join(f"{k}[{v}]" for k, v in sorted(tasks.items())) + f", total[{len(mtd.task)}].")
    engines = Counter(from_attr(op.attr["_ge_attr_op_kernel_lib_name"]) + "/" + from_attr(op.attr["_cube_vector_core_type"])
                      for op in g.op if "_ge_attr_op_kernel_lib_name" in op.attr)
    lines.append("op       info: " + ", ".join(f"{k}[{v}]" for k, v in sorted(engines.items())) + f", total[{len(g.op)}].")
    lines.append(f"model    info: models[{om.header.model_num}], is_unknow_model[{om.header.is_unknow_model}].")
    lines.append("============ Display Model Info end   ============")
    return "\n".join(lines)
