"""Streaming compile: a model's external weights go from their data file to the .om's WEIGHTS_DATA one tensor at a
time (read, cast, written, hashed, dropped), with the same bytes as an in-memory build; the peak memory of a
compile stays well under the weights' size; bad data files, a full disk and a file cut mid-build are one ATC
error with nothing left behind; the progress line shows on a terminal only."""
from __future__ import annotations

import errno
import os
import pathlib
import subprocess
import sys

import numpy as np
import onnx
import pytest

import atc_py
from atc_py.common.errors import AtcError
from atc_py.common.progress import Progress
from atc_py.om import partitions as pt
from atc_py.om import read_om
from bench.llm_scale import run_child
from tests.helpers import ROOT
from tests.helpers.terminal import FakeTerminal
from tools.llm_model import LlmShape, write_model

SMALL = LlmShape(layers=2, hidden=64, intermediate=172, vocab=256, heads=4, seq=8, dtype="float32")
ENV = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
OPTS = {"ge.socVersion": "Ascend910B1"}
FP32 = {**OPTS, "ge.exec.precision_mode": "force_fp32"}


def _atc(*args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "atc_py", "--framework=5", "--soc_version=Ascend910B1", *args],
                          capture_output=True, text=True, env=kw.pop("env", ENV), timeout=300, **kw)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    d = tmp_path_factory.mktemp("llm")
    return write_model(str(d), SMALL)


def _inline_copy(info: dict, where: pathlib.Path) -> str:
    """The same model with every weight inside the .onnx (onnx.load reads the external data in)."""
    m = onnx.load(info["model"])
    where.mkdir(exist_ok=True)
    path = where / "model.onnx"
    onnx.save(m, str(path))
    return str(path)


def test_small_llm_compiles_from_external_data_and_runs_as_onnxruntime(small, tmp_path):
    import onnxruntime as ort
    ids = (np.arange(SMALL.seq, dtype=np.int64) * 37 % SMALL.vocab)[None]
    (want,) = ort.InferenceSession(small["model"]).run(None, {"input_ids": ids})
    np.savez(tmp_path / "in.npz", input_ids=ids)
    np.savez(tmp_path / "exp.npz", logits=want)
    for mode in ("force_fp16", "force_fp32"):
        out = tmp_path / mode
        res = _atc(f"--model={small['model']}", f"--output={out}", f"--precision_mode={mode}")
        assert res.returncode == 0, res.stdout + res.stderr
        run = subprocess.run([sys.executable, "-m", "om_run", f"{out}.om", "--input", str(tmp_path / "in.npz"),
                              "--expected", str(tmp_path / "exp.npz")], capture_output=True, text=True, env=ENV,
                             timeout=300)
        assert run.returncode == 0 and "PASS" in run.stdout, run.stdout + run.stderr


@pytest.mark.parametrize("mode", ["force_fp16", "force_fp32"])
def test_streamed_weights_are_the_bytes_of_an_in_memory_build(tmp_path, mode):
    """External data streamed (lazy constants; the fp16 casts of the big ones computed while the .om is written)
    == the same weights inside the proto, built in memory."""
    shape = LlmShape(layers=1, hidden=128, intermediate=1024, vocab=1024, heads=4, seq=8, dtype="float32")
    info = write_model(str(tmp_path / "ext"), shape)
    opts = {**OPTS, "ge.exec.precision_mode": mode}
    streamed = atc_py.build(info["model"], opts)
    big = [n.outputs[0] for n in streamed.graph.nodes if n.op_type == "Const" and n.outputs[0].desc.nbytes >= 1 << 18]
    assert len(big) >= 4 and all(v.lazy for v in big)   # the graph holds none of them
    inline = atc_py.build(_inline_copy(info, tmp_path / "inline"), opts)
    path = tmp_path / "s.om"
    streamed.save(path)
    assert path.read_bytes() == inline.om == streamed.om
    om = read_om(path.read_bytes())
    assert len(om.models[0].get(pt.WEIGHTS_DATA)) > shape.weight_bytes // (2 if mode == "force_fp16" else 1)


def test_compile_peak_memory_stays_under_half_the_weights(tmp_path):
    """~460 MB of fp32 weights (cast to fp16 while written): the compile's peak RSS stays under half the weights
    plus a fixed overhead (the interpreter and atc_py: ~60 MB). Measured: ~320 MB (the biggest tensors, 131 MB
    of fp32 each, are mapped while cast, and the part before is written meanwhile); before streaming ~2x the
    weights (~960 MB)."""
    shape = LlmShape(layers=4, hidden=1024, intermediate=2816, vocab=32000, heads=16, seq=8, dtype="float32")
    info = write_model(str(tmp_path), shape)
    weights = os.path.getsize(info["data"])
    assert weights > 450e6
    _, rss, code, out = run_child([sys.executable, "-m", "atc_py", "--framework=5", "--soc_version=Ascend910B1",
                                   f"--model={info['model']}", f"--output={tmp_path / 'm'}"], env=ENV)
    assert code == 0 and rss > 30e6, out
    assert rss < 0.5 * weights + 150e6, f"peak RSS {rss / 1e6:.0f} MB for {weights / 1e6:.0f} MB of weights"
    assert os.path.getsize(tmp_path / "m.om") > weights // 2


# -- errors: one ATC error, exit 255, no traceback, no .om (nor a temp file) left ----------------------------

def _copy_small(small, where: pathlib.Path) -> pathlib.Path:
    where.mkdir()
    for key in ("model", "data"):
        (where / pathlib.Path(small[key]).name).write_bytes(pathlib.Path(small[key]).read_bytes())
    return where / "model.onnx"


def _assert_failed(res, code: str, out_dir: pathlib.Path, match: str = "") -> None:
    text = res.stdout + res.stderr
    assert res.returncode == 255, text
    assert f"{code}: " in text and "Traceback" not in text, text
    assert match in text, text
    assert not [p.name for p in out_dir.iterdir() if p.name.endswith(".om") or p.name.startswith(".out")]


def test_declared_sizes_past_the_data_file_are_an_error(small, tmp_path):
    model = _copy_small(small, tmp_path / "m")
    m = onnx.load(str(model), load_external_data=False)
    t = next(t for t in m.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL)
    size = os.path.getsize(small["data"])
    entry = next(e for e in t.external_data if e.key == "offset")
    entry.value = str(size - 16)
    onnx.save(m, str(model))
    _assert_failed(_atc(f"--model={model}", f"--output={tmp_path / 'm' / 'out'}"), "E10041", tmp_path / "m",
                   "exceeds")


def test_declared_length_other_than_the_shape_needs_is_an_error(small, tmp_path):
    model = _copy_small(small, tmp_path / "m")
    m = onnx.load(str(model), load_external_data=False)
    t = next(t for t in m.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL)
    entry = next(e for e in t.external_data if e.key == "length")
    entry.value = str(int(entry.value) - 4)
    onnx.save(m, str(model))
    _assert_failed(_atc(f"--model={model}", f"--output={tmp_path / 'm' / 'out'}"), "E10041", tmp_path / "m",
                   "needs")


def test_truncated_data_file_is_an_error(small, tmp_path):
    model = _copy_small(small, tmp_path / "m")
    data = tmp_path / "m" / "model.onnx.data"
    os.truncate(data, data.stat().st_size // 2)
    _assert_failed(_atc(f"--model={model}", f"--output={tmp_path / 'm' / 'out'}"), "E10041", tmp_path / "m",
                   "exceeds")


def test_data_file_cut_after_parsing_is_an_error_when_written(small, tmp_path):
    """The file shrinks between parsing and writing: the writer's bounds check (no SIGBUS), nothing written."""
    model = _copy_small(small, tmp_path / "m")
    result = atc_py.build(str(model), FP32)   # the weights stay in their file until written
    os.truncate(tmp_path / "m" / "model.onnx.data", 1000)
    with pytest.raises(AtcError, match="E10041.*truncated"):
        result.save(tmp_path / "m" / "out.om")
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == ["model.onnx", "model.onnx.data"]


def test_disk_full_mid_write_is_an_error_and_leaves_nothing(small, tmp_path, monkeypatch):
    """ENOSPC from the writer in the middle of the weights: E13004, the temp file removed."""
    from atc_py.om import writer
    result = atc_py.build(small["model"], FP32)
    written = []
    real = writer._streamed

    class Full:
        def __init__(self, f):
            self.f = f

        def write(self, buf):
            written.append(len(memoryview(buf).cast("B")))
            if sum(written) > 100_000:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return self.f.write(buf)
    monkeypatch.setattr(writer, "_streamed", lambda f, chunks, progress: real(Full(f), chunks, progress))
    with pytest.raises(AtcError, match="E13004.*No space left on device"):
        result.save(tmp_path / "out.om")
    assert list(tmp_path.iterdir()) == [] and sum(written) > 100_000


def test_file_size_limit_mid_write_from_the_command_line(small, tmp_path):
    """A real write failure in a real process (RLIMIT_FSIZE: EFBIG past 200 kB): one error line, no .om."""
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))
    out = tmp_path / "o"
    out.mkdir()
    res = _atc(f"--model={small['model']}", f"--output={out / 'out'}", preexec_fn=limit)
    _assert_failed(res, "E13004", out, "File too large")


# -- progress -------------------------------------------------------------------------------------------------

def test_no_progress_text_when_stderr_is_a_pipe(small, tmp_path):
    res = _atc(f"--model={small['model']}", f"--output={tmp_path / 'out'}",
               env=dict(ENV, ATC_PY_PROGRESS_DELAY="0"))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "[atc-py]" not in res.stdout + res.stderr and "\r" not in res.stderr


def test_progress_line_on_a_terminal(small, tmp_path):
    """stderr on a pty: one line redrawn in place (\\r ... erase to end of line): the stages, then the .om's bytes."""
    master, slave = os.openpty()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "atc_py", "--framework=5", "--soc_version=Ascend910B1",
                                 f"--model={small['model']}", f"--output={tmp_path / 'out'}"],
                                stdout=subprocess.DEVNULL, stderr=slave, env=dict(ENV, ATC_PY_PROGRESS_DELAY="0"))
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:   # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        assert proc.wait(timeout=300) == 0
    finally:
        os.close(master)
    text = b"".join(chunks).decode()
    assert "\r[atc-py] parse" in text and "\r[atc-py] writing the .om: " in text and "(100%)" in text, text
    assert text.endswith("\r\x1b[K"), repr(text[-80:])   # erased when done


def test_progress_waits_for_its_delay_and_counts_bytes():
    quick = Progress(FakeTerminal(), delay=60)
    quick.start("load", 100)
    quick.advance(50)
    quick.done()
    assert quick.stream.text == ""   # a job shorter than the delay shows nothing
    tty = FakeTerminal()
    p = Progress(tty, delay=0, interval=0)
    p.start("writing the .om", 4 << 20)
    p.advance(1 << 20)
    assert tty.text.endswith("\r[atc-py] writing the .om: 1.0 MiB / 4.0 MiB (25%), 0 s\x1b[K")
    p.done()
    assert tty.text.endswith("\r\x1b[K")
    assert Progress(pathlib.Path(os.devnull).open("w"), delay=0).enabled is False
