"""hccl_test's behaviour, simulated: the sizes it walks, the bytes it counts, the check it makes, the lines it prints.

Facts from hccl_test's source and docs (cann/oam-tools src/hccl_test, hiascend HCCLpertest_16_0005/0006):
* sizes: from -b to -e, times -f (a float > 1, the product truncated to whole bytes) or plus -i; neither given:
  (max - min) / 10; -b == -e: that one size. K, M, G suffixes are powers of 1024 (8K is printed as 8192).
  Reduce-scatter and all-gather sizes are rounded down to a multiple of the rank count (their buffers split in
  ranks); om-run leaves out hccl_test's further rounding of big sizes to rank count x 512 bytes.
* each row: data_size (bytes of one NPU's buffer), aveg_time (us, the mean over -n iterations after -w warm-up
  ones), alg_bandwidth = bytes / time in GB/s of 1e9 bytes (all-gather and reduce-scatter count rank count x
  their per-rank share, the others the buffer), check_result success / failed, NULL with -c 0.
* printed as "%-17llu | %-14.2f | %-20.5f | result" under "data_size(Bytes): | aveg_time(us): |
  alg_bandwidth(GB/s): | check_result:", after "the minbytes is ..., maxbytes is ..., iters is ..., warmup_iters
  is ...".
om-run's time is the collective's simulated cost (om_run.hccl.algorithms), the same every iteration, so -n and -w
change nothing but the banner. The check runs the collective's numbers (atc_py.ops.collective_math) on random data
of each rank and compares them with a direct numpy computation: on at most CHECK_ELEMENTS elements per rank, since
the numbers of an element-wise collective do not depend on the buffer's length.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from atc_py.common.errors import AtcError
from atc_py.ops import collective_math

BINARIES = {"all_reduce": "all_reduce_test", "all_gather": "all_gather_test", "reduce_scatter": "reduce_scatter_test",
            "broadcast": "broadcast_test", "all_to_all": "alltoall_test"}
DTYPES = {"int8": np.int8, "int16": np.int16, "int32": np.int32, "fp16": np.float16, "fp32": np.float32,
          "int64": np.int64, "uint64": np.uint64, "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32,
          "fp64": np.float64, "bfp16": ml_dtypes.bfloat16}
NOT_SIMULATED = ("int128", "hif8", "fp8e4m3", "fp8e5m2", "fp8e8m0")    # in hccl_test's list, not in numpy's
SPLIT_OPS = ("reduce_scatter", "all_gather")                            # their data_size is a multiple of the ranks
CHECK_ELEMENTS = 4096
MAX_ROWS = 4096
_SIZE = re.compile(r"^(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)([KkMmGg]?)$")
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
_RTOL = {"float16": 1e-2, "bfloat16": 6e-2, "float32": 1e-5, "float64": 1e-12}


def bad(flag: str, value, reason: str) -> AtcError:
    return AtcError("E10001", value=str(value), parameter=flag, reason=reason)


def binary_op(name: str) -> str:
    """The collective of an hccl_test binary name (all_reduce_test, or all_reduce)."""
    for op, binary in BINARIES.items():
        if name in (binary, binary[:-5]):
            return op
    raise bad("OP", name, "not one of hccl_test's binaries om-run simulates: "
                          + ", ".join(BINARIES.values()) + " (the _test may be left out)")


def parse_size(text: str, flag: str) -> int:
    """hccl_test's size: a C integer (decimal, 0x hex, 0 octal) with an optional K, M or G (powers of 1024)."""
    m = _SIZE.match(text.strip())
    if not m:
        raise bad(flag, text, "a size is a positive whole number of bytes with an optional K, M or G suffix "
                              "(8K, 64M, 1G)")
    size = int(m[1], 0) * _UNITS[m[2].lower()]
    if size <= 0:
        raise bad(flag, text, "a size must be greater than 0")
    return size


@dataclass(frozen=True)
class Sweep:
    min_bytes: int
    max_bytes: int
    sizes: tuple[int, ...]


def sweep(op: str, ranks: int, min_bytes: int, max_bytes: int, factor: float | None, step: int | None) -> Sweep:
    if max_bytes < min_bytes:
        raise bad("-e/--maxbytes", max_bytes, f"maxbytes < minbytes ({min_bytes}): -e must be at least -b")
    if factor is not None and not factor > 1.0:
        raise bad("-f/--stepfactor", factor, "the step factor must be greater than 1.0")
    if step is not None and step < 0:
        raise bad("-i/--stepbytes", step, "the step must be greater than or equal to 0")
    if step is None:
        step = (max_bytes - min_bytes) // 10 if max_bytes > min_bytes else 1
    if op in SPLIT_OPS:
        min_bytes = max(min_bytes, ranks) // ranks * ranks
        max_bytes = max(max_bytes, ranks) // ranks * ranks
        step = -(-step // ranks) * ranks
    sizes, size = [], min_bytes
    while size <= max_bytes:
        sizes.append(size)
        if len(sizes) > MAX_ROWS:
            raise bad("-b/-e/-f/-i", f"{min_bytes}..{max_bytes}", f"more than {MAX_ROWS} sizes: use a larger step")
        nxt = int(size * factor) if factor is not None else size + step
        if nxt <= size:     # a step of 0 (or a factor too small to move a byte): that size once
            break
        size = nxt
    return Sweep(min_bytes, max_bytes, tuple(sizes))


def counted_bytes(op: str, data_size: int, itemsize: int, ranks: int) -> int:
    """The bytes hccl_test moves for data_size (its count rounded up to whole elements, split ops per rank)."""
    count = -(-data_size // itemsize)
    if op in SPLIT_OPS:
        return -(-count // ranks) * itemsize * ranks
    return count * itemsize


def _random(rng, dtype, shape, reduction: str):
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -100), min(info.max, 100), size=shape, endpoint=True).astype(dtype)
    low, high = (0.5, 2.0) if reduction == "prod" else (-1.0, 1.0)
    return rng.uniform(low, high, size=shape).astype(dtype)


_UFUNC = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}


def _close(got: np.ndarray, ref: np.ndarray, dtype, scale: float) -> bool:
    if np.dtype(dtype).kind in "iu":
        return bool(np.array_equal(got, ref))
    rtol = _RTOL[np.dtype(dtype).name]
    g, r = got.astype(np.float64), ref.astype(np.float64)
    return bool(np.all(np.abs(g - r) <= rtol * (np.abs(r) + scale)))


def check(op: str, reduction: str, dtype, ranks: int, root: int, data_size: int, seed: int = 0) -> bool:
    """The collective's numbers (collective_math) against a direct numpy computation, on random data per rank."""
    rng = np.random.default_rng(seed + data_size)
    itemsize = np.dtype(dtype).itemsize
    count = min(-(-data_size // itemsize), CHECK_ELEMENTS)
    if op in SPLIT_OPS or op == "all_to_all":
        count = max(1, -(-count // ranks)) * ranks
    shape = (count // ranks,) if op == "all_gather" else (count,)
    xs = [_random(rng, dtype, shape, reduction) for _ in range(ranks)]
    stack = np.stack(xs)
    if op in ("all_reduce", "reduce_scatter"):
        got = (collective_math.all_reduce if op == "all_reduce" else collective_math.reduce_scatter)(xs, reduction)
        wide = stack if np.dtype(dtype).kind in "iu" else stack.astype(np.float64)
        full = _UFUNC[reduction].reduce(wide, axis=0).astype(dtype)
        refs = [full] * ranks if op == "all_reduce" else np.split(full, ranks)
        scale = float(np.abs(stack.astype(np.float64)).sum(axis=0).max()) if reduction == "sum" else 0.0
        return all(_close(g, r, dtype, scale) for g, r in zip(got, refs))
    if op == "all_gather":
        got, ref = collective_math.all_gather(xs), stack.reshape(-1)
        return all(np.array_equal(g, ref) for g in got)
    if op == "broadcast":
        return all(np.array_equal(g, xs[root]) for g in collective_math.broadcast(xs, root))
    got = collective_math.all_to_all(xs)       # rank j gets part j of every rank: a transpose of (rank, part)
    ref = stack.reshape(ranks, ranks, -1).transpose(1, 0, 2).reshape(ranks, -1)
    return all(np.array_equal(g, r) for g, r in zip(got, ref))


def banner(sw: Sweep, iters: int, warmup: int) -> str:
    return f"the minbytes is {sw.min_bytes}, maxbytes is {sw.max_bytes}, iters is {iters}, warmup_iters is {warmup}"


def header() -> str:
    return f"{'data_size(Bytes):':<15} | {'aveg_time(us):':<12} | {'alg_bandwidth(GB/s):':<18} | check_result:"


def row(data_size: int, time_us: float, bandwidth_gbs: float, result: str) -> str:
    return f"{data_size:<17} | {time_us:<14.2f} | {bandwidth_gbs:<20.5f} | {result}"


def alg_bandwidth(nbytes: int, time_us: float) -> float:
    """GB/s of 1e9 bytes, as hccl_test's B_US_TO_GB_S = 1e6 / 1e9."""
    return nbytes / time_us * 1e-3 if time_us > 0 else math.inf
