"""Golden files: the --mode=1 JSON (MODEL_DEF + tasks, every sub-model) of each sample.

Regenerate with `make golden` (pytest --update-golden) and review the diff.
"""
import json

import pytest

from atc_py.om import read_om
from atc_py.om.json_dump import om_file_to_json
from tests.helpers import GOLDEN, MODELS, compile_om

# (sample, soc, tiling_schedule_optimize)
CASES = [("small_cnn", "Ascend910B1", "0"), ("small_transformer", "Ascend910B1", "0"), ("rnn_loop", "Ascend910B1", "0")] + [
    (name, soc, sink) for name in ("decoder_step", "superkernel", "custom_op") for soc in ("Ascend910B1", "Ascend310P3")
    for sink in ("0", "1")]


def dump(name: str, soc: str, sink: str) -> str:
    from tests.helpers import PLUGIN
    om = read_om(compile_om(MODELS / f"{name}.onnx", soc=soc, **{"ge.tiling_schedule_optimize": sink,
                                                                  "op_plugin": str(PLUGIN)}))
    return json.dumps(om_file_to_json(om), indent=1) + "\n"


@pytest.mark.parametrize("name,soc,sink", CASES)
def test_golden(name, soc, sink, update_golden):
    path = GOLDEN / f"{name}.{soc}.sink{sink}.json"
    text = dump(name, soc, sink)
    if update_golden:
        path.write_text(text)
    assert path.exists(), f"{path} is missing: run `make golden`"
    assert text == path.read_text(), f"{path.name} changed: review, then `make golden`"


def _gelu_head():
    """A GELU (sigmoid form) and a tanh head: one AscBackend node."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper
    nodes = [helper.make_node("Mul", ["x", "k"], ["s"], name="gelu_scale"),
             helper.make_node("Sigmoid", ["s"], ["g"], name="gelu_sigmoid"),
             helper.make_node("Mul", ["x", "g"], ["h"], name="gelu_mul"),
             helper.make_node("Tanh", ["h"], ["y"], name="head_tanh")]
    g = helper.make_graph(nodes, "gelu_head", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 64])],
                          [numpy_helper.from_array(np.asarray(1.702, np.float32), "k")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_golden_ascbackend_node(update_golden):
    """The --mode=1 JSON of one AscBackend node: its HintGraph (`ascgraph`) and ImplGraph (`ascgraph_impl`)
    as GE writes graph attributes (AttrDef.g)."""
    om = read_om(compile_om(_gelu_head()))
    doc = om_file_to_json(om)
    (node,) = [op for op in doc["graph"][0]["op"] if op["type"] == "AscBackend"]
    attrs = {a["key"]: a["value"] for a in node["attr"]}
    graph_type = {k: next(a["value"]["s"] for a in attrs[k]["g"]["attr"] if a["key"] == "graph_type")
                  for k in ("ascgraph", "ascgraph_impl")}
    assert graph_type == {"ascgraph": "HintGraph", "ascgraph_impl": "ImplGraph"}
    text = json.dumps(node, indent=1) + "\n"
    path = GOLDEN / "ascbackend_node.json"
    if update_golden:
        path.write_text(text)
    assert text == path.read_text(), f"{path.name} changed: review, then `make golden`"
