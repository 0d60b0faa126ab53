"""om-run --generate: the loaded model, the prompt and the flags turned into a decode loop (generate.py), its
console lines, `tokens.npy`, the summary JSON and the per-step profile."""
from __future__ import annotations

import contextlib
import json
import os

import click
import numpy as np

from atc_py.common.atomic_write import make_output_dir, write_atomic, write_in_folder
from atc_py.common.errors import AtcError

from ..run.io import load_npy, load_npz
from ..run.options import RunOptions
from ..sim.execute import check_inputs
from ..sim.host import Simulation
from ..sim.report import step_timeline, write_profile
from ..sim.threads import thread_budget
from ..sim.warm import warm
from .decode import Decoder, decoder_io, generate, read_prompt


def _bad(reason: str) -> AtcError:
    return AtcError("E30002", reason=f"--generate: {reason}")


def refuse_other_modes(opts: RunOptions) -> None:
    """Flags that mean one execution of given inputs do not apply to a decode loop."""
    if opts.generate is None:
        return
    if opts.generate < 1:
        raise _bad(f"{opts.generate} new tokens: give at least 1 (the token the prompt's step produces counts)")
    for given, flag in ((opts.loop != 1, "--loop"), (not opts.compute, "--no-compute"),
                        (opts.expected, "--expected"), (opts.output_size, "--outputSize"),
                        (opts.dym_shape, "--dymShape"), (opts.gear, "a gear flag")):
        if given:
            raise _bad(f"{flag} does not apply: each step's inputs come from the prompt and the tokens so far")


def prompt_arrays(opts: RunOptions) -> dict[str, np.ndarray]:
    if opts.inputs is None:
        return {}
    if opts.inputs.npz:
        return load_npz(opts.inputs.npz)
    if len(opts.inputs.paths) != 1 or not opts.inputs.paths[0].endswith(".npy"):
        raise _bad("give the prompt as one .npz holding input_ids, or one .npy of input_ids")
    return {"": load_npy(opts.inputs.paths[0])}


def run_generate(opts: RunOptions, model, gears, threads: int | None) -> None:
    """Greedy generation on the simulated device; prints and writes what om-run --generate reports."""
    user = gears.view(model, None) if gears is not None else model
    roles = decoder_io(user, opts.model_path)
    decoder = Decoder(user, roles)
    arrays = prompt_arrays(opts)
    if "" in arrays:
        arrays = {roles.input_ids: arrays[""]}
    prompt = read_prompt(opts.inputs.npz or opts.inputs.paths[0] if opts.inputs else None, roles, arrays)
    click.echo(f"[INFO] decoder: {len(roles.past)} layers, {decoder.layout} KV cache"
               + (f" of {decoder.max_cache} positions" if decoder.static else "")
               + f"; prompt of {len(prompt)} tokens, {opts.generate} new tokens")
    sim = Simulation(model, opts.profile, compute=True, allow_hazards=opts.allow_hazards,
                     tiling_cache=opts.tiling_cache, host_threads=opts.host_threads,
                     max_loop_iterations=opts.max_loop_iterations, max_tasks=opts.max_tasks)
    kv_in, kv_out = decoder.resident()
    sim.resident = (kv_in, kv_out)

    def run_step(feeds: list[np.ndarray]):
        check_inputs(user, feeds)
        if gears is None:
            return sim.run(feeds)
        g = gears.from_arrays(feeds, model)
        sim.transfer_bytes = gears.transfer_bytes(model, g)
        outs, stats = sim.run(gears.device_inputs(model, g, feeds))
        return gears.gear_outputs(g, outs), stats

    budget = thread_budget(threads) if threads is not None else contextlib.nullcontext()
    with budget:
        warm(sim)
        gen = generate(decoder, prompt, opts.generate, run_step)
    summary = {"model": model.name, "soc_version": model.soc_version, **gen.summary(),
               **sim.atb_counters()}
    click.echo(f"[INFO] generated {len(gen.tokens)} tokens: {' '.join(map(str, gen.tokens))}")
    click.echo(f"[SIM] TTFT {summary['ttft_us']:.3f} us, TPOT {summary['tpot_us']:.3f} us (median after the first), "
               f"{summary['tokens_per_s']:.1f} tokens/s over {summary['executions']} executions; KV cache "
               f"{gen.kv_cache_bytes} B on the device")
    click.echo(f"[SIM] ATB host caches: setup cache hits {summary['setup_cache_hits']}, kernel cache hits "
               f"{summary['kernel_cache_hits']}")
    if opts.output_dir:
        make_output_dir(opts.output_dir, "--output")
        path = os.path.join(opts.output_dir, "tokens.npy")
        write_in_folder(path, _npy_bytes(np.array([gen.tokens], np.int64)))
        click.echo(f"[INFO] wrote {path}")
    if opts.summary_path:
        write_atomic(opts.summary_path, (json.dumps(summary, indent=1) + "\n").encode())
        click.echo(f"[INFO] wrote {opts.summary_path}")
    if opts.profile_dir:
        make_output_dir(opts.profile_dir, "--profile")
        for p in write_profile(opts.profile_dir, gen.steps[-1].stats, model.name, write_in_folder):
            click.echo(f"[INFO] wrote {p}")
        path = os.path.join(opts.profile_dir, "steps.csv")
        write_in_folder(path, step_timeline(gen.steps).encode())
        click.echo(f"[INFO] wrote {path}")
    click.echo("[INFO] om-run finished successfully")


def _npy_bytes(arr: np.ndarray) -> bytes:
    import io
    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()
