"""msame's command line (`./msame --model m.om ...`) read as msame reads it (getopt_long in msame/src/main.cpp) and
turned into om-run's, for `python -m om_run.msame`.

MSAME_FLAGS is msame's whole flag list with its checks (a model path holding ".om", --loop 1..100, --device
0..255, --dymBatch up to 2048) and what om-run does with each. --dump, --profiler and --debug take "true" (anything
else is off, as msame compares with "true"); --outfmt TXT writes text and any other value raw bytes, as msame
does. msame's one-letter options are not taken (msame's own take their value glued only)."""
from __future__ import annotations

import os
import sys

from ..run.conventions import MSAME, ToolSettings
from .tool_argv import ToolFlag, bad, int_in, own_options, parse_line

TOOL = "msame"

MSAME_FLAGS = [
    ToolFlag(("--model",), "path holding .om", "required", "the .om to run", to="--model"),
    ToolFlag(("--input",), "files or folders, comma-separated", "—",
             "om-run's `--input` (a folder per input: one execution per file)", to="--input"),
    ToolFlag(("--output",), "folder", "—",
             "outputs in a new `<output>/<YYYYMD_h_m_s_us>/` folder (msame's time stamp, nothing zero-padded)",
             to="--output"),
    ToolFlag(("--outfmt",), "TXT | anything", "BIN", "TXT writes text, any other value raw bytes (.bin)"),
    ToolFlag(("--loop",), "1..100", "1", "the executions", check=int_in(1, 100), to="--loop"),
    ToolFlag(("--dymBatch",), "1..2048", "—", "the batch gear", check=int_in(1, 2048), to="--dymBatch"),
    ToolFlag(("--dymDims",), "name:d,d;...", "—", "the dims gear, chosen by its values (the names play no part)",
             to="--dymDims"),
    ToolFlag(("--dymHW",), "h,w", "—", "the image-size gear", to="--dymHW"),
    ToolFlag(("--dymShape",), "name:d,d;...", "—", "the shapes of a dynamic-shape model", to="--dymShape"),
    ToolFlag(("--device",), "0..255", "0", "the device id (the simulated device)", check=int_in(0, 255),
             to="--device"),
    ToolFlag(("--outputSize",), "bytes, comma-separated", "—", "one output buffer size per output",
             to="--outputSize"),
    ToolFlag(("--dump",), "true", "off", "every operator's outputs in `<output>/dump`"),
    ToolFlag(("--profiler",), "true", "off", "om-run's profile (op_summary.csv, trace.json) in `<output>/profiler`"),
    ToolFlag(("--debug",), "true", "off", "nothing: om-run prints the model's description on every run"),
    ToolFlag(("--help",), "—", "—", "msame's flags and what om-run does with each", takes_value=False),
]


def help_text() -> str:
    rows = [f"  {', '.join(f.names):14} {f.value}: {f.does}" for f in MSAME_FLAGS]
    return ("python -m om_run.msame: msame's command line on the simulated device (./msame -> python -m "
            "om_run.msame)\n" + "\n".join(rows) + "\nom-run's own options are taken too, spelt in full (om-run --help).")


def translate(argv: list[str], command) -> tuple[list[str], ToolSettings] | None:
    """msame's argv -> om-run's argv and msame's conventions (None: --help was given)."""
    line = parse_line(argv, MSAME_FLAGS, own_options(command), TOOL, style="getopt")
    v = line.values
    if v.get("--help"):
        return None
    if ".om" not in str(v.get("--model", "")):
        raise bad(TOOL, "input model file type is not .om, please check your model type!")
    dump, profiler = v.get("--dump") == "true", v.get("--profiler") == "true"
    if dump and profiler:
        raise bad(TOOL, "dump and profiler can not both be true")
    if (dump or profiler) and "--output" not in v:
        raise bad(TOOL, "--dump and --profiler write under --output: give --output")
    out = []
    for flag in MSAME_FLAGS:
        if flag.to and flag.name in v:
            out += [flag.to, str(v[flag.name])]
    out += ["--outfmt", "TXT" if v.get("--outfmt") == "TXT" else MSAME.outfmt]
    if dump:
        out += ["--dump", os.path.join(v["--output"], "dump")]
    if profiler:
        out += ["--profile", os.path.join(v["--output"], "profiler")]
    return out + list(line.own), ToolSettings(MSAME, argv=tuple(sys.argv[:1]) + tuple(argv))
