"""The served model's numerics (`--load-format auto`): the whole decoder compiled and run by om-run on every step
the scheduler plans, its KV caches carried from step to step as the engine keeps them on the device, each
sampled token the argmax of its sequence's logits (greedy, as vllm bench serve's requests ask)."""
from __future__ import annotations

import numpy as np

from .build import BuildSpec, compile_decoder
from .decoder_graph import STEP_INPUTS
from .hf_config import DecoderConfig
from .request import StepPlan
from .tensor_parallel import shard


def step_inputs(parts, block_size: int, max_blocks: int) -> dict[str, np.ndarray]:
    """The step inputs of parts = [(token ids, position of the first, block ids)] in batch order."""
    ids, pos, slots, tables, cum, kv = [], [], [], [], [], []
    for toks, start, blocks in parts:
        ids += toks
        p = list(range(start, start + len(toks)))
        pos += p
        slots += [blocks[x // block_size] * block_size + x % block_size for x in p]
        tables.append(list(blocks) + [0] * (max_blocks - len(blocks)))
        cum.append(len(ids))
        kv.append(start + len(toks))
    feeds = {"input_ids": ids, "positions": pos, "slot_mapping": slots, "block_tables": tables,
             "actual_seq_lengths": cum, "actual_seq_lengths_kv": kv, "logits_indices": [c - 1 for c in cum]}
    return {k: np.asarray(v, np.int64) for k, v in feeds.items()}


class ModelRunner:
    """One compiled decoder with its weights and caches, run with numerics one step at a time; with tensor
    parallelism, on every rank of a world of simulated devices (each its slice of the weights, its own caches),
    the collectives joining them."""

    def __init__(self, cfg: DecoderConfig, spec: BuildSpec, weights: dict[str, np.ndarray], cost=None):
        from ..load.loader import load_model
        from ..sim.host import Simulation
        self.spec = spec
        self.model = load_model(compile_decoder(cfg, spec))
        self.names = [io.name for io in self.model.inputs]
        self.cost = cost            # the link model's collective cost (tp > 1)
        sh = shard(cfg, spec.tp)
        self.sims, self.states = [], []
        for rank in range(spec.tp):
            sim = Simulation(self.model, compute=True)
            sim.resident = ({n for n in self.names if n not in STEP_INPUTS},
                            {io.name for io in self.model.outputs})
            state = sh.rank_weights(weights, rank)
            for io in self.model.inputs:
                if "_cache." in io.name:
                    state[io.name] = np.zeros(io.desc.shape, io.desc.dtype)
            if spec.tp > 1:
                state["vocab_range"] = sh.vocab_range(rank)
            self.sims.append(sim)
            self.states.append(state)

    def logits(self, parts) -> np.ndarray:
        """[sequences, vocab]: each part's last token's logits after the step (its caches updated)."""
        feeds = step_inputs(parts, self.spec.block_size, self.spec.max_blocks)
        inputs = [[feeds[n] if n in feeds else state[n] for n in self.names] for state in self.states]
        if len(self.sims) == 1:
            outs = [self.sims[0].run(inputs[0])[0]]
        else:
            from ..run.world_run import run_world
            outs = run_world(self.sims, self.cost, inputs).outputs
        for state, rank_outs in zip(self.states, outs):
            for io, arr in zip(self.model.outputs, rank_outs):
                if io.name.startswith("present."):
                    state[io.name[len("present."):]] = arr
        return outs[0][0]

    def sample(self, plan: StepPlan) -> dict:
        """{Sequence: greedy token} for the plan's sequences whose step ends their known tokens."""
        parts = [(s.seq.tokens[s.start:s.start + s.num_tokens], s.start, s.seq.block_ids) for s in plan.scheduled]
        out = self.logits(parts)
        return {s.seq: int(np.argmax(out[k])) for k, s in enumerate(plan.scheduled) if s.samples}
