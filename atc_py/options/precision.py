"""ATC's precision and fusion knobs, parsed and checked once (E-codes as ATC's):

* --precision_mode_v2: fp16 | origin | cube_fp16in_fp32out | mixed_float16 | mixed_bfloat16 (mapped onto the
  --precision_mode values; the two flags are mutually exclusive, E10056);
* --input_fp16_nodes "a;b": graph inputs fed as fp16 (Data nodes; E10016 / E10017);
* --keep_dtype FILE: nodes kept in their model dtype, one name per line or `OpType::<type>` for every op of a
  type (the file must exist: E10001 "File defined by keep_dtype is not found.");
* --modify_mixlist FILE: allow_mix_precision's lists edited, JSON {"white-list"|"black-list"|"gray-list":
  {"to-add": [...], "to-remove": [...]}} of op types;
* --op_select_implmode high_performance | high_precision (| _for_all) and --optypelist_for_implmode (needs it);
* --fusion_switch_file FILE: {"Switch": {"GraphFusion": {...}, "UBFusion": {...}}} with "on"/"off" per GE
  fusion pass name (or ALL), mapped onto atc-py's passes (the GE names of pass_table.py's rows).
Each is recorded in the .om's model attributes (atc_py/options/build_options.py gathers them)."""
from __future__ import annotations

from dataclasses import dataclass

from ..common.errors import AtcError
from ..common.userfiles import read_bytes, read_json
from .pass_table import fusion_passes

CUBE_OPS = {"Conv2D", "Conv3D", "Conv2DTransposeD", "MatMulV2", "BatchMatMulV2"}
MODES = ("force_fp16", "force_fp32", "cube_fp16in_fp32out", "allow_mix_precision", "allow_fp32_to_fp16",
         "must_keep_origin_dtype", "allow_mix_precision_fp16", "allow_mix_precision_bf16", "allow_fp32_to_bf16")
MIX_MODES = {"allow_mix_precision", "allow_mix_precision_fp16", "allow_mix_precision_bf16"}
DEFAULT_MODE = "force_fp16"


def check_precision_mode(mode: str) -> str:
    mode = mode or DEFAULT_MODE
    if mode not in MODES:
        raise AtcError("E10001", value=mode, parameter="--precision_mode",
                       reason=f"The value must be one of {', '.join(MODES)}.")
    return mode


@dataclass
class MixList:
    """allow_mix_precision's lists (--modify_mixlist edits them): white ops compute in fp16, black ops keep their
    dtype, gray ops (every other) follow the precision of what feeds them."""
    white: frozenset = frozenset(CUBE_OPS)
    black: frozenset = frozenset()

PRECISION_V2 = {"fp16": "force_fp16", "origin": "must_keep_origin_dtype", "cube_fp16in_fp32out": "cube_fp16in_fp32out",
                "mixed_float16": "allow_mix_precision_fp16", "mixed_bfloat16": "allow_mix_precision_bf16"}
IMPL_MODES = ("high_performance", "high_precision", "high_performance_for_all", "high_precision_for_all")


def precision_mode(v1: str, v2: str) -> str:
    """--precision_mode, or --precision_mode_v2 mapped onto it (never both)."""
    if v1 and v2:
        raise AtcError("E10056", parameter1="--precision_mode", parameter2="--precision_mode_v2")
    if v2:
        if v2 not in PRECISION_V2:
            raise AtcError("E10001", value=v2, parameter="--precision_mode_v2",
                           reason=f"The value must be one of {', '.join(PRECISION_V2)} (cube_hif8 and mixed_hif8 "
                                  "are not supported by atc-py).")
        return PRECISION_V2[v2]
    return v1


def input_fp16_nodes(text: str) -> list[str]:
    return [n.strip() for n in text.split(";") if n.strip()]


def keep_dtype(path: str) -> tuple[list[str], list[str]]:
    """(node names, op types) listed in a --keep_dtype file."""
    if not path:
        return [], []
    data = read_bytes(path, lambda why: AtcError("E10001", value=path, parameter="--keep_dtype",
                                                 reason=f"File defined by keep_dtype is not found. ({why})"), 1 << 20)
    try:
        lines = [ln.strip() for ln in data.decode("utf-8").splitlines()]
    except UnicodeDecodeError:
        raise AtcError("E10001", value=path, parameter="--keep_dtype", reason="The file is not UTF-8 text.") from None
    names, types = [], []
    for ln in lines:
        if not ln or ln.startswith("#"):
            continue
        if ln.startswith("OpType::"):
            types.append(ln[len("OpType::"):].strip())
        else:
            names.append(ln)
    return names, types


def modify_mixlist(path: str, mode: str) -> tuple[MixList, dict]:
    if not path:
        return MixList(), {}
    if not mode.startswith("allow_mix_precision"):
        raise AtcError("E10001", value=path, parameter="--modify_mixlist",
                       reason="--modify_mixlist takes effect only with --precision_mode=allow_mix_precision(_fp16).")
    doc = read_json(path, lambda why: AtcError("E10001", value=path, parameter="--modify_mixlist",
                                               reason=f"The file cannot be used: {why}"))
    lists = {"white-list": set(CUBE_OPS), "black-list": set(), "gray-list": set()}
    if not isinstance(doc, dict) or set(doc) - set(lists):
        raise AtcError("E10001", value=path, parameter="--modify_mixlist",
                       reason="The file must map white-list / black-list / gray-list to {\"to-add\": [...], "
                              "\"to-remove\": [...]}.")
    for key, edit in doc.items():
        if not isinstance(edit, dict) or set(edit) - {"to-add", "to-remove"} or \
                not all(isinstance(v, list) and all(isinstance(t, str) for t in v) for v in edit.values()):
            raise AtcError("E10001", value=path, parameter="--modify_mixlist",
                           reason=f"{key} must be {{\"to-add\": [op types], \"to-remove\": [op types]}}.")
        lists[key] |= set(edit.get("to-add", []))
        lists[key] -= set(edit.get("to-remove", []))
    clash = lists["white-list"] & lists["black-list"]
    if clash:
        raise AtcError("E10001", value=path, parameter="--modify_mixlist",
                       reason=f"op types {sorted(clash)} are in both the white and the black list.")
    return MixList(frozenset(lists["white-list"]), frozenset(lists["black-list"])), doc


def implmode(mode: str, types: str) -> tuple[str, list[str]]:
    """--op_select_implmode and --optypelist_for_implmode (the list needs the mode)."""
    if types and not mode:
        raise AtcError("E10001", value=types, parameter="--optypelist_for_implmode",
                       reason="Parameters --op_select_implmode and --optypelist_for_implmode must be set at the "
                              "same time.")
    if mode and mode not in IMPL_MODES:
        raise AtcError("E10001", value=mode, parameter="--op_select_implmode",
                       reason=f"The value must be one of {', '.join(IMPL_MODES)}.")
    return mode, [t.strip() for t in types.split(",") if t.strip()]


def fusion_switches(path: str, log=None) -> dict[str, bool]:
    """--fusion_switch_file -> atc-py pass name -> on/off. Two forms, as ATC's docs show them: JSON
    {"Switch": {"GraphFusion": {...}, "UBFusion": {...}}}, or text lines `PassName:off` (a name is looked up in
    both tables; `ALL:off` switches every fusion pass; `#` starts a comment)."""
    if not path:
        return {}
    fail = lambda why: AtcError("E10001", value=path, parameter="--fusion_switch_file",  # noqa: E731
                                reason=f"The file cannot be used: {why}")
    data = read_bytes(path, fail, 1 << 20)
    if data.lstrip()[:1] != b"{":
        return _fusion_switch_lines(path, data, log)
    doc = read_json(path, fail)
    switch = doc.get("Switch") if isinstance(doc, dict) else None
    if not isinstance(switch, dict) or set(switch) - set(fusion_passes()):
        raise AtcError("E10001", value=path, parameter="--fusion_switch_file",
                       reason='The file must be {"Switch": {"GraphFusion": {...}, "UBFusion": {...}}}.')
    out: dict[str, bool] = {}
    for kind, table in switch.items():
        if not isinstance(table, dict):
            raise AtcError("E10001", value=path, parameter="--fusion_switch_file", reason=f"{kind} must be an object.")
        for name, state in table.items():
            _switch(out, (kind,), name, state, log)
    return out


def _fusion_switch_lines(path: str, data: bytes, log) -> dict[str, bool]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise AtcError("E10001", value=path, parameter="--fusion_switch_file",
                       reason="The file is neither JSON nor UTF-8 text.") from None
    out: dict[str, bool] = {}
    for line in (ln.split("#", 1)[0].strip() for ln in text.splitlines()):
        if not line:
            continue
        name, sep, state = (t.strip() for t in line.partition(":"))
        if not sep or not name:
            raise AtcError("E10001", value=line, parameter="--fusion_switch_file",
                           reason='Each line of the text form is "PassName:on" or "PassName:off".')
        _switch(out, tuple(fusion_passes()), name, state.strip('"'), log)
    return out


def _switch(out: dict[str, bool], kinds: tuple[str, ...], name: str, state, log) -> None:
    """Sets the atc-py passes GE pass `name` (of one of `kinds`, or ALL) maps onto."""
    if state not in ("on", "off"):
        raise AtcError("E10001", value=f"{name}: {state}", parameter="--fusion_switch_file",
                       reason="Each fusion switch is \"on\" or \"off\".")
    table = fusion_passes()     # GE fusion pass names by kind -> the atc-py pass doing that fusion
    targets = {t for kind in kinds for t in (table[kind].values() if name == "ALL" else
                                              [table[kind][name]] if name in table[kind] else [])}
    if not targets and log is not None:
        log("warning", f"--fusion_switch_file: {'/'.join(kinds)} pass {name} has no atc-py counterpart; ignored")
    for t in targets:
        out[t] = state == "on"
