"""Operator implementation modes: what `--op_select_implmode`, `--optypelist_for_implmode` and `--op_precision_mode`
choose for an op whose kernel has two implementations, and which mode a node runs.

What CANN's kernels do (TBE's op implementations, read for facts; the ATC parameter pages say the modes are
about fp16 input: "high precision ... further improves the precision with fp16 input"):
* high_precision casts fp16 input to fp32 inside, where the SoC's vexp takes fp32 (TBE's
  api_check_support("vexp", "float32") gate: not on Ascend310), computes there and rounds to fp16 once (exp.py,
  gelu.py);
* high_performance computes fp16 input in fp16, every step rounded (exp.py); Gelu's is another formula, TBE's
  fast_gelu_v2 polynomial in the input dtype (gelu.py: `if impl_mode == HIGH_PERFORMANCE: return
  fast_gelu_v2_compute(...)`).
A kernel has its own default mode, the one it runs when the build names none for it (TBE's impl_mode default
argument: Gelu high_precision; Exp, SoftmaxV2, LogSoftmaxV2 high_performance); `OpSpec.impl_default` holds it.
ATC's own default `high_performance` reaches only the ops of CANN's high_performance.ini, a list not published:
atc-py takes it to name none of these (ASSUMED; ModelZoo's READMEs ask for `--optypelist_for_implmode=Gelu
--op_select_implmode=high_performance` to get Gelu's fast kernel, which they would not need otherwise).
"""
from __future__ import annotations

from typing import Any, Mapping

IMPL_ATTR = "_op_impl_mode"              # the mode the build chose for a node (recorded in the .om)
HIGH_PRECISION = "high_precision"
HIGH_PERFORMANCE = "high_performance"
DEFAULT_IMPL_MODE = HIGH_PERFORMANCE     # ATC's --op_select_implmode default


def mode_of(spec, attrs: Mapping[str, Any]) -> str:
    """The mode a node of `spec` runs: the one the build chose for it, else its kernel's own default."""
    return attrs.get(IMPL_ATTR) or spec.impl_default or DEFAULT_IMPL_MODE


def fp32_vexp(soc) -> bool:
    """Whether the SoC's vexp takes fp32 (a SoC without [AICoreintrinsicDtypeMap] data: assumed so)."""
    listed = soc.intrinsic_dtypes("vexp")
    return listed is None or "float32" in listed


def upcast_inside(dtype: str, soc, mode: str) -> str | None:
    """The dtype a two-implementation kernel computes `dtype` input in when that is not `dtype` itself: fp32 for
    fp16 under high_precision where the SoC has fp32 vexp; None otherwise (the input dtype)."""
    return "float32" if dtype == "float16" and mode == HIGH_PRECISION and fp32_vexp(soc) else None


def flag_mode(impl_mode: str, impl_types, op_type: str) -> str | None:
    """The mode --op_select_implmode (and --optypelist_for_implmode) gives a node of `op_type`; None leaves the
    node to its kernel's default. `*_for_all` reaches every op, a type list the ops it names (ATC reads the list
    with the plain modes only). Without a list ATC applies the plain mode to the ops of its high_precision.ini /
    high_performance.ini: plain high_performance is ATC's default, so the same as no flag; plain high_precision
    is taken to reach every op (ASSUMED: the list is not published; atc-py's two-implementation ops are the ops
    such lists are made of)."""
    if not impl_mode:
        return None
    base = impl_mode.removesuffix("_for_all")
    if impl_mode.endswith("_for_all"):
        return base
    if impl_types:
        return base if op_type in impl_types else None
    return base if base == HIGH_PRECISION else None
