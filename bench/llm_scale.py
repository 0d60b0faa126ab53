"""Converting an LLM bigger than memory allows: atc-py's wall time and peak memory on a LLaMA-shaped ONNX
model with external data (tools/llm_model.py), next to a plain `cp` of its data file.

    python -m bench.llm_scale                      # 7B hidden sizes, 6 layers: ~3 GB of fp16 weights
    python -m bench.llm_scale --preset 7b          # the 7B shape: 32 layers, 13.5 GB (needs ~30 GB of disk)
    python -m bench.llm_scale --layers 2 --hidden 1024 --intermediate 2816 --vocab 32000   # any shape

The model is generated into a temp folder (--dir to choose where), the data file copied once with `cp`
(timed, then deleted; `sync` before each timed step), then `atc-py` converts the model in a subprocess: its wall time and its peak resident
memory (ru_maxrss of that child alone, from a small launcher process). The targets printed: peak RSS <= 1 GiB + 0.25 x the weight
bytes, wall <= 3 x the copy. Everything is deleted afterwards (--keep keeps the folder). Part of
`make bench`, not of `make test`. Nothing here is asserted.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools.llm_model import PRESETS, LlmShape, write_model  # noqa: E402

GIB = 1 << 30
RSS_FIXED, RSS_PER_WEIGHT_BYTE, WALL_PER_COPY = GIB, 0.25, 3.0


# A process forked from a big one starts with that one's pages (ru_maxrss, kept across exec, counts them): the
# command runs under this small launcher, whose children's peak is the command's own.
_LAUNCHER = ("import resource, subprocess, sys\n"
             "code = subprocess.call(sys.argv[1:])\n"
             "print('peak_rss_kib', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
             "sys.exit(code)\n")


def run_child(cmd: list[str], **kw) -> tuple[float, int, int, str]:
    """(wall seconds, peak RSS bytes, exit code, output) of one command, in a process of its own."""
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-c", _LAUNCHER, *cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, **kw)
    wall = time.perf_counter() - t0
    out, _, last = res.stdout.rstrip("\n").rpartition("\n")
    peak = int(last.split()[1]) * 1024 if last.startswith("peak_rss_kib ") else 0
    return wall, peak, res.returncode, out


def verify(om: pathlib.Path) -> str:
    """The .om read back through a mapping: header, partition tables and the checksum over every partition's
    digest (chunks.partition_digest on views of the file: nothing is copied)."""
    import mmap
    import struct

    from atc_py.om.chunks import partition_digest
    from atc_py.om.container import check_header, checksum_of_digests
    from atc_py.om.header import MODEL_FILE_HEAD_LEN, ModelFileHeader
    t0 = time.perf_counter()
    with open(om, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        view = memoryview(m)
        try:
            h = ModelFileHeader.unpack(view[:MODEL_FILE_HEAD_LEN])
            check_header(h, len(m))
            pos, tables = MODEL_FILE_HEAD_LEN, []
            for _ in range(h.model_num):
                (num,) = struct.unpack_from("<I", view, pos)
                end = pos + 8 + 24 * num
                entries = [struct.unpack_from("<IIQQ", view, pos + 8 + 24 * i) for i in range(num)]
                digests = [partition_digest([view[end + off:end + off + size]], os.cpu_count() or 1)
                           for _, _, off, size in entries]
                tables.append((bytes(view[pos:end]), digests))
                pos = end + sum(e[3] for e in entries)
            ok = pos == len(m) and checksum_of_digests(tables) == h.checksum[:32]
        finally:
            view.release()
    return f"read back in {time.perf_counter() - t0:.1f} s: checksum {'ok' if ok else 'MISMATCH'}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", choices=sorted(PRESETS), default="7b-6layers")
    for name in ("layers", "hidden", "intermediate", "vocab", "heads", "seq"):
        ap.add_argument(f"--{name}", type=int)
    ap.add_argument("--dtype", choices=("float16", "float32"))
    ap.add_argument("--dir", help="where to generate the model (a temp folder by default)")
    ap.add_argument("--soc", default="Ascend910B1")
    ap.add_argument("--keep", action="store_true", help="keep the generated model and the .om")
    args = ap.parse_args(argv)
    base = asdict(PRESETS[args.preset])
    base.update({k: v for k, v in vars(args).items() if k in base and v is not None})
    shape = LlmShape(**base)
    work = pathlib.Path(tempfile.mkdtemp(prefix="llm_scale_", dir=args.dir))
    try:
        need = shape.weight_bytes * 2.1
        free = shutil.disk_usage(work).free
        if free < need:
            print(f"llm_scale: {work} has {free / GIB:.1f} GiB free; the model, its copy and the .om need "
                  f"{need / GIB:.1f} GiB")
            return 1
        print(f"llm_scale: {shape.layers} layers, hidden {shape.hidden}, intermediate {shape.intermediate}, "
              f"vocab {shape.vocab}, {shape.dtype}: {shape.weight_bytes / 1e9:.2f} GB of weights, in {work}")
        t0 = time.perf_counter()
        info = write_model(str(work), shape)
        print(f"  generated in {time.perf_counter() - t0:.1f} s")
        data = pathlib.Path(info["data"])
        weight_bytes = data.stat().st_size
        os.sync()   # each timed step starts with no dirty pages of the other's to write back
        copy_wall, _, _, _ = run_child(["cp", str(data), str(work / "copy.data")])
        os.sync()
        (work / "copy.data").unlink()
        out = work / "model"
        cmd = [sys.executable, "-m", "atc_py", f"--model={info['model']}", "--framework=5", f"--output={out}",
               f"--soc_version={args.soc}"]
        env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        wall, rss, code, text = run_child(cmd, env=env)
        if code != 0:
            print(text)
            print(f"  atc-py failed (exit {code})")
            return 1
        om = out.with_suffix(".om")
        rss_target = RSS_FIXED + RSS_PER_WEIGHT_BYTE * weight_bytes
        print(f"  cp of the data file:  {copy_wall:7.1f} s")
        print(f"  atc-py:               {wall:7.1f} s wall, peak RSS {rss / GIB:.2f} GiB; .om {om.stat().st_size} bytes")
        print(f"  wall / copy:          {wall / copy_wall:7.2f}  (target <= {WALL_PER_COPY:g}: "
              f"{'met' if wall <= WALL_PER_COPY * copy_wall else 'MISSED'})")
        print(f"  peak RSS / target:    {rss / rss_target:7.2f}  (target 1 GiB + 0.25 x {weight_bytes / GIB:.2f} GiB = "
              f"{rss_target / GIB:.2f} GiB: {'met' if rss <= rss_target else 'MISSED'}); "
              f"peak RSS / weight bytes {rss / weight_bytes:.3f}")
        print(f"  {verify(om)}")
        return 0
    finally:
        if args.keep:
            print(f"  kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
