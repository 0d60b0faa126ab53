"""Automatic fusion (seed 002): AscGraph and its AscIR registry, the fusion pass that builds HintGraphs,
auto schedule (ImplGraph) and auto tiling. The kernel that interprets an ImplGraph lives with the other
kernels (atc_py/ops/ascgraph_kernel.py, asc_backend.py)."""
