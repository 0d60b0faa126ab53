"""What `python -m om_run.ais_bench` prints and writes besides the outputs, spelt as ais_bench spells it
(ais_bench/infer/summary.py and infer_process.py), so that a script reading ais_bench's console or files reads
om-run's: the Performance Summary block (H2D and D2H lines with --display_all_summary only, numbers as Python
prints them), the `<output folder>_summary.json` it writes next to the outputs (the files of each sample, the
command line, the figures, the throughput) and, with a device list, its multidevice lines. The figures are the
simulated executions' (NPU_compute_time: an execution less its input and output copies), every execution of the
run after the warm-ups, over all its input files as ais_bench counts them."""
from __future__ import annotations

import json
import os

import numpy as np

PERCENTILE = 99     # ais_bench's summary scale


def _info(values: list[float]) -> dict:
    """summary.Summary.get_list_info: numpy's min, max, mean, median and 99th percentile (zeros for no value)."""
    if not values:
        return {"min": 0.0, "max": 0.0, "mean": 0.0, "median": 0.0, "percentile": 0.0}
    return {"min": np.min(values), "max": np.max(values), "mean": np.mean(values), "median": np.median(values),
            "percentile": np.percentile(values, PERCENTILE)}


class AisBenchSummary:
    """The figures of a run, gathered execution by execution as ais_bench's Summary gathers them."""

    def __init__(self, argv: list[str]):
        self.compute: list[float] = []
        self.h2d: list[float] = []
        self.d2h: list[float] = []
        self.files: dict[int, dict] = {}
        self.argv = list(argv)

    def add_loops(self, loops) -> None:
        """The timed executions of one input (LoopStats), in ms."""
        for s in loops:
            self.compute.append((s.e2e_ns - s.h2d_ns - s.d2h_ns) / 1e6)
            self.h2d.append(s.h2d_ns / 1e6)
            self.d2h.append(s.d2h_ns / 1e6)

    def add_sample(self, infiles: list[str], outfiles: list[str]) -> None:
        """One execution's input files and the files its outputs went to (filesinfo of the summary JSON)."""
        self.files[len(self.files)] = {"infiles": list(infiles), "outfiles": list(outfiles)}

    def throughput(self, batchsize) -> float:
        mean = _info(self.compute)["mean"]
        return 0 if mean == 0 else 1000 * batchsize / mean

    def lines(self, batchsize, display_all: bool) -> list[str]:
        """Summary.display, the single-thread form."""
        def line(name, info):
            return (f"[INFO] {name} (ms): min = {info['min']}, max = {info['max']}, mean = {info['mean']}, "
                    f"median = {info['median']}, percentile({PERCENTILE}%) = {info['percentile']}")
        compute = _info(self.compute)
        out = ["[INFO] -----------------Performance Summary------------------"]
        if display_all:
            out.append(line("H2D_latency", _info(self.h2d)))
        out.append(line("NPU_compute_time", compute))
        if display_all:
            out.append(line("D2H_latency", _info(self.d2h)))
        out.append(f"[INFO] throughput 1000*batchsize.mean({batchsize})/NPU_compute_time.mean({compute['mean']}): "
                   f"{self.throughput(batchsize)}")
        out.append("[INFO] ------------------------------------------------------")
        return out

    def json_bytes(self, batchsize) -> bytes:
        """Summary.infodict after Summary.record, as json.dump writes it."""
        def block(values):
            info = _info(values)
            return {"min": info["min"], "max": info["max"], "mean": info["mean"], "median": info["median"],
                    f"percentile({PERCENTILE}%)": info["percentile"], "count": len(values)}
        info = {"filesinfo": self.files, "args": self.argv, "NPU_compute_time": block(self.compute),
                "H2D_latency": block(self.h2d), "D2H_latency": block(self.d2h),
                "npu_compute_time_list": self.compute, "throughput": self.throughput(batchsize), "pid": os.getpid()}
        return json.dumps(info).encode()


def summary_json_path(folder: str) -> str:
    """ais_bench writes `output_prefix + "_summary.json"`: beside the output folder (inside it when the folder was
    given with a trailing slash, as ais_bench's string concatenation does)."""
    return folder + "_summary.json"


def multidevice_lines(devices: tuple[int, ...], results: list[tuple[float, float, float]]) -> list[str]:
    """infer_process.multidevice_run's closing lines: one per device (throughput, start and end times), the sum.
    The run's devices are simulated one after the other, each with every input."""
    out = [f"[INFO] multidevice run end qsize:{2 * len(devices)} result:0"]
    for i, (throughput, start, end) in enumerate(results):
        out.append(f"[INFO] i:{i} device_{devices[i]} throughput:{throughput} "
                   f"                start_time:{start} end_time:{end}")
    out.append(f"[INFO] summary throughput:{sum(r[0] for r in results)}")
    return out
