"""TensorFlow library functions and functional control flow.

* PartitionedCall / StatefulPartitionedCall: the called function's body is inlined into the graph (XLA
  attributes such as _XlaMustCompile are ignored).
* While / StatelessWhile, If / StatelessIf, Case: their cond / body / branch functions become IR subgraphs of
  GE's While / If / Case (function arguments are the subgraph's Data nodes, in order).
* TensorList*: a list is a dense tensor [num_elements, *element_shape] (TensorListReserve: zeros,
  FromTensor: the tensor, GetItem: a row gathered at a device index, SetItem: InplaceUpdate of that row,
  Stack: the tensor, Length: its first dim) — so a Keras RNN's loop carries plain tensors.

A function body names its inputs by argument name and other values as "node:output_arg:index"
(function.proto); `tensor` resolves both.
"""
from __future__ import annotations

import numpy as np

from ...common.errors import AtcError
from ...engines.labels import STREAM_SWITCH_IF
from ...ir.graph import Graph, TensorDesc, Value
from ...ops.core.infer import infer_node
from ...proto import tf_graph_pb2 as tf
from .adapters import TfAdapterError, tf_op
from .functionalize import V1_COND

# output args of the ops whose outputs are not one list (flat index = position of the arg + index in it)
OUTPUT_ARGS = {"FusedBatchNorm": ("y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2"),
               "FusedBatchNormV3": ("y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2",
                                    "reserve_space_3"),
               "TopKV2": ("values", "indices"), "Unique": ("y", "idx")}
MAX_CALL_DEPTH = 64


def library(conv) -> dict[str, tf.FunctionDef]:
    return {f.signature.name: f for f in conv.gd.library.function}


def function_of(ctx, attr: str) -> tf.FunctionDef:
    a = ctx.node.attr.get(attr)
    name = a.func.name if a is not None and a.WhichOneof("value") == "func" else ""
    fn = library(ctx.conv).get(name)
    if fn is None:
        raise TfAdapterError(f"attribute {attr} names function {name!r}, which the graph's library does not have")
    return fn


def convert_body(conv, fn: tf.FunctionDef, graph: Graph, args: list[Value]) -> list[Value]:
    """Convert a function body into `graph` with its input args bound to `args`; returns its outputs."""
    from .converter import TfConverter
    depth = getattr(conv, "depth", 0) + 1
    if depth > MAX_CALL_DEPTH:
        raise TfAdapterError(f"function {fn.signature.name} nests calls more than {MAX_CALL_DEPTH} deep (recursion?)")
    if len(args) != len(fn.signature.input_arg):
        raise TfAdapterError(f"function {fn.signature.name} takes {len(fn.signature.input_arg)} arguments, "
                             f"the call passes {len(args)}")
    body = TfConverter(tf.GraphDef(node=fn.node_def, library=conv.gd.library), None, conv.input_format, conv.path,
                       conv.soc)
    body.graph, body.depth, body.function, body.budget = graph, depth, fn, conv.budget
    body.ops = {n.name: n.op for n in fn.node_def}
    for a, v in zip(fn.signature.input_arg, args):
        body.outputs[a.name] = [v]
    body.convert()
    outs = []
    for a in fn.signature.output_arg:
        ref = fn.ret.get(a.name)
        if ref is None:
            raise TfAdapterError(f"function {fn.signature.name} does not return its output {a.name}")
        outs.append(body.tensor(ref))
    return outs


def resolve_function_ref(conv, ref: str) -> tuple[str, int]:
    """'node:out_arg:k' -> (node, flat output index); an argument name -> (it, 0)."""
    parts = ref.split(":")
    if len(parts) == 1:
        return ref, 0
    if len(parts) != 3 or not parts[2].isdigit() or len(parts[2]) > 6:
        raise AtcError("E12009", input=ref, opname=conv.current)
    node, arg, k = parts[0], parts[1], int(parts[2])
    args = OUTPUT_ARGS.get(conv.ops.get(node, ""))
    if args and arg in args:
        return node, args.index(arg) + k
    return node, k


def _subgraph(conv, fn: tf.FunctionDef, descs: list[TensorDesc], tag: str) -> Graph:
    conv.budget.add_subgraph()
    root = conv.graph
    g = Graph(root.unique_name(f"{tag}_{fn.signature.name}".replace("/", "_")), namespace=root)
    root._names.add(g.name)
    args = []
    for k, d in enumerate(descs):
        node = g.add_node(g.unique_name(f"{g.name}_arg{k}"), "Data",
                          out_descs=[TensorDesc(d.shape, d.dtype, d.format, d.origin_format)], attrs={"index": k})
        args.append(node.outputs[0])
    outs = convert_body(conv, fn, g, args)
    g.add_node(g.unique_name(f"{g.name}_NetOutput"), "NetOutput", outs, [],
               attrs={"output_names": [a.name for a in fn.signature.output_arg]})
    return g


def _control(ctx, op_type: str, inputs: list[Value], subgraphs: dict[str, Graph], n_out: int) -> list[Value]:
    g = ctx.conv.graph
    # named now, not before its subgraphs were converted: a branch holding the same function's If took the name
    node = g.add_node(g.unique_name(ctx.name), op_type, inputs, [TensorDesc((), "float32")] * n_out, {})
    node.subgraphs = subgraphs
    infer_node(node)
    return node.outputs


@tf_op("PartitionedCall", "StatefulPartitionedCall")
def partitioned_call(ctx):
    fn = function_of(ctx, "f")
    return convert_body(ctx.conv, fn, ctx.conv.graph, [ctx.input(i) for i in range(ctx.n_inputs)])


@tf_op("While", "StatelessWhile")
def while_(ctx):
    args = [ctx.input(i) for i in range(ctx.n_inputs)]
    descs = [v.desc for v in args]
    cond = _subgraph(ctx.conv, function_of(ctx, "cond"), descs, f"{ctx.name}_cond")
    body = _subgraph(ctx.conv, function_of(ctx, "body"), descs, f"{ctx.name}_body")
    return _control(ctx, "While", args, {"cond": cond, "body": body}, len(args))


@tf_op("If", "StatelessIf")
def if_(ctx):
    args = [ctx.input(i) for i in range(1, ctx.n_inputs)]
    descs = [v.desc for v in args]
    then = _subgraph(ctx.conv, function_of(ctx, "then_branch"), descs, f"{ctx.name}_then")
    els = _subgraph(ctx.conv, function_of(ctx, "else_branch"), descs, f"{ctx.name}_else")
    pred = ctx.input(0)
    if pred.desc.shape != ():
        pred = ctx.emit("Reshape", [pred, ctx.make_const("scalar", np.zeros(0, np.int64))], suffix="pred")[0]
    outs = _control(ctx, "If", [pred] + args, {"then_branch": then, "else_branch": els},
                    len(then.net_output.inputs))
    if V1_COND in ctx.node.attr:       # rebuilt from a v1 Switch / Merge cond: GE's StreamSwitch lowering
        outs[0].producer.attrs[STREAM_SWITCH_IF] = True
    return outs


@tf_op("Case", "StatelessCase")
def case(ctx):
    args = [ctx.input(i) for i in range(1, ctx.n_inputs)]
    descs = [v.desc for v in args]
    lib = library(ctx.conv)
    a = ctx.node.attr.get("branches")
    names = [f.name for f in a.list.func] if a is not None else []
    if not names or any(n not in lib for n in names):
        raise TfAdapterError("attribute branches does not name functions of the graph's library")
    subs = {f"branches_{k}": _subgraph(ctx.conv, lib[n], descs, f"{ctx.name}_branch{k}") for k, n in enumerate(names)}
    return _control(ctx, "Case", [ctx.input(0)] + args, subs, len(subs["branches_0"].net_output.inputs))


# -- TensorList: dense tensors ---------------------------------------------------------------------------------
def _ints(ctx, i: int, what: str) -> list[int]:
    return ctx.const_ints(i, what)


@tf_op("TensorListReserve")
def tensor_list_reserve(ctx):
    shape = _ints(ctx, 0, "element_shape")
    n = _ints(ctx, 1, "num_elements")[0]
    if n < 0 or any(d < 0 for d in shape):
        raise TfAdapterError(f"the list's size {n} and element shape {shape} must be known when compiling "
                             "(give --input_shape for unknown batch dims)")
    dt = ctx.attr("element_dtype")
    from .values import dtype_name
    ctx.conv_budget = None
    return [ctx.make_const("zeros", np.zeros([n] + shape, dtype_name(dt)))]


@tf_op("TensorListFromTensor")
def tensor_list_from_tensor(ctx):
    return [ctx.input(0)]


@tf_op("TensorListStack")
def tensor_list_stack(ctx):
    return [ctx.input(0)]


@tf_op("TensorListGetItem")
def tensor_list_get_item(ctx):
    return ctx.emit("GatherV2D", [ctx.input(0), ctx.input(1)], {"axis": 0})


@tf_op("TensorListSetItem")
def tensor_list_set_item(ctx):
    lst, idx, item = ctx.input(0), ctx.input(1), ctx.input(2)
    row = ctx.emit("Unsqueeze", [idx], {"axes": [0]}, suffix="row")[0]
    elem = ctx.emit("Unsqueeze", [item], {"axes": [0]}, suffix="elem")[0]
    return ctx.emit("InplaceUpdate", [lst, row, elem])


@tf_op("TensorListLength")
def tensor_list_length(ctx):
    return [ctx.make_const("length", np.array(ctx.input(0).desc.shape[0], np.int32))]
