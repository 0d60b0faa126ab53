"""Automatic fusion as GE's autofuse does it: AscGraph and its AscIR registry, the fusion pass that builds HintGraphs,
auto schedule (ImplGraph), auto tiling, and the AscBackend / FusedAscBackend ops with the kernel that
interprets an ImplGraph (asc_backend.py, ascgraph_kernel.py). autofuse depends on the op library
(atc_py.ops), never the reverse: the op registry imports asc_backend lazily, by name, from its index."""
