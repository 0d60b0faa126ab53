"""One rank's part of a tensor-parallel decoder, split as vLLM splits it (Megatron's layout).

Attention heads split over the ranks (column-parallel qkv: each rank projects its own heads; key/value heads split
too, or, when there are fewer than ranks, each copied to tp / kv_heads ranks as vLLM's QKVParallelLinear does), the
MLP's intermediate dimension split (column-parallel gate_up, row-parallel down), the o and down projections'
partial sums added over the ranks by an all-reduce, the embedding and the lm_head split by vocabulary
(VocabParallelEmbedding: each rank looks up the ids in its range, an all-reduce joins them; ParallelLMHead: each
rank's logits of its range, an all-gather joins them). Every rank runs the same graph: what differs between ranks
is data — its weights, its vocabulary range — so one .om serves all of them."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from atc_py.common.errors import AtcError

from .hf_config import DecoderConfig


@dataclass(frozen=True)
class Shard:
    """The per-rank dimensions of `cfg` over `tp` ranks (tp 1: the whole model)."""
    cfg: DecoderConfig
    tp: int

    @property
    def heads(self) -> int:
        return self.cfg.num_heads // self.tp

    @property
    def kv_heads(self) -> int:
        return max(1, self.cfg.num_kv_heads // self.tp)

    @property
    def kv_replicas(self) -> int:
        """How many ranks hold a copy of each key/value head (1 unless tp > kv_heads)."""
        return max(1, self.tp // self.cfg.num_kv_heads)

    @property
    def intermediate(self) -> int:
        return self.cfg.intermediate_size // self.tp

    @property
    def vocab(self) -> int:
        """The vocabulary rows of one rank (the last rank's range padded, as vLLM pads its vocabulary)."""
        return -(-self.cfg.vocab_size // self.tp)

    @property
    def q_size(self) -> int:
        return self.heads * self.cfg.head_dim

    @property
    def kv_size(self) -> int:
        return self.kv_heads * self.cfg.head_dim

    def weight_shapes(self) -> dict[str, tuple[int, ...]]:
        """Every weight one rank holds, as DecoderConfig.weight_shapes names them."""
        full = self.cfg.weight_shapes()
        h = self.cfg.hidden_size
        out = {}
        for name, shape in full.items():
            if name == "model.embed_tokens.weight":
                out[name] = (self.vocab, h)
            elif name == "lm_head.weight":
                out[name] = (h, self.vocab)
            elif name.endswith("qkv_proj.weight"):
                out[name] = (h, self.q_size + 2 * self.kv_size)
            elif name.endswith("qkv_proj.bias"):
                out[name] = (self.q_size + 2 * self.kv_size,)
            elif name.endswith("o_proj.weight"):
                out[name] = (self.q_size, h)
            elif name.endswith("gate_up_proj.weight"):
                out[name] = (h, 2 * self.intermediate)
            elif name.endswith("down_proj.weight"):
                out[name] = (self.intermediate, h)
            else:
                out[name] = shape          # norms: every rank has them whole
        return out

    def weight_bytes(self) -> int:
        return sum(math.prod(s) for s in self.weight_shapes().values()) * np.dtype(self.cfg.dtype).itemsize

    def kv_bytes_per_token(self) -> int:
        """Key and value of one token over every layer, on one rank."""
        return 2 * self.cfg.num_layers * self.kv_size * np.dtype(self.cfg.dtype).itemsize

    def collectives(self, tokens: int, seqs: int) -> list[tuple[str, int, int]]:
        """(GE op type, calls, HCCL's n in bytes per call) of one step of `tokens` tokens over `seqs` sequences:
        the embedding's, each layer's two all-reduces of [tokens, hidden], the logits' all-gather."""
        if self.tp == 1:
            return []
        item = np.dtype(self.cfg.dtype).itemsize
        return [("HcomAllReduce", 2 * self.cfg.num_layers + 1, tokens * self.cfg.hidden_size * item),
                ("HcomAllGather", 1, seqs * self.vocab * item * self.tp)]

    def vocab_range(self, rank: int) -> np.ndarray:
        """[start, end) of the rank's vocabulary ids (an input of the graph: the graph is every rank's)."""
        start = rank * self.vocab
        return np.array([start, min(start + self.vocab, self.cfg.vocab_size)], np.int64)

    # -- a rank's weights from the whole model's ------------------------------------------------------------
    def rank_weights(self, weights: dict[str, np.ndarray], rank: int) -> dict[str, np.ndarray]:
        """Rank `rank`'s slices of the whole model's weights (vLLM's names and [in, out] projections)."""
        if self.tp == 1:
            return dict(weights)
        return {name: np.ascontiguousarray(self._slice(name, w, rank)) for name, w in weights.items()}

    def _heads_cols(self, rank: int) -> tuple[slice, slice, slice]:
        """The rank's q, k and v columns of a fused qkv projection."""
        cfg, d = self.cfg, self.cfg.head_dim
        q = slice(rank * self.q_size, (rank + 1) * self.q_size)
        kv_head = rank // self.kv_replicas * self.kv_heads
        k0 = cfg.q_size + kv_head * d
        v0 = cfg.q_size + cfg.kv_size + kv_head * d
        return q, slice(k0, k0 + self.kv_size), slice(v0, v0 + self.kv_size)

    def _slice(self, name: str, w: np.ndarray, rank: int) -> np.ndarray:
        i, vr = self.intermediate, self.vocab
        if name == "model.embed_tokens.weight":
            return _pad_rows(w[rank * vr:(rank + 1) * vr], vr)
        if name == "lm_head.weight":
            return _pad_rows(w.T[rank * vr:(rank + 1) * vr], vr).T
        if name.endswith("qkv_proj.weight") or name.endswith("qkv_proj.bias"):
            return np.concatenate([w[..., s] for s in self._heads_cols(rank)], axis=-1)
        if name.endswith("o_proj.weight"):
            return w[rank * self.q_size:(rank + 1) * self.q_size]
        if name.endswith("gate_up_proj.weight"):
            full = self.cfg.intermediate_size
            return np.concatenate([w[:, rank * i:(rank + 1) * i], w[:, full + rank * i:full + (rank + 1) * i]], axis=1)
        if name.endswith("down_proj.weight"):
            return w[rank * i:(rank + 1) * i]
        return w


def _pad_rows(w: np.ndarray, rows: int) -> np.ndarray:
    if w.shape[0] == rows:
        return w
    return np.concatenate([w, np.zeros((rows - w.shape[0],) + w.shape[1:], w.dtype)])


def shard(cfg: DecoderConfig, tp: int, flag: str = "--tensor-parallel-size") -> Shard:
    """The rank's dimensions; a tp that does not split the model is refused naming the dimension (vLLM's checks:
    heads and the MLP divide by tp; key/value heads divide by tp or tp by them)."""
    def bad(reason: str) -> AtcError:
        return AtcError("E10001", value=str(tp), parameter=flag, reason=reason)
    if tp < 1:
        raise bad("the tensor-parallel size must be at least 1")
    if cfg.num_heads % tp:
        raise bad(f"the model's {cfg.num_heads} attention heads (num_attention_heads) do not divide into {tp} ranks")
    kvh = cfg.num_kv_heads
    if kvh % tp and tp % kvh:
        raise bad(f"the model's {kvh} key/value heads (num_key_value_heads) neither divide into {tp} ranks nor "
                  f"copy evenly onto them")
    if cfg.intermediate_size % tp:
        raise bad(f"the model's intermediate_size {cfg.intermediate_size} does not divide into {tp} ranks")
    return Shard(cfg, tp)
