"""Reports of simulated runs: msame's timing lines, console summary, --summary-json, and
--profile DIR with an msprof-style op_summary.csv (plus, per kernel, its roofline, what bounds it — cube, vector
or memory — and the useful FLOPs and bytes behind them) and a Chrome/Perfetto trace.json."""
from __future__ import annotations

import csv
import io
import json
import statistics
from collections import defaultdict

from .host import LoopStats

OP_SUMMARY_COLUMNS = ["Device_id", "Model Name", "Model ID", "Task ID", "Stream ID", "Infer ID", "Op Name", "OP Type",
                      "OP State", "Task Type", "Task Start Time(us)", "Task Duration(us)", "Task Wait Time(us)",
                      "Block Num", "Mix Block Num", "Roofline(us)", "Bound", "Duration/Roofline", "FLOPs",
                      "Vector Ops", "Memory Bytes", "DRAM Bytes"]
TASK_TYPE_BY_UNIT = {"AIC": "AI_CORE", "AIV": "AI_VECTOR_CORE", "MIX": "MIX_AIC", "AICPU": "AI_CPU"}
COMPUTE = ("KERNEL", "ALL_KERNEL", "FFTS_PLUS_TASK", "SUPER_KERNEL", "PREPROCESS_KERNEL", "KERNEL (host launched)")
COLLECTIVES = ("HCCL", "HCCL (host launched)")    # device time of its own (om_run/tasks/hccl.py), on no AI Core


def us(ns: int | float) -> float:
    return round(ns / 1000.0, 3)


def percent(share: float) -> str:
    """A share as a percentage with three significant digits: a small model's 0.05 % of the cube peak must not
    print as 0.0 %."""
    return f"{share * 100:.3g}%"


def msame_lines(loops: list[LoopStats], walls: list[float]) -> list[str]:
    """msame's timing lines, spelt as msame prints them, carrying the simulated end-to-end time of each execution
    (what a user compares with the device), then the host's wall clock of the simulation on a line of its own."""
    ms = [s.e2e_ns / 1e6 for s in loops]
    lines = [f"Inference time: {t:.3f}ms" for t in ms]
    lines.append(f"Inference average time: {sum(ms) / len(ms):.6f} ms")
    if len(ms) > 1:
        lines.append(f"Inference average time without first time: {sum(ms[1:]) / (len(ms) - 1):.6f} ms")
    line = f"[INFO] host wall clock of the simulation: {sum(walls) / len(walls) * 1e3:.3f} ms per execution (average)"
    if len(walls) > 1:   # the first execution next to the later ones (one-time work belongs to the load)
        later = sorted(walls[1:])
        line += f"; first {walls[0] * 1e3:.3f} ms, later {later[len(later) // 2] * 1e3:.3f} ms (median)"
    lines.append(line)
    return lines


def where_time_goes(s: LoopStats) -> tuple[dict, dict]:
    host = defaultdict(int)
    for e in s.host_events:
        kind = e.name.split(" ")[0] if e.name != "wait" else "waiting for the device"
        host[kind] += e.end - e.start
    dev = defaultdict(int)
    for r in s.records:
        if r.type == "PREPROCESS_KERNEL":
            dev[f"AICPU tiling of {r.op_type}"] += r.end - r.start
        elif r.type in COMPUTE or r.type in COLLECTIVES:
            dev[r.op_type or r.type] += r.end - r.start
    return dict(host), dict(dev)


def console(loops: list[LoopStats], host_threads: int, cache: bool) -> list[str]:
    lines = []
    for k, s in enumerate(loops[:5]):
        lines.append(f"[SIM] loop {k + 1}: e2e {us(s.e2e_ns)} us | host {us(s.host_ns)} us, device {us(s.device_ns)} us, "
                     f"H2D {us(s.h2d_ns)} us, D2H {us(s.d2h_ns)} us | mid-model host-device syncs {s.syncs} | "
                     f"tiling cache hits {s.tiling_cache_hits} | hazards {len(s.hazards)}")
    if len(loops) > 5:
        lines.append(f"[SIM] ... {len(loops) - 5} more loops")
    e2e = [s.e2e_ns for s in loops]
    lines.append(f"[SIM] e2e over {len(loops)} loop(s): min {us(min(e2e))} us, mean {us(statistics.mean(e2e))} us, "
                 f"median {us(statistics.median(e2e))} us, max {us(max(e2e))} us "
                 f"(host threads {host_threads}, tiling cache {'on' if cache else 'off'})")
    last = loops[-1]
    util = ", ".join(f"{k} {percent(v)}" for k, v in last.utilisation().items())
    lines.append(f"[SIM] utilisation (last loop): {util}; {last.tasks} device tasks")
    host, dev = where_time_goes(last)
    lines.append("[SIM] host time: " + ", ".join(f"{k} {us(v)} us" for k, v in sorted(host.items(), key=lambda kv: -kv[1])))
    top = sorted(dev.items(), key=lambda kv: -kv[1])[:6]
    lines.append("[SIM] device time by op type: " + ", ".join(f"{k} {us(v)} us" for k, v in top))
    for h in last.hazards:
        lines.append(f"[SIM] HAZARD ({h.kind}): {h.detail}")
    return lines


def summary_json(loops: list[LoopStats], model_name: str, soc: str) -> dict:
    med = statistics.median
    last = loops[-1]
    return {
        "model": model_name, "soc_version": soc, "loops": len(loops),
        "e2e_us": us(med([s.e2e_ns for s in loops])),
        "e2e_us_min": us(min(s.e2e_ns for s in loops)), "e2e_us_mean": us(statistics.mean(s.e2e_ns for s in loops)),
        "e2e_us_max": us(max(s.e2e_ns for s in loops)),
        "host_us": us(med([s.host_ns for s in loops])), "device_us": us(med([s.device_ns for s in loops])),
        "h2d_us": us(med([s.h2d_ns for s in loops])), "d2h_us": us(med([s.d2h_ns for s in loops])),
        "host_device_syncs": last.syncs, "tiling_cache_hits": last.tiling_cache_hits,
        "hazards": [h.as_dict() for h in last.hazards], "tasks": last.tasks,
        "utilisation": {k: round(v, 6) for k, v in last.utilisation().items()},
        "host_time_us": {k: us(v) for k, v in where_time_goes(last)[0].items()},
        "device_time_by_op_type_us": {k: us(v) for k, v in where_time_goes(last)[1].items()},
        **({"overflow_ops": [o.as_dict() for o in last.overflow]} if last.overflow else {}),
    }


def op_summary_csv(s: LoopStats, model_name: str) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(OP_SUMMARY_COLUMNS)
    prev_end: dict[int, int] = {}
    for r in sorted(s.records, key=lambda r: (r.start, r.task)):
        if r.type in COMPUTE:
            wait = max(0, r.start - prev_end.get(r.stream, r.arrive))
            ratio = round((r.end - r.start) / r.roofline_ns, 3) if r.roofline_ns else ""
            w.writerow([0, model_name, 1, r.task, r.stream, 0, r.name, r.op_type,
                        "dynamic" if r.type == "KERNEL (host launched)" else "static",
                        TASK_TYPE_BY_UNIT.get(r.unit, r.type), us(r.start), us(r.end - r.start), us(wait),
                        r.block_dim, r.block_dim if r.unit == "MIX" else 0,
                        us(r.roofline_ns) if r.roofline_ns else "", r.bound, ratio, r.flops or "",
                        r.vector_ops or "", r.bytes or "", r.dram_bytes or ""])
        prev_end[r.stream] = r.end
    return buf.getvalue()


def chrome_trace(s: LoopStats) -> dict:
    ev = []
    HOST, STREAMS, UNITS = 0, 1, 2
    meta = [(HOST, "Host"), (STREAMS, "Device streams"), (UNITS, "Device cores")]
    for pid, name in meta:
        ev.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": name}})
    threads = sorted({e.thread for e in s.host_events})
    for tid, name in enumerate(threads):
        ev.append({"name": "thread_name", "ph": "M", "pid": HOST, "tid": tid, "args": {"name": name}})
    for e in s.host_events:
        ev.append({"name": e.name, "cat": "host", "ph": "X", "pid": HOST, "tid": threads.index(e.thread),
                   "ts": e.start / 1000, "dur": (e.end - e.start) / 1000})
    units = {"AIC": 0, "AIV": 1, "MIX": 0, "AICPU": 2}
    for name, tid in (("AI Core (cube)", 0), ("Vector Core", 1), ("AICPU", 2)):
        ev.append({"name": "thread_name", "ph": "M", "pid": UNITS, "tid": tid, "args": {"name": name}})
    streams = sorted({r.stream for r in s.records})
    for sid in streams:
        ev.append({"name": "thread_name", "ph": "M", "pid": STREAMS, "tid": sid, "args": {"name": f"stream {sid}"}})
    by_id = {}
    for r in s.records:
        by_id[r.task] = r
        label = f"{r.type} {r.name}".strip()
        args = {"task_id": r.task, "op_type": r.op_type, "block_dim": r.block_dim}
        ev.append({"name": label, "cat": "task", "ph": "X", "pid": STREAMS, "tid": r.stream, "ts": r.start / 1000,
                   "dur": max(r.end - r.start, 1) / 1000, "args": args})
        if r.unit in units:
            ev.append({"name": label, "cat": "core", "ph": "X", "pid": UNITS, "tid": units[r.unit],
                       "ts": r.start / 1000, "dur": max(r.end - r.start, 1) / 1000, "args": args})
    for k, (kind, a, b) in enumerate(s.flows):
        if a in by_id and b in by_id:
            src, dst = by_id[a], by_id[b]
            common = {"name": "event record -> wait" if kind == "event" else "UPDATE -> kernel", "cat": kind, "id": k}
            ev.append({**common, "ph": "s", "pid": STREAMS, "tid": src.stream, "ts": src.end / 1000})
            ev.append({**common, "ph": "f", "bp": "e", "pid": STREAMS, "tid": dst.stream, "ts": max(dst.start, src.end) / 1000})
    return {"traceEvents": ev, "displayTimeUnit": "ns"}


def write_profile(directory, s: LoopStats, model_name: str, writer) -> list:
    import pathlib
    d = pathlib.Path(directory)   # the caller made it (atc_py.common.atomic_write.make_output_dir)
    files = [(d / "op_summary.csv", op_summary_csv(s, model_name).encode()),
             (d / "trace.json", json.dumps(chrome_trace(s)).encode())]
    for path, data in files:
        writer(path, data)
    return [p for p, _ in files]


STEP_COLUMNS = ["step", "phase", "tokens_in", "token", "start_us", "e2e_us", "host_us", "device_us", "tasks",
                "setup_cache_hits", "kernel_cache_hits"]


def step_timeline(steps) -> str:
    """om-run --generate's per-step timeline (steps.csv): one row per execution, laid end to end — the prefill
    (or a static cache's prompt steps) then each decode step, host and device time apart."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(STEP_COLUMNS)
    t = 0
    for k, s in enumerate(steps):
        st = s.stats
        w.writerow([k, s.phase, s.tokens_in, "" if s.token is None else s.token, us(t), us(s.e2e_ns), us(s.host_ns),
                    us(s.device_ns), st.tasks, st.setup_cache_hits, st.tiling_cache_hits])
        t += s.e2e_ns
    return buf.getvalue()


def overflow_lines(s: LoopStats) -> list[str]:
    """--check-overflow: the operators whose outputs went inf/NaN from finite inputs, the first one flagged."""
    if not s.overflow:
        return []
    lines = [f"[SIM] overflow: {len(s.overflow)} operator(s) turned finite inputs into inf/NaN (execution order)"]
    for k, o in enumerate(s.overflow[:20]):
        mark = "first" if k == 0 else "     "
        src = ", ".join(o.original_names[:4]) + (" ..." if len(o.original_names) > 4 else "")
        lines.append(f"[SIM]   {mark} task {o.task} {o.op_name} ({o.op_type}), outputs {o.outputs}; from {src}")
    if len(s.overflow) > 20:
        lines.append(f"[SIM]   ... {len(s.overflow) - 20} more in --summary-json's overflow_ops")
    return lines


def _stats_ms(values: list[float]) -> dict:
    v = sorted(values)
    pct = v[min(len(v) - 1, int(round(0.99 * (len(v) - 1))))]
    return {"min": v[0], "max": v[-1], "mean": sum(v) / len(v), "median": statistics.median(v), "percentile_99": pct}


def ais_bench_summary(loops: list[LoopStats], batchsize: int) -> dict:
    """ais_bench's performance summary from the simulated executions: NPU_compute_time is the model's execution
    on the device (end to end less the input and output copies), H2D / D2H the copies' latencies, throughput
    1000 * batchsize / mean NPU_compute_time."""
    compute = [(s.e2e_ns - s.h2d_ns - s.d2h_ns) / 1e6 for s in loops]
    out = {"NPU_compute_time_ms": _stats_ms(compute), "H2D_latency_ms": _stats_ms([s.h2d_ns / 1e6 for s in loops]),
           "D2H_latency_ms": _stats_ms([s.d2h_ns / 1e6 for s in loops]), "batchsize": batchsize}
    mean = out["NPU_compute_time_ms"]["mean"]
    out["throughput"] = 1000.0 * batchsize / mean if mean > 0 else 0.0
    return out


def ais_bench_lines(summary: dict) -> list[str]:
    """The block ais_bench prints, with the simulated figures (so a device's line can be put beside it)."""
    def line(name, s):
        return (f"[INFO] {name} (ms): min = {s['min']:.4f}, max = {s['max']:.4f}, mean = {s['mean']:.4f}, "
                f"median = {s['median']:.4f}, percentile(99%) = {s['percentile_99']:.4f}")
    c = summary["NPU_compute_time_ms"]
    return ["[INFO] -----------------Performance Summary------------------",
            line("H2D_latency", summary["H2D_latency_ms"]),
            line("NPU_compute_time", c),
            line("D2H_latency", summary["D2H_latency_ms"]),
            f"[INFO] throughput 1000*batchsize.mean({summary['batchsize']})/NPU_compute_time.mean({c['mean']:.4f}): "
            f"{summary['throughput']:.4f}",
            "[INFO] ------------------------------------------------------"]
