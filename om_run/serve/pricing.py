"""A served model's step prices: the one- and two-layer decoders compiled, the grid of step times simulated once
(in parallel worker processes, each with its own simulators) and kept on disk beside the .oms, keyed by what
decides it, so a second run with the same model, SoC and limits starts at once.

Eager mode (op by op, vllm-ascend's --enforce-eager and v0.7.3's only mode for these models) runs the dynamic-shape
.om on the host executor with the framework's per-op dispatch (host_costs.HostSoftware); graph mode
(vllm-ascend's ACLGraph) replays a captured static graph for a decode-only step of up to the largest capture size,
padded to the next captured batch size, its step inputs in the graph's device buffers (so the attention's tiling
either syncs to the host each step or, with --tiling_schedule_optimize=1, sinks to the AICPU); prefill and mixed
steps run eager, as ACLGraph captures only decode batches."""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import multiprocessing
import os
from dataclasses import dataclass

from atc_py.common.atomic_write import write_atomic

from .build import BuildSpec, cache_dir, compile_decoder
from .hf_config import DecoderConfig
from .step_table import LayeredSteps, StepSimulator, StepTable, context_axis, grid_axis, representative

TABLE_VERSION = 2


@dataclass(frozen=True)
class GridSpec:
    max_tokens: int
    max_seqs: int
    max_len: int
    fixed: bool = False          # a static graph: one (tokens, seqs) point, the contexts vary

    def axes(self) -> tuple[list[int], list[int], list[int]]:
        if self.fixed:
            return [self.max_tokens], [self.max_seqs], context_axis(self.max_len)
        return grid_axis(1, self.max_tokens), grid_axis(1, self.max_seqs, 1), context_axis(self.max_len)

    def points(self) -> list[tuple[int, int, int]]:
        t, s, c = self.axes()
        return [(i, j, k) for i in range(len(t)) for j in range(len(s)) for k in range(len(c)) if s[j] <= t[i] or j == 0]


class ServedModel:
    """The compiled decoders of one (config, build) and the steps priced from them."""

    def __init__(self, cfg: DecoderConfig, spec: BuildSpec, prof=None, static_seqs: int = 0, topology=None,
                 host_threads=1):
        self.cfg, self.spec, self.prof, self.static_seqs = cfg, spec, prof, static_seqs
        self.host_threads = host_threads      # the host executor's threads (an eager framework's task queue)
        # tensor parallel: the ranks' machine (its links price the collectives); None on one NPU
        self.link = (spec.tp, topology) if spec.tp > 1 else None
        self.paths = (compile_decoder(cfg.with_layers(1), spec, static_seqs=static_seqs),
                      compile_decoder(cfg.with_layers(2), spec, static_seqs=static_seqs))
        self._layered: LayeredSteps | None = None

    @property
    def layered(self) -> LayeredSteps:
        if self._layered is None:
            mb, cap = self.spec.max_blocks, bool(self.static_seqs)
            one, two = (StepSimulator(p, mb, self.prof, cap, self.link, self.host_threads) for p in self.paths)
            self._layered = LayeredSteps(one, two,
                                         self.cfg.num_layers, self.spec.max_model_len)
        return self._layered

    def grid(self) -> GridSpec:
        if self.static_seqs:        # one captured decode batch: its size, every context
            return GridSpec(self.static_seqs, self.static_seqs, self.spec.max_model_len, fixed=True)
        return GridSpec(self.spec.max_num_batched_tokens, self.spec.max_num_seqs, self.spec.max_model_len)

    def table_path(self) -> str:
        h = hashlib.sha256()
        for p in self.paths:
            h.update(os.path.basename(p).encode())
        h.update(repr((self.cfg.num_layers, self.grid(), self.prof, self.static_seqs, TABLE_VERSION,
                       self.link, self.host_threads)).encode())
        return os.path.join(cache_dir(), f"table-{h.hexdigest()[:32]}.json")

    def table(self, workers: int = 1, progress=None, use_cache: bool = True) -> StepTable:
        path = self.table_path()
        cached = _cached(path) if use_cache else None
        if cached is not None:
            return cached
        with _building(path):             # runs on one machine (a sweep's jobs) wait for the first to build it
            cached = _cached(path) if use_cache else None
            if cached is not None:
                return cached
            table = build_table(self, workers, progress)
            write_atomic(path, json.dumps(table.to_json()).encode())
        return table


def _cached(path: str) -> StepTable | None:
    if os.path.isfile(path):
        try:
            with open(path, encoding="utf-8") as f:
                return StepTable.from_json(json.load(f))
        except (OSError, ValueError, KeyError, TypeError):
            pass                          # a damaged cache entry is simulated again
    return None


@contextlib.contextmanager
def _building(path: str):
    """An exclusive lock beside the table while it is built; without one (a filesystem that cannot lock) each run
    builds its own, as before: the writes are atomic either way."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        lock = open(path + ".lock", "a")
    except OSError:
        yield
        return
    with lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
        except OSError:
            pass
        yield


def _price_points(args) -> list[tuple[tuple[int, int, int], tuple[float, ...]]]:
    paths, mb, layers, grid, points, prof, captured, link, threads = args
    one = StepSimulator(paths[0], mb, prof, captured, link, threads)
    two = StepSimulator(paths[1], mb, prof, captured, link, threads)
    steps = LayeredSteps(one, two, layers, grid.max_len)
    tokens, seqs, contexts = grid.axes()
    out = []
    for i, j, k in points:
        q, kv = representative(tokens[i], seqs[j], contexts[k], grid.max_len)
        out.append(((i, j, k), steps.run_pair(q, kv)))
    return out


def build_table(model: ServedModel, workers: int = 1, progress=None) -> StepTable:
    """The grid simulated over `workers` processes (points dealt round-robin so each gets small and large steps)."""
    import numpy as np
    grid = model.grid()
    tokens, seqs, contexts = grid.axes()
    points = grid.points()
    workers = max(1, min(workers, len(points)))
    chunks = [points[w::workers] for w in range(workers)]
    # finer pieces than workers, so progress moves and the slow (large) steps spread out
    pieces = [c[k:k + 16] for c in chunks for k in range(0, len(c), 16)]
    jobs = [(model.paths, model.spec.max_blocks, model.cfg.num_layers, grid, piece, model.prof,
             bool(model.static_seqs), model.link, model.host_threads) for piece in pieces]
    shape = (len(tokens), len(seqs), len(contexts))
    miss, hit, dev, imiss, ihit = (np.zeros(shape) for _ in range(5))
    done = 0

    def take(results):
        nonlocal done
        for (i, j, k), (m, h, d, _, im, ih) in results:
            miss[i, j, k], hit[i, j, k], dev[i, j, k], imiss[i, j, k], ihit[i, j, k] = m, h, d, im, ih
        done += len(results)
        if progress:
            progress(done, len(points))
    if workers == 1:
        for job in jobs:
            take(_price_points(job))
    else:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            for res in pool.imap_unordered(_price_points, jobs):
                take(res)
    for i in range(shape[0] if not grid.fixed else 0):   # more sequences than tokens: S = T's times (the largest S <= T)
        for j in range(1, shape[1]):
            if seqs[j] > tokens[i]:
                for arr in (miss, hit, dev, imiss, ihit):
                    arr[i, j] = arr[i, j - 1]
    return StepTable(tokens, seqs, contexts, miss, hit, dev, imiss, ihit)
