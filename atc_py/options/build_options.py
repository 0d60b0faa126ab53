"""Every build option parsed and checked once, at the boundary (the CLI and the Python API), into one immutable
object the pipeline passes down: no pass, engine or frontend reads an option string.

The input is GE's option dict (ge.socVersion, input_shape, ge.exec.precision_mode, ...) as the Python API takes
it; the CLI maps its flags onto those names first (each flag's row in flag_table.py names its GE option). The
checks run in one fixed order, so the first bad option is the error the user sees, before the model is read (as ATC
checks its flags first)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable, Mapping

from ..common.errors import AtcError
from ..common.limits import DEFAULT_FOLD_SIZE_LIMIT, DEFAULT_LOWER_LIMIT
from ..platform import load_soc
from ..platform.soc import SocSpec
from .aipp import parse_config
from .attr_config import parse_attr_config
from .debug import device_id, op_debug_level, scope_fusion_passes
from .flag_checks import FRAMEWORK_ONNX, FRAMEWORK_SUPPORT, FRAMEWORK_TF
from .flag_table import FLAGS, check_value
from .gears import OPTION as GEAR_OPTIONS
from .gears import GearSpec, parse_gears
from .op_precision import CustomizeDtypes, OpPrecisionModes, parse_customize_dtypes, parse_op_precision_mode
from .output_type import OutputTypes, parse_output_type
from .precision import (
    MixList,
    check_precision_mode,
    fusion_switches,
    implmode,
    input_fp16_nodes,
    keep_dtype,
    modify_mixlist,
    precision_mode,
)
from .shapes import (
    InputShapes,
    check_tiling_schedule_optimize_session,
    debug_sink_nops,
    fold_size_limit,
    parse_input_shape,
    parse_input_shape_range,
    parse_optimization_switch,
    parse_out_nodes,
    static_model_ops_lower_limit,
)

Log = Callable[[str, str], None]


def _no_log(level: str, msg: str) -> None:
    pass


@dataclass(frozen=True)
class Precision:
    """--precision_mode(_v2), --keep_dtype, --modify_mixlist, --op_select_implmode: what dtype each op computes in."""
    mode: str = "force_fp16"
    mix: MixList = field(default_factory=MixList)
    mix_doc: Mapping = field(default_factory=dict)        # the --modify_mixlist file as given (recorded in the .om)
    keep_names: tuple[str, ...] = ()                       # --keep_dtype node names
    keep_types: tuple[str, ...] = ()                       # --keep_dtype OpType:: lines
    impl_mode: str = ""
    impl_types: tuple[str, ...] = ()
    fp16_inputs: tuple[str, ...] = ()                      # --input_fp16_nodes
    op_modes: OpPrecisionModes = field(default_factory=OpPrecisionModes)   # --op_precision_mode
    custom_dtypes: CustomizeDtypes = field(default_factory=CustomizeDtypes)  # --customize_dtypes


@dataclass(frozen=True)
class BuildOptions:
    """One build's options, typed. `raw` keeps the option texts the .om records as they were given."""
    soc: SocSpec
    framework: str = FRAMEWORK_ONNX
    offline: bool = True
    tiling_sink: bool = False
    input_shapes: InputShapes = field(default_factory=InputShapes)
    gears: GearSpec | None = None
    input_format: str = ""
    out_nodes: tuple[tuple[str, int | None], ...] = ()
    output_types: OutputTypes = field(default_factory=OutputTypes)
    attr_config: Mapping[str, Mapping] = field(default_factory=dict)
    aipp: tuple = ()                                       # AippOpParams of --insert_op_conf
    precision: Precision = field(default_factory=Precision)
    switches: Mapping[str, bool] = field(default_factory=dict)   # pass -> on/off (optimization + fusion switches)
    fusion_switch_doc: str = ""                            # the fusion switches as recorded ("" without the file)
    fold_limit: int = DEFAULT_FOLD_SIZE_LIMIT
    sink_nops: int | None = None                           # --debug_sink_nops
    static_ops_lower_limit: int = DEFAULT_LOWER_LIMIT
    reuse_memory: bool = True
    single_stream: bool = False
    buffer_optimize: str = "l2_optimize"                   # l2_optimize | l1_optimize | off_optimize
    small_channel: bool = False                            # --enable_small_channel: C04 first convolutions
    op_debug_level: int = 0                                # --op_debug_level 0-4 (recorded; no TBE kernels here)
    scope_fusion_passes: tuple[str, ...] = ()              # --enable_scope_fusion_passes (recorded, not applied)
    device_id: int = 0                                     # --device_id (no device at compile time)
    op_plugin: str = ""
    om_name: str | None = None
    atc_cmdline: str = ""
    recorded: Mapping[str, str] = field(default_factory=dict)   # knobs the .om's model attributes record as given

    @property
    def default_input_format(self) -> str:
        return self.input_format or ("NHWC" if self.framework == FRAMEWORK_TF else "NCHW")

    @classmethod
    def parse(cls, options: Mapping[str, str], online: bool = False, log: Log = _no_log) -> BuildOptions:
        """GE's option dict -> BuildOptions; the first bad option raises its ATC error."""
        get = lambda key, default="": options.get(key, default) or default  # noqa: E731
        check_tiling_schedule_optimize_session(get("ge.tiling_schedule_optimize"))
        offline = not online   # an online build (a device given) always asks the device about tiling sink
        framework = get("ge.frameworkType", FRAMEWORK_ONNX)
        if framework not in (FRAMEWORK_ONNX, FRAMEWORK_TF):
            raise AtcError("E10001", value=framework, parameter="--framework",
                           reason="The value must be " + FRAMEWORK_SUPPORT + ".")
        soc = load_soc(get("ge.socVersion"))
        fold_limit = fold_size_limit(get("fold_size_limit"))
        sink_nops = debug_sink_nops(get("debug_sink_nops"))
        lower_limit = static_model_ops_lower_limit(get("ge.exec.static_model_ops_lower_limit"))
        shape_text, ranges_text = get("input_shape"), get("input_shape_range")
        if shape_text and ranges_text:
            raise AtcError("E10056", parameter1="--input_shape", parameter2="--input_shape_range")
        if ranges_text:
            shape_text = parse_input_shape_range(ranges_text)
        gears_given = any(get(key) for key in GEAR_OPTIONS.values())
        digits_only = not ranges_text and (gears_given or ("~" not in shape_text and "-1" not in shape_text))
        shapes = parse_input_shape(shape_text, get("input_shape_allow_empty") == "1", digits_only)
        input_format = get("input_format")
        gears = parse_gears({kind: get(key) for kind, key in GEAR_OPTIONS.items()}, shape_text, shapes,
                            input_format or ("NHWC" if framework == FRAMEWORK_TF else "NCHW"),
                            ranges_given=bool(ranges_text), aipp_given=bool(get("insert_op_conf")))
        out_nodes = tuple(parse_out_nodes(get("ge.outputNodeName")))
        attr_config = parse_attr_config(get("op_attr_config"))
        aipp = tuple(parse_config(get("insert_op_conf"))) if get("insert_op_conf") else ()
        precision, recorded = _precision(options)
        buffer_optimize = get("ge.bufferOptimize", "l2_optimize")
        if buffer_optimize not in FLAGS["buffer_optimize"].allowed:
            raise AtcError("E10001", value=buffer_optimize, parameter="--buffer_optimize",
                           reason=f"The value must be one of {', '.join(FLAGS['buffer_optimize'].allowed)}.")
        small_channel = get("ge.enableSmallChannel", "0")
        check_value("enable_small_channel", small_channel)
        debug_level, passes = op_debug_level(get("ge.opDebugLevel")), scope_fusion_passes(
            get("enable_scope_fusion_passes"))
        device = device_id(get("ge.exec.tuneDeviceIds"))
        _log_recorded_only(debug_level, passes, framework, log)
        status_check = get("ge.status_check", "0")
        check_value("status_check", status_check)
        recorded = {**recorded, **({"op_debug_level": str(debug_level)} if debug_level else {}),
                    **({"status_check": "1"} if status_check == "1" else {}),
                    **({"enable_scope_fusion_passes": ",".join(passes)} if passes else {})}
        switches = {**fusion_switches(get("fusion_switch_file"), log),
                    **parse_optimization_switch(get("optimization_switch"))}
        return cls(
            soc=soc, framework=framework, offline=offline, tiling_sink=get("ge.tiling_schedule_optimize") == "1",
            input_shapes=shapes, gears=gears, input_format=input_format, out_nodes=out_nodes,
            output_types=parse_output_type(get("output_type")), attr_config=attr_config, aipp=aipp,
            precision=precision, switches=switches,
            fusion_switch_doc=json.dumps(switches, sort_keys=True) if get("fusion_switch_file") else "",
            fold_limit=fold_limit, sink_nops=sink_nops, static_ops_lower_limit=lower_limit,
            reuse_memory=get("ge.exec.disableReuseMemory", "0") != "1",
            single_stream=get("ge.enableSingleStream") == "true", buffer_optimize=buffer_optimize,
            small_channel=small_channel == "1", op_debug_level=debug_level, scope_fusion_passes=passes,
            device_id=device, op_plugin=get("op_plugin"),
            om_name=options.get("om_name") or None, atc_cmdline=get("atc_cmdline"), recorded=recorded)

    def switch(self, name: str) -> bool:
        """Whether graph pass `name` runs (--optimization_switch / --fusion_switch_file; default on)."""
        return self.switches.get(name, True)


def _log_recorded_only(debug_level: int, passes: tuple[str, ...], framework: str, log: Log) -> None:
    """Say what the flags that change nothing here do not do."""
    if debug_level:
        log("info", f"--op_debug_level={debug_level}: recorded in the .om; atc-py builds no TBE kernels, so no "
                    "kernel files or debug builds result")
    if passes and framework == FRAMEWORK_TF:
        log("warning", f"--enable_scope_fusion_passes={','.join(passes)}: accepted and recorded, but atc-py has no "
                       "scope fusion passes; the graph converts op by op")
    elif passes:
        log("warning", "--enable_scope_fusion_passes applies to TensorFlow models (--framework=3); ignored")


def _precision(options: Mapping[str, str]) -> tuple[Precision, dict[str, str]]:
    mode = check_precision_mode(precision_mode(options.get("ge.exec.precision_mode", "") or "",
                                               options.get("ge.exec.precision_mode_v2", "") or ""))
    mix, mix_doc = modify_mixlist(options.get("modify_mixlist", "") or "", mode)
    names, types = keep_dtype(options.get("keep_dtype", "") or "")
    impl, impl_types = implmode(options.get("op_select_implmode", "") or "",
                                options.get("optypelist_for_implmode", "") or "")
    fp16_text = options.get("input_fp16_nodes", "") or ""
    op_modes = parse_op_precision_mode(options.get("ge.exec.op_precision_mode", "") or "")
    custom = parse_customize_dtypes(options.get("ge.customizeDtypes", "") or "")
    keys = {"ge.exec.precision_mode_v2": "precision_mode_v2", "input_fp16_nodes": "input_fp16_nodes",
            "op_select_implmode": "op_select_implmode", "optypelist_for_implmode": "optypelist_for_implmode"}
    recorded = {name: options[key] for key, name in keys.items() if options.get(key)}
    if op_modes:
        recorded["op_precision_mode"] = json.dumps({"ByOpType": op_modes.by_type, "ByNodeName": op_modes.by_name},
                                                   sort_keys=True)
    if custom:
        recorded["customize_dtypes"] = json.dumps(
            {kind: {k: {"InputDtype": list(v.inputs), "OutputDtype": list(v.outputs)} for k, v in table.items()}
             for kind, table in (("Opname", custom.by_name), ("OpType", custom.by_type))}, sort_keys=True)
    return Precision(mode, mix, mix_doc, tuple(names), tuple(types), impl, tuple(impl_types),
                     tuple(input_fp16_nodes(fp16_text)), op_modes, custom), recorded
