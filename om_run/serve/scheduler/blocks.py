"""The paged KV cache's block table: `num_blocks` blocks of `block_size` token slots, shared by reference count,
with automatic prefix caching as vLLM does it.

A full block is named by a hash chained over its parent block's hash and its own token ids (vLLM's
vllm/v1/core/kv_cache_utils.py hash_block_tokens; V0's PrefixCachingBlockAllocator in vllm/core/block/
prefix_caching_block.py chains the same way), so two prompts share a block only if everything before it matches.
A prompt without token ids (Request.prompt_ids None: placeholder tokens) seeds its chain with its request id: it
never shares with another request, but a preempted request still finds its own blocks again.

A freed block keeps its hash and stays findable until a new block is needed and it is evicted, least recently freed
first; a sequence's blocks are freed tail first so that its tail is evicted before its head (vLLM V1's
KVCacheManager.free, V0's LRUEvictor breaking ties by the most hashed tokens). V0 and MindIE (whose block manager
is a port of V0's, gitcode Ascend/MindIE-LLM src/block_manager) take a never-hashed free block before evicting a
cached one (`evict_uncached_first`); V1 keeps one free queue for both kinds."""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from atc_py.common.errors import internal
from om_run.serve.request import Sequence


@dataclass
class BlockStats:
    """Counters for the prefix cache: blocks a new sequence found cached, blocks evicted to make room."""
    hit_blocks: int = 0
    evicted_blocks: int = 0


class BlockManager:
    """Block ids, reference counts and the prefix cache's hash index. Sequence.block_ids holds a sequence's blocks in
    token order; the schedulers decide when to allocate (whole prompt at admission in V0 and MindIE, chunk by chunk
    in V1) and when to commit hashes (after the step in V0 and MindIE, when scheduled in V1)."""

    def __init__(self, num_blocks: int, block_size: int, *, caching: bool = False,
                 evict_uncached_first: bool = True) -> None:
        if num_blocks < 1 or block_size < 1:
            raise internal(f"BlockManager needs num_blocks >= 1 and block_size >= 1, got {num_blocks}, {block_size}")
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.caching = caching
        self.evict_uncached_first = evict_uncached_first
        self.stats = BlockStats()
        self._ref = [0] * num_blocks
        self._hash: list[int | None] = [None] * num_blocks
        self._by_hash: dict[int, int] = {}
        # blocks never used yet are ids _fresh..num_blocks-1, taken in order before any freed one (the order a free
        # list holding them all would give, without building it: a small model on a large SoC has millions)
        self._fresh = 0
        # free blocks in the order they were freed (stamp = when): never-hashed ones and still-cached ones
        self._free_plain: OrderedDict[int, int] = OrderedDict()
        self._free_cached: OrderedDict[int, int] = OrderedDict()
        self._stamp = num_blocks
        self._chains: dict[Sequence, list[int]] = {}
        self._committed: dict[Sequence, int] = {}

    # -- counts -------------------------------------------------------------------------------------------------
    @property
    def num_free(self) -> int:
        """Blocks a new allocation may take: never used, freed, or cached but unreferenced (evictable)."""
        return self.num_blocks - self._fresh + len(self._free_plain) + len(self._free_cached)

    @property
    def num_used(self) -> int:
        return self.num_blocks - self.num_free

    @property
    def num_cached(self) -> int:
        """Blocks that carry a hash (referenced or not)."""
        return len(self._by_hash)

    def blocks_for(self, num_tokens: int) -> int:
        return -(-num_tokens // self.block_size)

    def new_blocks_needed(self, seq: Sequence, num_tokens: int) -> int:
        """Blocks to add so that `seq` holds `num_tokens` token slots."""
        return max(0, self.blocks_for(num_tokens) - len(seq.block_ids))

    def evictable(self, block_ids: list[int]) -> int:
        """How many of these cached blocks sit in the free pool (taking them uses up a free block each)."""
        return sum(1 for b in block_ids if self._ref[b] == 0)

    def ref_count(self, block_id: int) -> int:
        return self._ref[block_id]

    # -- prefix cache -------------------------------------------------------------------------------------------
    def _chain(self, seq: Sequence, num_full: int) -> list[int]:
        """The hashes of `seq`'s first `num_full` full blocks (extended lazily: tokens only ever append)."""
        chain = self._chains.setdefault(seq, [])
        size = self.block_size
        parent: object = chain[-1] if chain else (None if seq.request.prompt_ids is not None
                                                   else ("request", seq.request.request_id))
        for i in range(len(chain), num_full):
            parent = hash((parent, tuple(seq.tokens[i * size:(i + 1) * size])))
            chain.append(parent)
        return chain

    def cached_prefix(self, seq: Sequence, max_tokens: int) -> list[int]:
        """The cached blocks that hold `seq`'s first tokens, full blocks only, within its first `max_tokens` tokens;
        nothing when caching is off. Does not take them (see allocate)."""
        if not self.caching:
            return []
        num_full = min(max_tokens, len(seq.tokens)) // self.block_size
        hits: list[int] = []
        for h in self._chain(seq, num_full)[:num_full]:
            block = self._by_hash.get(h)
            if block is None:
                break
            hits.append(block)
        return hits

    def commit(self, seq: Sequence, num_tokens: int) -> None:
        """Name the full blocks among `seq`'s first `num_tokens` tokens by their hashes so later sequences find them.
        A block whose content another block already holds stays unnamed (it is freed as a plain block)."""
        if not self.caching:
            return
        num_full = min(num_tokens, len(seq.tokens), len(seq.block_ids) * self.block_size) // self.block_size
        start = self._committed.get(seq, 0)
        if num_full <= start:
            return
        chain = self._chain(seq, num_full)
        for i in range(start, num_full):
            block = seq.block_ids[i]
            if self._hash[block] is None and chain[i] not in self._by_hash:
                self._hash[block] = chain[i]
                self._by_hash[chain[i]] = block
        self._committed[seq] = num_full

    # -- allocation ---------------------------------------------------------------------------------------------
    def _take_free(self) -> int:
        plain, cached = self._free_plain, self._free_cached
        if self._fresh < self.num_blocks:       # older than every freed block: taken first
            block = self._fresh
            self._fresh += 1
        elif plain and (self.evict_uncached_first or not cached or next(iter(plain.values())) < next(iter(cached.values()))):
            block, _ = plain.popitem(last=False)
        elif cached:
            block, _ = cached.popitem(last=False)
            self._by_hash.pop(self._hash[block], None)
            self._hash[block] = None
            self.stats.evicted_blocks += 1
        else:
            raise internal("KV block allocation past the free blocks (a scheduler checked too little)")
        self._ref[block] = 1
        return block

    def allocate(self, seq: Sequence, num_tokens: int, hits: list[int] | None = None) -> None:
        """Give `seq` blocks for `num_tokens` token slots: first the cached `hits` (a sequence without blocks only),
        then new blocks. The caller has checked that enough blocks are free."""
        if hits:
            if seq.block_ids:
                raise internal("prefix-cache hits for a sequence that already holds blocks")
            for block in hits:
                if self._ref[block] == 0:
                    del self._free_cached[block]
                self._ref[block] += 1
            seq.block_ids = list(hits)
            self._committed[seq] = len(hits)
            self.stats.hit_blocks += len(hits)
        for _ in range(self.new_blocks_needed(seq, num_tokens)):
            seq.block_ids.append(self._take_free())

    def free(self, seq: Sequence, *, forget: bool = False) -> None:
        """Drop `seq`'s references, tail block first; unreferenced hashed blocks stay cached. `forget` also drops its
        hash chain (a finished sequence; a preempted one keeps it for its recompute)."""
        for block in reversed(seq.block_ids):
            self._ref[block] -= 1
            if self._ref[block] == 0:
                self._stamp += 1
                pool = self._free_plain if self._hash[block] is None else self._free_cached
                pool[block] = self._stamp
            elif self._ref[block] < 0:
                raise internal(f"KV block {block} freed more often than taken")
        seq.block_ids = []
        self._committed.pop(seq, None)
        if forget:
            self._chains.pop(seq, None)
