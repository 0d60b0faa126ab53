"""Per-operator precision files, parsed with the options: --op_precision_mode (an .ini of modes per op type or
node name) and --customize_dtypes (the dtypes an op computes in, per name or type).

Both follow ATC's documented formats and its precedence: a node name wins over its op type; --op_precision_mode
overrides --op_select_implmode; --customize_dtypes wins over --keep_dtype. What each entry does to the graph is
precision_plan() below, applied by the pipeline once the graph is known."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ..common.errors import AtcError
from ..common.userfiles import read_bytes
from ..ir.dtypes import dtype_by_name

# FE's kSupportImpyType (op_impl_mode_config_parser.cc): the modes a line may name; norm_class is an op-specific
# one (BatchMultiClassNonMaxSuppression). FE skips an entry with another mode with a warning; atc-py refuses it,
# so a misspelt mode does not silently do nothing.
OP_PRECISION_MODES = ("high_precision", "high_performance", "super_performance", "enable_float_32_execution",
                      "enable_hi_float_32_execution", "support_out_of_bound_index", "keep_fp16", "norm_class")
SECTIONS = {"ByOpType": "type", "ByNodeName": "name"}
MAX_FILE_BYTES = 1 << 20
FLOATS = ("float32", "float16", "bfloat16")


def _text(path: str, flag: str) -> str:
    data = read_bytes(path, lambda why: AtcError("E10001", value=path, parameter=f"--{flag}",
                                                 reason=f"The file cannot be used: {why}"), MAX_FILE_BYTES)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise AtcError("E10001", value=path, parameter=f"--{flag}", reason="The file is not UTF-8 text.") from None


@dataclass(frozen=True)
class PerOp:
    """Entries by op type and by node name, as ATC's per-operator files give them: a node name wins."""
    by_type: Mapping[str, Any] = field(default_factory=dict)
    by_name: Mapping[str, Any] = field(default_factory=dict)

    def of(self, name: str, op_type: str):
        return self.by_name.get(name) or self.by_type.get(op_type)

    def __bool__(self) -> bool:
        return bool(self.by_type or self.by_name)


class OpPrecisionModes(PerOp):
    """--op_precision_mode: mode per op type and per node name."""


def parse_op_precision_mode(path: str) -> OpPrecisionModes:
    """`OpType=mode` lines, or [ByOpType] / [ByNodeName] sections of `key=mode` (lines before any section are
    by op type, as ATC's older form); `#` and `;` start comments."""
    if not path:
        return OpPrecisionModes()
    tables: dict[str, dict[str, str]] = {"type": {}, "name": {}}
    section = "type"
    for number, raw in enumerate(_text(path, "op_precision_mode").splitlines(), 1):
        line = raw.split("#", 1)[0].split(";", 1)[0].strip()
        if not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            section = SECTIONS.get(line[1:-1].strip(), "")
            if not section:
                raise AtcError("E10001", value=line, parameter="--op_precision_mode",
                               reason=f"line {number}: the sections are [ByOpType] and [ByNodeName].")
            continue
        key, sep, mode = (t.strip() for t in line.partition("="))
        if not sep or not key:
            raise AtcError("E10001", value=line, parameter="--op_precision_mode",
                           reason=f"line {number}: each entry is OpType=mode or NodeName=mode.")
        if mode not in OP_PRECISION_MODES:
            raise AtcError("E10001", value=line, parameter="--op_precision_mode",
                           reason=f"line {number}: the mode must be one of {', '.join(OP_PRECISION_MODES)}.")
        tables[section][key] = mode
    return OpPrecisionModes(by_type=tables["type"], by_name=tables["name"])


@dataclass(frozen=True)
class CustomDtypes:
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]

    @property
    def compute(self) -> str:
        """The float dtype the op computes in: its first float output's, else its first float input's."""
        return next((d for d in self.outputs + self.inputs if d in FLOATS), "")


class CustomizeDtypes(PerOp):
    """--customize_dtypes: CustomDtypes per op type and per node name."""


def _dtypes(text: str, line: str, number: int) -> tuple[str, ...]:
    out = []
    for tok in (t.strip().lower() for t in text.split(",") if t.strip()):
        try:
            out.append(dtype_by_name(tok).name)
        except (KeyError, ValueError, AtcError):
            raise AtcError("E10001", value=line, parameter="--customize_dtypes",
                           reason=f"line {number}: {tok!r} is not a data type (float16, float32, bfloat16, int8, "
                                  "int32, ...).") from None
    return tuple(out)


def parse_customize_dtypes(path: str) -> CustomizeDtypes:
    """`Opname::InputDtype:dt,...,OutputDtype:dt,...` and `OpType::TypeName:InputDtype:...,OutputDtype:...`."""
    if not path:
        return CustomizeDtypes()
    by_name: dict[str, CustomDtypes] = {}
    by_type: dict[str, CustomDtypes] = {}
    for number, raw in enumerate(_text(path, "customize_dtypes").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        head, sep, spec = line.partition("::")
        table = by_name
        if sep and head == "OpType":
            head, sep, spec = spec.partition(":")
            table = by_type
        ins, has_out, outs = spec.partition("OutputDtype:")
        if not sep or not head or not ins.startswith("InputDtype:") or not has_out:
            raise AtcError("E10001", value=line, parameter="--customize_dtypes",
                           reason=f"line {number}: the format is Opname::InputDtype:dtype1,...,OutputDtype:dtype1,... "
                                  "or OpType::TypeName:InputDtype:dtype1,...,OutputDtype:dtype1,...")
        table[head.strip()] = CustomDtypes(_dtypes(ins[len("InputDtype:"):], line, number),
                                           _dtypes(outs, line, number))
    return CustomizeDtypes(by_type=by_type, by_name=by_name)
