"""IR + memory plan -> ge.proto.ModelDef (MODEL_DEF partition), and back to typed descs for the om_run.

A back-end stage like the task generation next to it: it reads the memory plan (passes/memory.py), so it
is not part of om/, the container format, which the planner itself uses (om/chunks.py).
"""
from __future__ import annotations

from ..ir.dtypes import dtype_by_name
from ..ir.graph import Graph, TensorDesc, Value, all_graphs
from ..om.attrs import LV, set_attr
from ..passes.memory import FEATURE_MAP_BASE, WEIGHT_BASE, MemoryPlan
from ..proto import ge_ir_pb2 as ge

VT_LIST_INT = LV.VT_LIST_INT

OM_PROTO_VERSION = 2


def tensor_desc(d: TensorDesc, name: str = "", size: int | None = None) -> ge.TensorDescriptor:
    td = ge.TensorDescriptor()
    fill_tensor_desc(td, d, name, size)
    return td


def fill_tensor_desc(td: ge.TensorDescriptor, d: TensorDesc, name: str = "", size: int | None = None) -> None:
    """Fill an empty descriptor in place (e.g. op.input_desc.add()): appending a built one copies it."""
    if name:
        td.name = name
    td.dtype = dtype_by_name(d.dtype).proto
    td.layout = d.format
    td.size = d.nbytes if size is None else size
    td.real_dim_cnt = len(d.shape)
    td.shape.dim.extend(d.shape)
    # the two attrs every descriptor has, filled as set_attr does for a str and an int list (2 of every 3
    # set_attr calls of a DenseNet-121 build went here); anything else takes set_attr's general path
    if type(d.origin_format) is str:
        td.attr["origin_format"].s = d.origin_format.encode()
    else:
        set_attr(td.attr["origin_format"], d.origin_format)
    origin = d.shape if d.origin_shape is None else d.origin_shape
    if all(type(x) is int for x in origin):
        shape_list = td.attr["origin_shape"].list
        shape_list.i.extend(origin)
        shape_list.val_type = VT_LIST_INT
    else:
        set_attr(td.attr["origin_shape"], list(origin))


def _src(v: Value) -> str:
    return f"{v.producer.name}:{v.index}"


def op_def(node, node_id: int, plan: MemoryPlan, tiling_info: dict, op: ge.OpDef | None = None) -> ge.OpDef:
    """The node's OpDef, filled into `op` (an empty one, e.g. graph.op.add()) when given."""
    op = ge.OpDef() if op is None else op
    op.name, op.type, op.id = node.name, node.op_type, node_id
    op.stream_id = node.meta.get("stream_id", 0)
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
        fill_tensor_desc(op.input_desc.add(), v.desc)
    names = node.attrs.get("output_names") if node.op_type == "NetOutput" else None
    if names:
        for td, n in zip(op.input_desc, names):
            td.name = n
    for v in node.outputs:
        if node.op_type != "NetOutput" and plan.has(v):
            op.output_i.append(plan.address(v))
        td = op.output_desc.add()
        fill_tensor_desc(td, v.desc, name=v.name if node.op_type == "Data" else "")
        if plan.is_weight(v):
            td.data_offset = plan.weight_offset[id(v)]
            td.weight_size = v.desc.nbytes
    for off, size in plan.workspace.get(node.name, []):
        op.workspace.append(FEATURE_MAP_BASE + off)
        op.workspace_bytes.append(size)
    for key in sorted(node.attrs):
        if key == "output_names":
            continue
        set_attr(op.attr[key], node.attrs[key])
    if node.op_type == "Const":
        v = node.outputs[0]
        t = op.attr["value"].t
        fill_tensor_desc(t.desc, v.desc)
        if plan.is_weight(v):
            t.desc.data_offset = plan.weight_offset[id(v)]
            t.desc.weight_size = v.desc.nbytes
    for key, value in sorted(tiling_info.get(node.name, {}).items()):
        set_attr(op.attr[key], value)
    if node.op_type == "PartitionedCall":
        op.subgraph_name.append(node.attrs["f"])
    if node.subgraphs:     # GE: the subgraph instance names in the op's IR order; the graphs follow the root
        op.subgraph_name.extend(s.name for s in node.subgraphs.values())
        set_attr(op.attr["_subgraph_ir_names"], list(node.subgraphs))
    return op


def model_def(graph: Graph, ids: dict[str, int], plan: MemoryPlan, model_attrs: dict, tiling_info: dict,
              name: str) -> ge.ModelDef:
    md = ge.ModelDef(name=name, version=OM_PROTO_VERSION)
    for sub in all_graphs(graph):      # the root graph, then every subgraph (GE's ModelDef keeps them so)
        g = md.graph.add(name=sub.name)
        for node in sub.nodes:
            op_def(node, ids[node.name], plan, tiling_info, g.op.add())
        g.input.extend(f"{n.name}:0" for n in sub.data_nodes)
        g.output.extend(_src(v) for v in sub.net_output.inputs)
    attrs = {"memory_size": plan.memory_size, "weight_size": plan.weight_size,
             "task_gen_base_addr": FEATURE_MAP_BASE, "task_gen_weight_addr": WEIGHT_BASE,
             "attr_model_out_nodes_name": [_src(v) for v in graph.net_output.inputs], **model_attrs}
    for key in sorted(attrs):
        set_attr(md.attr[key], attrs[key])
    return md
