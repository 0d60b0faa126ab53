"""torchvision's RAFT (small, random weights) as an iterative model: 3 flow refinements, each sampling the
correlation pyramid at coordinates that accumulate the previous updates (GridSample), exported at opset 17.

    python -m tools.real_models.flow_models       # dev venv: torch 2.14.1 + torchvision 0.29.1

writes tests/data/flow/raft_small.onnx and .npz: `image1`, `image2` [1, 3, 128, 128] (RAFT's pyramid needs 128),
torch's fp32 `flow` and its fp16 inference under autocast, `flow_autocast` (the framework's own fp16 error)."""
from __future__ import annotations

import contextlib
import io
import pathlib
import warnings

import numpy as np
import onnx
import torch
from torchvision.models.optical_flow import raft_small

OUT = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "flow"
UPDATES = 3


class LastFlow(torch.nn.Module):
    """RAFT returns every refinement's flow: the model users deploy keeps the last."""

    def __init__(self, raft):
        super().__init__()
        self.raft = raft

    def forward(self, a, b):
        return self.raft(a, b, num_flow_updates=UPDATES)[-1]


def main() -> None:
    torch.manual_seed(0)
    model = LastFlow(raft_small(weights=None).eval()).eval()
    a, b = torch.rand(1, 3, 128, 128) * 2 - 1, torch.rand(1, 3, 128, 128) * 2 - 1
    with torch.no_grad():
        flow = model(a, b)
        with torch.autocast("cpu", dtype=torch.float16):
            flow16 = model(a, b).float()
    buf = io.BytesIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (a, b), buf, opset_version=17, dynamo=False, input_names=["image1", "image2"],
                          output_names=["flow"])
    m = onnx.load_from_string(buf.getvalue())
    for n in m.graph.node:
        n.doc_string = ""
    OUT.mkdir(parents=True, exist_ok=True)
    onnx.save(m, str(OUT / "raft_small.onnx"))
    np.savez(OUT / "raft_small.npz", image1=a.numpy(), image2=b.numpy(), flow=flow.numpy(),
             flow_autocast=flow16.numpy())
    err = float((flow16 - flow).abs().max() / flow.abs().max())
    print(f"raft_small: {len(buf.getvalue())} bytes, torch autocast fp16 error {err:.2e} of the flow's scale")


if __name__ == "__main__":
    main()
