"""Whose conventions a run follows: om-run's own, ais_bench's or msame's.

The two tools share most flags (`--model m.om --input x.bin --output out --outfmt BIN` is a line of either), so no
flag says which tool a pasted line came from; the entry point does. `om-run` keeps its own layout (outputs
straight into --output, .npy by default: what its scripts, om-sweep and the docs read); `python -m om_run.ais_bench`
and `python -m om_run.msame` follow the tool they replace, where they differ:

* the output folder: ais_bench writes into a new `--output/<YYYY_MM_DD-hh_mm_ss>/` (time.strftime in
  ais_bench/infer/infer_process.py), or `--output/<--output_dirname>`; msame into `--output/<Utils::
  printCurrentTime>` (msame/src/utils.cpp: year, month, day, then _h_m_s_usec, nothing zero-padded);
* the format: both write BIN unless told otherwise (ais_bench's `--outfmt` default; msame writes TXT for
  `--outfmt TXT` and the raw bytes for anything else);
* the file names, the text format, `--outputSize` (msame wants one size per output, ais_bench takes the first ones
  and gives the others their model size), a `--dymDims` name the model lacks (ais_bench warns, msame is silent:
  both choose the gear by the values), the inputs of a run without `--input` (ais_bench feeds zeros) and the
  timing lines each prints.

The folder is named here once per run, from the clock when the run starts; it is created when the first file is
written into it, so a run refused before that leaves nothing behind."""
from __future__ import annotations

import datetime
import os
import re
from dataclasses import dataclass

from atc_py.common.errors import AtcError

DIRNAME_CHARS = re.compile(r"[A-Za-z0-9_./-]+")   # ais_bench's path white list (path_security_check.py)
MAX_DIRNAME = 4096


def _ais_bench_stamp(now: datetime.datetime) -> str:
    return now.strftime("%Y_%m_%d-%H_%M_%S")


def _msame_stamp(now: datetime.datetime) -> str:
    return f"{now.year}{now.month}{now.day}_{now.hour}_{now.minute}_{now.second}_{now.microsecond}"


@dataclass(frozen=True)
class Conventions:
    """What differs between om-run and the tools it stands in for; one instance per tool."""
    tool: str                  # "om-run", "ais_bench" or "msame"
    outfmt: str                # the format without --outfmt
    stamp: object = None       # now -> the run's folder under --output (None: write into --output itself)
    names: str = "om-run"      # output file names: "om-run", "ais_bench" (<input stem>_<k>), "msame"
    exact_output_size: bool = True   # --outputSize must give one size per output
    warn_unknown_dims_name: bool = True
    zero_inputs: bool = False  # no --input: zeros (ais_bench's pure inference) instead of seeded random data
    msame_lines: bool = True   # msame's Inference time lines
    ais_bench_block: str = "om-run"  # "om-run" (its block, 4 decimals), "ais_bench" (as ais_bench prints it), ""
    warmup_count: int = 0      # executions before the timed ones without --warmup_count

    def folder(self, output: str | None, dirname: str | None, now: datetime.datetime) -> str | None:
        """The folder the outputs go to, as the tool spells it (ais_bench prints and extends this string)."""
        if not output:
            return None
        if dirname is not None:
            return os.path.join(output, dirname)
        return os.path.join(output, self.stamp(now)) if self.stamp else output

    def file_names(self, dirname_given: bool) -> str:
        """om-run names its files as ais_bench does when given ais_bench's --output_dirname."""
        return "ais_bench" if self.names == "om-run" and dirname_given else self.names


OM_RUN = Conventions("om-run", "NPY")
AIS_BENCH = Conventions("ais_bench", "BIN", stamp=_ais_bench_stamp, names="ais_bench", exact_output_size=False,
                        zero_inputs=True, msame_lines=False, ais_bench_block="ais_bench", warmup_count=1)
MSAME = Conventions("msame", "BIN", stamp=_msame_stamp, names="msame", warn_unknown_dims_name=False,
                    ais_bench_block="")
BY_TOOL = {c.tool: c for c in (OM_RUN, AIS_BENCH, MSAME)}


@dataclass(frozen=True)
class ToolSettings:
    """What an entry point hands the shared command besides om-run's flags: its conventions and the settings of
    the tool's own flags that om-run has no flag for."""
    conventions: Conventions = OM_RUN
    display_all_summary: bool = False          # ais_bench: H2D and D2H lines in its summary block
    output_batchsize_axis: int | None = None   # ais_bench: checked against every output's rank
    random_bytes: bool = False                 # ais_bench --pure_data_type random: bytes 0..255 without --input
    argv: tuple[str, ...] = ()                 # the command line as typed (ais_bench's summary JSON records it)


def check_output_dirname(name: str | None, output: str | None) -> str | None:
    """--output_dirname: a relative path joined under --output (`r1`, `./result/`, `data/bin_out`); what would
    leave --output (an absolute path, a `..`) or holds characters ais_bench refuses is an E30002."""
    if name is None or name == "":
        return None
    if not output:
        raise AtcError("E30002", reason="--output_dirname names a folder under --output: give --output too")
    if len(name) > MAX_DIRNAME or not DIRNAME_CHARS.fullmatch(name):
        raise AtcError("E30002", reason=f"--output_dirname {name!r} may hold letters, digits and _ . / - only "
                                        "(ais_bench's path characters)")
    if name.startswith("/") or ".." in name.split("/"):
        raise AtcError("E30002", reason=f"--output_dirname {name!r} must stay under --output: a relative path "
                                        "without '..'")
    return name


def device_folder(folder: str | None, devices: tuple[int, ...], index: int) -> str | None:
    """ais_bench with a device list: each device's outputs in <folder>/device<id>_<index>."""
    if folder is None or len(devices) < 2:
        return folder
    return os.path.join(folder, f"device{devices[index]}_{index}")
