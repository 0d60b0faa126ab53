"""fp16 overflow location (ATC's --status_check=1, om-run --check-overflow): the operators whose outputs hold inf or
NaN while all their inputs are finite, in execution order — where a value first left the dtype's range (an fp16 mask
fill, an accumulation), not every op downstream that inherits it."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from atc_py.ir.graph import ORIGIN_NAMES  # GE's attribute: the source ops a fused node covers


def _finite(a) -> bool:
    arr = np.asarray(a) if a is not None else None
    return arr is None or arr.dtype.kind not in "fc" or bool(np.isfinite(arr).all())


@dataclass
class OverflowOp:
    task: int
    op_name: str
    op_type: str
    original_names: list[str]
    outputs: list[int]          # which outputs hold inf/NaN

    def as_dict(self) -> dict:
        return {"task": self.task, "op_name": self.op_name, "op_type": self.op_type,
                "original_names": self.original_names, "outputs": self.outputs}


@dataclass
class OverflowCheck:
    ops: list[OverflowOp] = field(default_factory=list)

    def check(self, task: int, op_name: str, op_type: str, original: list[str], inputs, outputs) -> None:
        """Record the op when an output is not finite and every input is."""
        bad = [k for k, a in enumerate(outputs) if not _finite(a)]
        if bad and all(_finite(a) for a in inputs):
            self.ops.append(OverflowOp(task, op_name, op_type, list(original), bad))


def original_names(op) -> list[str]:
    """The source framework ops an .om op covers (itself when no pass recorded any)."""
    from atc_py.om.attrs import from_attr
    if ORIGIN_NAMES in op.attr:
        names = from_attr(op.attr[ORIGIN_NAMES])
        if isinstance(names, list) and all(isinstance(n, str) for n in names):
            return names
    return [op.name]
