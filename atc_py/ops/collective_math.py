"""What HCCL's collectives compute, over the inputs of every rank of a group (in the group's rank order).

One place for the numbers: the HCCL ops' kernels (a group of one rank), om-run's multi-device rendezvous and
`om-run hccl-test`'s check all call these. A reduction is applied rank after rank in the tensor's own dtype
(fp16 rounds after every addition, integers wrap), so the result is one exact, reproducible value; HCCL's own
order of additions depends on its algorithm, which moves fp16 results by an ulp or so, not integer ones.
"""
from __future__ import annotations

import numpy as np

REDUCTIONS = ("sum", "prod", "max", "min")
_UFUNC = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}


class CollectiveError(ValueError):
    """The ranks' inputs do not make a collective (shapes, dtypes, counts); the message names what differs."""


def _same(xs: list[np.ndarray]) -> None:
    if not xs:
        raise CollectiveError("a collective needs at least one rank")
    first = xs[0]
    for k, x in enumerate(xs[1:], 1):
        if x.shape != first.shape or x.dtype != first.dtype:
            raise CollectiveError(f"rank {k} of the group gives {x.dtype}{list(x.shape)}, rank 0 "
                                  f"{first.dtype}{list(first.shape)}")


def reduce(xs: list[np.ndarray], reduction: str) -> np.ndarray:
    """The element-wise reduction of every rank's tensor, in rank order, in their dtype."""
    if reduction not in _UFUNC:
        raise CollectiveError(f"reduction '{reduction}' is not one of {', '.join(REDUCTIONS)}")
    _same(xs)
    op = _UFUNC[reduction]
    out = np.array(xs[0], copy=True)
    with np.errstate(over="ignore", invalid="ignore"):
        for x in xs[1:]:
            op(out, x, out=out, casting="unsafe")
    return out


def _chunks(x: np.ndarray, n: int, what: str) -> list[np.ndarray]:
    """x split in n equal parts along its first axis (HCCL splits the flat buffer: the same for C order)."""
    if x.ndim == 0 or x.shape[0] % n:
        raise CollectiveError(f"{what}: the first dimension of {list(x.shape)} does not split into {n} ranks")
    return np.split(x, n, axis=0)


def all_reduce(xs: list[np.ndarray], reduction: str = "sum") -> list[np.ndarray]:
    r = reduce(xs, reduction)
    return [r.copy() for _ in xs]


def all_gather(xs: list[np.ndarray]) -> list[np.ndarray]:
    _same(xs)
    g = np.concatenate([np.asarray(x).reshape((-1,) + x.shape[1:]) if x.ndim else x.reshape(1) for x in xs], axis=0)
    return [g.copy() for _ in xs]


def reduce_scatter(xs: list[np.ndarray], reduction: str = "sum") -> list[np.ndarray]:
    r = reduce(xs, reduction)
    return [c.copy() for c in _chunks(r, len(xs), "reduce-scatter")]


def broadcast(xs: list[np.ndarray], root: int) -> list[np.ndarray]:
    """Every rank gets the root's tensor; root is the root's position in the group."""
    _same(xs)
    if not 0 <= root < len(xs):
        raise CollectiveError(f"root rank {root} is not in a group of {len(xs)}")
    return [xs[root].copy() for _ in xs]


def all_to_all(xs: list[np.ndarray]) -> list[np.ndarray]:
    """Rank j receives part j of every rank's tensor, in rank order."""
    _same(xs)
    n = len(xs)
    parts = [_chunks(x, n, "all-to-all") for x in xs]
    return [np.concatenate([parts[i][j] for i in range(n)], axis=0) for j in range(n)]
