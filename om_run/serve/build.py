"""The served decoder compiled by atc-py, cached by content: the ONNX graph of the config (decoder_graph.py) with
the step inputs' ranges, for a SoC and a tiling placement, built once and reused (the cache key hashes the
graph's bytes and the build options, so any change of either builds again)."""
from __future__ import annotations

import functools
import hashlib
import os
import pathlib
from dataclasses import dataclass

from atc_py.common.atomic_write import write_atomic

from .decoder_graph import STEP_INPUTS, build_decoder
from .hf_config import DecoderConfig

CACHE_ENV = "OM_RUN_SERVE_CACHE"


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A digest of the compiler's and the simulator's sources: a cached .om or step table built by other code is
    built again (the package version alone does not change between commits)."""
    root = pathlib.Path(__file__).resolve().parents[2]
    h = hashlib.sha256()
    for pkg in ("atc_py", "om_run/sim", "om_run/tasks", "om_run/load", "om_run/serve", "om_run/hccl", "om_run/run"):
        for path in sorted((root / pkg).rglob("*.py")):
            h.update(str(path.relative_to(root)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


def cache_dir() -> str:
    return os.environ.get(CACHE_ENV) or os.path.join(os.path.expanduser("~"), ".cache", "om-run", "serve")


@dataclass(frozen=True)
class BuildSpec:
    """What the compiled step depends on besides the config: the SoC, tiling sink, the cache's geometry and the
    largest step (the ranges of the dynamic dimensions)."""
    soc_version: str
    tiling_sink: bool
    block_size: int
    max_model_len: int
    max_num_batched_tokens: int
    max_num_seqs: int
    num_blocks: int = 0       # the cache's blocks in the compiled graph; 0: enough for max_num_seqs full sequences
    tp: int = 1               # tensor-parallel ranks: the graph is one rank's (tensor_parallel.py)

    @property
    def max_blocks(self) -> int:
        return -(-self.max_model_len // self.block_size)

    @property
    def graph_blocks(self) -> int:
        return self.num_blocks or self.max_num_seqs * self.max_blocks


def shape_ranges(spec: BuildSpec) -> str:
    """ATC's --input_shape_range of the step inputs (the caches and weights keep their static shapes)."""
    t, s = spec.max_num_batched_tokens, spec.max_num_seqs
    parts = []
    for name in STEP_INPUTS:
        if name == "block_tables":
            parts.append(f"{name}:[1~{s},{spec.max_blocks}]")
        elif name in ("input_ids", "positions", "slot_mapping"):
            parts.append(f"{name}:[1~{t}]")
        else:
            parts.append(f"{name}:[1~{s}]")
    return ";".join(parts)


def static_shapes(spec: BuildSpec, seqs: int) -> str:
    """ATC's --input_shape of a captured decode graph: `seqs` sequences of one token each."""
    return ";".join(f"{n}:{seqs},{spec.max_blocks}" if n == "block_tables" else f"{n}:{seqs}" for n in STEP_INPUTS)


def compile_decoder(cfg: DecoderConfig, spec: BuildSpec, use_cache: bool = True, static_seqs: int = 0) -> str:
    """The path of the .om of `cfg` built for `spec` (from the cache when it is there); static_seqs > 0: the static
    decode graph of that many sequences (graph mode's captured batch) instead of the dynamic-shape step."""
    import atc_py
    model = build_decoder(cfg, spec.graph_blocks, spec.block_size, spec.max_model_len, spec.tp)
    shapes = {"input_shape": static_shapes(spec, static_seqs)} if static_seqs else \
        {"input_shape_range": shape_ranges(spec)}
    # the model runs in its own dtype, as vLLM runs it in the config's torch_dtype
    build_flags = {"ge.socVersion": spec.soc_version, "ge.tiling_schedule_optimize": "1" if spec.tiling_sink else "0",
                   "ge.exec.precision_mode": "must_keep_origin_dtype", **shapes}
    blob = model.SerializeToString(deterministic=True)
    key = hashlib.sha256(blob + repr(sorted(build_flags.items())).encode()
                         + code_fingerprint().encode()).hexdigest()[:32]
    path = os.path.join(cache_dir(), f"{key}.om")
    if use_cache and os.path.isfile(path):
        return path
    om = atc_py.build(model, build_flags).om
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_atomic(path, om)
    return path
