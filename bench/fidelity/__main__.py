"""`make fidelity` (python -m bench.fidelity [--calibrate] [--docs]): prints, for the op sweep and whole models,
simulated time against the roofline, then every anchor's prediction against its published figure.
--calibrate refits the calibrated profile parameters from their anchors and rewrites calibration.json (the
profile's defaults must then be updated to match: tests/om_run/sim/test_fidelity.py); --docs rewrites the tables of the
documentation page docs/fidelity.md (between its fidelity:begin / fidelity:end markers) from this run."""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.fidelity import calibrate as cal  # noqa: E402
from bench.fidelity.anchors import ANCHORS, ais_bench_throughput, zoo_stats  # noqa: E402
from bench.fidelity.models import light_model  # noqa: E402
from bench.fidelity.sweep import DTYPES, LARGE_NS, SOCS, SWEEP, compile_model, kernels, run_case, simulate  # noqa: E402
from bench.fidelity.zoo import BATCHES, ZOO  # noqa: E402
from om_run.sim.profile import RuntimeProfile  # noqa: E402
from om_run.sim.report import ais_bench_summary  # noqa: E402

BEGIN, END = "<!-- fidelity:begin (python -m bench.fidelity --docs) -->", "<!-- fidelity:end -->"
DOCS_PAGE = ROOT / "docs" / "fidelity.md"
MODELS = [("resnet50", 1, "Ascend910B1"), ("resnet50", 1, "Ascend310P3")]   # onnx's light models, ATC defaults


def sweep(prof: RuntimeProfile) -> list[tuple]:
    rows = []
    print(f"{'SoC':<12} {'dtype':<8} {'op':<30} {'blocks':>6} {'sim us':>10} {'roof us':>10} {'sim/roof':>8}  bound")
    for soc in SOCS:
        for dt in DTYPES:
            for case in SWEEP:
                r = run_case(case, soc, dt, prof)
                t = r.end - r.start
                rows.append((soc, dt, case.name, r.block_dim, t, r.roofline_ns, r.bound))
                print(f"{soc:<12} {dt:<8} {case.name:<30} {r.block_dim:>6} {t / 1e3:>10.1f} {r.roofline_ns / 1e3:>10.1f} "
                      f"{t / r.roofline_ns:>8.2f}  {r.bound}")
    return rows


def _model_row(rows: list, label: str, soc: str, stats, batch: int) -> None:
    roof = sum(k.roofline_ns for k in kernels(stats))
    summary = ais_bench_summary([stats], batch)
    npu, ips = summary["NPU_compute_time_ms"]["mean"] * 1e6, summary["throughput"]
    rows.append((label, soc, stats.device_ns, roof, npu, ips))
    print(f"{label:<30} {soc:<12} {stats.device_ns / 1e3:>10.1f} {roof / 1e3:>12.1f} {stats.device_ns / roof:>11.2f} "
          f"{npu / 1e3:>10.1f} {ips:>9.0f}")


def whole_models(prof: RuntimeProfile) -> list[tuple]:
    rows = []
    print(f"\n{'model':<30} {'SoC':<12} {'device us':>10} {'sum roof us':>12} {'device/roof':>11} {'NPU us':>10} "
          f"{'images/s':>9}")
    for name, batch, soc in MODELS:
        with tempfile.TemporaryDirectory() as d:
            model = compile_model(light_model(name, batch), soc, pathlib.Path(d), precision="")
        _model_row(rows, f"{name} batch {batch}", soc, simulate(model, prof, loops=2), batch)
    for name, z in ZOO.items():              # the ModelZoo set, built as its READMEs build it
        _model_row(rows, f"{name} batch {z.batch} (zoo)", "Ascend310P3", zoo_stats(name, prof), z.batch)
    return rows


def batch_scan(prof: RuntimeProfile) -> list[tuple]:
    """Every batch size a README's table gives a figure for (none of them calibrated on): simulated over published."""
    rows = []
    print(f"\n{'model':<18} " + " ".join(f"{'bs' + str(b):>6}" for b in BATCHES) + "   (simulated / published)")
    for name, z in ZOO.items():
        if not z.by_batch:
            continue
        ratios = []
        for b, pub in zip(BATCHES, z.by_batch):
            ratios.append(ais_bench_throughput(zoo_stats(name, prof, batch=b), b) / pub)
        rows.append((name, ratios))
        print(f"{name:<18} " + " ".join(f"{r:>6.2f}" for r in ratios), flush=True)
    return rows


def anchors(prof: RuntimeProfile) -> list[tuple]:
    rows = []
    print(f"\n{'anchor':<22} {'SoC':<12} {'published':>10} {'simulated':>10} {'off by':>7} {'target':>7}")
    for a in ANCHORS:
        pred = a.predict(prof)
        off = a.ratio(pred)
        ok = "" if a.target is None else ("ok" if off <= a.target else ("open" if a.open else "MISSED"))
        rows.append((a, pred, off, ok))
        print(f"{a.name:<22} {a.soc:<12} {a.published:>10.2f} {pred:>10.2f} {off:>6.2f}x "
              f"{('<= %.1fx ' % a.target + ok) if a.target else '':>7}  {a.unit}{'; ' + a.note if a.note else ''}"
              f"{'; open: ' + a.open if ok == 'open' else ''}")
    return rows


def docs_section(sweep_rows, model_rows, anchor_rows, values: dict, scan_rows=()) -> str:
    lines = [BEGIN, "",
             "| anchor | SoC | published | simulated | off by | target | source |", "|---|---|---|---|---|---|---|"]
    for a, pred, off, ok in anchor_rows:
        target = (f"≤ {a.target}× ({ok}{': ' + a.open if ok == 'open' else ''})" if a.target else (a.note or "—"))
        cal = f" (calibrates `{a.calibrates}`)" if a.calibrates else ""
        lines.append(f"| {a.name}{cal} | {a.soc} | {a.published:g} {a.unit} | {pred:.1f} {a.unit} | {off:.2f}× | "
                     f"{target} | {a.ref or a.source} |")
    lines += ["", "Op sweep (`bench/fidelity/sweep.py`, single-op models from tiny to large, timing only): simulated "
              f"time over roofline for the large ops (roofline ≥ {LARGE_NS / 1e3:g} us) and the smallest ratio of all:", "",
              "| SoC | dtype | large ops | sim/roofline of large ops | smallest sim/roofline |", "|---|---|---|---|---|"]
    for soc in SOCS:
        for dt in DTYPES:
            rs = [r for r in sweep_rows if r[0] == soc and r[1] == dt]
            large = [r[4] / r[5] for r in rs if r[5] >= LARGE_NS]
            lines.append(f"| {soc} | {dt} | {len(large)} | {min(large):.2f}–{max(large):.2f} | "
                         f"{min(r[4] / r[5] for r in rs):.2f} |")
    lines += ["", "Whole models (second execution): the kernels' time on the device against the sum of their rooflines, "
              "and ais_bench's NPU_compute_time (the synchronous execute on the host: launch, kernels, the dispatch "
              "between them, sync) with the throughput it gives:", "",
              "| model | SoC | device time | sum of rooflines | device / roofline | NPU_compute_time | images/s |",
              "|---|---|---|---|---|---|---|"]
    for name, soc, dev, roof, npu, ips in model_rows:
        lines.append(f"| {name} | {soc} | {dev / 1e3:.1f} us | {roof / 1e3:.1f} us | {dev / roof:.2f} | "
                     f"{npu / 1e3:.1f} us | {ips:.0f} |")
    if scan_rows:
        lines += ["", "Every batch size the ModelZoo tables give (Ascend310P3, the README's flags): simulated / published "
                  "throughput; 1.00 is exact, above 1 the simulation is too fast:", "",
                  "| model | " + " | ".join(f"batch {b}" for b in BATCHES) + " |", "|---" * (len(BATCHES) + 1) + "|"]
        for name, ratios in scan_rows:
            lines.append(f"| {name} | " + " | ".join(f"{r:.2f}" for r in ratios) + " |")
    lines += ["", "Calibrated parameters (`bench/fidelity/calibration.json`, the profile's defaults): "
              + ", ".join(f"`{k}` = {v}" for k, v in sorted(values.items())) + ".", "", END]
    return "\n".join(lines)


def rewrite_section(page: pathlib.Path, section: str) -> bool:
    """Replace the text from BEGIN to END (both included) in `page` by `section`; False when a marker is missing."""
    text = page.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text.split(BEGIN, 1)[1]:
        return False
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    page.write_text(head + section + tail, encoding="utf-8")
    return True


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.fidelity")
    ap.add_argument("--calibrate", action="store_true", help="refit calibration.json from the anchors")
    ap.add_argument("--docs", action="store_true", help=f"rewrite the tables of {DOCS_PAGE.relative_to(ROOT)}")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    values = cal.load()
    if args.calibrate:
        values = cal.calibrate()
        cal.write(values)
        print(f"calibration.json: {json.dumps(values)}")
    prof = RuntimeProfile.load(str(cal.CALIBRATION))
    sweep_rows = sweep(prof)
    model_rows = whole_models(prof)
    anchor_rows = anchors(prof)
    scan_rows = batch_scan(prof)
    if args.docs:
        if not rewrite_section(DOCS_PAGE, docs_section(sweep_rows, model_rows, anchor_rows, values, scan_rows)):
            print(f"{DOCS_PAGE} has no {BEGIN} ... {END} section", file=sys.stderr)
            return 1
        print(f"{DOCS_PAGE.relative_to(ROOT)}: fidelity tables rewritten")
    print(f"\n({time.perf_counter() - t0:.0f} s)")
    return 0 if all(ok != "MISSED" for *_, ok in anchor_rows) else 1


if __name__ == "__main__":
    sys.exit(main())
