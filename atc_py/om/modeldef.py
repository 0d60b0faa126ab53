"""IR + memory plan -> ge.proto.ModelDef (MODEL_DEF partition), and back to typed descs for the runner."""
from __future__ import annotations

from ..ir.dtypes import dtype_by_name
from ..ir.graph import Graph, TensorDesc, Value
from ..passes.memory import FEATURE_MAP_BASE, WEIGHT_BASE, MemoryPlan
from ..proto import ge_ir_pb2 as ge
from .attrs import to_attr

OM_PROTO_VERSION = 2


def tensor_desc(d: TensorDesc, name: str = "", size: int | None = None) -> ge.TensorDescriptor:
    td = ge.TensorDescriptor(name=name, dtype=dtype_by_name(d.dtype).proto, layout=d.format,
                             size=d.nbytes if size is None else size, real_dim_cnt=len(d.shape))
    td.shape.dim.extend(d.shape)
    td.attr["origin_format"].CopyFrom(to_attr(d.origin_format))
    td.attr["origin_shape"].CopyFrom(to_attr(list(d.shape)))
    return td


def _src(v: Value) -> str:
    return f"{v.producer.name}:{v.index}"


def op_def(node, node_id: int, plan: MemoryPlan, tiling_info: dict) -> ge.OpDef:
    op = ge.OpDef(name=node.name, type=node.op_type, id=node_id, stream_id=node.meta.get("stream_id", 0))
    for v in node.inputs:
        if v is None:
            op.input.append("")
            continue
        op.input.append(_src(v))
        op.src_name.append(v.producer.name)
        op.src_index.append(v.index)
        if plan.has(v):
            op.input_i.append(plan.address(v))
        op.is_input_const.append(v.is_const)
        op.input_desc.append(tensor_desc(v.desc))
    names = node.attrs.get("output_names") if node.op_type == "NetOutput" else None
    if names:
        for td, n in zip(op.input_desc, names):
            td.name = n
    for v in node.outputs:
        if node.op_type != "NetOutput" and plan.has(v):
            op.output_i.append(plan.address(v))
        td = tensor_desc(v.desc, name=v.name if node.op_type == "Data" else "")
        if plan.is_weight(v):
            td.data_offset = plan.weight_offset[id(v)]
            td.weight_size = v.desc.nbytes
        op.output_desc.append(td)
    for off, size in plan.workspace.get(node.name, []):
        op.workspace.append(FEATURE_MAP_BASE + off)
        op.workspace_bytes.append(size)
    for key in sorted(node.attrs):
        if key == "output_names":
            continue
        op.attr[key].CopyFrom(to_attr(node.attrs[key]))
    if node.op_type == "Const":
        v = node.outputs[0]
        t = ge.TensorDef(desc=tensor_desc(v.desc))
        if plan.is_weight(v):
            t.desc.data_offset = plan.weight_offset[id(v)]
            t.desc.weight_size = v.desc.nbytes
        op.attr["value"].CopyFrom(to_attr(t))
    for key, value in sorted(tiling_info.get(node.name, {}).items()):
        op.attr[key].CopyFrom(to_attr(value))
    if node.op_type == "PartitionedCall":
        op.subgraph_name.append(node.attrs["f"])
    return op


def model_def(graph: Graph, ids: dict[str, int], plan: MemoryPlan, model_attrs: dict, tiling_info: dict,
              name: str) -> ge.ModelDef:
    md = ge.ModelDef(name=name, version=OM_PROTO_VERSION)
    g = md.graph.add(name=graph.name)
    for node in graph.nodes:
        g.op.append(op_def(node, ids[node.name], plan, tiling_info))
    g.input.extend(f"{n.name}:0" for n in graph.data_nodes)
    g.output.extend(_src(v) for v in graph.net_output.inputs)
    attrs = {"memory_size": plan.memory_size, "weight_size": plan.weight_size,
             "task_gen_base_addr": FEATURE_MAP_BASE, "task_gen_weight_addr": WEIGHT_BASE,
             "attr_model_out_nodes_name": [_src(v) for v in graph.net_output.inputs], **model_attrs}
    for key in sorted(attrs):
        md.attr[key].CopyFrom(to_attr(attrs[key]))
    return md
