"""Models that ask for far more work than their file holds: a tree of If branches that repeat one graph (2^depth
copies), a TensorFlow library whose functions each name the next twice (by If or by call), a Loop carrying a
sequence unrolled into tens of thousands of nodes, an .om whose MODEL_DEF holds such a tree. Each tool must
count the work and refuse it (or do it in time proportional to the file), never run for minutes.

The ONNX tree is written as protobuf bytes directly: a level is its node around two copies of the level below,
so building 18 levels (31 MB) costs one pass over the bytes, not 2^18 message copies."""
from __future__ import annotations

import random

from onnx import TensorProto as TP
from onnx import helper

from atc_py.proto import tf_graph_pb2 as tf


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(num: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return _varint(num << 3 | 2) + _varint(len(payload)) + payload


def _int_field(num: int, value: int) -> bytes:
    return _varint(num << 3) + _varint(value)


_GRAPH_ATTR = 5          # AttributeProto.GRAPH
_OUT = helper.make_tensor_value_info("o", TP.FLOAT, [2, 3]).SerializeToString()


def _if_node(inner: bytes, output: str) -> bytes:
    """NodeProto If(c) -> output, both branches the serialized GraphProto `inner`."""
    attrs = b"".join(_field(5, _field(1, name.encode()) + _field(6, inner) + _int_field(20, _GRAPH_ATTR))
                     for name in ("then_branch", "else_branch"))
    return _field(1, b"c") + _field(2, output.encode()) + _field(4, b"If") + attrs


def onnx_if_tree(depth: int) -> bytes:
    """y = If(c, ...) nested `depth` deep (the top If included), every branch a copy of the level below; the
    leaves are Relu(x). 2^(depth+1) - 2 subgraphs in a file of ~120 * 2^depth bytes."""
    leaf = helper.make_graph([helper.make_node("Relu", ["x"], ["o"])], "leaf", [],
                             [helper.make_tensor_value_info("o", TP.FLOAT, [2, 3])]).SerializeToString()
    g = leaf
    for d in range(1, depth):
        g = _field(1, _if_node(g, "o")) + _field(2, f"level{d}".encode()) + _field(12, _OUT)
    top = helper.make_model(helper.make_graph([], "tree", [helper.make_tensor_value_info("x", TP.FLOAT, [2, 3]),
                                                            helper.make_tensor_value_info("c", TP.BOOL, [])],
                                              [helper.make_tensor_value_info("y", TP.FLOAT, [2, 3])]),
                            opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    # a second `graph` field merges into the first: the If joins its (empty) node list
    return top.SerializeToString() + _field(7, _field(1, _if_node(g, "y")))


def onnx_unrolled_loop(trip: int, per_body: int) -> bytes:
    """seq <- SequenceInsert(seq, f(x)) `trip` times, f a chain of per_body - 2 Add / Mul: the loop carries a
    sequence, so it is unrolled when imported (trip x per_body nodes), then concatenated."""
    vi, seq = helper.make_tensor_value_info, lambda n: helper.make_tensor_sequence_value_info(n, TP.FLOAT, [4])
    nodes, prev = [helper.make_node("Identity", ["c_in"], ["c_out"])], "x"
    for k in range(per_body - 2):
        nodes.append(helper.make_node("Mul" if k % 2 else "Add", [prev, "w"], [f"t{k}"]))
        prev = f"t{k}"
    nodes.append(helper.make_node("SequenceInsert", ["s_in", prev], ["s_out"]))
    body = helper.make_graph(nodes, "body", [vi("i", TP.INT64, []), vi("c_in", TP.BOOL, []), seq("s_in")],
                             [vi("c_out", TP.BOOL, []), seq("s_out")])
    g = helper.make_graph([helper.make_node("SequenceEmpty", [], ["s0"], dtype=TP.FLOAT),
                           helper.make_node("Loop", ["M", "c0", "s0"], ["s"], body=body, name="grow"),
                           helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=0)],
                          "loop", [vi("x", TP.FLOAT, [4]), vi("w", TP.FLOAT, [4])], [vi("y", TP.FLOAT, None)],
                          [helper.make_tensor("c0", TP.BOOL, [], [True]), helper.make_tensor("M", TP.INT64, [], [trip])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8).SerializeToString()


def _tf_node(name: str, op: str, inputs: list[str], **attrs) -> tf.NodeDef:
    n = tf.NodeDef(name=name, op=op, input=inputs)
    for k, v in attrs.items():
        if isinstance(v, str):
            n.attr[k].func.name = v
        elif isinstance(v, list):
            n.attr[k].list.type.extend(v)
        else:
            n.attr[k].type = v
    return n


def tf_function_tree(depth: int, by_call: bool = False) -> bytes:
    """A GraphDef whose library holds f0 (Relu) and f1..f_depth, each naming the one below twice: as both
    branches of a StatelessIf, or (by_call) through two PartitionedCalls in a row; the graph calls f_depth by
    an If. Under 3 KB for any depth, 2^depth copies once converted."""
    fl, bl = 1, 10                                     # DT_FLOAT, DT_BOOL
    gd = tf.GraphDef()

    def function(name: str, nodes: list, ret: str) -> None:
        f = gd.library.function.add()
        f.signature.name = name
        f.signature.input_arg.add(name="p", type=bl)
        f.signature.input_arg.add(name="x", type=fl)
        f.signature.output_arg.add(name="y", type=fl)
        f.node_def.extend(nodes)
        f.ret["y"] = ret
    function("f0", [_tf_node("r", "Relu", ["x"], T=fl)], "r:activations:0")
    for d in range(1, depth + 1):
        below = f"f{d - 1}"
        if by_call:
            function(f"f{d}", [_tf_node("c1", "PartitionedCall", ["p", "x"], f=below, Tin=[bl, fl], Tout=[fl]),
                               _tf_node("c2", "PartitionedCall", ["p", "c1:output:0"], f=below, Tin=[bl, fl],
                                        Tout=[fl])], "c2:output:0")
        else:
            function(f"f{d}", [_tf_node("i", "StatelessIf", ["p", "p", "x"], then_branch=below, else_branch=below,
                                        Tcond=bl, Tin=[bl, fl], Tout=[fl])], "i:output:0")
    x = gd.node.add(name="x", op="Placeholder")
    x.attr["dtype"].type = fl
    x.attr["shape"].shape.dim.add().size = 2
    x.attr["shape"].shape.dim.add().size = 3
    p = gd.node.add(name="p", op="Placeholder")
    p.attr["dtype"].type = bl
    p.attr["shape"].shape.SetInParent()
    gd.node.append(_tf_node("top", "StatelessIf", ["p", "p", "x"], then_branch=f"f{depth}",
                            else_branch=f"f{depth}", Tcond=bl, Tin=[bl, fl], Tout=[fl]))
    gd.node.append(_tf_node("out", "Identity", ["top"], T=fl))
    return gd.SerializeToString()


def om_if_tree(md, depth: int) -> None:
    """Turn the MODEL_DEF of a compiled one-If model into an If tree `depth` deep in place: every graph below
    the root holds a copy of the root's If naming two copies of the level below; the leaves are copies of the
    then-branch. 2^(depth+1) - 1 graphs."""
    root = md.graph[0]
    if_op = next(op for op in root.op if op.type == "If")
    leaf = next(g for g in md.graph if g.name == if_op.subgraph_name[0])
    graphs = []

    def level(d: int, tag: str) -> str:
        g = type(root)()
        if d == 0:
            g.CopyFrom(leaf)
        else:
            g.op.add().CopyFrom(if_op)
            del g.op[0].subgraph_name[:]
            g.op[0].subgraph_name.extend([level(d - 1, tag + "t"), level(d - 1, tag + "e")])
        g.name = f"tree_{tag}"
        graphs.append(g)
        return g.name
    names = [level(depth - 1, "t"), level(depth - 1, "e")]
    del if_op.subgraph_name[:]
    if_op.subgraph_name.extend(names)
    del md.graph[1:]
    md.graph.extend(graphs)


def onnx_work_bomb(rng: random.Random) -> tuple[bytes, str]:
    """One of the ONNX cases for the fuzz campaign."""
    if rng.random() < 0.5:
        depth = rng.choice([12, 13, 14])
        return onnx_if_tree(depth), f"work: If tree {depth} deep"
    trip, per = rng.choice([(3000, 20), (4096, 20), (2000, 40), (4096, 9)])
    return onnx_unrolled_loop(trip, per), f"work: Loop over a sequence unrolled {trip} x {per} nodes"


def tf_work_bomb(rng: random.Random) -> tuple[bytes, str]:
    """One of the TensorFlow cases for the fuzz campaign."""
    depth, by_call = rng.choice([12, 14, 18, 24]), rng.random() < 0.5
    return tf_function_tree(depth, by_call), f"work: library functions {depth} deep, {'calls' if by_call else 'If'}"
