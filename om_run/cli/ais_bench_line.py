"""ais_bench's command line (`python3 -m ais_bench ...`, `python3 ais_infer.py ...`) read as ais_bench reads it and
turned into om-run's, for `python -m om_run.ais_bench`.

AIS_BENCH_FLAGS is ais_bench's whole flag list (ais_bench/infer/utils.py get_args in Ascend's tools repository,
plus ais_infer.py's --infer_queue_count, which the model zoo READMEs still pass), each with its value as ais_bench
checks it and what om-run does with it: the same thing, nothing (a host-side setting that changes neither the
outputs nor the simulated execution: the reason is its `does`), or a refusal saying what is not simulated. The
defaults that differ from om-run's (BIN outputs, one warm-up) come from conventions.AIS_BENCH."""
from __future__ import annotations

import os
import re
import sys

from ..run.conventions import AIS_BENCH, ToolSettings
from .tool_argv import ToolFlag, bad, choice, int_in, own_options, parse_line, str2bool

TOOL = "ais_bench"
INT_MAX = 2**31 - 1                                  # ais_bench: CPP_INT_MAX_SIZE
LOOP_MAX = 100_000                                   # ais_bench: LOOP_MAX_SIZE
DYM_STRING = re.compile(r"[_A-Za-z0-9,;:/.-]*")      # ais_bench: check_dym_string's characters


def _dym(text: str) -> str:
    if not DYM_STRING.fullmatch(text):
        raise ValueError(f'dym string "{text}" is not a legal string')
    return text


def _numbers(text: str) -> str:
    if not re.fullmatch(r"[0-9,]*", text) or len(text) > 50_000:
        raise ValueError("number list is contain illegal char!")
    return text


def _devices(text: str) -> str:
    """check_device_range_valid: an id 0..255 or a comma-separated list of them (om-run checks the list)."""
    if not re.fullmatch(r"\d+(,\d+)*", text) or any(int(v) > 255 for v in text.split(",")):
        raise ValueError(f"device:{text} is invalid. valid value range is [0, 255]")
    return text


BOOL = "true | false (1 | 0, yes | no)"
POSITIVE = int_in(1, INT_MAX)
NON_NEGATIVE = int_in(0, INT_MAX)

AIS_BENCH_FLAGS = [
    ToolFlag(("--model", "-m"), "path", "required", "the .om to run", to="--model"),
    ToolFlag(("--input", "-i"), "files or folders, comma-separated", "—",
             "om-run's `--input` (one file or folder per model input)", to="--input"),
    ToolFlag(("--output", "-o"), "folder", "—",
             "outputs in a new `<output>/<YYYY_MM_DD-hh_mm_ss>/` folder, or `<output>/<output_dirname>`",
             to="--output"),
    ToolFlag(("--output_dirname",), "relative path", "—",
             "the folder under `--output` (`r1`, `./result/`, `data/bin_out`); an absolute path or `..` is refused",
             to="--output_dirname"),
    ToolFlag(("--outfmt",), "NPY | BIN | TXT", "BIN", "the output files' format", check=choice("NPY", "BIN", "TXT"),
             to="--outfmt"),
    ToolFlag(("--loop", "-l"), f"1..{LOOP_MAX}", "1", "the timed executions", check=int_in(1, LOOP_MAX),
             to="--loop"),
    ToolFlag(("--debug",), BOOL, "false", "nothing: om-run prints the model's description on every run",
             check=str2bool),
    ToolFlag(("--device", "-d"), "id or list 0..255", "0",
             "a list runs the model once per device, outputs in `device<id>_<k>` folders, then ais_bench's "
             "multidevice lines", check=_devices, to="--device"),
    ToolFlag(("--dymBatch",), "integer > 0", "—", "the batch gear", check=POSITIVE, to="--dymBatch"),
    ToolFlag(("--dymHW",), "h,w", "—", "the image-size gear", check=_dym, to="--dymHW"),
    ToolFlag(("--dymDims",), "name:d,d;...", "—",
             "the dims gear, chosen by its values; a name the model lacks is a `[WARN] find no in names:` line",
             check=_dym, to="--dymDims"),
    ToolFlag(("--dymShape",), "name:d,d;...", "—", "the shapes of a dynamic-shape model", check=_dym,
             to="--dymShape"),
    ToolFlag(("--outputSize",), "bytes, comma-separated", "—",
             "output buffer sizes: the first ones, in output order (more sizes than outputs: the rest unused; fewer: "
             "the other outputs get their model size)", check=_numbers, to="--outputSize"),
    ToolFlag(("--auto_set_dymshape_mode",), BOOL, "false",
             "nothing more: om-run runs a dynamic-shape model at the shapes of the inputs it is given", check=str2bool),
    ToolFlag(("--auto_set_dymdims_mode",), BOOL, "false",
             "choose the dims gear from the inputs' shapes (om-run does whenever inputs are given)", check=str2bool),
    ToolFlag(("--batchsize",), "integer > 0", "the first input's first dim", "the batch of the throughput line",
             check=POSITIVE, to="--batchsize"),
    ToolFlag(("--pure_data_type",), "zero | random", "zero",
             "the inputs without `--input`: zeros, or random bytes 0..255 (seeded by om-run's `--seed`)",
             check=choice("zero", "random")),
    ToolFlag(("--profiler",), BOOL, "false", "om-run's profile (op_summary.csv, trace.json) in `<output>/profiler`",
             check=str2bool),
    ToolFlag(("--dump",), BOOL, "false", "every operator's outputs in `<output>/dump`", check=str2bool),
    ToolFlag(("--acl_json_path",), "acl.json", "—", "its dump section, as om-run's `--acl_json`", to="--acl_json"),
    ToolFlag(("--output_batchsize_axis",), "integer ≥ 0", "0",
             "checked against every output's rank, as ais_bench checks it; om-run runs one input file per "
             "execution, so there is nothing to split along it", check=NON_NEGATIVE),
    ToolFlag(("--run_mode",), "array | files | tensor | full", "array",
             "nothing: how the host hands ais_bench the data, the same outputs and executions",
             check=choice("array", "files", "tensor", "full")),
    ToolFlag(("--display_all_summary",), BOOL, "false", "H2D_latency and D2H_latency lines in the summary",
             check=str2bool),
    ToolFlag(("--warmup_count",), "integer ≥ 0", "1", "executions before the timed ones, in no figure",
             check=NON_NEGATIVE),
    ToolFlag(("--dymShape_range",), "name:d~d,...", "—",
             "refused: om-run runs one shape per run (give it with `--dymShape`)"),
    ToolFlag(("--aipp_config",), ".config", "—", "refused: dynamic AIPP is not built (atc-py refuses it, E10055)"),
    ToolFlag(("--energy_consumption",), BOOL, "false", "refused when true: the simulated device has no power "
             "model", check=str2bool),
    ToolFlag(("--npu_id",), "id 0..255", "0", "nothing: the NPU whose power `--energy_consumption` reads",
             check=_devices),
    ToolFlag(("--backend",), "trtexec", "—", "refused: TensorRT's trtexec is not an Ascend runtime",
             check=choice("trtexec")),
    ToolFlag(("--perf",), BOOL, "false", "refused when true: it runs `--backend`", check=str2bool),
    ToolFlag(("--pipeline",), BOOL, "false", "nothing: the host overlapping its copies with the executions, the "
             "executions are the same", check=str2bool),
    ToolFlag(("--profiler_rename",), BOOL, "true", "nothing: the renaming of msprof's files", check=str2bool),
    ToolFlag(("--dump_npy",), BOOL, "false", "nothing: om-run's dumps are .npy already", check=str2bool),
    ToolFlag(("--divide_input",), BOOL, "false", "refused when true: the inputs are not shared out among the "
             "devices; every device runs every input", check=str2bool),
    ToolFlag(("--threads",), "integer > 0", "1", "nothing: the computing threads of `--pipeline`", check=POSITIVE),
    ToolFlag(("--infer_queue_count",), "integer > 0", "20", "nothing: ais_infer.py's queue depth (ais_bench 0.0.2 "
             "dropped the flag; the model zoo READMEs still pass it)", check=POSITIVE),
    ToolFlag(("--help", "-h"), "—", "—", "ais_bench's flags and what om-run does with each", takes_value=False),
]

REFUSED = {"--dymShape_range", "--aipp_config", "--backend"}          # refused whatever their value
REFUSED_WHEN_TRUE = {"--energy_consumption", "--perf", "--divide_input"}


def help_text() -> str:
    rows = [f"  {', '.join(f.names):32} {f.value}: {f.does}" for f in AIS_BENCH_FLAGS]
    return ("python -m om_run.ais_bench: ais_bench's command line on the simulated device "
            "(python3 -m ais_bench -> python -m om_run.ais_bench)\n" + "\n".join(rows) +
            "\nom-run's own options are taken too, spelt in full (om-run --help).")


def translate(argv: list[str], command) -> tuple[list[str], ToolSettings] | None:
    """ais_bench's argv -> om-run's argv and the settings om-run has no flag for (None: --help was given)."""
    line = parse_line(argv, AIS_BENCH_FLAGS, own_options(command), TOOL)
    v = line.values
    if v.get("--help"):
        return None
    if "--model" not in v:
        raise bad(TOOL, "the following arguments are required: --model/-m")
    for name in line.given:
        if name in REFUSED or (name in REFUSED_WHEN_TRUE and v[name]):
            flag = next(f for f in AIS_BENCH_FLAGS if f.name == name)
            raise bad(TOOL, f"{name}: {flag.does}")
    out = []
    for flag in AIS_BENCH_FLAGS:
        if flag.to and flag.name in v:
            out += [flag.to, str(v[flag.name])]
    if "--outfmt" not in v:
        out += ["--outfmt", AIS_BENCH.outfmt]
    warmup = v.get("--warmup_count", AIS_BENCH.warmup_count)
    if v.get("--profiler") and v.get("--dump"):
        raise bad(TOOL, "parameter --profiler cannot be true at the same time as parameter --dump")
    if (v.get("--profiler") or v.get("--dump")) and "--output" not in v:
        raise bad(TOOL, "when dump or profiler, miss output path (give --output)")
    if v.get("--profiler"):
        out += ["--profile", os.path.join(v["--output"], "profiler")]
        if "--input" in v:      # ais_bench: "profiler mode with input change warmup_count to 0"
            warmup = 0
    if v.get("--dump") and "--acl_json_path" not in v:     # an acl.json's dump section wins, as in ais_bench
        out += ["--dump", os.path.join(v["--output"], "dump")]
    if v.get("--auto_set_dymdims_mode"):
        out += ["--auto_set_dymdims_mode", "1"]
    out += ["--warmup_count", str(warmup)] + list(line.own)
    settings = ToolSettings(AIS_BENCH, display_all_summary=bool(v.get("--display_all_summary")),
                            output_batchsize_axis=v.get("--output_batchsize_axis", 0),
                            random_bytes=v.get("--pure_data_type") == "random", argv=tuple(sys.argv[:1]) + tuple(argv))
    return out, settings
