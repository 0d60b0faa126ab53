"""ATC's command-line syntax (cmd_flag_info.cc): --flag=v / --flag v, -flag → --flag, '-' → '_' in names, a unique
prefix of a flag name stands for the flag (getopt_long; atc_py/cli/atc_flags.py).

Errors of the syntax itself print `ERROR: ...` to stderr like ATC; value checks raise AtcError.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import atc_flags
from ..common.errors import AtcError
from ..options.build_options import FRAMEWORK_SUPPORT
from ..options.shapes import OPTIMIZATION_PASSES


@dataclass(frozen=True)
class Flag:
    name: str
    kind: str          # "str" | "int" | "bool"
    default: str
    help: str


FLAGS = {f.name: f for f in [
    Flag("mode", "int", "0", "Run mode. 0(default): generate offline model; 1: convert model to JSON format; "
                             "3: only pre-check; 6: display model info"),
    Flag("model", "str", "", "Model file"),
    Flag("framework", "int", "-1", "Framework type. 3: TensorFlow; 5: Onnx"),
    Flag("input_format", "str", "", "Format of input data. TF: NHWC (default), NCHW, ND, NCDHW, NDHWC; "
                                    "ONNX: NCHW (default), ND, NCDHW"),
    Flag("precision_mode", "str", "", "Precision mode: force_fp16 (default), force_fp32, cube_fp16in_fp32out, "
                                      "allow_mix_precision, allow_fp32_to_fp16, must_keep_origin_dtype"),
    Flag("precision_mode_v2", "str", "", "Precision mode, newer spelling: fp16, origin, cube_fp16in_fp32out, "
                                         "mixed_float16, mixed_bfloat16 (exclusive with --precision_mode)"),
    Flag("input_fp16_nodes", "str", "", 'Inputs fed as fp16: "input1;input2"'),
    Flag("keep_dtype", "str", "", "File of nodes kept in their model dtype (a name per line, or OpType::<type>)"),
    Flag("modify_mixlist", "str", "", "JSON editing allow_mix_precision's white/black/gray lists"),
    Flag("op_select_implmode", "str", "", "high_performance (default) or high_precision (or _for_all): the kernel "
                                          "of the ops that have two (Gelu, SoftmaxV2, LogSoftmaxV2, Exp, LayerNorm: "
                                          "fp16 computed in fp32 or in fp16); recorded in the .om"),
    Flag("optypelist_for_implmode", "str", "", "Op types the plain --op_select_implmode applies to (comma-separated)"),
    Flag("fusion_switch_file", "str", "", 'JSON {"Switch": {"GraphFusion": {...}, "UBFusion": {...}}} of on/off'),
    Flag("output_type", "str", "", 'Output dtype: FP32, FP16, UINT8, INT8, or "node:index:TYPE;..." for '
                                   "--out_nodes outputs"),
    Flag("optimization_switch", "str", "", 'Graph passes on/off: "pass:on;pass:off"; passes: '
                                           + ", ".join(OPTIMIZATION_PASSES)),
    Flag("output", "str", "", "Output file path&name (the .om suffix is added)"),
    Flag("soc_version", "str", "", "The soc version."),
    Flag("input_shape", "str", "", 'Shape of input data. E.g.: "input_name1:n1,c1,h1,w1;input_name2:n2,c2,h2,w2"; '
                                   'a dim may be -1 or a range lo~hi (a dynamic-shape model)'),
    Flag("input_shape_range", "str", "", 'Older spelling of shape ranges: "input_name1:[1~8,3,224,224];input_name2:[-1,128]"'),
    Flag("dynamic_batch_size", "str", "", 'Gears of the batch size (N of the -1 inputs in --input_shape), e.g. "1,2,4,8"'),
    Flag("dynamic_image_size", "str", "", 'Gears of the image size (H, W of the -1 inputs), e.g. "224,224;448,448"'),
    Flag("dynamic_dims", "str", "", 'Gears of the -1 dims of --input_shape in order, e.g. "1,128;4,256"'),
    Flag("out_nodes", "str", "", 'Output nodes designated by users. E.g.: "node_name1:0;node_name1:1;node_name2:0"'),
    Flag("om", "str", "", "The model file to be converted to json (mode 1) or displayed (mode 6)"),
    Flag("json", "str", "", "The output json file path&name which is converted from a model"),
    Flag("check_report", "str", "", "The pre-check report (--mode=3, or a failed parse): default check_result.json "
                                    "in $ASCEND_WORK_PATH or the current directory"),
    Flag("log", "str", "null", "Generate log with level. Support debug, info, warning, error, null"),
    Flag("tiling_schedule_optimize", "str", "0", "Enable tiling sink. 1: enable; 0(default): disable"),
    Flag("static_model_ops_lower_limit", "str", "", "Minimum node count of a static subgraph; -1: all dynamic"),
    Flag("display_model_info", "str", "0", "Whether to display model info after generation. 0(default), 1"),
    Flag("disable_reuse_memory", "str", "0", "The switch of reuse memory. 0(default): reuse; 1: do not reuse"),
    Flag("op_plugin", "str", "", "Python modules (files or folders, ':'-separated) registering custom operators; "
                                 "ASCEND_CUSTOM_OPP_PATH is read too"),
    Flag("insert_op_conf", "str", "", "AIPP configuration file (GE's insert_op.proto in protobuf text format; static "
                                      "AIPP)"),
    Flag("op_attr_config", "str", "", "JSON file: node name -> attributes to set (e.g. _super_kernel_scope)"),
    Flag("debug_sink_nops", "str", "", "DEBUG ONLY: NOPs before each tiling-sink kernel instead of the SoC's "
                                       "prefetch_num (shows the prefetch hazard)"),
    Flag("fold_size_limit", "str", "", "Bytes of the largest constant folded at compile time; larger or costlier "
                                       "folds stay in the graph and run on the device (default: 268435456)"),
    Flag("enable_single_stream", "str", "", "Put every task on one stream. true or false (default: false)"),
    Flag("op_precision_mode", "str", "", "INI file of per-op precision modes: OpType=mode lines, or [ByOpType] / "
                                         "[ByNodeName] sections (node names win); modes high_precision, "
                                         "high_performance, enable_float_32_execution, enable_hi_float_32_execution, "
                                         "support_out_of_bound_index, keep_fp16, super_performance, norm_class (an "
                                         "op-specific mode). Overrides --op_select_implmode"),
    Flag("customize_dtypes", "str", "", "File of per-op compute dtypes: Opname::InputDtype:dt,...,OutputDtype:dt,... "
                                        "or OpType::type:InputDtype:...,OutputDtype:... lines"),
    Flag("buffer_optimize", "str", "l2_optimize", "On-chip buffer optimisation: l2_optimize (default), l1_optimize, "
                                                  "off_optimize"),
    Flag("enable_small_channel", "str", "0", "Small-channel (C04) layout for a convolution reading <= 4 channels (the "
                                             "image): NC1HWC0_C04 input, FRACTAL_Z_C04 filter. 0 (default) or 1"),
    Flag("op_debug_level", "int", "0", "Debug level of operator builds, 0 (default) to 4; atc-py builds no TBE "
                                       "kernels: checked and recorded in the .om, nothing else"),
    Flag("enable_scope_fusion_passes", "str", "", "TensorFlow scope fusion passes to enable, comma-separated; "
                                                   "atc-py has none: checked, recorded, warned, not applied"),
    Flag("device_id", "str", "0", "Device ID ATC's tuning uses; atc-py compiles without a device: checked and "
                                  "recorded only"),
    Flag("status_check", "str", "0", "Overflow check: 1 records it in the .om, and om-run then lists the operators "
                                     "whose outputs hold inf/NaN while their inputs are finite; 0 (default)"),
    Flag("help", "bool", "false", "Show this help message"),
]}

# cmd_flag_info.cc kStrValueRange (the subset our flags use)
VALUE_RANGE = {
    "framework": ["0", "1", "3", "5"],
    "mode": ["0", "1", "3", "5", "6", "7", "30"],
    "log": ["debug", "info", "warning", "error", "null"],
    "display_model_info": ["0", "1"],
    "disable_reuse_memory": ["0", "1"],
    "buffer_optimize": ["l1_optimize", "l2_optimize", "off_optimize"],
    "enable_small_channel": ["0", "1"],
    "op_debug_level": ["0", "1", "2", "3", "4"],
    "status_check": ["0", "1"],
}
E10006_FLAGS = {"display_model_info", "disable_reuse_memory", "enable_small_channel", "status_check"}
BOOL_TRUE, BOOL_FALSE = {"", "1", "t", "true", "y", "yes"}, {"0", "f", "false", "n", "no"}
ATC_BOOL_FLAGS = {"help", "raw_ge_options_ignore_unsupported"}   # optional argument (getopt_long)


class SyntaxProblem(Exception):
    """A command-line syntax error: printed as `ERROR: <msg>` on stderr."""


def normalise(arg: str) -> str:
    if arg.startswith("-") and not arg.startswith("--") and len(arg.split("=", 1)[0]) > 2:
        arg = "-" + arg
    if arg.startswith("--"):
        name, eq, value = arg[2:].partition("=")
        arg = "--" + name.replace("-", "_") + eq + value
    return arg


def parse(argv: list[str]) -> dict[str, str]:
    """Flag name -> value for every flag given; raises SyntaxProblem or AtcError."""
    given: dict[str, str] = {}
    args = [normalise(a) for a in argv]
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-h", "--h"):
            given["help"] = "true"
            i += 1
            continue
        if not a.startswith("--") or a == "--":
            raise SyntaxProblem(f"Non-option parameter: {a}")
        written, eq, value = a[2:].partition("=")
        name = _resolve(written)
        flag = FLAGS.get(name) or Flag(name, "bool" if name in ATC_BOOL_FLAGS else "str", "", "")
        if not eq and flag.kind != "bool":
            if i + 1 >= len(args):
                described = f"; flag description: {flag.help}" if flag.help else ""
                raise SyntaxProblem(f"flag '{written}' is missing its argument{described}")
            value = argv[i + 1]
            i += 1
        i += 1
        if name not in FLAGS:
            raise atc_flags.refusal(name, value)
        given[name] = value
        _check(flag, value)
    return given


def _resolve(written: str) -> str:
    """The flag a written name stands for (exact, or a unique prefix as getopt_long reads it)."""
    try:
        name = atc_flags.resolve(written, set(FLAGS))
    except ValueError as many:
        raise SyntaxProblem(f"unknown command line flag '{written}' (it abbreviates more than one flag: {many})") \
            from None
    if name is None:
        raise SyntaxProblem(f"unknown command line flag '{written}'")
    return name


def check(name: str, value: str) -> None:
    """The value checks `parse` applies to one flag (kind and value range); raises AtcError."""
    _check(FLAGS[name], value)


def _check(flag: Flag, value: str) -> None:
    """CmdFlagInfo::CheckValue: the value range first, then the type."""
    allowed = VALUE_RANGE.get(flag.name)
    if allowed is not None and value not in allowed:
        _range_error(flag, value, allowed)
    if flag.kind == "int" and not value.isdigit():  # ATC accepts digits only: no sign
        raise AtcError("E10003", value=value, parameter=flag.name, reason="The value type must be [int32].")
    if flag.kind == "bool" and value.lower() not in BOOL_TRUE | BOOL_FALSE:
        raise AtcError("E10003", value=value, parameter=flag.name, reason="The value type must be [bool].")


def _range_error(flag: Flag, value: str, allowed: list[str]) -> None:
    """PrintValueError: E10006 for the 0/1 switches, E10010 for --log, E10007 for --framework, else E10001."""
    if flag.name in E10006_FLAGS:
        raise AtcError("E10006", value=value, parameter=flag.name)
    if flag.name == "log":
        raise AtcError("E10010", value=value)
    if flag.name == "framework":
        raise AtcError("E10007", parameter="framework",
                       support=FRAMEWORK_SUPPORT)
    listing = " ".join(f"[{v}]" for v in sorted(allowed))
    raise AtcError("E10001", value=value, parameter=f"--{flag.name}",
                   reason=f"The value is not within the range of values. The valid range is {listing} .")


def value(given: dict[str, str], name: str) -> str:
    return given.get(name, FLAGS[name].default)


def usage(prog: str = "atc-py") -> str:
    lines = [f"usage: {prog} <args>", "example:",
             f"  {prog} --model=./model.onnx --framework=5 --output=./out/model --soc_version=Ascend910B1", "",
             "arguments:"]
    for f in FLAGS.values():
        lines.append(f"  --{f.name:<30} {f.help}" + (f" (default: {f.default})" if f.default else ""))
    return "\n".join(lines)
