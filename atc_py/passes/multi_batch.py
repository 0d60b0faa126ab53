"""One graph for all gears, as GE's MultiBatchClonePass builds it:

    Data x.. (largest gear)  ascend_mbatch_shape_data (int32[k])  ascend_mbatch_shape_const (the gears)
            \\                          \\                    /
             \\                   ascend_mbatch_shape_mapindex (MapIndex: which gear)
              \\                       /
               ascend_mbatch_shape_case (Case; branch i = the model at gear i) -> NetOutput

Each branch is the model converted at that gear's shapes (the frontend ran once per gear, so value-aware import
and folding see static shapes, as they would for a static build). The branch's Data k reads the Case's input
k in place: the gear's tensor is the first bytes of the input buffer, which is sized for the largest gear;
its results are copied to the front of the Case's outputs, sized the same way. The runtime writes the gear's
dims into the shape-data input (aclmdlSetDynamicBatchSize and co.; om-run does it from --dymBatch / --dymHW /
--dymDims or from the inputs' shapes). Memory is planned once: the branches share one arena
(passes/control_memory.py), the largest gear's.
"""
from __future__ import annotations

import json

import numpy as np

from ..common.errors import AtcError
from ..ir.graph import Graph, TensorDesc, all_graphs
from ..ops.control import MBATCH_NODE, case_branch_keys  # GE ATTR_INSERT_BY_MBATCH
from ..options.gears import DYNAMIC_TYPE, GearSpec

CASE, DATA, CONST, MAP_INDEX = ("ascend_mbatch_shape_case", "ascend_mbatch_shape_data", "ascend_mbatch_shape_const",
                                "ascend_mbatch_shape_mapindex")
BRANCH_SUFFIX = "_ascend_mbatch_batch_"

ORIGIN_DIMS = "_mbatch_origin_input_dims"     # GE ATTR_MBATCH_ORIGIN_INPUT_DIMS: the input's dims, -1 where gears differ
ALL_GEARS = "all_gears_info"                  # GE ATTR_ALL_GEARS_INFO (NetOutput, and a model attribute here)
SHAPE_ORDER = "user_designate_shape_order"    # GE ATTR_USER_DESIGNEATE_SHAPE_ORDER
DYNAMIC_TYPE_ATTR = "mbatch_dynamic_type"     # GE ATTR_DYNAMIC_TYPE
INPUT_SHAPES = "_mbatch_input_shapes"         # per gear, each model input's shape (JSON): what om-run feeds
OUTPUT_SHAPES = "_mbatch_output_shapes"       # per gear, each output's shape (JSON): what om-run reads back


def _gear_error(reason: str) -> AtcError:
    return AtcError("E10001", value="--input_shape", parameter="--dynamic_batch_size/--dynamic_image_size/"
                    "--dynamic_dims", reason=reason)


def _adopt(g: Graph, root: Graph, k: int) -> Graph:
    """Rename the gear graph's nodes and subgraphs (names are unique model-wide) into root's namespace."""
    suffix = f"{BRANCH_SUFFIX}{k}"
    for sub in all_graphs(g):
        sub.name += suffix
        for n in sub.nodes:
            n.name += suffix
    names = {n.name for sub in all_graphs(g) for n in sub.nodes} | {sub.name for sub in all_graphs(g)}
    clash = names & root._names
    if clash:
        raise AtcError("E19999", message=f"multi-batch: node name {sorted(clash)[0]} is used twice")
    root._names |= names
    for sub in all_graphs(g):
        sub._names = root._names
    return g


def _inputs(graphs: list[Graph]) -> list[list]:
    """Each gear graph's Data nodes in index order; the gears must agree on their number and dtypes."""
    per = [sorted(g.data_nodes, key=lambda d: int(d.attrs.get("index", 0))) for g in graphs]
    for g, datas in zip(graphs[1:], per[1:]):
        if len(datas) != len(per[0]) or any(a.outputs[0].desc.dtype != b.outputs[0].desc.dtype
                                            or len(a.outputs[0].desc.shape) != len(b.outputs[0].desc.shape)
                                            for a, b in zip(per[0], datas)):
            raise _gear_error(f"the model's inputs differ between gears ({g.name})")
    for datas in per:
        for d in datas:
            if not d.outputs[0].desc.known:
                raise _gear_error(f"input {d.name} still has dynamic dims {list(d.outputs[0].desc.shape)} at a gear; "
                                  "every dynamic input must be set with -1 in --input_shape")
    return per


def _max_desc(descs: list[TensorDesc]) -> TensorDesc:
    d0 = descs[0]
    shape = tuple(max(d.shape[a] for d in descs) for a in range(len(d0.shape)))
    return TensorDesc(shape, d0.dtype, d0.format, d0.origin_format)


def assemble(graphs: list[Graph], spec: GearSpec) -> Graph:
    """The root graph over the gear graphs (each already converted at its gear), in gear order."""
    first = graphs[0]
    per = _inputs(graphs)
    root = Graph(first.name)
    root.counters = dict(first.counters)
    args = []
    for k, d in enumerate(per[0]):
        attrs = {a: v for a, v in d.attrs.items() if a != "_shape_range"}
        descs = [datas[k].outputs[0].desc for datas in per]
        desc = _max_desc(descs)
        if any(x.shape != desc.shape for x in descs):    # shown as the gears' common shape, -1 where they differ
            attrs[ORIGIN_DIMS] = [d0 if all(x.shape[a] == d0 for x in descs) else -1
                                  for a, d0 in enumerate(descs[0].shape)]
        node = root.add_node(d.name, "Data", [], [desc], attrs, out_names=[d.outputs[0].name])
        args.append(node.outputs[0])
    width = len(spec.gears[0])
    shape_data = root.add_node(DATA, "Data", [], [TensorDesc((width,), "int32")], {"index": len(args)},
                               out_names=[DATA])
    table = root.add_const(CONST, np.array(spec.gears, dtype=np.int32).reshape(-1))
    index = root.add_node(MAP_INDEX, "MapIndex", [shape_data.outputs[0], table], [TensorDesc((), "int32")])
    nets = [g.net_output for g in graphs]
    if len({len(n.inputs) for n in nets}) != 1:
        raise _gear_error("the model's outputs differ between gears")
    outs = [_max_desc([n.inputs[k].desc for n in nets]) for k in range(len(nets[0].inputs))]
    attrs = {MBATCH_NODE: True, "_batch_num": len(graphs), SHAPE_ORDER: [str(key) for key, _ in spec.slots],
             DYNAMIC_TYPE_ATTR: DYNAMIC_TYPE[spec.kind],
             **{f"_pred_value_{k}": list(g) for k, g in enumerate(spec.gears)}}
    case = root.add_node(CASE, "Case", [index.outputs[0]] + args, outs, attrs)
    for key, (k, g) in zip(case_branch_keys(len(graphs)), enumerate(graphs)):
        for d in g.data_nodes:
            d.attrs.pop("_shape_range", None)
        case.subgraphs[key] = _adopt(g, root, k)
    net_attrs = {a: v for a, v in nets[0].attrs.items()}
    if "output_names" not in net_attrs:
        net_attrs["output_names"] = [v.name for v in nets[0].inputs]
    net_attrs[ALL_GEARS] = spec.info
    root.add_node("NetOutput", "NetOutput", list(case.outputs), [], net_attrs)
    return root


def gear_attrs(root: Graph, spec: GearSpec) -> dict:
    """The model attributes om-run and --mode=6 read: the gear kind and list, and per gear the shapes of the
    inputs (as the branch reads them) and of the outputs (as the branch writes them)."""
    case = root.node(CASE)
    branches = [case.subgraphs[k] for k in case_branch_keys(len(case.subgraphs))]
    ins, outs = [], []
    for b in branches:
        datas = sorted(b.data_nodes, key=lambda d: int(d.attrs.get("index", 0)))
        ins.append([list(d.outputs[0].desc.shape) for d in datas])
        outs.append([list(v.desc.shape) for v in b.net_output.inputs])
    return {"batch_num": len(branches), DYNAMIC_TYPE_ATTR: DYNAMIC_TYPE[spec.kind], ALL_GEARS: spec.info,
            SHAPE_ORDER: [str(key) for key, _ in spec.slots],
            INPUT_SHAPES: json.dumps(ins), OUTPUT_SHAPES: json.dumps(outs)}
