"""The KV block manager: counts, reference-counted sharing, prefix-cache hits and LRU eviction, worked by hand."""
from __future__ import annotations

from om_run.serve.scheduler.blocks import BlockManager
from tests.om_run.serve.sched_util import make_seq


def test_allocate_and_free_count_blocks():
    bm = BlockManager(10, 4)
    seq = make_seq("A", 9, 1)
    assert bm.blocks_for(9) == 3 and bm.new_blocks_needed(seq, 9) == 3
    bm.allocate(seq, 9)
    assert len(seq.block_ids) == 3 and bm.num_free == 7 and bm.num_used == 3
    bm.allocate(seq, 12)            # still 3 blocks hold 12 slots
    assert bm.num_free == 7
    bm.allocate(seq, 13)
    assert len(seq.block_ids) == 4 and bm.num_free == 6
    bm.free(seq)
    assert seq.block_ids == [] and bm.num_free == 10


def test_prefix_hit_is_chained_and_shared_by_reference():
    # block size 4: A = [1..8] fills two blocks; B shares [1..8] then differs; C shares only the first block
    bm = BlockManager(10, 4, caching=True)
    a = make_seq("A", 0, 1, ids=(1, 2, 3, 4, 5, 6, 7, 8))
    bm.allocate(a, 8)
    assert bm.cached_prefix(make_seq("X", 0, 1, ids=(1, 2, 3, 4)), 4) == []   # nothing named before commit
    bm.commit(a, 8)
    assert bm.num_cached == 2
    b = make_seq("B", 0, 1, ids=(1, 2, 3, 4, 5, 6, 7, 8, 9))
    c = make_seq("C", 0, 1, ids=(1, 2, 3, 4, 0, 6, 7, 8))     # second block differs -> its chain differs
    assert bm.cached_prefix(b, 9) == a.block_ids
    assert bm.cached_prefix(b, 7) == a.block_ids[:1]           # only full blocks within the first 7 tokens
    assert bm.cached_prefix(c, 8) == a.block_ids[:1]
    hits = bm.cached_prefix(b, 9)
    assert bm.evictable(hits) == 0                             # A still holds them
    bm.allocate(b, 9, hits)
    assert b.block_ids[:2] == a.block_ids and len(b.block_ids) == 3
    assert bm.ref_count(a.block_ids[0]) == 2 and bm.num_free == 7
    bm.free(a)
    assert bm.num_free == 7                                    # B still references the shared two
    bm.free(b)
    assert bm.num_free == 10 and bm.num_cached == 2            # freed blocks stay cached
    assert bm.stats.hit_blocks == 2


def test_request_without_token_ids_only_finds_its_own_blocks():
    bm = BlockManager(10, 4, caching=True)
    a = make_seq("A", 8, 1)                                    # placeholder tokens [0]*8
    bm.allocate(a, 8)
    bm.commit(a, 8)
    bm.free(a)
    assert bm.cached_prefix(make_seq("B", 8, 1), 8) == []      # same placeholders, another request
    assert len(bm.cached_prefix(a, 8)) == 2                    # a preempted A finds its blocks again


def test_eviction_takes_the_tail_of_the_least_recently_freed_and_prefers_plain_blocks():
    # 3 blocks of 2: X = [1,2,3,4] takes blocks 0,1 (named), W = [7] takes block 2 (partial, never named)
    for uncached_first, taken in ((True, 2), (False, 1)):
        bm = BlockManager(3, 2, caching=True, evict_uncached_first=uncached_first)
        x, w = make_seq("X", 0, 1, ids=(1, 2, 3, 4)), make_seq("W", 0, 1, ids=(7,))
        bm.allocate(x, 4)
        bm.commit(x, 4)
        bm.allocate(w, 1)
        bm.free(x)      # freed tail first: block 1, then block 0
        bm.free(w)      # block 2, freed last
        y = make_seq("Y", 0, 1, ids=(9,))
        bm.allocate(y, 1)
        # V0/MindIE take the never-named block 2; V1's single LRU queue evicts X's tail block 1
        assert y.block_ids == [taken]
        assert bm.stats.evicted_blocks == (0 if uncached_first else 1)
        z = make_seq("Z", 0, 1, ids=(1, 2, 3, 4))
        assert bm.cached_prefix(z, 4) == ([0, 1] if uncached_first else [0])


def test_duplicate_content_stays_unnamed():
    bm = BlockManager(6, 2, caching=True)
    a, b = make_seq("A", 0, 1, ids=(1, 2)), make_seq("B", 0, 1, ids=(1, 2))
    bm.allocate(a, 2)
    bm.allocate(b, 2)               # computed side by side, no hit yet
    bm.commit(a, 2)
    bm.commit(b, 2)
    assert bm.num_cached == 1
    bm.free(a)
    bm.free(b)
    assert bm.num_free == 6 and bm.num_cached == 1
