"""`om-run serve MODEL_DIR`: the flags of `vllm serve` (the engine), `vllm bench serve` (the workload and its
results) and ATC (--soc_version, --tiling_schedule_optimize) on one command line; MindIE's engine from its
config.json. Everything is checked before any build or simulation starts (session.py runs it)."""
from __future__ import annotations

import click

NARGS = ("--goodput", "--metadata")    # vllm bench serve's nargs="+" flags


def expand_nargs(argv: list[str]) -> list[str]:
    """`--goodput ttft:200 tpot:50` (argparse's nargs="+", as vllm spells it) as click's repeated option."""
    out, flag = [], None
    for tok in argv:
        if tok in NARGS:
            flag = tok
            out.append(tok)
        elif flag and not tok.startswith("-") and out[-1] != flag:
            out += [flag, tok]
        else:
            if tok.startswith("-"):
                flag = None
            out.append(tok)
    return out


def parse_flags(argv: list[str]) -> dict:
    """om-run serve's flags as the session takes them (click's types and defaults, the rate read): what the command,
    om-sweep's serving jobs, the benches and the tests call instead of the command line."""
    flags = serve_main.make_context("om-run serve", list(map(str, argv))).params
    flags["request_rate"] = _rate(flags["request_rate"])
    return flags


def _rate(text: str) -> float:
    if text.strip().lower() == "inf":
        return float("inf")
    try:
        v = float(text)
    except ValueError:
        raise click.BadParameter(f"{text!r}: a number of requests per second, or inf") from None
    if not v > 0:
        raise click.BadParameter(f"{text}: the request rate must be > 0 (inf: every request at once)")
    return v


@click.command(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 120})
@click.argument("model_dir", metavar="MODEL_DIR")
# -- the model and the device
@click.option("--load-format", type=click.Choice(["dummy", "auto"]), default="auto", show_default=True,
              help="dummy: no weights (timing only); auto: the folder's safetensors (numerics too).")
@click.option("--soc_version", "--soc-version", "soc_version", default="Ascend910B1", show_default=True,
              help="The SoC simulated (ATC's name).")
@click.option("--tensor-parallel-size", "-tp", "tensor_parallel_size", type=int, default=1, show_default=True,
              help="NPUs per model: the decoder split over that many ranks (heads, MLP, vocabulary) joined by HCCL "
                   "all-reduces and an all-gather, on the machine of --topology.")
@click.option("--topology", default=None, help="The machine of the tensor-parallel ranks: atlas-800-a2, "
                                               "atlas-300i-duo, atlas-300i-pro (default: the SoC's product).")
@click.option("--link-calibration", "link_calibration", default=None,
              help="A real hccl_test output: its latency and bandwidth fitted and used for the links.")
@click.option("--tiling_schedule_optimize", "--tiling-schedule-optimize", "tiling_sink", type=click.Choice(["0", "1"]),
              default="0", show_default=True,
              help="1: the attention's sequence-length-dependent tiling sinks to the AICPU (graph mode only).")
@click.option("--served-model-name", default=None, help="The model id in the results (default: the folder's name).")
# -- the engine
@click.option("--engine", type=click.Choice(["vllm", "mindie"]), default="vllm", show_default=True)
@click.option("--scheduler-version", type=click.Choice(["v0", "v1"]), default="v0", show_default=True,
              help="vLLM's scheduler: v0 (vllm-ascend v0.7.3's default) or v1.")
@click.option("--max-num-seqs", type=int, default=None, help="vLLM: sequences per step (default 256).")
@click.option("--max-num-batched-tokens", type=int, default=None, help="vLLM: tokens per step.")
@click.option("--block-size", type=int, default=None, help="KV cache block size in tokens (Ascend default 128).")
@click.option("--enable-chunked-prefill/--no-enable-chunked-prefill", default=None)
@click.option("--enable-prefix-caching/--no-enable-prefix-caching", default=None)
@click.option("--gpu-memory-utilization", type=float, default=0.9, show_default=True)
@click.option("--num-gpu-blocks-override", type=int, default=None,
              help="vLLM's: this many KV blocks instead of what the memory gives (testing preemption).")
@click.option("--max-model-len", type=int, default=None, help="Default: the config's max_position_embeddings.")
@click.option("--enforce-eager", is_flag=True, help="Op-by-op execution (vllm-ascend's eager mode).")
@click.option("--sim-config", default=None,
              help="JSON overriding the simulator's runtime-profile parameters (om-run's --sim-config, "
                   "om_run/sim/profile.py): e.g. the DRAM efficiency or host costs you measured on your device.")
@click.option("--mindie-turbo", is_flag=True,
              help="vLLM: the host runs vllm-ascend with MindIE Turbo installed (its own per-op dispatch cost).")
@click.option("--host-dispatch-us", type=float, default=None,
              help="vLLM: your host's PyTorch / torch_npu dispatch per eager op, in us (measured), instead of the "
                   "preset's.")
@click.option("--mindie-config", type=click.Path(dir_okay=False), default=None,
              help="MindIE's config.json (BackendConfig) for --engine mindie.")
# -- the workload (vllm bench serve's flags)
@click.option("--dataset-name", type=click.Choice(["random", "sharegpt"]), default="random", show_default=True)
@click.option("--dataset-path", default=None, help="The ShareGPT JSON file.")
@click.option("--num-prompts", type=int, default=1000, show_default=True)
@click.option("--random-input-len", type=int, default=1024, show_default=True)
@click.option("--random-output-len", type=int, default=128, show_default=True)
@click.option("--random-range-ratio", type=float, default=0.0, show_default=True)
@click.option("--random-prefix-len", type=int, default=0, show_default=True)
@click.option("--sharegpt-output-len", type=int, default=None)
@click.option("--request-rate", default="inf", show_default=True, help="Requests per second (inf: all at once).")
@click.option("--burstiness", type=float, default=1.0, show_default=True, help="1: Poisson arrivals; else gamma.")
@click.option("--max-concurrency", type=int, default=None, help="Requests in flight at most (the client's).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--trace", "trace_file", default=None,
              help="Replay a trace: Vidur's CSV (arrived_at,num_prefill_tokens,num_decode_tokens) or AISBench's "
                   "timestamped JSONL.")
# -- results (vllm bench serve's, AISBench's, and om-run's own)
@click.option("--save-result", is_flag=True)
@click.option("--save-detailed", is_flag=True)
@click.option("--append-result", is_flag=True)
@click.option("--result-dir", default=None)
@click.option("--result-filename", default=None)
@click.option("--metadata", multiple=True, help="KEY=VALUE pairs saved in the result JSON.")
@click.option("--percentile-metrics", default=None, help="Default: ttft,tpot,itl.")
@click.option("--metric-percentiles", default=None, help="Default: 99.")
@click.option("--goodput", multiple=True, help="SLOs as KEY:MS (ttft, tpot, e2el).")
@click.option("--aisbench-output", default=None, help="A folder for AISBench's performance CSV / JSON.")
@click.option("--requests-csv", default=None, help="The per-request CSV.")
@click.option("--steps-csv", default=None, help="The per-step CSV.")
@click.option("--trace-output", default=None, help="A Chrome / Perfetto trace of the run.")
@click.option("--report", default=None, help="An HTML report with charts (the [report] extra).")
# -- the simulation
@click.option("--step-time", type=click.Choice(["table", "direct"]), default="table", show_default=True,
              help="table: interpolate a simulated grid of steps; direct: simulate every step.")
@click.option("--workers", type=int, default=None, help="Processes that simulate the step grid (default: cores).")
@click.option("--search-request-rate", is_flag=True,
              help="Find the highest request rate whose run meets every --goodput SLO at --slo-percentile.")
@click.option("--slo-percentile", type=float, default=90.0, show_default=True)
@click.option("--no-progress", is_flag=True)
def serve_main(**flags):
    """Serve a Hugging Face decoder on the simulated NPU: many requests at once, scheduled as vllm-ascend or
    MindIE schedule them, each step timed from the compiled model's kernels."""
    from ..errors import guarded
    from .session import run_serve
    flags["request_rate"] = _rate(flags["request_rate"])
    guarded(lambda: run_serve(flags))
