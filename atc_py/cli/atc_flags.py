"""ATC's whole flag list, for what ATC's command line does with names atc-py does not implement.

ATC parses with getopt_long (mmGetOptLong): an exact name wins, else a unique prefix of a flag name is that flag
(`--op_precision=x.ini` is --op_precision_mode, `--device 0` is --device_id), else the name is unknown. Which
prefixes are unique depends on every flag ATC registers, so the list below is ATC's (GE api/atc/atc_flags.cc),
not only atc-py's. An ATC flag atc-py does not implement fails with one clear error saying what it is for, not
with "unknown flag"; NOT_IMPLEMENTED is also the table docs/atc-py.md shows."""
from __future__ import annotations

from ..common.errors import AtcError

ATC_FLAGS = (
    "model", "output", "framework", "weight", "input_shape", "input_hint_shape", "input_shape_range", "help",
    "cal_conf", "insert_op_conf", "op_name_map", "target", "om", "json", "mode", "out_nodes", "op_precision_mode",
    "allow_hf32", "precision_mode", "precision_mode_v2", "modify_mixlist", "keep_dtype", "input_format",
    "check_report", "input_fp16_nodes", "is_output_adjust_hw_layout", "is_input_adjust_hw_layout", "output_type",
    "op_select_implmode", "optypelist_for_implmode", "singleop", "disable_reuse_memory", "auto_tune_mode",
    "jit_compile", "optimization_switch", "static_model_ops_lower_limit", "h2d_overlapped_with_compute",
    "raw_ge_options", "raw_ge_options_ignore_unsupported", "soc_version", "virtual_type", "core_type", "aicore_num",
    "buffer_optimize", "fusion_switch_file", "compression_optimize_conf", "customize_dtypes", "op_debug_config",
    "save_original_model", "dynamic_batch_size", "dynamic_image_size", "dynamic_dims", "enable_small_channel",
    "enable_compress_weight", "enable_attr_compression", "compress_weight_conf", "sparsity", "enable_single_stream",
    "ac_parallel_enable", "tiling_schedule_optimize", "log", "dump_mode", "op_debug_level",
    "enable_scope_fusion_passes", "debug_dir", "status_check", "op_compiler_cache_dir", "op_compiler_cache_mode",
    "mdl_bank_path", "op_bank_path", "display_model_info", "device_id", "shape_generalized_build_mode",
    "atomic_clean_policy", "external_weight", "deterministic", "deterministic_level", "host_env_os", "host_env_cpu",
    "cluster_config", "hccl_sub_comm_config", "quant_dumpable", "is_weight_clip", "oo_level", "build_config",
)
BOOL_FLAGS = {"help", "raw_ge_options_ignore_unsupported"}   # ATC's bool flags: their value is optional (getopt_long)

# ATC flag -> what it does in ATC, and so why atc-py cannot honour it (the reason of its E10055).
NOT_IMPLEMENTED = {
    "weight": "the Caffe .caffemodel weights; atc-py converts ONNX and TensorFlow models only",
    "input_hint_shape": "hint shapes for a dynamic-shape model's memory planning",
    "cal_conf": "a calibration (quantisation) configuration",
    "op_name_map": "a Caffe layer-name to custom-op map",
    "target": "the nano/mini target of an old ATC",
    "allow_hf32": "HF32 for fp32 Conv/MatMul on Ascend910B",
    "is_input_adjust_hw_layout": "NC1HWC0 layouts at the model's inputs (with --input_fp16_nodes)",
    "is_output_adjust_hw_layout": "NC1HWC0 layouts at the model's outputs",
    "singleop": "single-operator .om files from a JSON op list",
    "jit_compile": "online (JIT) versus binary operator compilation",
    "h2d_overlapped_with_compute": "host-to-device copies overlapped with compute",
    "raw_ge_options": "a JSON file of raw GE options",
    "raw_ge_options_ignore_unsupported": "with --raw_ge_options: ignore the options it does not know",
    "virtual_type": "models for virtual (split) devices",
    "core_type": "AiCore or VectorCore as the engine of every op",
    "aicore_num": "fewer AI Cores than the SoC has",
    "compression_optimize_conf": "AMCT's compression (quantisation) configuration",
    "op_debug_config": "operator debug options (memory checks, ccec -O0)",
    "save_original_model": "an .om of the graph before optimisation, beside the model",
    "enable_compress_weight": "weight compression (sparse weights on Ascend310)",
    "enable_attr_compression": "compressed operator attributes in the .om",
    "compress_weight_conf": "the nodes whose weights are compressed",
    "sparsity": "2:4 structured-sparsity weights",
    "ac_parallel_enable": "AI CPU ops run in parallel with AI Core ones in dynamic shapes",
    "dump_mode": "the model as JSON with inferred shapes (--mode=1 with --dump_mode=1)",
    "debug_dir": "where operator builds keep their intermediate files",
    "op_compiler_cache_dir": "the folder of the operator compile cache",
    "op_compiler_cache_mode": "the operator compile cache (enable, disable, force)",
    "mdl_bank_path": "the model tuning bank (AOE results)",
    "op_bank_path": "the operator tuning bank (AOE results)",
    "shape_generalized_build_mode": "generalised shapes (deprecated in ATC too)",
    "atomic_clean_policy": "how atomic output cleaning is scheduled",
    "external_weight": "weights in files beside the .om",
    "deterministic": "deterministic computation",
    "deterministic_level": "the level of --deterministic",
    "host_env_os": "the host OS of the AI CPU kernels",
    "host_env_cpu": "the host CPU of the AI CPU kernels",
    "cluster_config": "a cluster configuration (distributed builds)",
    "hccl_sub_comm_config": "HCCL sub-communicator configuration (distributed builds)",
    "quant_dumpable": "quantised models whose inputs and outputs can be dumped",
    "is_weight_clip": "clipping fp32 weights to the fp16 range",
    "oo_level": "the optimisation level of the graph passes (atc-py: --optimization_switch per pass)",
    "build_config": "a JSON build configuration",
}
REMOVED = {
    "auto_tune_mode": "The Auto Tune function has been deprecated: it was removed from ATC with Auto Tune in CANN "
                      "6.0.1. Please use the AOE tool for tuning.",
}


def resolve(name: str, own: set[str]) -> str | None:
    """The flag getopt_long reads for `--name`: the exact name, else the one flag (of ATC's and `own`) it is a
    prefix of; None if unknown. An ambiguous prefix raises ValueError listing the candidates."""
    names = set(ATC_FLAGS) | own
    if name in names:
        return name
    candidates = sorted(n for n in names if n.startswith(name)) if name else []
    if len(candidates) > 1:
        raise ValueError(", ".join(f"--{c}" for c in candidates))
    return candidates[0] if candidates else None


def refusal(name: str, value: str) -> AtcError:
    """The error for ATC flag `name` that atc-py does not implement."""
    if name in REMOVED:
        return AtcError("E10001", value=value, parameter=f"--{name}", reason=REMOVED[name])
    what = NOT_IMPLEMENTED.get(name, "an ATC flag")
    return AtcError("E10055", reason=f"--{name} ({what}) is not implemented by atc-py")
