"""How many KV blocks fit the device, as vLLM sizes its cache at start-up: (device memory x
--gpu-memory-utilization) minus the weights, minus the peak activation of the largest step, minus what the runtime
keeps for itself, divided by one block's bytes (every layer's key and value for block_size tokens).

vLLM measures the activation peak with a profile run of max_num_batched_tokens tokens; here it is the largest
step's live tensors of the compiled decoder's dataflow (one layer's are freed before the next layer's), so the
figure follows the same dimensions the profile run would exercise."""
from __future__ import annotations

from dataclasses import dataclass

from atc_py.common.errors import AtcError

from .hf_config import DecoderConfig
from .tensor_parallel import shard

GIB = 1 << 30
# device memory the runtime and the framework keep outside the cache: CANN's context, streams and the HCCL / ATB
# workspaces (ASSUMED 1 GiB: vllm-ascend's worker logs show ~0.9-1.5 GiB of non-torch memory on a 910B; to be
# replaced by a sourced figure)
RUNTIME_RESERVE_BYTES = 1 * GIB


@dataclass(frozen=True)
class KvBudget:
    device_bytes: int
    utilization: float
    weight_bytes: int
    activation_bytes: int
    reserve_bytes: int
    block_bytes: int
    num_blocks: int

    def lines(self) -> list[str]:
        g = GIB
        return [f"device memory {self.device_bytes / g:.2f} GiB x {self.utilization:g}, weights "
                f"{self.weight_bytes / g:.2f} GiB, peak activation {self.activation_bytes / g:.2f} GiB, runtime "
                f"{self.reserve_bytes / g:.2f} GiB: {self.num_blocks} KV blocks of {self.block_bytes / (1 << 20):.2f} MiB"]


def activation_bytes(cfg: DecoderConfig, max_tokens: int, max_seqs: int, tp: int = 1) -> int:
    """The largest step's live tensors on one rank: the residual stream and its normed copy, the qkv projection
    and the attention output, the gate_up projection and its SwiGLU, and the logits of every sequence."""
    sh = shard(cfg, tp)
    item = 4 if cfg.dtype == "float32" else 2
    t, h = max_tokens, cfg.hidden_size
    attn = t * (2 * h + sh.q_size + 2 * sh.kv_size + sh.q_size)
    mlp = t * (2 * h + 3 * sh.intermediate)
    return (max(attn, mlp) + max_seqs * cfg.vocab_size) * item


def kv_budget(cfg: DecoderConfig, device_bytes: int, utilization: float, block_size: int, max_tokens: int,
              max_seqs: int, max_model_len: int, tp: int = 1) -> KvBudget:
    """The cache's size on each rank (its weights, its key/value heads); vLLM's start-up error when not even one
    sequence of max_model_len fits."""
    sh = shard(cfg, tp)
    block_bytes = block_size * sh.kv_bytes_per_token()
    weights = sh.weight_bytes()
    act = activation_bytes(cfg, max_tokens, max_seqs, tp)
    free = int(device_bytes * utilization) - weights - act - RUNTIME_RESERVE_BYTES
    blocks = max(0, free // block_bytes)
    need = -(-max_model_len // block_size)
    if blocks < need:
        raise AtcError("E10001", value=f"{utilization:g}", parameter="--gpu-memory-utilization",
                       reason=f"the model's max seq len ({max_model_len}) is larger than the maximum number of "
                              f"tokens that can be stored in KV cache ({blocks * block_size}): weights "
                              f"{weights / GIB:.2f} GiB and activations {act / GIB:.2f} GiB leave "
                              f"{max(free, 0) / GIB:.2f} GiB of {device_bytes / GIB:.2f} GiB x {utilization:g}. "
                              "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
                              "initializing the engine")
    return KvBudget(device_bytes, utilization, weights, act, RUNTIME_RESERVE_BYTES, block_bytes, int(blocks))
