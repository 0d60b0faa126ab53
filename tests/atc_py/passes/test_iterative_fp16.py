"""An iterative model in the default (fp16) build: torchvision's RAFT (small, random weights, 3 refinements;
tools/real_models/flow_models.py). Each refinement samples the correlation pyramid (GridSample) at coordinates
that accumulate every earlier update; in fp16 a coordinate moves in steps of 1/16 to 1/128 pixel and the rounding
adds up (1.8 % of the flow's scale with every op in fp16). The coordinate arithmetic keeps fp32
(passes/precision.coordinate_region), as torch's autocast keeps it: within 2x of torch's own fp16 error."""
import numpy as np
import pytest

import atc_py
from atc_py.passes.precision import coordinate_region
from om_run.load.loader import load_model
from om_run.sim.host import Simulation
from tests.helpers import ROOT

DATA = ROOT / "tests" / "data" / "flow"


def run(mode, tmp_path):
    res = atc_py.build(str(DATA / "raft_small.onnx"), {"ge.socVersion": "Ascend910B1", "ge.exec.precision_mode": mode})
    p = tmp_path / f"{mode}.om"
    p.write_bytes(res.om)
    z = np.load(DATA / "raft_small.npz")
    with np.errstate(all="ignore"):
        outs, _ = Simulation(load_model(str(p))).run([z["image1"], z["image2"]])
    return outs[0], z, res


@pytest.mark.heavy
def test_raft_in_fp32_and_in_the_default_build(tmp_path):
    flow, z, _ = run("must_keep_origin_dtype", tmp_path)
    scale = np.abs(z["flow"]).max()
    assert np.abs(flow - z["flow"]).max() <= 1e-4 * scale
    flow16, z, res = run("force_fp16", tmp_path)
    torch_fp16 = np.abs(z["flow_autocast"] - z["flow"]).max()
    assert np.abs(flow16 - z["flow"]).max() <= max(2 * torch_fp16, 0.01 * scale)
    samplers = [n for n in res.graph.nodes if n.op_type == "GridSampler2D"]
    assert samplers and all(n.inputs[1].desc.dtype == n.outputs[0].desc.dtype == "float32" for n in samplers)
    assert any(n.op_type == "Conv2D" and n.outputs[0].desc.dtype == "float16" for n in res.graph.nodes)


def test_the_coordinate_region_is_the_grid_arithmetic_only():
    res = atc_py.build(str(DATA / "raft_small.onnx"), {"ge.socVersion": "Ascend910B1",
                                                       "ge.exec.precision_mode": "must_keep_origin_dtype"})
    region = coordinate_region(res.graph)
    types = {n.op_type for n in res.graph.nodes if n.name in region}
    assert region and types <= {"GridSampler2D", "Add", "Sub", "Mul", "RealDiv", "ConcatD", "SplitD", "Reshape", "TransposeD",
                                "StridedSliceD", "Unsqueeze", "Squeeze", "Cast"}
    assert not any(n.op_type == "Conv2D" for n in res.graph.nodes if n.name in region)
