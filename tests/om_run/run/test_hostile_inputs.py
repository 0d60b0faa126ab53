"""Hostile inputs: msame inputs checked against the model before they are read (a 10 GiB file
for a 12 KiB input is refused unread, folders listed entry by entry), and ONNX external data never put into a
protobuf message (a 2 GiB Constant under an address-space limit crashed with SIGSEGV inside protobuf).

Large files are sparse (truncate): they cost no disk and no time to make. Runs under a memory limit go through a
subprocess with RLIMIT_AS, as the fuzz campaign's children do."""
from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import zipfile

import numpy as np
import pytest
from onnx import TensorProto, helper

from atc_py.common.errors import AtcError
from atc_py.frontend.onnx import onnx_lite
from atc_py.frontend.onnx.loader import load_onnx, load_onnx_lazy
from om_run.run.io import load_npz
from tests.helpers import MODELS, ROOT, compile_om

GIB = 1 << 30


@pytest.fixture(scope="module")
def cnn_om(tmp_path_factory) -> pathlib.Path:
    p = tmp_path_factory.mktemp("om") / "cnn.om"
    p.write_bytes(compile_om(MODELS / "small_cnn.onnx"))
    return p


def npy_header(shape: tuple, descr: str = "<f4") -> bytes:
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape!r}, }}"
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode()


def sparse_npy(path: pathlib.Path, nbytes: int) -> None:
    """A .npy whose header and size promise nbytes of float32 (all holes: nothing on disk)."""
    with open(path, "wb") as f:
        f.write(npy_header((nbytes // 4,)))
        f.truncate(f.tell() + nbytes)


def limited(args: list[str], limit: int, cwd) -> subprocess.CompletedProcess:
    """A tool run in a fresh interpreter whose address space is limited to `limit` bytes."""
    code = (f"import resource, sys; resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit})); "
            f"sys.argv = {args!r}; import runpy; runpy.run_module(sys.argv[0], run_name='__main__')")
    env = dict(os.environ, PYTHONPATH=str(ROOT), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    env.pop("ATC_PY_DEBUG", None)
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def one_error_line(proc: subprocess.CompletedProcess, code: str) -> str:
    errors = [line for line in (proc.stdout + proc.stderr).splitlines() if re.search(r"\bE\d{5}\b", line)]
    assert proc.returncode > 0 and len(errors) == 1 and code in errors[0], proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stdout + proc.stderr
    return errors[0]


# -- msame inputs ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("as_folder", [False, True])
def test_a_10gib_npy_for_a_12kib_input_is_refused_before_it_is_read(cnn_om, tmp_path, as_folder):
    """Its header is checked against the input (float32[1, 3, 32, 32]) before the data is read: under a 4 GiB
    address space reading it whole ended in E30006 (MemoryError)."""
    folder = tmp_path / "inputs"
    folder.mkdir()
    sparse_npy(folder / "a.npy", 10 * GIB)
    spec = str(folder) if as_folder else str(folder / "a.npy")
    proc = limited(["om_run", "--model", str(cnn_om), "--input", spec, "--output", str(tmp_path / "out")],
                   4 * GIB, tmp_path)
    line = one_error_line(proc, "E30002")
    assert "input 'input' must be float32[1, 3, 32, 32]" in line and "refused before reading" in line


def test_a_10gib_bin_is_refused_by_its_size(om_run, cnn_om, tmp_path):
    big = tmp_path / "a.bin"
    with open(big, "wb") as f:
        f.truncate(10 * GIB)
    code, _, err = om_run("--model", str(cnn_om), "--input", str(big))
    assert code == 1 and "E30002" in err and "has 10737418240 bytes" in err and "needs 12288" in err


def test_input_folders_skip_subfolders_and_hidden_entries(om_run, cnn_om, tmp_path):
    """A folder is listed entry by entry: a subfolder or a hidden entry is no input."""
    folder = tmp_path / "inputs"
    folder.mkdir()
    np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32).tofile(folder / "a.bin")
    (folder / "c").mkdir()
    (folder / ".hidden").write_text("x")
    code, out, err = om_run("--model", str(cnn_om), "--input", str(folder), "--output", str(tmp_path / "out"))
    assert code == 0 and "start to process file: a" in out, err
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["a_output_0.npy"]


@pytest.mark.parametrize("plant,words", [
    (lambda f, tmp: (f / "b.bin").symlink_to(tmp / "nowhere.bin"), "'b.bin', which is a dangling symbolic link"),
    (lambda f, tmp: (f / "b.bin").symlink_to(f / "b.bin"), "'b.bin', which is a dangling symbolic link"),
    (lambda f, tmp: os.mkfifo(f / "b.bin"), "'b.bin', which is not a regular file"),
])
def test_an_input_folder_entry_that_is_no_file_is_refused_not_skipped(om_run, cnn_om, tmp_path, plant, words):
    """The run would have had one input fewer than the folder names."""
    folder = tmp_path / "inputs"
    folder.mkdir()
    np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32).tofile(folder / "a.bin")
    plant(folder, tmp_path)
    code, out, err = om_run("--model", str(cnn_om), "--input", str(folder), "--output", str(tmp_path / "out"))
    assert code == 1 and "E30002" in err and words in err and "Traceback" not in err, err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_npz_members_are_chosen_and_checked_before_any_is_read(tmp_path):
    path = tmp_path / "in.npz"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("input.npy", npy_header((4096,)) + bytes(4 * 4096))
        z.writestr("junk.npy", npy_header((8,)) + bytes(32))
    seen = []

    def select(names):
        seen.append(sorted(names))
        return {"input": lambda shape, dtype: None if shape == (4096,) else "wrong"}
    assert list(load_npz(str(path), select)) == ["input"] and seen == [["input", "junk"]]
    with pytest.raises(Exception, match="too big for it .refused before reading its 16384 bytes"):
        load_npz(str(path), lambda names: {"input": lambda shape, dtype: "too big for it", "junk": None})


# -- ONNX external data -------------------------------------------------------------------------------------
def external(name: str, data_type: int, dims: list[int], location: str, length: int) -> TensorProto:
    t = TensorProto(name=name, data_type=data_type, dims=dims)
    t.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", str(length))):
        e = t.external_data.add()
        e.key, e.value = key, value
    return t


def constant_model(folder: pathlib.Path, value: TensorProto, extra_init: list | None = None) -> pathlib.Path:
    """y = x + ReduceSum(Constant) (+ ReduceSum(Cast(b)) when a bf16 initializer b is given)."""
    nodes = [helper.make_node("Constant", [], ["w"], value=value),
             helper.make_node("ReduceSum", ["w"], ["s"], keepdims=0), helper.make_node("Add", ["x", "s"], ["y0"])]
    out = "y0"
    if extra_init:
        nodes += [helper.make_node("Cast", ["b"], ["bf"], to=TensorProto.FLOAT),
                  helper.make_node("ReduceSum", ["bf"], ["bs"], keepdims=0),
                  helper.make_node("Add", ["y0", "bs"], ["y"])]
        out = "y"
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                          [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)], initializer=extra_init or [])
    path = folder / "m.onnx"
    path.write_bytes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
    return path


def test_external_data_read_into_a_proto_is_bounded(tmp_path, monkeypatch):
    """What must be read into a TensorProto (load_onnx's self-contained proto, 4-bit types) is refused past
    MAX_READ_INTO_BYTES with one E10041, before a byte is read."""
    from atc_py.frontend.onnx import external_data
    monkeypatch.setattr(external_data, "MAX_READ_INTO_BYTES", 1 << 20)
    with open(tmp_path / "w.bin", "wb") as f:
        f.truncate(2 << 20)
    model = constant_model(tmp_path, external("w", TensorProto.FLOAT, [1 << 19], "w.bin", 2 << 20))
    with pytest.raises(AtcError, match="E10041.*2097152 bytes in 'w.bin'.*protobuf message"):
        load_onnx(str(model))
    assert load_onnx_lazy(str(model))[0].graph.node[0].attribute[0].t.data_location == TensorProto.EXTERNAL


def test_a_2gib_external_constant_under_an_address_space_limit_is_no_signal(tmp_path):
    """The real size (a sparse file): read into a TensorProto it crashed inside protobuf (SIGSEGV, 13 s); mapped
    from its file the build takes about a second (or, with less address space, fails with one E10041)."""
    with open(tmp_path / "w.bin", "wb") as f:
        f.truncate(2 * GIB)
    model = constant_model(tmp_path, external("w", TensorProto.FLOAT, [GIB // 2], "w.bin", 2 * GIB))
    args = ["atc_py", f"--model={model}", "--framework=5", f"--output={tmp_path / 'out'}", "--soc_version=Ascend910B1"]
    for limit in (3 * GIB, GIB + GIB // 4):
        proc = limited(args, limit, tmp_path)
        assert proc.returncode >= 0, f"killed by signal {-proc.returncode}"
        if proc.returncode:
            assert "E10041" in one_error_line(proc, "E10041")
        else:
            assert "ATC run success" in proc.stdout and (tmp_path / "out.om").stat().st_size < 1 << 20


def test_external_constants_and_bf16_initializers_are_mapped_not_copied_into_the_proto(om_run, tmp_path):
    w = np.arange(1, 1025, dtype=np.float32) / 1024
    b = np.array([0.5, 1.5, -2.0, 4.0], np.float32)
    (tmp_path / "w.bin").write_bytes(w.tobytes())
    (tmp_path / "b.bin").write_bytes((b.view(np.uint32) >> 16).astype(np.uint16).tobytes())   # bf16: exact here
    model = constant_model(tmp_path, external("w", TensorProto.FLOAT, [1024], "w.bin", w.nbytes),
                           [external("b", TensorProto.BFLOAT16, [4], "b.bin", 8)])
    loaded = load_onnx_lazy(str(model))[0]   # what a build reads
    value = loaded.graph.node[0].attribute[0].t
    assert not value.HasField("raw_data") and value.data_location == TensorProto.EXTERNAL
    assert not loaded.graph.initializer[0].HasField("raw_data")
    np.testing.assert_array_equal(onnx_lite.to_array(value), w)
    whole = load_onnx(str(model))             # a self-contained proto (om-run compare's onnxruntime) reads them in
    assert whole.graph.node[0].attribute[0].t.raw_data == w.tobytes()
    om = tmp_path / "m.om"
    om.write_bytes(compile_om(model))
    x = tmp_path / "x.npy"
    np.save(x, np.array([0.25], np.float32))
    code, out, err = om_run("--model", str(om), "--input", str(x), "--output", str(tmp_path / "out"))
    assert code == 0, err
    (got,) = [np.load(p) for p in (tmp_path / "out").iterdir()]
    np.testing.assert_allclose(got, 0.25 + w.sum() + b.sum(), rtol=1e-5)
