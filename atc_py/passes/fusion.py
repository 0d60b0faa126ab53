"""Fusions that cut tasks without changing numbers (beyond float rounding):

* transpose_cancel: TransposeD -> TransposeD composes into one permutation; the identity permutation
  disappears (the NHWC TensorFlow adapters leave such pairs between consecutive window ops).
* bn_conv_fold: Conv2D with constant filter (and bias) followed by inference BNInfer with constant
  statistics -> one Conv2D with scaled filter and shifted bias; likewise the BatchNorm exporters already
  decomposed (Keras 3 freezes it as Conv -> per-channel Mul -> per-channel Add): the Mul scales the filter
  and the bias, the Add joins the bias.
* matmul_bias: (Batch)MatMulV2 without bias followed by Add of a constant vector of length N -> with bias.
* conv_bias: Conv2D followed by Add of a per-channel constant -> Conv2D with (that added to) its bias
  (TensorFlow's BiasAdd once transpose_sink.py has moved the NHWC transposes out of the way).
* relu_fusion: Conv2D, Add or AddN followed by Relu -> that op with the Relu in its epilogue (fused_relu).
* conv_add_fusion: Conv2D whose only consumer adds another tensor of its shape (a residual: Add or two-input AddN,
  with its fused Relu) -> the Conv2D with that tensor as its `residual` input, added on its fp32 result before
  the epilogue (CANN's UB fusion "TbeConvElemwiseReluFusion" of conv + elementwise with another input + relu,
  ops/built-in/fusion_pass/buffer_fusion/ub_fusion/ai_core/conv/tbe_conv_double_in_fusion_pass.cc): the conv's
  result and the add's second read of it never go through memory.

None rewrites a custom op (a plugin's op of a builtin type, --op_plugin): its own kernel runs, as CANN's custom
op priority has it. Each returns how many rewrites it made; each can be switched off with --optimization_switch
NAME:off."""
from __future__ import annotations

import numpy as np

from ..ir.graph import Graph, Node, TensorDesc, Value, absorb
from ..ops import get_op
from .const_jobs import ConstJobs, deferred, reader


def _custom(*nodes: Node | None) -> bool:
    """Whether a plugin's op is among the nodes (its own kernel runs: no rewrite folds it into another's)."""
    return any(spec is not None and spec.is_custom for spec in (get_op(n.op_type) for n in nodes if n is not None))


def _only_consumer(v: Value) -> Node | None:
    if len(v.consumers) != 1:
        return None
    node, _ = v.consumers[0]
    return node if node.op_type != "NetOutput" else None


def _set_bias(graph: Graph, node: Node, bias: Value) -> None:
    """Input 2 (bias) of a Conv2D / MatMulV2, replaced or appended."""
    if len(node.inputs) > 2:
        graph.set_input(node, 2, bias)
    else:
        node.inputs.append(bias)
        bias.consumers.append((node, 2))


def _adds_of_a_constant(graph: Graph, op_types: tuple[str, ...]):
    """(add, output of an op_types node whose only consumer is the add, the constant operand) in graph order."""
    for add in list(graph.nodes):
        if add.op_type != "Add":
            continue
        for k in (0, 1):
            out, c = add.inputs[k], add.inputs[1 - k]
            if out.producer is not None and out.producer.op_type in op_types and c.is_const and \
                    _only_consumer(out) is add and add.outputs[0].desc.shape == out.desc.shape and \
                    not _custom(add, out.producer):
                yield add, out, c
                break


def transpose_cancel(graph: Graph) -> int:
    changed, removed = 0, set()
    for node in list(graph.nodes):
        if node.op_type != "TransposeD" or id(node) in removed or _custom(node):
            continue
        src = node.inputs[0]
        first = src.producer
        perm = [int(p) for p in node.attrs["perm"]]
        if first is not None and first.op_type == "TransposeD" and len(src.consumers) == 1:
            inner = [int(p) for p in first.attrs["perm"]]
            perm = [inner[p] for p in perm]            # y[i] = x[inner[perm[i]]]
            graph.set_input(node, 0, first.inputs[0])
            node.attrs["perm"] = perm
            graph.remove_node(first)
            removed.add(id(first))
            changed += 1
        if perm == list(range(len(perm))):
            out = node.outputs[0]
            feeds_output = any(c.op_type == "NetOutput" for c, _ in out.consumers)
            x = node.inputs[0]
            if feeds_output and x.producer is not None and x.producer.op_type in ("Data", "Const"):
                continue
            graph.replace_all_uses(out, x)
            graph.remove_node(node)
            changed += 1
    return changed


def bn_conv_fold(graph: Graph, jobs: ConstJobs | None = None) -> int:
    """Big filters are scaled on host threads; waited for here unless the caller passes `jobs`."""
    changed = 0
    own = jobs is None
    jobs = ConstJobs(graph) if own else jobs
    scaled: dict[tuple, Value] = {}
    for bn in list(graph.nodes):
        if bn.op_type != "BNInfer":
            continue
        x = bn.inputs[0]
        conv = x.producer
        if conv is None or conv.op_type != "Conv2D" or _only_consumer(x) is not bn or _custom(conv, bn):
            continue
        w, b = conv.inputs[1], conv.inputs[2] if len(conv.inputs) > 2 else None
        stats = bn.inputs[1:5]
        if not w.is_const or (b is not None and not b.is_const) or not all(s is not None and s.is_const for s in stats):
            continue
        scale, offset, mean, var = (s.data.astype(np.float64) for s in stats)
        k = scale / np.sqrt(var + float(bn.attrs.get("epsilon", 1e-5)))
        bias = b.data.astype(np.float64) if b is not None else np.zeros(w.desc.shape[0])
        # the per-channel factor in float64, the filter product in the filter's own precision (fp32 for fp16/fp32:
        # one correctly rounded multiply, without float64 copies of a 100 MB filter bank)
        acc = np.float64 if w.desc.dtype == "float64" else np.float32
        factor = k.astype(acc).reshape(-1, 1, 1, 1)
        new_b = ((bias - mean) * k + offset).astype(w.desc.dtype)
        key = (id(w), factor.tobytes())   # convs sharing a filter and BN statistics share the scaled filter
        new_w = scaled.get(key)
        if new_w is None:
            filter_name = graph.unique_name(f"{conv.name}_bn_filter")
            if deferred(w.desc, [w]):
                new_w = jobs.add(filter_name, w.desc, lambda f=reader(w), s=factor: f().astype(s.dtype, copy=False) * s,
                                 f"BN folding into node {conv.name}", [w])
            else:
                new_w = graph.add_const(filter_name, (w.data.astype(acc, copy=False) * factor).astype(w.desc.dtype))
            scaled[key] = new_w
        graph.set_input(conv, 1, new_w)
        _set_bias(graph, conv, graph.add_const(graph.unique_name(f"{conv.name}_bn_bias"), new_b))
        graph.replace_all_uses(bn.outputs[0], conv.outputs[0])
        absorb(conv, bn)
        graph.remove_node(bn)
        changed += 1
    if own:
        jobs.wait()
    return changed + scale_conv_fold(graph)


def _per_channel(c: Value, cout: int) -> np.ndarray | None:
    """A constant that multiplies / adds per output channel of an NCHW conv output: its values, one per channel."""
    if not c.is_const or len(c.desc.shape) > 4:
        return None
    shape = (1,) * (4 - len(c.desc.shape)) + tuple(c.desc.shape)
    if shape not in ((1, cout, 1, 1), (1, 1, 1, 1)):
        return None
    return np.broadcast_to(c.data.reshape(-1), (cout,)).astype(np.float64)


def _const_operand(node: Node, v: Value) -> Value | None:
    """The other operand of a binary node one of whose inputs is v."""
    a, b = node.inputs[0], node.inputs[1]
    return b if a is v else a if b is v else None


def scale_conv_fold(graph: Graph) -> int:
    """Conv2D -> Mul(per-channel constant) [-> Add(per-channel constant)] -> one Conv2D (decomposed BatchNorm)."""
    changed, gone = 0, []
    for conv in list(graph.nodes):
        if conv.op_type != "Conv2D" or conv.attrs.get("fused_relu"):
            continue
        out = conv.outputs[0]
        mul = _only_consumer(out)
        w, b = conv.inputs[1], conv.inputs[2] if len(conv.inputs) > 2 else None
        if mul is None or mul.op_type != "Mul" or _custom(conv, mul, _only_consumer(mul.outputs[0])) or \
                not w.is_const or (b is not None and not b.is_const) or \
                mul.outputs[0].desc.shape != out.desc.shape or w.desc.dtype not in ("float32", "float16", "float64"):
            continue
        cout = out.desc.shape[1]
        scale = _per_channel(_const_operand(mul, out), cout)
        if scale is None:
            continue
        bias = (b.data.astype(np.float64) if b is not None else np.zeros(cout)) * scale
        add = _only_consumer(mul.outputs[0])
        shift = _per_channel(_const_operand(add, mul.outputs[0]), cout) if add is not None and add.op_type == "Add" \
            and add.outputs[0].desc.shape == out.desc.shape else None
        acc = np.float64 if w.desc.dtype == "float64" else np.float32
        factor = scale.astype(acc).reshape(-1, 1, 1, 1)
        filter_name = graph.unique_name(f"{conv.name}_scaled_filter")
        if w.lazy:   # a filter left in its file: scaled when the weights are written, not held from now on
            new_v = graph.add_lazy_const(filter_name, TensorDesc(w.desc.shape, w.desc.dtype), lambda f=reader(w), s=factor, d=w.desc.dtype:
                                         (f().astype(s.dtype, copy=False) * s).astype(d))
        else:
            new_v = graph.add_const(filter_name, (w.data.astype(acc, copy=False) * factor).astype(w.desc.dtype))
        graph.set_input(conv, 1, new_v)
        last = mul
        if shift is not None:
            bias = bias + shift
            last = add
        _set_bias(graph, conv, graph.add_const(graph.unique_name(f"{conv.name}_bn_bias"), bias.astype(w.desc.dtype)))
        graph.replace_all_uses(last.outputs[0], out)
        absorb(conv, *([mul, add] if last is add else [mul]))
        for n in ([mul, add] if last is add else [mul]):
            graph.detach(n)
            gone.append(n)
        changed += 1
    graph.remove_nodes(gone)
    return changed


def matmul_bias(graph: Graph) -> int:
    changed = 0
    for add, mm_out, c in _adds_of_a_constant(graph, ("MatMulV2", "BatchMatMulV2")):
        mm = mm_out.producer
        n = mm_out.desc.shape[-1]
        if (len(mm.inputs) > 2 and mm.inputs[2] is not None) or c.data.size != n or c.desc.shape[-1:] != (n,):
            continue
        _set_bias(graph, mm, graph.add_const(graph.unique_name(f"{mm.name}_bias"),
                                             c.data.reshape(n).astype(mm_out.desc.dtype)))
        graph.replace_all_uses(add.outputs[0], mm_out)
        absorb(mm_out.producer, add)
        graph.remove_node(add)
        changed += 1
    return changed


RELU_EPILOGUE = ("Conv2D", "Add", "AddN")   # ops whose kernels take a fused_relu attribute


def relu_fusion(graph: Graph) -> int:
    """Conv2D, Add or AddN followed by its only consumer Relu -> that op with the Relu in its epilogue (fused_relu):
    one task and one trip of the activation through memory less (GE's UB fusion of conv/elementwise + relu)."""
    gone = []
    for relu in graph.nodes:
        if relu.op_type != "Relu" or relu.inputs[0] is None:
            continue
        op = relu.inputs[0].producer
        if op is None or op.op_type not in RELU_EPILOGUE or op.attrs.get("fused_relu") or _custom(relu, op) or \
                _only_consumer(relu.inputs[0]) is not relu or relu.outputs[0].desc.dtype != op.outputs[0].desc.dtype:
            continue
        op.attrs["fused_relu"] = True
        graph.replace_all_uses(relu.outputs[0], op.outputs[0])
        absorb(op, relu)
        graph.detach(relu)
        gone.append(relu)
    graph.remove_nodes(gone)
    return len(gone)


def conv_add_fusion(graph: Graph) -> int:
    """Conv2D -> Add/AddN(conv, other) [fused Relu] -> one Conv2D reading `other` as its residual input."""
    fused = []
    for add in graph.nodes:
        if add.op_type not in ("Add", "AddN") or len(add.inputs) != 2 or any(v is None for v in add.inputs):
            continue
        out = add.outputs[0].desc
        for k in (0, 1):
            conv_out, other = add.inputs[k], add.inputs[1 - k]
            conv = conv_out.producer
            if conv is None or conv.op_type != "Conv2D" or conv.attrs.get("fused_relu") or _custom(conv, add) or \
                    len(conv.inputs) > 3 or _only_consumer(conv_out) is not add or other.is_const or \
                    other.desc.shape != out.shape or other.desc.dtype != out.dtype or conv_out.desc != out:
                continue
            while len(conv.inputs) < 3:
                conv.inputs.append(None)
            conv.inputs.append(other)
            other.consumers.append((conv, 3))
            conv.attrs["fused_add"] = True       # its kernel is te_conv2d_add[_relu]_...
            if add.attrs.get("fused_relu"):
                conv.attrs["fused_relu"] = True
            graph.replace_all_uses(add.outputs[0], conv_out)
            absorb(conv_out.producer, add)
            graph.detach(add)
            fused.append(add)
            break
    graph.remove_nodes(fused)
    return len(fused)


def conv_bias(graph: Graph) -> int:
    changed = 0
    for add, out, c in _adds_of_a_constant(graph, ("Conv2D",)):
        conv = out.producer
        cout = out.desc.shape[1]
        shape = (1,) * (4 - len(c.desc.shape)) + tuple(c.desc.shape)
        old = conv.inputs[2] if len(conv.inputs) > 2 else None
        if len(c.desc.shape) > 4 or shape not in ((1, cout, 1, 1), (1, 1, 1, 1)) or c.desc.dtype != out.desc.dtype \
                or (old is not None and not old.is_const):
            continue
        bias = np.broadcast_to(c.data.reshape(-1), (cout,)).astype(out.desc.dtype)
        if old is not None:
            bias = (old.data.astype(out.desc.dtype) + bias).astype(out.desc.dtype)
        _set_bias(graph, conv, graph.add_const(graph.unique_name(f"{conv.name}_bias"), bias))
        graph.replace_all_uses(add.outputs[0], out)
        absorb(out.producer, add)
        graph.remove_node(add)
        changed += 1
    return changed
