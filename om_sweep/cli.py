"""om-sweep: `run` a sweep file on an engine into a results table (+ report), `report` a results table.

Errors of the command itself are one `[ERROR] E40xxx: ...` line and exit status 1, never a traceback;
errors of single jobs are rows of the table, and the sweep goes on.
"""
from __future__ import annotations

import os
import pathlib
import sys

import click

from atc_py.common.errors import AtcError

EXIT_FAILURE = 1
EXIT_INTERRUPTED = 130


def _fail(exc: AtcError) -> None:
    click.echo(f"[ERROR] {exc}", err=True)
    sys.exit(EXIT_FAILURE)


def _guard(fn):
    """AtcError -> one line; anything else -> E19999 without a traceback (OM_SWEEP_DEBUG=1 shows it)."""
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except AtcError as exc:
            _fail(exc)
        except BrokenPipeError:          # `om-sweep socs | head`: the reader left; nothing more to say
            sys.stderr.close()
            os._exit(0)
        except KeyboardInterrupt:
            click.echo("[ERROR] interrupted: finished jobs are kept in the output's jobs/ folder; run the same "
                       "command again to resume", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except Exception as exc:
            if os.environ.get("OM_SWEEP_DEBUG"):
                raise
            _fail(AtcError("E19999", message=f"Internal Error! {type(exc).__name__}: {exc}"))
    wrapper.__name__, wrapper.__doc__ = fn.__name__, fn.__doc__
    return wrapper


class _Group(click.Group):
    """Usage errors (unknown option, bad value) are E40011 lines too, not click's usage block."""

    def main(self, args=None, **kwargs):
        try:
            return super().main(args=args, standalone_mode=False, **kwargs)
        except click.UsageError as exc:
            where = f" of `om-sweep {exc.ctx.info_name}`" if exc.ctx is not None and exc.ctx.parent else ""
            _fail(AtcError("E40011", option=f"(command line{where})", reason=exc.format_message()))
        except click.Abort:
            sys.exit(EXIT_INTERRUPTED)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """Sweep models across SoCs and atc-py options: compile, simulate, tabulate, report."""


@main.command()
@click.argument("sweep_file", type=click.Path(dir_okay=False, path_type=pathlib.Path))
@click.option("-o", "--output", "out_dir", default="results", show_default=True,
              help="Folder of results.parquet, results.csv, report.html and the job store jobs/.")
@click.option("--engine", type=click.Choice(["local", "dask"]), default="local", show_default=True)
@click.option("--scheduler", help="Dask scheduler address (tcp://host:8786); without it --engine dask starts a "
                                  "LocalCluster.")
@click.option("--workers", type=int, help="Local job processes, or LocalCluster workers (default: CPU count).")
@click.option("--no-compute", is_flag=True, help="Timing only for every point (om-run --no-compute).")
@click.option("--rerun-failed", is_flag=True, help="Run again the stored jobs that did not end ok.")
@click.option("--shared-fs/--ship-files", "shared_fs", default=None,
              help="Dask with --scheduler: workers read the sweep's files at the same paths (default: ship them).")
@click.option("--connect-timeout", type=float, default=10.0, show_default=True,
              help="Seconds to wait for the Dask scheduler and its first worker.")
@click.option("--worker-timeout", type=click.FloatRange(min=0, min_open=True), default=60.0, show_default=True,
              help="Dask: seconds the cluster may have no worker before the sweep fails (E40012); finished records "
                   "are kept.")
@click.option("--max-points", type=click.IntRange(min=1),
              help="Refuse a sweep of more points (models x grid) before expanding it [default: the sweep file's "
                   "run.max_points, else 100000].")
@click.option("--baseline", type=click.Path(dir_okay=False), help="Previous results.parquet to compare in the report.")
@click.option("--no-report", is_flag=True, help="Do not write report.html.")
@_guard
def run(sweep_file, out_dir, engine, scheduler, workers, no_compute, rerun_failed, shared_fs, connect_timeout,
        worker_timeout, max_points, baseline, no_report):
    """Run SWEEP_FILE (YAML or TOML): every model x grid point is compiled, simulated and recorded."""
    from .spec import load_spec
    from .sweep import run_sweep
    from .table import pyarrow
    pyarrow()                                   # the table needs it: say so before any job runs
    if workers is not None and workers < 1:
        raise AtcError("E40011", option="--workers", reason=f"must be at least 1, got {workers}")
    if scheduler and engine != "dask":
        raise AtcError("E40011", option="--scheduler", reason="needs --engine dask")
    if scheduler and workers is not None:
        raise AtcError("E40011", option="--workers", reason="the scheduler's workers run the jobs; --workers sizes "
                                                           "the local engine or the LocalCluster")
    if shared_fs is not None and not scheduler:
        raise AtcError("E40011", option="--shared-fs/--ship-files", reason="needs --engine dask --scheduler")
    spec = load_spec(sweep_file, max_points)
    if baseline:
        from .table import read_results
        read_results(baseline)                  # a bad baseline is refused before the sweep, not after
    eng = _engine(engine, scheduler, workers, connect_timeout, shared_fs, worker_timeout)
    with eng:
        outcome = run_sweep(spec, out_dir, eng, compute=False if no_compute else None, rerun_failed=rerun_failed)
    counts = outcome.statuses()
    failed = ", ".join(f"{code} x{n}" for code, n in sorted(counts.items()) if code != "ok")
    click.echo(f"[INFO] om-sweep: {len(outcome.rows)} points, {outcome.ran} jobs run, {outcome.reused} reused; "
               f"ok {counts.get('ok', 0)}, failed {sum(counts.values()) - counts.get('ok', 0)}"
               + (f" ({failed})" if failed else ""))
    for p in outcome.paths:
        click.echo(f"[INFO] wrote {p}")
    if not no_report:
        from .report import write_report
        path = pathlib.Path(out_dir) / "report.html"
        write_report(outcome.paths[0], path, baseline, in_output_folder=True)
        click.echo(f"[INFO] wrote {path}")


def _engine(name, scheduler, workers, connect_timeout, shared_fs, worker_timeout):
    if name == "local":
        from .engines.local import LocalEngine
        return LocalEngine(workers)
    from .engines.dask import DaskEngine
    return DaskEngine(scheduler, workers, connect_timeout, ship_files=None if shared_fs is None else not shared_fs,
                      worker_timeout=worker_timeout)


@main.command()
@click.argument("results", type=click.Path(dir_okay=False))
@click.option("-o", "--output", "out", default="report.html", show_default=True, type=click.Path(dir_okay=False))
@click.option("--baseline", type=click.Path(dir_okay=False), help="Previous results.parquet: show what changed.")
@_guard
def report(results, out, baseline):
    """Write a self-contained HTML report of RESULTS (a results.parquet)."""
    from .report import write_report
    write_report(results, out, baseline)
    click.echo(f"[INFO] wrote {out}")



@main.command()
@_guard
def socs():
    """List the SoCs a sweep's soc_version may take, with the figures the simulator uses."""
    from atc_py.platform.soc import load_soc, supported_socs
    click.echo(f"{'soc_version':<16}{'AI Cores':>9}{'AIV cores':>10}{'MHz':>6}{'fp16 TFLOP/s':>14}{'L2 MiB':>8}"
               f"{'DRAM GB/s':>11}  tiling sink")
    for name in supported_socs():
        soc = load_soc(name)
        click.echo(f"{name:<16}{soc.ai_core_cnt:>9}{soc.vector_core_cnt if soc.cube_vector_split else 0:>10}"
                   f"{soc.cube_freq_mhz:>6}{soc.cube_flops_per_ns('float16') / 1e3:>14.1f}{soc.l2_size / 2**20:>8.0f}"
                   f"{soc.dram_bytes_per_ns:>11.1f}  {'yes' if soc.model_task_update else 'no'}")


if __name__ == "__main__":
    main()
