"""om-run's memory-mapped load (om_run/load/mapped.py, atc_py.om.container.read_om_file): the weights stay in the
file until a kernel touches them, the checksum streams, a bad file is one E30001, numerics are unchanged."""
from __future__ import annotations

import io
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

import atc_py
from atc_py.common.errors import AtcError
from atc_py.common.progress import StageProgress
from atc_py.om import partitions as pt
from atc_py.om.chunks import DIGEST_PIECE, STREAM_CHUNK, file_digest, partition_digest
from atc_py.om.container import InFile, OmFormatError, read_om, read_om_file
from atc_py.om.header import MODEL_FILE_HEAD_LEN
from om_run.load import loader
from om_run.load.loader import load_model
from om_run.run.io import random_inputs
from om_run.sim.device_memory import WIDEN_CACHE_BYTES
from om_run.sim.host import Simulation
from om_run.sim.threads import thread_budget
from tests.helpers import MODELS, ROOT, compile_om
from tests.helpers.terminal import FakeTerminal


@pytest.fixture
def mapped(monkeypatch):
    """Every WEIGHTS_DATA mapped, however small."""
    monkeypatch.setattr(loader, "MAP_MIN_BYTES", 0)


@pytest.fixture(scope="module")
def cnn(tmp_path_factory):
    p = tmp_path_factory.mktemp("om") / "cnn.om"
    p.write_bytes(compile_om(MODELS / "small_cnn.onnx"))
    return p


def _weights_entry(data: bytes) -> tuple[int, int, int]:
    """(table entry offset in the file, partition offset in the file, size) of model 0's WEIGHTS_DATA."""
    num, = struct.unpack_from("<I", data, MODEL_FILE_HEAD_LEN)
    table_end = MODEL_FILE_HEAD_LEN + 8 + 24 * num
    for k in range(num):
        at = MODEL_FILE_HEAD_LEN + 8 + 24 * k
        ptype, _, off, size = struct.unpack_from("<IIQQ", data, at)
        if ptype == pt.WEIGHTS_DATA:
            return at, table_end + off, size
    raise AssertionError("no WEIGHTS_DATA")


def _rss_of_mapping(path) -> int:
    """kB of the file's mapping resident in this process (/proc/self/smaps)."""
    total, inside = 0, False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()
            if head and "-" in head[0] and len(head) >= 5 and ":" not in head[0]:
                inside = head[-1] == str(path)
            elif inside and line.startswith("Rss:"):
                total += int(head[1])
    return total


def test_weights_are_mapped_not_read(mapped, cnn):
    model = load_model(str(cnn))
    assert model.weights_file is not None and isinstance(model.weights, memoryview)
    assert model.weights.readonly and len(model.weights) == model.weights_file.size
    data = cnn.read_bytes()
    _, off, size = _weights_entry(data)
    assert (model.weights_file.offset, model.weights_file.size) == (off, size)
    sim = Simulation(model, compute=False)
    for _ in range(2):
        sim.run(None)
    assert _rss_of_mapping(cnn) == 0, "a timing-only run touched the weights' pages"
    assert bytes(model.weights) == data[off:off + size]
    assert _rss_of_mapping(cnn) > 0                   # (what touching them shows)


def test_small_weights_are_read_and_large_ones_mapped(cnn):
    assert load_model(str(cnn)).weights_file is None          # below MAP_MIN_BYTES: read, as before
    om = read_om_file(open(cnn, "rb"), cnn.stat().st_size, in_file=lambda t, n: t == pt.WEIGHTS_DATA)
    part = om.models[0].part(pt.WEIGHTS_DATA)
    assert isinstance(part, InFile) and len(part) == part.size
    with pytest.raises(ValueError, match="left in the file"):
        om.models[0].get(pt.WEIGHTS_DATA)
    assert om.models[0].get(pt.MODEL_DEF) == read_om(cnn.read_bytes()).models[0].get(pt.MODEL_DEF)


def test_private_mappings_keep_writes_to_themselves(mapped, cnn):
    model = load_model(str(cnn))
    before = bytes(model.weights)
    a, b = model.weights_file.private(), model.weights_file.private()
    assert a.flags.writeable
    a[:16] ^= 0xFF
    assert bytes(b) == before and bytes(model.weights) == before   # the other mapping, the read-only view
    off, size = model.weights_file.offset, model.weights_file.size
    assert cnn.read_bytes()[off:off + size] == before                  # and the file


@pytest.mark.parametrize("cut", ["truncated", "overlong", "past_end_unsealed"])
def test_truncated_or_overlong_partitions_are_one_load_error(mapped, cnn, tmp_path, cut):
    data = bytearray(cnn.read_bytes())
    at, off, size = _weights_entry(data)
    if cut == "truncated":
        data = data[:off + size // 2]
        needle = "truncated or padded"
    else:
        struct.pack_into("<Q", data, at + 16, size + (1 << 40 if cut == "overlong" else 4096))
        needle = "does not fit the file"
        if cut == "past_end_unsealed":
            data[12:76] = bytes(64)
    p = tmp_path / "bad.om"
    p.write_bytes(bytes(data))
    with pytest.raises(AtcError, match=needle) as exc:
        load_model(str(p), verify=cut != "past_end_unsealed")
    assert exc.value.code == "E30001"
    r = subprocess.run([sys.executable, "-m", "om_run", str(p), "--no-compute", "--no-verify"], capture_output=True,
                       text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 1 and "[ERROR] E30001" in r.stderr and needle in r.stderr
    assert "Traceback" not in r.stderr + r.stdout


def test_a_file_that_shrinks_while_read_is_a_format_error(cnn):
    data = cnn.read_bytes()
    _, off, size = _weights_entry(data)
    short = io.BytesIO(data[:off + size // 2])      # fstat said len(data): the file lost its tail since
    with pytest.raises(OmFormatError, match="truncated while being read"):
        read_om_file(short, len(data), in_file=lambda t, n: t == pt.WEIGHTS_DATA)
    with pytest.raises(OmFormatError, match="truncated while being read"):
        read_om_file(io.BytesIO(data[:off - 10]), len(data))


def test_mmap_failure_is_a_load_error(mapped, cnn, monkeypatch):
    from om_run.load import mapped as mapped_mod

    def no_map(*a, **k):
        raise OSError(12, "Cannot allocate memory")
    monkeypatch.setattr(mapped_mod.mmap, "mmap", no_map)
    with pytest.raises(AtcError, match="cannot map the file .Cannot allocate memory") as exc:
        load_model(str(cnn))
    assert exc.value.code == "E30001"


def test_not_a_regular_file_does_not_block(tmp_path):
    fifo = tmp_path / "fifo.om"
    os.mkfifo(fifo)
    with pytest.raises(AtcError, match="not a regular file"):
        load_model(str(fifo))
    with pytest.raises(AtcError, match="not a regular file"):
        load_model(str(tmp_path))


def test_file_digest_streams_and_matches_the_partition_digest(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    blob = rng.integers(0, 256, 2 * STREAM_CHUNK + 3 * DIGEST_PIECE + 12345, dtype=np.uint8).tobytes()
    p = tmp_path / "blob"
    p.write_bytes(b"head" + blob + b"tail")
    reads, told = [], []

    class Recording(io.FileIO):
        def readinto(self, b):
            reads.append(len(b))
            return super().readinto(b)
    with Recording(p) as f:
        assert file_digest(f, 4, len(blob), 2, told.append) == partition_digest([blob])
    assert max(reads) <= STREAM_CHUNK and sum(told) == len(blob)   # never the whole partition at once
    with Recording(p) as f, pytest.raises(EOFError):
        file_digest(f, 4, len(blob) + 100)


def test_streamed_checksum_rejects_a_flipped_weight_byte(mapped, cnn, tmp_path):
    data = bytearray(cnn.read_bytes())
    _, off, size = _weights_entry(data)
    seen = []
    load_model(str(cnn), progress=lambda stage, done, total: seen.append((stage, done, total)))
    assert {s for s, _, _ in seen} == {"checksum", "mapping"} and seen[-1][1] == seen[-1][2]
    assert any(s == "checksum" and d == t for s, d, t in seen)
    data[off + size // 2] ^= 0x01
    p = tmp_path / "flipped.om"
    p.write_bytes(bytes(data))
    for verify in (True, False):    # --no-verify never accepts a wrong checksum
        with pytest.raises(AtcError, match="checksum mismatch"):
            load_model(str(p), verify=verify)
    data[12:76] = bytes(64)         # unsealed: --no-verify runs it, no hashing
    p.write_bytes(bytes(data))
    with pytest.raises(AtcError, match="all zero"):
        load_model(str(p))
    assert load_model(str(p), verify=False).weights_file is not None


SAMPLES = ["small_cnn.onnx", "small_transformer.onnx", "inception_block.onnx", "tf_lenet.pb"]   # those with weights


@pytest.mark.parametrize("name", SAMPLES)
@pytest.mark.parametrize("precision", ["fp16", "fp32"])
def test_outputs_are_bit_identical_to_the_read_path(monkeypatch, tmp_path, name, precision):
    """Weights read and copied (the path before mapping; small models still take it) against weights mapped
    from the file at whatever alignment the file gives them, with and without the budget of prepared weights."""
    opts = {"ge.socVersion": "Ascend910B1", **({"ge.frameworkType": "3"} if name.endswith(".pb") else {})}
    if precision == "fp32":
        opts["ge.exec.precision_mode"] = "must_keep_origin_dtype"
    p = tmp_path / "m.om"
    atc_py.build(str(MODELS / name), opts).save(p)
    read = load_model(str(p))
    assert read.weights_file is None and len(read.weights)
    monkeypatch.setattr(loader, "MAP_MIN_BYTES", 0)
    mapped_model = load_model(str(p))
    assert mapped_model.weights_file is not None
    inputs = random_inputs(read, 3)
    with thread_budget(1):
        ref, _ = Simulation(read).run(inputs)
        for budget in (WIDEN_CACHE_BYTES, 0):
            outs, _ = Simulation(mapped_model, widen_cache_bytes=budget).run(inputs)
            assert [o.tobytes() for o in outs] == [r.tobytes() for r in ref], budget


def test_load_prepares_plans_and_keeps_prepared_weights_within_the_budget(mapped, tmp_path):
    p = tmp_path / "m.om"
    atc_py.build(str(MODELS / "small_cnn.onnx"), {"ge.socVersion": "Ascend910B1"}).save(p)   # fp16 weights
    model = load_model(str(p))
    calls = lambda sim: [c for t in sim.programs[model.name].tasks for c in t.calls]   # noqa: E731
    timing = Simulation(model, compute=False)
    assert calls(timing) and all(c.plan is None for c in calls(timing)) and not timing.memories
    sim = Simulation(model)
    assert all(c.plan is not None for c in calls(sim))          # planned at load, not by the first execution
    kept = sim.widened[model.name]
    assert kept and sum(a.nbytes for a in kept.values()) == WIDEN_CACHE_BYTES - sim.widen_budget.left
    none = Simulation(model, widen_cache_bytes=0)
    assert not none.widened[model.name]
    later = [make for c in calls(none) for _, make, _ in c.plan.later]
    assert later and all(callable(m) for m in later)
    x = random_inputs(model, 1)
    assert [o.tobytes() for o in sim.run(x)[0]] == [o.tobytes() for o in none.run(x)[0]]


def test_no_compute_run_of_200_mb_of_weights_stays_small(tmp_path):
    """A whole om-run process, timing only, on an .om with ~200 MB of weights: its peak RSS stays near a
    tiny model's."""
    from bench.om_load import write_onnx
    write_onnx(tmp_path / "chain.onnx", 6, 4096)               # 6 x 32 MiB fp16
    big = tmp_path / "big.om"
    atc_py.build(str(tmp_path / "chain.onnx"), {"ge.socVersion": "Ascend910B1",
                                                "ge.exec.precision_mode": "must_keep_origin_dtype"}).save(big)
    small = tmp_path / "small.om"
    write_onnx(tmp_path / "tiny.onnx", 1, 64)
    atc_py.build(str(tmp_path / "tiny.onnx"), {"ge.socVersion": "Ascend910B1"}).save(small)
    size = big.stat().st_size
    assert size > 200e6
    timer = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True); "
             "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    rss = {}
    for name, om in (("small", small), ("big", big)):
        r = subprocess.run([sys.executable, "-c", timer, sys.executable, "-m", "om_run", str(om), "--no-compute"],
                           capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
        code, kb = map(int, r.stdout.split())
        assert code == 0, r.stderr
        rss[name] = kb * 1024
    # the checksum's two read buffers and a little: the whole file was read, then held twice, before
    assert rss["big"] - rss["small"] < 2 * STREAM_CHUNK + 0.05 * size, rss


def test_progress_line_on_a_terminal_only():
    """om-run's loader reports (stage, done, total) to atc-py's progress line: shown on a terminal, each stage
    counted from its start, erased at the end; nothing on a pipe."""
    term = FakeTerminal(True)
    with StageProgress("loading m.om", term, delay=0.0) as progress:
        progress("checksum", 1_500_000_000, 3_000_000_000)
        progress("checksum", 3_000_000_000, 3_000_000_000)
        progress("mapping", 3_000_000_000, 3_000_000_000)
    text = term.getvalue()
    assert "[om-run] loading m.om: checksum" in text and "(100%)" in text and "loading m.om: mapping" in text
    assert text.endswith("\r\x1b[K")                  # erased: the next line starts clean
    pipe = FakeTerminal(False)
    with StageProgress("loading m.om", pipe, delay=0.0) as quiet:
        quiet("checksum", 1, 2)
    assert pipe.getvalue() == ""


def test_om_run_piped_prints_no_progress(cnn):
    r = subprocess.run([sys.executable, "-m", "om_run", str(cnn), "--no-compute"], capture_output=True, text=True,
                       cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0 and "\r" not in r.stderr + r.stdout and "checksum" not in r.stderr
