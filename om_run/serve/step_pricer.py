"""What each engine step costs, by the engine's execution mode: eager steps from the dynamic-shape decoder (the
grid of pricing.py, or direct simulation), graph-mode decode steps from the captured static graph of the padded
batch size (a small grid over the context per capture size)."""
from __future__ import annotations

import bisect
from dataclasses import replace

from ..sim.profile import RuntimeProfile
from .pricing import ServedModel
from .step_table import StepTable, step_shape
from .tensor_parallel import shard


class StepPricer:
    """step(q_lens, kv_lens, same_shape_as_last) -> (seconds, device seconds, issued seconds) of one engine step
    (issued: when the host had launched its last kernel)."""

    def __init__(self, cfg, engine, mode: str = "table", workers: int = 1, progress=None, echo=None):
        self.mode = mode
        spec = engine.build_spec()
        self.topology = engine.topology
        self.shard = shard(cfg, engine.tp)
        # a framework dispatches each op of an eager step (vLLM: PyTorch through torch_npu); MindIE's ATB
        # operations are called directly, so its executor's own costs are the whole host side
        dispatch = engine.host.dispatch_ns if engine.host is not None else 0
        layout = engine.host.thread_layout if engine.host is not None else 1
        base = engine.profile or RuntimeProfile()          # --sim-config's overrides, else the defaults
        self.eager = ServedModel(cfg, spec, replace(base, framework_dispatch_ns=dispatch),
                                 topology=engine.topology, host_threads=layout)
        self.capture_sizes = list(engine.capture_sizes)
        self.graphs = {n: ServedModel(cfg, spec, engine.profile, static_seqs=n, topology=engine.topology)
                       for n in self.capture_sizes}
        self.tables: dict[int, StepTable] = {}
        self.eager_table: StepTable | None = None
        if mode == "table":
            if echo:
                echo(f"[INFO] pricing steps: {self.eager.grid().points().__len__()} eager grid points"
                     + (f", {len(self.capture_sizes)} captured graphs" if self.capture_sizes else "")
                     + f" over {workers} process(es) (cached in {self.eager.table_path()})")
            self.eager_table = self.eager.table(workers, progress)
            for n, model in self.graphs.items():
                self.tables[n] = model.table(1, None)

    def graph_size(self, q_lens) -> int | None:
        """The captured batch a decode-only step replays (the smallest capture size that holds it), or None."""
        if not self.capture_sizes or any(q != 1 for q in q_lens):
            return None
        k = bisect.bisect_left(self.capture_sizes, len(q_lens))
        return self.capture_sizes[k] if k < len(self.capture_sizes) else None

    def collectives(self, q_lens) -> list[tuple[str, int, int, float]]:
        """(op type, calls, bytes per call, seconds per call) of each collective a step runs (tensor parallel): the
        link model's price for the step's tokens and sequences (a captured graph's padded batch)."""
        if self.topology is None:
            return []
        from ..hccl.algorithms import collective_cost
        size = self.graph_size(q_lens)
        seqs = size if size is not None else len(q_lens)
        tokens = size if size is not None else sum(q_lens)
        ranks = list(range(self.shard.tp))
        return [(op, calls, n, collective_cost(op, n, ranks, self.topology, dtype=self.shard.cfg.dtype).ns * 1e-9)
                for op, calls, n in self.shard.collectives(tokens, seqs)]

    def step(self, q_lens, kv_lens, same_shape_as_last: bool) -> tuple[float, float, float]:
        size = self.graph_size(q_lens)
        if size is not None:
            pad = size - len(q_lens)
            q, kv = list(q_lens) + [1] * pad, list(kv_lens) + [1] * pad   # padded rows: one position each
            if self.mode == "table":
                return self.tables[size].lookup(step_shape(q, kv), True)
            return self.graphs[size].layered.direct(q, kv, True)
        if self.mode == "table":
            return self.eager_table.lookup(step_shape(q_lens, kv_lens), same_shape_as_last)
        return self.eager.layered.direct(q_lens, kv_lens, same_shape_as_last)
