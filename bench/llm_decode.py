"""LLM decode on the simulated device: TTFT, TPOT and tokens/s of a small decoder (tools/kv_decoder.py, random
weights, fp16 build as ATC's default precision gives it) on 910B1 and 310P3, for each KV-cache layout, with tiling
sink off and on and ATB's host caches (setup reuse + kernel cache) on and off — the table in README.md.

    python -m bench.llm_decode [--markdown]

What each knob touches:
  * growing cache: every step has new shapes, so the model runs on the host executor node by node (InferShape,
    tiling, launch per operator): ATB's caches (om_run/sim/atb.py) decide its host time; sink has nothing to sink;
  * static cache: all shapes static, one ModelExecute a step; with sink, the decode attention is IncreFlashAttention
    whose tiling runs on the AICPU from the actual length; ATB's host caches have no per-operator host
    work to save there.
The figures come from the runtime profile's named parameters (om_run/sim/profile.py: host_infershape_ns,
host_tiling_ns(_by_op), host_tiling_cache_hit_ns, atb_setup_ns, atb_runner_create_ns, host_alloc_ns,
host_launch_ns, kernel_launch_latency_ns, aicpu_launch_ns, aicpu_tiling_ns, update_ns...) and the SoCs' platform
data. Nothing here is asserted.
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import atc_py  # noqa: E402
from om_run.generate.decode import Decoder, decoder_io, generate  # noqa: E402
from om_run.load.loader import load_model  # noqa: E402
from om_run.sim.atb import AtbSettings  # noqa: E402
from om_run.sim.host import Simulation  # noqa: E402
from om_run.sim.threads import thread_budget  # noqa: E402
from om_run.sim.warm import warm  # noqa: E402
from tools.kv_decoder import KvShape, build  # noqa: E402

SHAPE = KvShape(layers=2, hidden=256, heads=4, intermediate=688, vocab=2048, max_cache=256)
PROMPT = [11, 503, 77, 1024, 9, 318, 2047, 64]
NEW_TOKENS = 16
SOCS = ("Ascend910B1", "Ascend310P3")
ATB = {"on": AtbSettings(), "off": AtbSettings(setup_cache=0, kernel_cache_type=0)}


def shape_option(layout: str) -> dict:
    n, d, m = SHAPE.heads, SHAPE.head_dim, SHAPE.max_cache
    past = [f"past_key_values.{k}.{io}" for k in range(SHAPE.layers) for io in ("key", "value")]
    if layout == "growing":
        parts = [f"input_ids:[1,1~{m}]", f"attention_mask:[1,1~{m}]", f"position_ids:[1,1~{m}]"]
        return {"input_shape_range": ";".join(parts + [f"{p}:[1,{n},0~{m},{d}]" for p in past])}
    parts = ["input_ids:1,1", "position_ids:1,1", "cache_position:1"]
    return {"input_shape": ";".join(parts + [f"{p}:1,{n},{m},{d}" for p in past])}


def run(om: pathlib.Path, atb: AtbSettings) -> dict:
    model = load_model(str(om))
    roles = decoder_io(model, str(om))
    decoder = Decoder(model, roles)
    sim = Simulation(model, atb=atb)
    sim.resident = decoder.resident()
    with thread_budget(1), np.errstate(all="ignore"):
        warm(sim)
        gen = generate(decoder, PROMPT, NEW_TOKENS, sim.run)
    return {**gen.summary(), **sim.atb_counters(), "tokens": gen.tokens}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--markdown", action="store_true", help="print only the README table")
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        d = pathlib.Path(tmp)
        for layout in ("growing", "static"):
            model = build(SHAPE, layout, seed=0)
            for soc in SOCS:
                for sink in ("0", "1"):
                    opts = {"ge.socVersion": soc, "ge.tiling_schedule_optimize": sink, **shape_option(layout)}
                    om = d / f"{layout}_{soc}_{sink}.om"
                    om.write_bytes(atc_py.build(model, opts).om)
                    for atb_name, atb in ATB.items():
                        r = run(om, atb)
                        rows.append((layout, soc, sink, atb_name, r))
                        if not args.markdown:
                            print(f"{layout:8} {soc} sink {sink} ATB caches {atb_name:3}: TTFT {r['ttft_us']:9.1f} us, "
                                  f"TPOT {r['tpot_us']:8.1f} us, {r['tokens_per_s']:8.1f} tokens/s, setup hits "
                                  f"{r['setup_cache_hits']}, kernel hits {r['kernel_cache_hits']}", flush=True)
    seqs = [r["tokens"] for *_, r in rows]
    agree = next((k for k in range(NEW_TOKENS) if len({t[k] for t in seqs}) > 1), NEW_TOKENS)
    print()
    print(f"Decoder: {SHAPE.layers} layers, hidden {SHAPE.hidden}, {SHAPE.heads} heads, vocab {SHAPE.vocab}, cache "
          f"{SHAPE.max_cache}; prompt {len(PROMPT)} tokens, {NEW_TOKENS} new; default (fp16) build; "
          f"every row gives the same first {agree} of the {NEW_TOKENS} tokens"
          + ("." if agree == NEW_TOKENS else " (then fp16 rounding splits a near tie of two logits)."))
    print()
    print("| KV cache | sink | ATB caches | " + " | ".join(f"{s} TTFT / TPOT (us) | {s} tokens/s" for s in SOCS) + " |")
    print("|---|---|---|" + "---|---|" * len(SOCS))
    for layout in ("growing", "static"):
        for sink in ("0", "1"):
            for atb_name in ATB:
                cells = []
                for soc in SOCS:
                    r = next(r for lay, s, sk, a, r in rows if (lay, s, sk, a) == (layout, soc, sink, atb_name))
                    cells += [f"{r['ttft_us']:.1f} / {r['tpot_us']:.1f}", f"{r['tokens_per_s']:.0f}"]
                print(f"| {layout} | {sink} | {atb_name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
