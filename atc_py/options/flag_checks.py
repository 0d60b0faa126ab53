"""The checks a row of the flag table (flag_table.py) names, with ATC's error codes and messages:

* check_value: CmdFlagInfo::CheckValue, run as each flag is read: its value range (E10006 for the 0/1 switches,
  E10010 for --log, E10007 for --framework, E10001 otherwise), then its type (digits for int32, ATC's spellings
  for bool);
* the CheckFlags checks (`Flag.check`), which atc_py/cli/main.py runs in ATC's order once every flag is read:
  fn(name, value_of), where value_of(flag) is a flag's value as given or its default."""
from __future__ import annotations

import os
import pathlib
import re
from typing import Callable

from ..common.errors import AtcError
from .shapes import TILING_SCHEDULE_OPTIMIZE_VALUES, static_model_ops_lower_limit

FRAMEWORK_ONNX, FRAMEWORK_TF = "5", "3"
FRAMEWORK_SUPPORT = "3(TensorFlow) or 5(Onnx) (ATC's 0(Caffe) and 1(MindSpore) are not supported by atc-py)"
BOOL_TRUE, BOOL_FALSE = {"", "1", "t", "true", "y", "yes"}, {"0", "f", "false", "n", "no"}
MAX_PATH = 4096     # ATC's MMPA_MAX_PATH: a longer --output is E10021
PATH_CHARS = re.compile(r"^[A-Za-z0-9./_\-\u4e00-\u9fa5]+$")
# --input_format by --framework (ATC's CheckInputFormat)
INPUT_FORMATS = {FRAMEWORK_TF: (("NCHW", "NHWC", "ND", "NCDHW", "NDHWC"),
                                "The value must be NCHW, NHWC, ND, NCDHW or NDHWC in TF model."),
                 FRAMEWORK_ONNX: (("NCHW", "ND", "NCDHW"), "The value must be NCHW, ND or NCDHW in ONNX model.")}
ValueOf = Callable[[str], str]


def check_value(flag, value: str) -> None:
    """CmdFlagInfo::CheckValue of a flag table row: the value range first, then the type; raises AtcError."""
    if flag.allowed and value not in flag.allowed:
        raise range_error(flag, value)
    if flag.kind == "int" and not value.isdigit():  # ATC accepts digits only: no sign
        raise AtcError("E10003", value=value, parameter=flag.name, reason="The value type must be [int32].")
    if flag.kind == "bool" and value.lower() not in BOOL_TRUE | BOOL_FALSE:
        raise AtcError("E10003", value=value, parameter=flag.name, reason="The value type must be [bool].")


def range_error(flag, value: str) -> AtcError:
    """PrintValueError: the error of a value outside the flag's range, by the row's `range_code`."""
    if flag.range_code == "E10006":
        return AtcError("E10006", value=value, parameter=flag.name)
    if flag.range_code == "E10010":
        return AtcError("E10010", value=value)
    if flag.range_code == "E10007":
        return AtcError("E10007", parameter=flag.name, support=FRAMEWORK_SUPPORT)
    listing = " ".join(f"[{v}]" for v in sorted(flag.allowed))
    return AtcError("E10001", value=value, parameter=f"--{flag.name}",
                    reason=f"The value is not within the range of values. The valid range is {listing} .")


# -- CheckFlags ----------------------------------------------------------------------------------------------
def framework_given(name: str, value_of: ValueOf) -> None:
    """Required (E10007)."""
    if value_of(name) == "-1":
        raise AtcError("E10007", parameter=name, support=FRAMEWORK_SUPPORT)


def required_soc(name: str, value_of: ValueOf) -> None:
    """Required (E10054)."""
    if not value_of(name):
        raise AtcError("E10054")


def output_path(output: str) -> pathlib.Path:
    """The .om that --output names (its folder must exist)."""
    if not output:
        raise AtcError("E10004", parameter="output")
    if output.endswith("/"):
        raise AtcError("E10022", path=output, parameter="output")
    if not PATH_CHARS.match(output):
        raise AtcError("E10001", value=output, parameter="--output",
                       reason="The path can only contain 'a-z' 'A-Z' '0-9' '-' '.' '_' and Chinese characters.")
    path = pathlib.Path(output + ".om")
    if len(str(path)) >= MAX_PATH:
        raise AtcError("E10021", parameter="output", max_len=MAX_PATH)
    if not os.path.isdir(path.parent):      # os.path: False, not OSError, for a name the file system refuses
        raise AtcError("E10001", value=output, parameter="--output", reason="The directory does not exist.")
    return path


def writable_output(name: str, value_of: ValueOf) -> None:
    """Required (E10004); letters, digits, `-`, `.`, `_`, `/` and Chinese characters, no trailing `/` (E10022),
    in an existing folder (E10001)."""
    output_path(value_of(name))


def readable_model(name: str, value_of: ValueOf) -> None:
    """Required (E10004); a readable file (E10001)."""
    model = value_of(name)
    if not model:
        raise AtcError("E10004", parameter=name)
    if not os.path.isfile(model) or not os.access(model, os.R_OK):
        raise AtcError("E10001", value=model, parameter=f"--{name}", reason="The file does not exist or cannot be read.")


def zero_or_one(name: str, value_of: ValueOf) -> None:
    """`0` or `1` (E10006)."""
    if value_of(name) not in TILING_SCHEDULE_OPTIMIZE_VALUES:
        raise AtcError("E10006", value=value_of(name), parameter=name)


def true_or_false(name: str, value_of: ValueOf) -> None:
    """`true` or `false` (E10005)."""
    if value_of(name) not in ("", "true", "false"):
        raise AtcError("E10005", value=value_of(name), parameter=name)


def existing_file(name: str, value_of: ValueOf) -> None:
    """An existing file (E10001)."""
    path = value_of(name)
    if path and not os.path.isfile(path):
        raise AtcError("E10001", value=path, parameter=f"--{name}", reason="The file does not exist.")


def input_format_of_framework(name: str, value_of: ValueOf) -> None:
    """By --framework (ATC's CheckInputFormat): TensorFlow NCHW, NHWC, ND, NCDHW or NDHWC; ONNX NCHW, ND or NCDHW
    (E10001)."""
    fmt = value_of(name)
    allowed, reason = INPUT_FORMATS.get(value_of("framework"), ((), ""))
    if fmt and allowed and fmt not in allowed:
        raise AtcError("E10001", value=fmt, parameter=f"--{name}", reason=reason)


def lower_limit(name: str, value_of: ValueOf) -> None:
    """`-1` or digits (E10001)."""
    static_model_ops_lower_limit(value_of(name))
