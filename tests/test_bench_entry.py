"""`make bench` runs `python bench/bench.py` as a script: its imports must resolve from the clone (bench/ is a
package next to atc_py/; a script named bench.py once shadowed it). Not a benchmark: nothing is timed."""
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_bench_script_imports_as_make_bench_runs_it():
    # as `python bench/bench.py` does: the script's folder first on sys.path
    code = ("import runpy, sys; sys.path.insert(0, 'bench'); sys.argv = ['bench/bench.py']; "
            "g = runpy.run_path('bench/bench.py', run_name='not_main'); "
            "assert callable(g['main']) and callable(g['compile_speed'].run)")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
