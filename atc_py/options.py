"""Parsing and validation of option values shared by the CLI and the Python API (ATC's checks and codes)."""
from __future__ import annotations

import re

from .errors import AtcError

INPUT_SHAPE_SAMPLE = '"input_name1:n1,c1,h1,w1;input_name2:n2,c2,h2,w2"'
TILING_SCHEDULE_OPTIMIZE_VALUES = ("", "0", "1")


def parse_input_shape(text: str, allow_empty: bool = False) -> dict[str | int, list[int]]:
    """`name:d,d;name:d,d` or, by index, `d,d;d,d`. E10002 for malformed, E10011 for non-positive dims."""
    result: dict[str | int, list[int]] = {}
    if not text:
        return result
    parts = [p for p in text.split(";") if p.strip()]
    named = [":" in p for p in parts]
    if any(named) and not all(named):
        raise AtcError("E10002", value=text, reason="Mixed named and indexed shapes", sample=INPUT_SHAPE_SAMPLE)
    for idx, part in enumerate(parts):
        if ":" in part:
            name, dims_text = part.rsplit(":", 1)
            if not name:
                raise AtcError("E10002", value=part, reason="The input name is empty", sample=INPUT_SHAPE_SAMPLE)
            key: str | int = name
        else:
            key, dims_text = idx, part
        dims = []
        for tok in (t.strip() for t in dims_text.split(",")) if dims_text.strip() else []:
            if re.fullmatch(r"-?\d+\.\d*|-?\d*\.\d+", tok):
                raise AtcError("E10002", value=part, reason="The float number is unsupported", sample=INPUT_SHAPE_SAMPLE)
            if "~" in tok or tok == "-1":
                raise AtcError("E10055", reason="dynamic input shapes (-1 or ranges in --input_shape) are not "
                                                "supported by this version of atc-py")
            if not re.fullmatch(r"-?\d+", tok):
                raise AtcError("E10002", value=part, reason="It is not a digit", sample=INPUT_SHAPE_SAMPLE)
            d = int(tok)
            if d < 0 or (d == 0 and not allow_empty):
                raise AtcError("E10011", value=part, result=d)
            dims.append(d)
        if key in result:
            raise AtcError("E10002", value=text, reason=f"Input {key} is given twice", sample=INPUT_SHAPE_SAMPLE)
        result[key] = dims
    return result


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


OPTIMIZATION_PASSES = ("identity", "cse", "fold", "transpose_cancel", "conv_bias", "bn_conv_fold", "matmul_bias",
                       "relu_fusion", "dce", "elementwise_fusion")


def parse_optimization_switch(text: str) -> dict[str, bool]:
    """--optimization_switch "pass:on;pass:off" over OPTIMIZATION_PASSES."""
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


def parse_int_option(text: str, parameter: str, low: int, high: int, default: int) -> int:
    """An integer flag in [low, high] (digits only, as ATC's int flags); E10003 otherwise."""
    if text == "":
        return default
    if not re.fullmatch(r"\d{1,20}", text) or not low <= int(text) <= high:
        raise AtcError("E10003", value=text, parameter=parameter,
                       reason=f"The value must be an integer in [{low}, {high}].")
    return int(text)


def fold_size_limit(options: dict[str, str]) -> int:
    """--fold_size_limit: bytes of the largest constant folded at compile time (bigger folds run on the
    device); 0 folds nothing that makes data."""
    from .limits import DEFAULT_FOLD_SIZE_LIMIT, MAX_CONST_BYTES
    return parse_int_option(options.get("fold_size_limit", ""), "fold_size_limit", 0, MAX_CONST_BYTES,
                            DEFAULT_FOLD_SIZE_LIMIT)


def debug_sink_nops(options: dict[str, str]) -> int | None:
    from .limits import MAX_SINK_NOPS
    text = options.get("debug_sink_nops", "")
    return None if text == "" else parse_int_option(text, "debug_sink_nops", 0, MAX_SINK_NOPS, 0)
