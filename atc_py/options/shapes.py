"""Parsing and validation of option values shared by the CLI and the Python API (ATC's checks and codes)."""
from __future__ import annotations

import re

from ..common.errors import AtcError
from ..common.limits import DEFAULT_LOWER_LIMIT
from .pass_table import OPTIMIZATION_PASSES

INPUT_SHAPE_SAMPLE = '"input_name1:n1,c1,h1,w1;input_name2:n2,c2,h2,w2"'
DIGITS_SAMPLE = '"input_name1:1,3,224,224"'
TILING_SCHEDULE_OPTIMIZE_VALUES = ("", "0", "1")


class InputShapes(dict):
    """--input_shape parsed: input name (or index) -> dims, -1 for a dynamic dim; `ranges` holds, per input with a
    dynamic dim, (low, high) per dim (high -1: unbounded; a static dim d is (d, d))."""

    def __init__(self):
        super().__init__()
        self.ranges: dict[str | int, list[tuple[int, int]]] = {}

    @property
    def dynamic(self) -> bool:
        return bool(self.ranges)


RANGE = re.compile(r"(\d+)~(\d+)")


def _unbracket(dims_text: str) -> str:
    """`[1~16,3,224,224]` -> `1~16,3,224,224`: the bracketed range form CANN 6.x took in --input_shape (the same
    as --input_shape_range); whitespace around it is GE's to trim."""
    dims_text = dims_text.strip()
    if dims_text.startswith("[") and dims_text.endswith("]"):
        return dims_text[1:-1]
    return dims_text


def parse_input_shape(text: str, allow_empty: bool = False, digits_only: bool = False) -> InputShapes:
    """`name:d,d;name:d,d` or, by index, `d,d;d,d`; a dim may be -1 or a range `lo~hi` (a dynamic-shape model), and
    an input's dims may stand in brackets (`name:[1~16,3,-1,-1]`). Names are trimmed (`a:1; b:2` names `b`).
    `digits_only`: the text goes through GE's ParseInputShape (a static shape, or -1 dims with gears), which takes
    each dim as written, so a space beside a dim (`x: 1,3` or `x:1, 3`) is "not a digit"; the shape-range path
    (-1 or lo~hi without gears) trims dims. E10002 for malformed, E10011 for non-positive static dims, E10048
    for a bad range."""
    result = InputShapes()
    if not text:
        return result
    raw_parts = [p for p in text.split(";") if p.strip()]
    parts = [p.strip() for p in raw_parts]
    named = [":" in p for p in parts]
    if any(named) and not all(named):
        raise AtcError("E10002", value=text, reason="Mixed named and indexed shapes", sample=INPUT_SHAPE_SAMPLE)
    for idx, (part, raw) in enumerate(zip(parts, raw_parts)):
        if digits_only and any(t != t.strip() for t in raw.rsplit(":", 1)[-1].split(",")):
            raise AtcError("E10002", value=raw, reason="It is not a digit", sample=DIGITS_SAMPLE)
        if ":" in part:
            name, dims_text = part.rsplit(":", 1)
            name = name.strip()
            if not name:
                raise AtcError("E10002", value=part, reason="The input name is empty", sample=INPUT_SHAPE_SAMPLE)
            key: str | int = name
        else:
            key, dims_text = idx, part
        dims_text = _unbracket(dims_text)
        dims, ranges = [], []
        for tok in (t.strip() for t in dims_text.split(",")) if dims_text.strip() else []:
            if re.fullmatch(r"-?\d+\.\d*|-?\d*\.\d+", tok):
                raise AtcError("E10002", value=part, reason="The float number is unsupported", sample=INPUT_SHAPE_SAMPLE)
            if "~" in tok:
                m = RANGE.fullmatch(tok)
                if m is None or not 0 <= int(m.group(1)) <= int(m.group(2)) or len(m.group(2)) > 12:
                    raise AtcError("E10048", shape_range=part, reason=f"range '{tok}' is not lo~hi with 0 <= lo <= hi",
                                   sample='"input_name1:1~8,3,224,224;input_name2:-1,128"')
                dims.append(-1)
                ranges.append((int(m.group(1)), int(m.group(2))))
                continue
            if tok == "-1":
                dims.append(-1)
                ranges.append((1, -1))
                continue
            if not re.fullmatch(r"-?\d+", tok) or len(tok) > 12:
                raise AtcError("E10002", value=part, reason="It is not a digit", sample=INPUT_SHAPE_SAMPLE)
            d = int(tok)
            if d < 0 or (d == 0 and not allow_empty):
                raise AtcError("E10011", value=part, result=d)
            dims.append(d)
            ranges.append((d, d))
        if key in result:
            raise AtcError("E10002", value=text, reason=f"Input {key} is given twice", sample=INPUT_SHAPE_SAMPLE)
        result[key] = dims
        if -1 in dims:
            result.ranges[key] = ranges
    return result


def shape_range_attr(shapes, key) -> dict:
    """Data attribute `_shape_range` [lo0, hi0, lo1, hi1, ...] (hi -1: unbounded) for an input the user made
    dynamic with -1 or lo~hi in --input_shape; empty for a static one."""
    ranges = getattr(shapes, "ranges", {}).get(key)
    return {"_shape_range": [v for r in ranges for v in r]} if ranges else {}


def parse_input_shape_range(text: str) -> str:
    """ATC's older spelling `name:[1~8,3,224,224];name2:[-1,128]` -> the --input_shape form (E10048 if malformed)."""
    out = []
    for part in (p.strip() for p in text.split(";") if p.strip()):
        m = re.fullmatch(r"(?:(.+):)?\[([^\[\]]*)\]", part)
        if m is None:
            raise AtcError("E10048", shape_range=part, reason="each input is name:[d,d,...] with d a number, -1 or lo~hi",
                           sample='"input_name1:[1~8,3,224,224];input_name2:[-1,128]"')
        out.append(f"{m.group(1)}:{m.group(2)}" if m.group(1) else m.group(2))
    return ";".join(out)


def parse_out_nodes(text: str) -> list[tuple[str, int | None]]:
    """`node:idx;node:idx` (node outputs) or `name;name` (output tensor names); never both (E10001)."""
    if not text:
        return []
    items: list[tuple[str, int | None]] = []
    kinds = set()
    for part in (p.strip() for p in text.split(";") if p.strip()):
        m = re.fullmatch(r"(.+):(\d+)", part)
        if m:
            items.append((m.group(1), int(m.group(2))))
            kinds.add("index")
        else:
            if re.fullmatch(r".+:.*", part):
                raise AtcError("E10001", value=part, parameter="--out_nodes",
                               reason='The value must be formatted as "node_name1:0;node_name1:1;node_name2:0".')
            items.append((part, None))
            kinds.add("name")
    if len(kinds) > 1:
        raise AtcError("E10001", value=text, parameter="--out_nodes",
                       reason="Only one of index, top_name and output_name can be used.")
    return items


def check_tiling_schedule_optimize_session(value: str) -> None:
    """Session/graph-option path (Python API): E10001 with GE's option name."""
    if value not in TILING_SCHEDULE_OPTIMIZE_VALUES:
        raise AtcError("E10001", value=value, parameter="ge.tiling_schedule_optimize",
                       reason="The current value is not within the valid range.")


def parse_optimization_switch(text: str) -> dict[str, bool]:
    """--optimization_switch "pass:on;pass:off" over the graph passes (pass_table.py)."""
    out: dict[str, bool] = {}
    for item in (t.strip() for t in text.split(";")):
        if not item:
            continue
        name, _, state = item.partition(":")
        if name not in OPTIMIZATION_PASSES or state not in ("on", "off"):
            raise AtcError("E10001", value=item, parameter="--optimization_switch",
                           reason=f'The format is "pass:on;pass:off" and pass is one of {", ".join(OPTIMIZATION_PASSES)}.')
        out[name] = state == "on"
    return out


def static_model_ops_lower_limit(text: str) -> int:
    """--static_model_ops_lower_limit: -1 (every op dynamic) or a node count, digits only (ATC's check; the
    command line checks it in ATC's order, BuildOptions.parse with the same function)."""
    if text == "":
        return DEFAULT_LOWER_LIMIT
    if not re.fullmatch(r"-1|\d+", text):
        raise AtcError("E10001", value=text, parameter="--static_model_ops_lower_limit",
                       reason="The value must be an integer greater than or equal to -1.")
    return int(text)


def parse_int_option(text: str, parameter: str, low: int, high: int, default: int) -> int:
    """An integer flag in [low, high] (digits only, as ATC's int flags); E10003 otherwise."""
    if text == "":
        return default
    if not re.fullmatch(r"\d{1,20}", text) or not low <= int(text) <= high:
        raise AtcError("E10003", value=text, parameter=parameter,
                       reason=f"The value must be an integer in [{low}, {high}].")
    return int(text)


def fold_size_limit(text: str) -> int:
    """--fold_size_limit: bytes of the largest constant folded at compile time (bigger folds run on the
    device); 0 folds nothing that makes data."""
    from ..common.limits import DEFAULT_FOLD_SIZE_LIMIT, MAX_CONST_BYTES
    return parse_int_option(text, "fold_size_limit", 0, MAX_CONST_BYTES, DEFAULT_FOLD_SIZE_LIMIT)


def debug_sink_nops(text: str) -> int | None:
    """--debug_sink_nops: NOPs before each tiling-sink kernel instead of the SoC's prefetch_num (None: the SoC's)."""
    from ..common.limits import MAX_SINK_NOPS
    return None if text == "" else parse_int_option(text, "debug_sink_nops", 0, MAX_SINK_NOPS, 0)
