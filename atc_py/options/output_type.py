"""--output_type parsed: one dtype for every output (FP32, FP16, UINT8, INT8) or "node:index:TYPE;..." for outputs
chosen with --out_nodes (passes/output_type.py inserts the Casts)."""
from __future__ import annotations

from dataclasses import dataclass

from ..common.errors import AtcError

OUTPUT_TYPES = {"FP32": "float32", "FP16": "float16", "UINT8": "uint8", "INT8": "int8"}
REASON_ALL = ("The value must be FP32, FP16, UINT8, INT8. A node can only have one type. "
              "The correct example is: --output_type=FP32.")


@dataclass(frozen=True)
class OutputTypes:
    """--output_type parsed: `every` (a numpy dtype for all outputs) or `per` ((node, index, dtype, item) for
    outputs chosen with --out_nodes; the names are matched against the outputs when the graph is known)."""
    every: str = ""
    per: tuple[tuple[str, str, str, str], ...] = ()


def parse_output_type(text: str) -> OutputTypes:
    if not text:
        return OutputTypes()
    if ":" not in text:
        if text not in OUTPUT_TYPES:
            raise AtcError("E10001", value=text, parameter="--output_type", reason=REASON_ALL)
        return OutputTypes(every=OUTPUT_TYPES[text])
    per = []
    for item in (t for t in text.split(";") if t):
        parts = item.split(":")
        if len(parts) != 3 or not parts[1].isdigit():
            raise AtcError("E10001", value=item, parameter="--output_type",
                           reason='The parameter is invalid. Valid format "opname:index:dtype".')
        if parts[2] not in OUTPUT_TYPES:
            raise AtcError("E10001", value=item, parameter="--output_type", reason=REASON_ALL)
        per.append((parts[0], parts[1], OUTPUT_TYPES[parts[2]], item))
    return OutputTypes(per=tuple(per))
