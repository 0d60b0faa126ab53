"""What importing a model may create beyond what its file spells out, counted before it is created.

A model names work by reference: an If's two branches, a loop unrolled trip-count times, a TensorFlow function
that several If / While / calls name. Converting copies that work (GE's .om holds one subgraph per owner, an
unrolled loop one copy of its body per iteration), so a small file can ask for exponentially many graphs or
nodes. The frontends count what a file or a node implies before converting it and ask this budget, one per
build (every gear of a multi-gear build draws on it); past a limit of common/limits.py the build stops with
one error, in the time the counting took, instead of running for hours."""
from __future__ import annotations

from ..common.errors import AtcError
from ..common.limits import MAX_IMPORT_COPIED_NODES, MAX_SUBGRAPHS

COUNT_CAP = 4 * max(MAX_SUBGRAPHS, MAX_IMPORT_COPIED_NODES)   # counting stops here: what is beyond is refused


class ImportBudget:
    def __init__(self, path: str) -> None:
        self.path = path
        self.subgraphs = 0      # control-flow subgraphs converted so far
        self.copied = 0         # nodes added by copying (unrolling, expanding, a function's further copies)

    def too_complex(self, reason: str) -> AtcError:
        return AtcError("E10041", path=self.path, reason=reason)

    def plan_subgraphs(self, n: int) -> None:
        """The file holds `n` more subgraphs (counted up to just past the limit): refused if they do not fit."""
        if self.subgraphs + n > MAX_SUBGRAPHS:
            raise self.too_complex(subgraphs_reason())

    def add_subgraph(self) -> None:
        self.subgraphs += 1
        if self.subgraphs > MAX_SUBGRAPHS:
            raise self.too_complex(subgraphs_reason())

    def copy_problem(self, n: int, what: str) -> str | None:
        """Why copying `n` more nodes (for `what`) is refused, or None."""
        if self.copied + n <= MAX_IMPORT_COPIED_NODES:
            return None
        before = f" after the {self.copied} copied before it" if self.copied else ""
        count = f"more than {COUNT_CAP}" if n >= COUNT_CAP else str(n)
        return (f"{what} would add {count} nodes{before}, more than the {MAX_IMPORT_COPIED_NODES} a model may ask for "
                "beyond the nodes its file holds (MAX_IMPORT_COPIED_NODES)")


def subgraphs_reason() -> str:
    return (f"it needs more than {MAX_SUBGRAPHS} control-flow subgraphs (If branches, loop bodies and the functions "
            "they call, at every nesting level, one copy per owner), the most a model may have (MAX_SUBGRAPHS)")

