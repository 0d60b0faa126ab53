"""What one engine step costs on the simulated device, from the compiled decoder's own kernels.

Direct simulation (StepSimulator) runs the .om timing only for a step's shapes, told the sequence lengths its
attention tiles by (Simulation.known_values). A decoder's layers are identical, so the .om of one layer and of
two are simulated and the model's L layers priced as t1 + (L - 1) * (t2 - t1): the second layer's increment is
the steady per-layer cost, the first run carries the embedding, the final norm and the lm_head.

Simulating every step of a benchmark that way is too slow (hundreds of thousands of steps), so StepTable
simulates a grid of (tokens T, sequences S, mean context before the step c), geometric in each, once and
interpolates trilinearly between its points. A step's c is (sum of its sequences' context after the step - T) / S: the
attention's K/V reads, which dominate it, follow that sum. Two times per point: the first step of a shape
(ATB's setup cache misses: T or S changed since the last step) and a repeat (same shapes, new lengths)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .decoder_graph import STEP_INPUTS

STEP_SHAPES = {"input_ids": "T", "positions": "T", "slot_mapping": "T", "block_tables": "SB",
               "actual_seq_lengths": "S", "actual_seq_lengths_kv": "S", "logits_indices": "S"}


@dataclass(frozen=True)
class StepShape:
    """The features a step's cost is read by: tokens, sequences, their context after the step (sum)."""
    tokens: int
    seqs: int
    context: int

    @property
    def mean_before(self) -> float:
        return max(0.0, (self.context - self.tokens) / max(1, self.seqs))


def step_shape(q_lens, kv_lens) -> StepShape:
    return StepShape(int(sum(q_lens)), len(q_lens), int(sum(kv_lens)))


class StepSimulator:
    """One compiled decoder (.om) priced per step by direct timing-only simulation."""

    def __init__(self, om_path: str, max_blocks: int, prof=None, captured: bool = False, link=None, host_threads=1):
        from ..load.loader import load_model
        from ..sim.host import Simulation
        from ..sim.warm import warm
        self.model = load_model(om_path)
        self.max_blocks = max_blocks
        self.dynamic = any(d < 0 for io in self.model.inputs for d in io.desc.shape)   # shapes given each step
        names = [io.name for io in self.model.inputs]
        self.sim = Simulation(self.model, prof, compute=False, host_threads=host_threads)
        # weights and caches live on the device; logits stay there for the sampler
        self.sim.resident = ({n for n in names if n not in STEP_INPUTS}, {io.name for io in self.model.outputs})
        self.captured = captured
        if captured:   # a captured graph reads its step inputs from its own device buffers
            self.sim.device_inputs = set(STEP_INPUTS)
        self.mirror = None
        if link is not None:   # tensor parallel: (ranks, topology) — every rank runs this step as this one does
            from ..run.world_run import link_cost
            from ..sim.world import MirrorBinding
            tp, topology = link
            self.mirror = self.sim.world = MirrorBinding(tp, link_cost(topology))
        warm(self.sim)
        # the engine's warm-up (vLLM's profile run) has created every operation's runner before the first request
        first = [1] * self.static_seqs() if captured else [1]
        self.run(first, first)

    def static_seqs(self) -> int:
        io = next(io for io in self.model.inputs if io.name == "actual_seq_lengths")
        return int(io.desc.shape[0])

    def forget(self) -> None:
        """ATB's setup and kernel caches emptied (its runner pools and workspace kept): a step priced after it
        depends on the step before it only, never on the order the grid or the benchmark visited shapes in."""
        self.sim.atb.last_setup.clear()
        self.sim.atb.local.clear()
        self.sim.atb.shared.clear()

    def run(self, q_lens, kv_lens) -> tuple[float, float, float, float, float]:
        """(end-to-end, device busy, host busy, collectives, issued) seconds of one step of these per-sequence query /
        context lengths (collectives: the time the ranks' HCCL tasks took, tensor parallel only; issued: when the
        host had launched the step's last kernel, where an eager framework's forward call returns)."""
        q = np.asarray(q_lens, np.int64)
        kv = np.asarray(kv_lens, np.int64)
        t, s = int(q.sum()), len(q)
        dims = {"T": (t,), "S": (s,), "SB": (s, self.max_blocks)}
        shapes = [dims[STEP_SHAPES[io.name]] if io.name in STEP_SHAPES else io.desc.shape for io in self.model.inputs]
        self.sim.known_values = {"actual_seq_lengths": np.cumsum(q), "actual_seq_lengths_kv": kv}
        if self.mirror is not None:
            self.mirror.log.clear()
        _, st = self.sim.run(None, shapes if self.dynamic else None)
        comm = sum(c["end"] - c["start"] for c in self.mirror.log) if self.mirror is not None else 0
        return st.e2e_ns * 1e-9, st.device_ns * 1e-9, st.host_ns * 1e-9, comm * 1e-9, st.issued_ns * 1e-9


def representative(t: int, s: int, c: float, max_len: int) -> tuple[list[int], list[int]]:
    """A step of t tokens over s sequences (evenly split) each with about c positions of context before it; more
    sequences when t tokens do not fit s sequences of max_len (such a step cannot occur: its grid point holds the
    nearest one that can)."""
    s = max(1, min(max(s, -(-t // max_len)), t))
    q = [t // s + (1 if k < t % s else 0) for k in range(s)]
    kv = [min(max_len, x + int(round(c))) for x in q]
    return q, kv


def grid_axis(low: int, high: int, points_per_octave: int = 2) -> list[int]:
    """low..high on a geometric grid (both ends included)."""
    out, k = {low, high}, 0
    while True:
        v = int(round(max(low, 1) * 2 ** (k / points_per_octave)))
        if v >= high:
            break
        out.add(v)
        k += 1
    return sorted(out)


def context_axis(max_len: int) -> list[int]:
    """0, 64, 256, ... (x4) below max_len: the attention's K/V reads grow linearly with the context, so linear
    interpolation between these points is exact but for the tiling's split steps."""
    out, c = [0], 64
    while c < max_len:
        out.append(c)
        c *= 4
    return out + [max_len]


@dataclass
class StepTable:
    """Step times on the grid tokens x seqs x contexts: miss[i, j, k] (first step of a shape), hit[i, j, k], the
    device's busy time, and when the host had issued the step's last kernel (issued_miss / issued_hit)."""
    tokens: list[int]
    seqs: list[int]
    contexts: list[int]
    miss: np.ndarray
    hit: np.ndarray
    device: np.ndarray
    issued_miss: np.ndarray
    issued_hit: np.ndarray

    @staticmethod
    def _coord(axis: list[int], v: float):
        """The grid cell around v and v's weight toward its upper corner: linear in v, as the kernels' costs are
        between their tiling's steps (the grid is geometric so that small steps are resolved finely)."""
        if len(axis) == 1:
            return 0, 0, 0.0
        x = min(max(v, axis[0]), axis[-1])
        i = max(0, min(len(axis) - 2, int(np.searchsorted(axis, x, side="right")) - 1))
        w = (x - axis[i]) / (axis[i + 1] - axis[i]) if axis[i + 1] > axis[i] else 0.0
        return i, i + 1, min(1.0, max(0.0, w))

    def _corners(self, shape: StepShape):
        ct = self._coord(self.tokens, shape.tokens)
        cs = self._coord(self.seqs, shape.seqs)
        cc = self._coord(self.contexts, shape.mean_before)
        for it, wt in ((ct[0], 1 - ct[2]), (ct[1], ct[2])):
            for js, ws in ((cs[0], 1 - cs[2]), (cs[1], cs[2])):
                for kc, wc in ((cc[0], 1 - cc[2]), (cc[1], cc[2])):
                    w = wt * ws * wc
                    if w:
                        yield (it, js, kc), w

    def lookup(self, shape: StepShape, same_shape_as_last: bool) -> tuple[float, float, float]:
        """(end-to-end, device, issued) seconds of a step, trilinear between the grid's corners."""
        arr, issued = (self.hit, self.issued_hit) if same_shape_as_last else (self.miss, self.issued_miss)
        total = dev = iss = 0.0
        for at, w in self._corners(shape):
            total += w * arr[at]
            dev += w * self.device[at]
            iss += w * issued[at]
        return total, dev, iss

    def to_json(self) -> dict:
        return {"tokens": self.tokens, "seqs": self.seqs, "contexts": self.contexts, "miss": self.miss.tolist(),
                "hit": self.hit.tolist(), "device": self.device.tolist(), "issued_miss": self.issued_miss.tolist(),
                "issued_hit": self.issued_hit.tolist()}

    @classmethod
    def from_json(cls, d: dict) -> "StepTable":
        return cls(list(d["tokens"]), list(d["seqs"]), list(d["contexts"]), np.asarray(d["miss"], float),
                   np.asarray(d["hit"], float), np.asarray(d["device"], float), np.asarray(d["issued_miss"], float),
                   np.asarray(d["issued_hit"], float))


class LayeredSteps:
    """A model of L layers priced from the one- and two-layer .oms: t1 + (L - 1) * (t2 - t1)."""

    def __init__(self, one: StepSimulator, two: StepSimulator, layers: int, max_len: int):
        self.one, self.two, self.layers, self.max_len = one, two, layers, max_len

    def direct(self, q_lens, kv_lens, same_shape_as_last: bool) -> tuple[float, float, float]:
        """(seconds, device, issued) seconds of one step by direct simulation (what the table is checked against)."""
        miss, hit, dev, _, imiss, ihit = self.run_pair(q_lens, kv_lens)
        return (hit, dev, ihit) if same_shape_as_last else (miss, dev, imiss)

    def run_pair(self, q_lens, kv_lens, warm_kv=None) -> tuple[float, float, float, float, float, float]:
        """(miss, hit, device, collectives, issued after a miss, issued after a hit) seconds: the step run after a
        step of other shapes, then after one of its shapes (warm_kv: the lengths that earlier step had; default one
        fewer position each)."""
        prev = warm_kv if warm_kv is not None else [max(q, k - 1) for q, k in zip(q_lens, kv_lens)]
        out = []
        for sim in (self.one, self.two):
            sim.forget()          # ATB's caches empty: the first run misses as a step after other shapes does
            miss = sim.run(q_lens, prev)
            hit = sim.run(q_lens, kv_lens)
            out.append((miss[0], hit[0], hit[1], hit[3], miss[4], hit[4]))
        k = self.layers - 1
        return tuple(a + k * (b - a) for a, b in zip(*out))
