"""The operator library: kernels against references, tiling, cost models, lazy registration."""
