"""om-run: msame-like runner of .om files on the simulated Ascend device — numerics and simulated time."""
from __future__ import annotations

import sys

import click

from atc_py.common.errors import AtcError
from atc_py.common.ieee_quiet import quiet_ieee_warnings

from ..errors import guarded
from ..load.limits import DEFAULT_MAX_LOOP_ITERATIONS
from ..run.options import run_options
from ..sim.host_heap import keep_freed_memory
from ..sim.threads import LoadProbe
from .execute import run


class OmRunCommand(click.Command):
    """Click's own usage errors become E30002 lines like every other bad input (no 'Usage:' dump), and
    anything unexpected is one E19999 line (its traceback with ATC_PY_DEBUG=1)."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        quiet_ieee_warnings()    # the simulated device computes inf/NaN silently, as an AI Core does
        keep_freed_memory()      # kernels' temporaries reuse freed heap instead of faulting fresh pages (host_heap)
        argv = list(sys.argv[1:] if args is None else args)
        command = super()
        if argv[:1] == ["compare"]:   # om-run compare ...: msit debug compare's command line
            from ..compare.command import compare_main
            command, argv = compare_main, argv[1:]
            prog_name = f"{prog_name or 'om-run'} compare"
        elif argv[:1] == ["serve"]:   # om-run serve MODEL_DIR ...: vllm serve + vllm bench serve on the simulated NPU
            from ..serve.command import expand_nargs, serve_main
            command, argv = serve_main, expand_nargs(argv[1:])
            prog_name = f"{prog_name or 'om-run'} serve"
        elif argv[:1] == ["hccl-test"]:   # om-run hccl-test OP ...: hccl_test's command line on the simulated machine
            from ..hccl.command import hccl_test_main
            command, argv = hccl_test_main, argv[1:]
            prog_name = f"{prog_name or 'om-run'} hccl-test"
        try:
            rv = command.main(argv, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            click.echo(f"[ERROR] E30002: Invalid input for om-run: {exc.format_message()} (om-run --help lists the "
                       "options)", err=True)
            sys.exit(1)
        except click.Abort:
            click.echo("[ERROR] E30002: Invalid input for om-run: aborted", err=True)
            sys.exit(1)
        if standalone_mode:
            sys.exit(0 if rv is None else rv)
        return rv


@click.command(cls=OmRunCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("model_arg", required=False, metavar="[MODEL.om]")
@click.option("--model", "model_opt", help="The .om file to run.")
@click.option("--input", "input_spec", help="Comma-separated .npy files in input order, or one .npz keyed by input names.")
@click.option("--output", "output_dir", help="Directory to write the outputs to.")
@click.option("--outfmt", type=click.Choice(["NPY", "BIN", "TXT"], case_sensitive=False), default="NPY", show_default=True)
@click.option("--loop", type=click.IntRange(min=1, max=1_000_000), default=1, show_default=True,
              help="Executions of the model.")
@click.option("--seed", type=click.IntRange(min=0, max=2**64 - 1), default=0, show_default=True,
              help="Seed of the random inputs used without --input.")
@click.option("--expected", help=".npz of expected outputs (by output name, or arr_0.. in output order).")
@click.option("--op_plugin", "--op-plugin", "op_plugin", default="",
              help="Custom operator packages (':'-separated; ASCEND_CUSTOM_OPP_PATH is read too).")
@click.option("--rtol", type=float, default=None,
              help="Relative tolerance of --expected (default 1e-4, or 1e-2 for a model built with fp16 compute).")
@click.option("--atol", type=float, default=None, help="Absolute tolerance (defaults as --rtol).")
@click.option("--sim-config", "sim_config", help="JSON overriding runtime-profile parameters (see om_run/sim/profile.py).")
@click.option("--allow-hazards", is_flag=True, help="Report hazards and go on instead of stopping.")
@click.option("--tiling-cache", type=click.Choice(["on", "off"]), default="on", show_default=True,
              help="Host tiling cache of the dynamic-shape executor.")
@click.option("--host-threads", type=click.Choice(["1", "3"]), default="1", show_default=True,
              help="Host pipeline threads of the dynamic-shape executor (MAX_RUNTIME_CORE_NUMBER).")
@click.option("--threads", type=click.IntRange(min=1, max=1024), default=None,
              help="Threads for the numerics (BLAS pools and kernel blocks). Default: the cores om-run may use "
                   "that other processes leave idle (measured while the model loads).")
@click.option("--summary-json", "summary_path", help="Write the simulated-time summary as JSON.")
@click.option("--profile", "profile_dir", help="Write op_summary.csv and trace.json (Chrome/Perfetto) here.")
@click.option("--no-compute", is_flag=True, help="Timing only: skip the numeric kernels (a model whose label or "
                                                  "stream switches read device memory still computes).")
@click.option("--max-loop-iterations", type=click.IntRange(min=1, max=10**9), default=DEFAULT_MAX_LOOP_ITERATIONS,
              show_default=True, help="Stop (E30007) when a loop runs more iterations than this: a label entered, "
                                      "a stream started or a host-executed While iterated more often.")
@click.option("--no-verify", is_flag=True, help="Run a file whose checksum is all zero (unsealed); a wrong checksum "
                                                "is never accepted.")
@click.option("--device", default="0", show_default=True,
              help="msame: the device id 0..255 (the simulated device); ais_bench's list \"0,1\" runs the model once "
                   "per device, outputs in device<id>_<k> folders.")
@click.option("--outputSize", "output_size", help="msame: bytes of each output buffer, comma-separated.")
@click.option("--dymShape", "dym_shape", help='msame: shapes of a dynamic-shape model, "x:1,3,224,224;y:1,128".')
@click.option("--dymBatch", "dym_batch", type=click.IntRange(min=1), help="msame: the batch gear to run.")
@click.option("--dymHW", "dym_hw", help='msame: the image-size gear to run, "h,w".')
@click.option("--dymDims", "dym_dims", help='msame: the dims gear to run, "x:1,128;y:1,128".')
@click.option("--max-tasks", "max_tasks", type=click.IntRange(min=1, max=10**12), default=None,
              help="Stop (E30007) when one execution runs more tasks than this (default: 64 per task and op of the "
                   "model, at least 50000): a loop that never ends, or one whose trip count is beyond simulation.")
@click.option("--dump", "dump_dir", help="Dump every operator's outputs as .npy (CANN's file names) into this folder, "
                                         "with dump_index.json.")
@click.option("--acl_json", "--acl-json", "acl_json", help="ACL's acl.json: its dump section (dump_path, dump_list "
                                                           "of model/op names, dump_mode input/output/all).")
@click.option("--batchsize", type=click.IntRange(min=1, max=1 << 20), default=None,
              help="ais_bench: the batch size its throughput line counts (default: the first input's first dim).")
@click.option("--warmup_count", "--warmup-count", "warmup_count", type=click.IntRange(min=0, max=1000), default=0,
              show_default=True, help="ais_bench: executions run before the timed ones (left out of every figure).")
@click.option("--output_dirname", "--output-dirname", "output_dirname",
              help="ais_bench: write the outputs under --output/<this> (a relative path: r1, ./result/, data/bin_out), "
                   "named <input file stem>_<k>.")
@click.option("--auto_set_dymdims_mode", "--auto-set-dymdims-mode", "auto_set_dymdims_mode",
              type=click.IntRange(0, 1), default=0, show_default=True,
              help="ais_bench: choose the dims gear from the inputs' shapes (om-run does so whenever inputs are given).")
@click.option("--check-overflow", "check_overflow", is_flag=True,
              help="List the operators whose outputs hold inf/NaN while their inputs are finite (fp16 overflow), "
                   "in execution order; on by default for a model built with atc-py --status_check=1.")
@click.option("--generate", type=int, default=None, metavar="N",
              help="Greedy decoding of N new tokens with a KV-cache decoder (prompt: --input holding input_ids "
                   "[1, P]); reports TTFT, TPOT and tokens/s, writes tokens.npy to --output.")
@click.option("--world-size", "world_size", type=click.IntRange(min=1, max=4096), default=None,
              help="Run the model on N simulated devices at once (one rank each, the product of --topology or of "
                   "the model's SoC), joined by its HCCL collectives; a {rank} in --input names each rank's files.")
@click.option("--rank-table", "rank_table", help="HCCL's rank table (RANK_TABLE_FILE JSON): the ranks and the "
                                                 "devices and servers they run on (RANK_TABLE_FILE is read too).")
@click.option("--topology", help="The machine of several devices: atlas-800-a2, atlas-300i-duo, atlas-300i-pro "
                                 "(default: the model's SoC's; docs/devices.md).")
@click.option("--link-calibration", "link_calibration",
              help="A real hccl_test output: its latency and bandwidth fitted and used for the links.")
def main(**flags):
    """Run an .om compiled by atc-py on the simulated Ascend device: outputs and simulated time (msame's flags).
    `om-run compare -gm MODEL -om MODEL.om ...`: layer-by-layer comparison with the framework model (msit's).
    `om-run hccl-test all_reduce_test -b 8K -e 64M -f 2 -p 8`: hccl_test on the simulated machine."""
    probe = LoadProbe() if flags["threads"] is None else None   # the machine's load is judged while the model loads
    tool = click.get_current_context().obj    # what python -m om_run.ais_bench / om_run.msame hand over (tool_main)
    guarded(lambda: run(run_options(**flags, tool=tool), probe))


def tool_main(translate, help_text, prog_name: str, argv: list[str] | None = None) -> None:
    """The entry point of a tool's command line (`python -m om_run.ais_bench`, `python -m om_run.msame`): the line
    read as the tool reads it (translate: its argv -> om-run's argv and the tool's settings, None for --help), then
    om-run's command with the tool's conventions."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        res = translate(argv, main)
    except AtcError as exc:
        click.echo(f"[ERROR] {exc}", err=True)
        sys.exit(1)
    if res is None:
        click.echo(help_text())
        sys.exit(0)
    om_argv, settings = res
    main.main(args=om_argv, prog_name=prog_name, obj=settings)


if __name__ == "__main__":
    main()
