"""Small models and readers the precision-knob tests share: a conv with activations, a conv + BatchNorm, the dtypes a build chose and the .om's model attributes."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from atc_py.om import partitions as pt
from atc_py.om import read_om
from atc_py.om.attrs import from_attr
from atc_py.proto import ge_ir_pb2 as ge

SOC = {"ge.socVersion": "Ascend910B1"}


APART = {**SOC, "optimization_switch": "autofuse:off"}   # the ops stay nodes of their own (act + sm would fuse)


def conv_model():
    """Conv (random weights, the same every call) -> Sigmoid -> Softmax."""
    w = numpy_helper.from_array(np.random.default_rng(29).standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Sigmoid", ["c"], ["s"], name="act"), helper.make_node("Softmax", ["s"], ["y"], name="sm")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TP.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, None)], [w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def conv_bn_model():
    """Conv then BatchNormalization: what GE's ConvBatchnormFusionPass (atc-py's bn_conv_fold) folds."""
    bn = [numpy_helper.from_array(np.ones(4, np.float32) * v, n) for n, v in (("s", 2), ("o", 1), ("m", 0), ("v", 1))]
    w = numpy_helper.from_array(np.random.default_rng(30).standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["c"]),
                           helper.make_node("BatchNormalization", ["c", "s", "o", "m", "v"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TP.FLOAT, [1, 3, 6, 6])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, None)], [w, *bn])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    return m


def dtypes(res) -> dict[str, str]:
    return {n.name: n.outputs[0].desc.dtype for n in res.graph.nodes if n.outputs}


def model_attrs(res) -> dict:
    md = ge.ModelDef.FromString(read_om(res.om).models[0].get(pt.MODEL_DEF))
    return {k: from_attr(v) for k, v in md.attr.items()}
