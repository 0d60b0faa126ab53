"""Every ATC flag atc-py implements, one row each: name, kind, default, help, the GE option it becomes, ATC's value
range and the checks of its value.

The command line reads its flags by these rows (atc_py/cli/flags.py: syntax, value range and type), runs their
CheckFlags checks in ATC's order (atc_py/cli/main.py `_check_flags`) and hands them to BuildOptions.parse under
their GE option names (a loop over the rows); `--help` and docs/reference/atc-py-flags.md print them. The Python
API takes the GE option dict directly (BuildOptions.parse), which checks the same values again."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from . import flag_checks as checks
from .flag_checks import FRAMEWORK_ONNX, FRAMEWORK_TF
from .pass_table import OPTIMIZATION_PASSES


@dataclass(frozen=True)
class Flag:
    name: str
    kind: str = "str"                  # "str" | "int" | "bool": ATC's DEFINE_string / _int32 / _bool
    default: str = ""
    help: str = ""
    ge_key: str | None = None          # the GE option BuildOptions.parse reads it as; None: the command line's own
    allowed: tuple[str, ...] = ()      # ATC's value range (cmd_flag_info.cc kStrValueRange), checked as it is read
    range_code: str = "E10001"         # the error of a value outside `allowed` (flag_checks.range_error)
    check: Callable[[str, Callable[[str], str]], None] | None = None   # its CheckFlags check (flag_checks.py)


FLAGS = {f.name: f for f in [
    Flag("mode", "int", "0", "Run mode. 0(default): generate offline model; 1: convert model to JSON format; "
                             "3: only pre-check; 6: display model info",
         allowed=("0", "1", "3", "5", "6", "7", "30")),
    Flag("model", help="Model file", check=checks.readable_model),
    Flag("framework", "int", "-1", "Framework type. 3: TensorFlow; 5: Onnx", "ge.frameworkType",
         allowed=("0", "1", FRAMEWORK_TF, FRAMEWORK_ONNX), range_code="E10007", check=checks.framework_given),
    Flag("input_format", help="Format of input data. TF: NHWC (default), NCHW, ND, NCDHW, NDHWC; "
                              "ONNX: NCHW (default), ND, NCDHW",
         ge_key="input_format", check=checks.input_format_of_framework),
    Flag("precision_mode", help="Precision mode: force_fp16 (default), force_fp32, cube_fp16in_fp32out, "
                                "allow_mix_precision, allow_fp32_to_fp16, must_keep_origin_dtype",
         ge_key="ge.exec.precision_mode"),
    Flag("precision_mode_v2", help="Precision mode, newer spelling: fp16, origin, cube_fp16in_fp32out, "
                                   "mixed_float16, mixed_bfloat16 (exclusive with --precision_mode)",
         ge_key="ge.exec.precision_mode_v2"),
    Flag("input_fp16_nodes", help='Inputs fed as fp16: "input1;input2"', ge_key="input_fp16_nodes"),
    Flag("keep_dtype", help="File of nodes kept in their model dtype (a name per line, or OpType::<type>)",
         ge_key="keep_dtype"),
    Flag("modify_mixlist", help="JSON editing allow_mix_precision's white/black/gray lists", ge_key="modify_mixlist"),
    Flag("op_select_implmode", help="high_performance (default) or high_precision (or _for_all): the kernel of the "
                                    "ops that have two (Gelu, SoftmaxV2, LogSoftmaxV2, Exp, LayerNorm: fp16 computed "
                                    "in fp32 or in fp16); recorded in the .om",
         ge_key="op_select_implmode"),
    Flag("optypelist_for_implmode", help="Op types the plain --op_select_implmode applies to (comma-separated)",
         ge_key="optypelist_for_implmode"),
    Flag("fusion_switch_file", help='JSON {"Switch": {"GraphFusion": {...}, "UBFusion": {...}}} of on/off',
         ge_key="fusion_switch_file"),
    Flag("output_type", help='Output dtype: FP32, FP16, UINT8, INT8, or "node:index:TYPE;..." for --out_nodes '
                             "outputs",
         ge_key="output_type"),
    Flag("optimization_switch", help='Graph passes on/off: "pass:on;pass:off"; passes: '
                                     + ", ".join(OPTIMIZATION_PASSES),
         ge_key="optimization_switch"),
    Flag("output", help="Output file path&name (the .om suffix is added)", check=checks.writable_output),
    Flag("soc_version", help="The soc version.", ge_key="ge.socVersion", check=checks.required_soc),
    Flag("input_shape", help='Shape of input data. E.g.: "input_name1:n1,c1,h1,w1;input_name2:n2,c2,h2,w2"; '
                             'a dim may be -1 or a range lo~hi (a dynamic-shape model)',
         ge_key="input_shape"),
    Flag("input_shape_range", help='Older spelling of shape ranges: "input_name1:[1~8,3,224,224];input_name2:'
                                   '[-1,128]"',
         ge_key="input_shape_range"),
    Flag("dynamic_batch_size", help='Gears of the batch size (N of the -1 inputs in --input_shape), e.g. "1,2,4,8"',
         ge_key="ge.dynamicBatchSize"),
    Flag("dynamic_image_size", help='Gears of the image size (H, W of the -1 inputs), e.g. "224,224;448,448"',
         ge_key="ge.dynamicImageSize"),
    Flag("dynamic_dims", help='Gears of the -1 dims of --input_shape in order, e.g. "1,128;4,256"',
         ge_key="ge.dynamicDims"),
    Flag("out_nodes", help='Output nodes designated by users. E.g.: "node_name1:0;node_name1:1;node_name2:0"',
         ge_key="ge.outputNodeName"),
    Flag("om", help="The model file to be converted to json (mode 1) or displayed (mode 6)"),
    Flag("json", help="The output json file path&name which is converted from a model"),
    Flag("check_report", help="The pre-check report (--mode=3, or a failed parse): default check_result.json in "
                              "$ASCEND_WORK_PATH or the current directory"),
    Flag("log", "str", "null", "Generate log with level. Support debug, info, warning, error, null",
         allowed=("debug", "info", "warning", "error", "null"), range_code="E10010"),
    Flag("tiling_schedule_optimize", "str", "0", "Enable tiling sink. 1: enable; 0(default): disable",
         "ge.tiling_schedule_optimize", check=checks.zero_or_one),
    Flag("static_model_ops_lower_limit", help="Minimum node count of a static subgraph; -1: all dynamic",
         ge_key="ge.exec.static_model_ops_lower_limit", check=checks.lower_limit),
    Flag("display_model_info", "str", "0", "Whether to display model info after generation. 0(default), 1",
         allowed=("0", "1"), range_code="E10006"),
    Flag("disable_reuse_memory", "str", "0", "The switch of reuse memory. 0(default): reuse; 1: do not reuse",
         "ge.exec.disableReuseMemory", allowed=("0", "1"), range_code="E10006"),
    Flag("op_plugin", help="Python modules (files or folders, ':'-separated) registering custom operators; "
                           "ASCEND_CUSTOM_OPP_PATH is read too",
         ge_key="op_plugin"),
    Flag("insert_op_conf", help="AIPP configuration file (GE's insert_op.proto in protobuf text format; static AIPP)",
         ge_key="insert_op_conf", check=checks.existing_file),
    Flag("op_attr_config", help="JSON file: node name -> attributes to set (e.g. _super_kernel_scope)",
         ge_key="op_attr_config", check=checks.existing_file),
    Flag("debug_sink_nops", help="DEBUG ONLY: NOPs before each tiling-sink kernel instead of the SoC's prefetch_num "
                                 "(shows the prefetch hazard)",
         ge_key="debug_sink_nops"),
    Flag("fold_size_limit", help="Bytes of the largest constant folded at compile time; larger or costlier folds "
                                 "stay in the graph and run on the device (default: 268435456)",
         ge_key="fold_size_limit"),
    Flag("enable_single_stream", help="Put every task on one stream. true or false (default: false)",
         ge_key="ge.enableSingleStream", check=checks.true_or_false),
    Flag("op_precision_mode", help="INI file of per-op precision modes: OpType=mode lines, or [ByOpType] / "
                                   "[ByNodeName] sections (node names win); modes high_precision, high_performance, "
                                   "enable_float_32_execution, enable_hi_float_32_execution, "
                                   "support_out_of_bound_index, keep_fp16, super_performance, norm_class (an "
                                   "op-specific mode). Overrides --op_select_implmode",
         ge_key="ge.exec.op_precision_mode"),
    Flag("customize_dtypes", help="File of per-op compute dtypes: Opname::InputDtype:dt,...,OutputDtype:dt,... or "
                                  "OpType::type:InputDtype:...,OutputDtype:... lines",
         ge_key="ge.customizeDtypes"),
    Flag("buffer_optimize", "str", "l2_optimize", "On-chip buffer optimisation: l2_optimize (default), "
                                                  "l1_optimize, off_optimize",
         "ge.bufferOptimize", allowed=("l2_optimize", "l1_optimize", "off_optimize")),
    Flag("enable_small_channel", "str", "0", "Small-channel (C04) layout for a convolution reading <= 4 channels "
                                             "(the image): NC1HWC0_C04 input, FRACTAL_Z_C04 filter. 0 (default) or 1",
         "ge.enableSmallChannel", allowed=("0", "1"), range_code="E10006"),
    Flag("op_debug_level", "int", "0", "Debug level of operator builds, 0 (default) to 4; atc-py builds no TBE "
                                       "kernels: checked and recorded in the .om, nothing else",
         "ge.opDebugLevel", allowed=("0", "1", "2", "3", "4")),
    Flag("enable_scope_fusion_passes", help="TensorFlow scope fusion passes to enable, comma-separated; atc-py has "
                                            "none: checked, recorded, warned, not applied",
         ge_key="enable_scope_fusion_passes"),
    Flag("device_id", "str", "0", "Device ID ATC's tuning uses; atc-py compiles without a device: checked and "
                                  "recorded only",
         "ge.exec.tuneDeviceIds"),
    Flag("status_check", "str", "0", "Overflow check: 1 records it in the .om, and om-run then lists the operators "
                                     "whose outputs hold inf/NaN while their inputs are finite; 0 (default)",
         "ge.status_check", allowed=("0", "1"), range_code="E10006"),
    Flag("help", "bool", "false", "Show this help message"),
]}

def check_value(name: str, value: str) -> None:
    """ATC's check of one flag's value as it is read (value range, then type); raises AtcError."""
    checks.check_value(FLAGS[name], value)


def check_flag(name: str, value_of: Callable[[str], str]) -> None:
    """The flag's CheckFlags check, if it has one; value_of(flag) gives any flag's value (or its default)."""
    flag = FLAGS[name]
    if flag.check is not None:
        flag.check(name, value_of)
