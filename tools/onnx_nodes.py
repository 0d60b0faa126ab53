"""The node list the decoder generators (llm_model.py, kv_decoder.py) build, named as optimum names an export's
nodes (`{name}_output_0`), with the block both write the same way: RMSNorm as Pow, ReduceMean, Add, Sqrt,
Reciprocal, Mul, Mul."""
from __future__ import annotations


class NodeList:
    def __init__(self):
        self.nodes = []

    def node(self, op: str, ins: list, name: str, **attrs) -> str:
        """Append a node; its one output is `{name}_output_0`."""
        from onnx import helper
        out = f"{name}_output_0"
        self.nodes.append(helper.make_node(op, ins, [out], name=name, **attrs))
        return out

    def rms_norm(self, x: str, weight: str, scope: str) -> str:
        """weight * x / sqrt(mean(x^2) + eps), with the constants `pow_two` and `rms_eps`."""
        node = self.node
        mean = node("ReduceMean", [node("Pow", [x, "pow_two"], f"{scope}/Pow")], f"{scope}/ReduceMean",
                    axes=[-1], keepdims=1)
        inv = node("Reciprocal", [node("Sqrt", [node("Add", [mean, "rms_eps"], f"{scope}/Add")], f"{scope}/Sqrt")],
                   f"{scope}/Reciprocal")
        return node("Mul", [weight, node("Mul", [x, inv], f"{scope}/Mul")], f"{scope}/Mul_1")
