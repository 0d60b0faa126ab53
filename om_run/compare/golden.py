"""The framework side of a comparison: every node output of the framework model on the inputs the .om gets.

ONNX runs in onnxruntime (graph optimisations off, every node output made a graph output: the framework's own
tensors, not a fused runtime's), or in onnx's reference evaluator when onnxruntime is not installed. A frozen
TensorFlow GraphDef runs through the project's reference path (ir_reference.py): TensorFlow is not a dependency.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx

from atc_py.common.errors import AtcError

SOURCE_OPS = {"Constant", "Const", "Placeholder", "NoOp"}   # nodes whose outputs are not computed from the inputs


@dataclass(frozen=True)
class FrameworkNode:
    name: str                 # the framework's name (ONNX: op_type_k for an unnamed node)
    op_type: str
    inputs: tuple[str, ...]   # tensor names ("" for an absent optional input)
    outputs: tuple[str, ...]


@dataclass
class Golden:
    framework: str                          # "onnx" | "tf"
    engine: str                             # what computed the tensors
    nodes: list[FrameworkNode]              # topological order
    tensors: dict[str, np.ndarray]
    constants: set[str] = field(default_factory=set)     # initializers and Const/Constant outputs
    outputs: list[str] = field(default_factory=list)     # the model's outputs
    layout: str = "NCHW"                                  # the framework's image layout (TF: --input_format)
    inputs: list[str] = field(default_factory=list)      # the model's inputs (fed the .om's input arrays)

    def ir_name(self, node: FrameworkNode) -> str:
        """The name atc-py's frontend gives the node's IR node (its converter's naming rule)."""
        if self.framework == "tf":
            return node.name.replace("/", "_")
        return node.name.replace("/", "_").replace(":", "_") or "node"


def _bad(reason: str) -> AtcError:
    return AtcError("E30002", reason=reason)


def _feeds(names: list[str], types: list[np.dtype], arrays: dict[str, np.ndarray], positional: list) -> dict:
    """The .om's inputs for the framework model: by name, else by position, cast to the framework's dtype."""
    feeds = {}
    for k, (name, dt) in enumerate(zip(names, types)):
        arr = arrays.get(name)
        if arr is None and k < len(positional):
            arr = positional[k]
        if arr is None:
            raise _bad(f"the golden model's input {name!r} matches no input of the .om "
                       f"({', '.join(arrays) or 'none'})")
        feeds[name] = np.asarray(arr).astype(dt, copy=False)
    if len(positional) != len(names):
        raise _bad(f"the golden model has {len(names)} inputs, the .om {len(positional)}")
    return feeds


def onnx_golden(path: str, arrays: dict[str, np.ndarray], positional: list) -> Golden:
    from atc_py.frontend.onnx.loader import load_onnx
    model = load_onnx(path)
    g = model.graph
    inits = {t.name for t in g.initializer}
    ins = [i for i in g.input if i.name not in inits]
    types = [np.dtype(onnx.helper.tensor_dtype_to_np_dtype(i.type.tensor_type.elem_type))
             if i.type.HasField("tensor_type") else np.dtype(np.float32) for i in ins]
    feeds = _feeds([i.name for i in ins], types, arrays, positional)
    for i, (name, arr) in zip(ins, feeds.items()):
        dims = i.type.tensor_type.shape.dim if i.type.HasField("tensor_type") else []
        want = [d.dim_value if d.HasField("dim_value") else -1 for d in dims]
        if len(want) != arr.ndim or any(w >= 0 and w != a for w, a in zip(want, arr.shape)):
            raise _bad(f"input {name!r}: the .om's shape {list(arr.shape)} does not fit the golden model's "
                       f"{['?' if w < 0 else w for w in want]}")
    nodes, constants = [], set(inits)
    for k, n in enumerate(g.node):
        nodes.append(FrameworkNode(n.name or f"{n.op_type}_{k}", n.op_type, tuple(n.input), tuple(n.output)))
        if n.op_type == "Constant":
            constants.update(o for o in n.output if o)
    outputs = [o.name for o in g.output]
    wanted = [t for n in nodes for t in n.outputs if t and t not in outputs]
    del g.output[len(outputs):]
    g.output.extend(onnx.ValueInfoProto(name=t) for t in wanted)
    names = outputs + wanted
    engine, values = _run_onnx(model, feeds, names)
    tensors = {k: v for k, v in zip(names, values) if isinstance(v, np.ndarray)}
    tensors.update(feeds)
    return Golden("onnx", engine, nodes, tensors, constants, outputs, inputs=list(feeds))


def _run_onnx(model: onnx.ModelProto, feeds: dict, names: list[str]) -> tuple[str, list]:
    try:
        import onnxruntime as ort
    except ImportError:
        ort = None
    if ort is not None:
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        opts.log_severity_level = 3
        try:
            sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
            return f"onnxruntime {ort.__version__}", sess.run(names, feeds)
        except Exception as exc:   # noqa: BLE001 -- onnxruntime's own error types
            raise _bad(f"onnxruntime cannot run the golden model: {str(exc).splitlines()[0][:300]}") from None
    from onnx.reference import ReferenceEvaluator
    try:
        return "onnx.reference", ReferenceEvaluator(model).run(names, feeds)
    except Exception as exc:   # noqa: BLE001 -- the evaluator raises whatever its op implementations raise
        raise _bad(f"onnx's reference evaluator cannot run the golden model: {type(exc).__name__}: {exc}") from None


def tf_golden(path: str, arrays: dict[str, np.ndarray], positional: list, input_format: str, soc) -> Golden:
    from atc_py.frontend.tensorflow.loader import load_tf

    from .ir_reference import run_tf
    gd = load_tf(path)
    placeholders = [n for n in gd.node if n.op == "Placeholder"]
    consumed = {i.lstrip("^").split(":")[0] for n in gd.node for i in n.input}
    placeholders = [n for n in placeholders if n.name in consumed]
    feeds = _feeds([n.name for n in placeholders], [np.dtype(a.dtype) if (a := arrays.get(n.name)) is not None
                                                    else np.dtype(np.float32) for n in placeholders],
                   arrays, positional)
    values, order = run_tf(gd, feeds, input_format, path, soc)
    by_name = {n.name: n for n in gd.node}
    nodes, constants = [], set()
    for name, outs in order:
        n = by_name.get(name)
        if n is None:
            continue
        ins = tuple(i if ":" in i else f"{i}:0" for i in n.input if not i.startswith("^"))
        nodes.append(FrameworkNode(name, n.op, ins, tuple(outs)))
        if n.op == "Const":
            constants.update(outs)
    consumed_t = {i for n in nodes for i in n.inputs}
    outputs = [t for n in nodes if n.op_type not in SOURCE_OPS for t in n.outputs if t not in consumed_t]
    return Golden("tf", "atc-py reference path (fp32)", nodes, values, constants, outputs, input_format,
                  [f"{n}:0" for n in feeds])
