"""atc-py: ATC's command line — flags -> GE options -> build -> ATC's messages and exit codes."""
from __future__ import annotations

import json
import os
import pathlib
import sys

from google.protobuf.message import DecodeError

from ..common.atomic_write import write_atomic
from ..common.errors import AtcError
from ..common.progress import NoProgress, Progress
from ..common.userfiles import read_bytes
from ..options.flag_checks import output_path
from ..options.flag_table import check_flag
from . import flags as cmdline

MAX_OM_BYTES = 64 << 30

START = "ATC start working now, please wait for a moment."
SUCCESS = "ATC run success, welcome to the next use."
FAILURE = "ATC run failed, Please check the detail log, Try 'atc-py --help' for more information"
EXIT_FAILURE = 255  # main_impl returns int32 -1
LOG_LEVELS = {"debug": 0, "info": 1, "warning": 2, "error": 3, "null": 9, "alert": 10}  # alert: always shown


_PROGRESS = NoProgress()   # mode 0's progress line on stderr, when it is a terminal (atc_py/common/progress.py)


def echo(message: str = "", err: bool = False) -> None:
    """One line to stdout (stderr), flushed at once as ATC's log lines are. Plain writes: the CLI does not
    import click, whose import alone was ~20 ms of every compile's start-up."""
    _PROGRESS.suspend()   # the progress line (a terminal's) is erased first; it comes back at its next redraw
    stream = sys.stderr if err else sys.stdout
    stream.write(f"{message}\n")
    stream.flush()


def _logger(level_name: str):
    threshold = LOG_LEVELS[level_name]

    def log(level: str, msg: str) -> None:
        if LOG_LEVELS.get(level, 1) >= threshold:
            echo(f"[{'WARNING' if level == 'alert' else level.upper()}] GE(atc-py): {msg}")
    return log


# ATC's CheckFlags order: the first failure wins (each check is its flag's row, atc_py/options/flag_table.py)
CHECK_ORDER = ("framework", "soc_version", "output", "model", "tiling_schedule_optimize", "enable_single_stream",
               "op_attr_config", "insert_op_conf", "input_format", "static_model_ops_lower_limit")
PRECHECK_ORDER = ("framework", "soc_version", "model")     # --mode=3 (no .om written)
# GE options the command line gives besides its flags' own
FIXED_OPTIONS = {"ge.buildGraphMode": "offline"}


def _check_flags(given: dict[str, str], order: tuple[str, ...] = CHECK_ORDER) -> None:
    """CheckFlags of ATC: its flags' checks in ATC's order, the first failure wins."""
    for name in order:
        check_flag(name, lambda n: cmdline.value(given, n))


def _options(given: dict[str, str], argv: list[str]) -> dict[str, str]:
    """The flags under GE's option names (each row's ge_key): what the Python API takes, parsed once by
    BuildOptions.parse."""
    options = {f.ge_key: cmdline.value(given, f.name) for f in cmdline.FLAGS.values() if f.ge_key}
    return {**options, **FIXED_OPTIONS, "atc_cmdline": " ".join(["atc-py"] + argv),
            "om_name": pathlib.Path(cmdline.value(given, "output")).name}


def _read_om(path: str):
    from ..om import read_om  # modes 1 and 6 only: not imported by a compile
    from ..om.container import OmFormatError
    if not path:
        raise AtcError("E10004", parameter="om")
    data = read_bytes(path, lambda why: AtcError("E10041", path=path, reason=why), MAX_OM_BYTES)
    try:
        return read_om(data)
    except OmFormatError as exc:
        raise AtcError("E10041", path=path, reason=str(exc)) from None


def build_from_flags(given: dict[str, str], argv: list[str], log=None, progress=None):
    """Mode 0 without the messages: ATC's flag checks, flags -> GE options, build. om-sweep builds through
    this too, so a sweep point compiles exactly as `atc-py` with the same flags would (same errors)."""
    from ..pipeline import build
    _check_flags(given)
    kwargs = {"log": log} if log is not None else {}
    return build(cmdline.value(given, "model"), _options(given, argv), progress=progress, **kwargs)


def run_mode_0(given, argv, log) -> None:
    global _PROGRESS
    _PROGRESS = Progress(sys.stderr)
    try:
        try:
            result = build_from_flags(given, argv, log, _PROGRESS)
        except AtcError as exc:
            if exc.code == "E19010":    # the parse failed on op types: ATC writes its pre-check report too
                _parse_report(given, exc)
            raise
        out = output_path(cmdline.value(given, "output"))
        for line in summary_lines(result.summary):
            echo(line)
        result.save(out, _PROGRESS)
    finally:
        _PROGRESS.done()
        _PROGRESS = NoProgress()
    if cmdline.value(given, "display_model_info") == "1":
        from ..om import read_om
        from ..om.model_info import model_info
        # the file just written (the image's streamed weights are not read again into memory)
        echo(model_info(read_om(out.read_bytes() if out.is_file() else result.om)))


def summary_lines(s: dict) -> list[str]:
    engines = ", ".join(f"{k} {n}" for k, n in sorted(s["ops_by_engine"].items()))
    tasks = ", ".join(f"{k} {n}" for k, n in s["tasks_by_type"].items())
    models = "1 static model" if s["models"] == 1 else \
        f"{s['models']} models (root + {s['known_subgraphs']} known, {s['unknown_subgraphs']} unknown subgraphs)"
    return [f"[INFO] build summary: {s['ops']} ops ({engines}); {models}",
            f"[INFO] build summary: {s['tasks']} tasks ({tasks}); {s['stream_num']} stream(s), {s['event_num']} event(s)",
            f"[INFO] build summary: feature map {s['memory_size']} B planned, lower bound {s['memory_lower_bound']} B "
            f"(ratio {s['memory_ratio']}), workspace {s['workspace_size']} B, tiling data {s['tiling_data_size']} B, "
            f"weights {s['weight_size']} B",
            f"[INFO] build summary: passes: values known at import {s['values_at_import']}, common subexpressions "
            f"merged {s['cse_merged']}, "
            f"constants folded {s['constants_folded']}, identities removed "
            f"{s['identities_removed']}, transposes cancelled {s['transposes_cancelled']}, BN folded into conv "
            f"{s['bn_folded_into_conv']}, bias fused into conv {s['bias_fused_into_conv']}, matmul bias fused "
            f"{s['matmul_bias_fused']}, relu fused "
            f"{s['relu_fused']}, residual adds fused into conv {s['conv_add_fused']}, dead removed {s['dead_removed']}; "
            f"fp16 cube ops {s['fp16_cube_ops']}, fp16 other ops {s['fp16_vector_ops']}"
            + (f", constant values saturated to fp16's +-65504: {s['fp16_saturated']}" if s.get("fp16_saturated") else ""),
            f"[INFO] build summary: autofuse: {s['autofused_ops']} ops into {s['ascbackend_nodes']} AscBackend node(s), "
            f"{s['fused_ascbackend_nodes']} FusedAscBackend",
            *([f"[INFO] build summary: formats: {s['trans_data_inserted']} TransData inserted (convolutions and "
               "pooling on NC1HWC0, filters in FRACTAL_Z)"] if s.get("trans_data_inserted") else []),
            *([f"[INFO] build summary: AICPU fallback: {len(s['aicpu_fallback'])} op(s): " + "; ".join(
                f"{f['node']} ({f['op_type']}, {f['reason']})" for f in s["aicpu_fallback"][:5])
               + (" ..." if len(s["aicpu_fallback"]) > 5 else "")] if s.get("aicpu_fallback") else []),
            f"[INFO] build summary: {s['tiling_sink']}"
            + (f"; static-cache attentions lowered to IncreFlashAttention {s['static_cache_attention']}"
               if s.get("static_cache_attention") else ""),
            *(f"[INFO] build summary: static-cache attention {u['node']} left unfused: {u['reason']}"
              for u in s.get("static_cache_attention_unfused", []))]


def _parse_report(given, exc: AtcError) -> None:
    from .precheck import report_path, run_precheck
    v = lambda n: cmdline.value(given, n)  # noqa: E731

    def build():
        raise exc
    # only when asked for (--check_report or ASCEND_WORK_PATH): a failed build leaves nothing behind by default
    if not v("check_report") and not os.environ.get("ASCEND_WORK_PATH"):
        return
    where = v("check_report")
    try:
        run_precheck(v("model"), v("framework"), build, v("soc_version"), where)
        echo(f"[INFO] pre-check report {report_path(where)}")
    except (AtcError, OSError):
        pass     # the build's own error is what the user gets


def run_mode_3(given, argv, log) -> None:
    """Pre-check: every node's verdict in check_result.json (and msit's result.csv); no .om."""
    from ..pipeline import build
    from .precheck import report_path, run_precheck
    v = lambda n: cmdline.value(given, n)  # noqa: E731
    _check_flags(given, PRECHECK_ORDER)
    model = v("model")
    opts = _options(given, argv)
    verdicts = run_precheck(model, v("framework"), lambda: build(model, opts, log=log), v("soc_version"),
                            v("check_report"), build_loaded=lambda loaded: build(loaded, opts))
    echo(f"[INFO] pre-check of {verdicts.model}: {len(verdicts.order)} ops, {len(verdicts.order) - verdicts.failed} "
         f"pass, {verdicts.failed} fail; report {report_path(v('check_report'))}")
    if verdicts.failed:
        raise AtcError("E10055", reason=f"the pre-check found {verdicts.failed} unsupported node(s): see "
                                        f"{report_path(v('check_report'))}")


def run_mode_1(given) -> None:
    om_path, json_path = cmdline.value(given, "om"), cmdline.value(given, "json")
    if not om_path:
        raise AtcError("E10004", parameter="om")
    if not json_path:
        raise AtcError("E10004", parameter="json")
    if cmdline.value(given, "framework") != "-1":
        raise AtcError("E10055", reason="converting a framework model to JSON is not supported by atc-py; "
                                        "give an .om with --om and no --framework")
    from ..om.json_dump import om_file_to_json
    om = _read_om(om_path)
    try:
        doc = om_file_to_json(om)
    except DecodeError as exc:
        raise AtcError("E10041", path=om_path, reason=f"MODEL_DEF/TASK_INFO does not parse ({exc})") from None
    target = pathlib.Path(json_path)
    if not os.path.isdir(target.parent):
        raise AtcError("E10001", value=json_path, parameter="--json", reason="The directory does not exist.")
    write_atomic(target, (json.dumps(doc, indent=2) + "\n").encode())


def run_mode_6(given) -> None:
    if "framework" in given:
        raise AtcError("E10057", parameter0="om", parameter1="mode")
    from ..om.model_info import model_info
    om = _read_om(cmdline.value(given, "om"))
    try:
        echo(model_info(om))
    except DecodeError as exc:
        raise AtcError("E10041", path=cmdline.value(given, "om"), reason=f"MODEL_DEF does not parse ({exc})") from None


def run(argv: list[str]) -> int:
    echo(START)
    try:
        given = cmdline.parse(argv)
    except cmdline.SyntaxProblem as exc:
        echo(f"ERROR: {exc}", err=True)
        echo(FAILURE)
        echo(str(AtcError("E10001", value=" ".join(argv)[:200], parameter="the command line",
                                reason=f"{exc} (atc-py --help lists the flags)")))
        return EXIT_FAILURE
    except AtcError as exc:
        echo(FAILURE)
        echo(str(exc))
        return EXIT_FAILURE
    if given.get("help", "false").lower() in cmdline.BOOL_TRUE:
        echo(cmdline.usage())
        return 0
    log = _logger(cmdline.value(given, "log"))
    mode = cmdline.value(given, "mode")
    try:
        if mode == "0":
            run_mode_0(given, argv, log)
        elif mode == "1":
            run_mode_1(given)
        elif mode == "3":
            run_mode_3(given, argv, log)
        elif mode == "6":
            run_mode_6(given)
        else:
            raise AtcError("E10055", reason=f"--mode={mode} is not supported by atc-py (supported: 0, 1, 3, 6)")
    except AtcError as exc:
        echo("...")
        echo(FAILURE)
        echo(str(exc))
        return EXIT_FAILURE
    except Exception as exc:  # a bug: still no traceback for the user, and the E19999 ATC prints
        if os.environ.get("ATC_PY_DEBUG"):
            raise
        echo("...")
        echo(FAILURE)
        echo(f"E19999: Internal Error!\n        {type(exc).__name__}: {exc}")
        return EXIT_FAILURE
    echo("...")
    echo(SUCCESS)
    return 0


def main(argv: list[str] | None = None) -> None:
    """atc-py: ATC-compatible offline model compiler (run with --help for the flags)."""
    from ..common.ieee_quiet import quiet_ieee_warnings
    quiet_ieee_warnings()    # constant folding computes as the device does: inf/NaN without a warning
    code = run(list(sys.argv[1:] if argv is None else argv))
    # the .om is written and closed: leave without tearing the interpreter down (freeing the graph, the
    # weights and every module object one by one took 0.2-0.3 s of a 1.4 s DenseNet-121 compile)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
