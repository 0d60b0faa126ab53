"""The .om container: header layout, round trip, every corruption becomes one clean error."""
import hashlib
import struct

import numpy as np
import pytest

from atc_py.om import partitions as pt
from atc_py.om import read_om, write_om
from atc_py.om.chunks import DIGEST_PIECE, Chunks, partition_digest
from atc_py.om.container import OmFormatError, OmModel
from atc_py.om.header import MODEL_FILE_MAGIC_NUM, ModelFileHeader
from atc_py.om.inout_info import IoDesc, build_inout, parse_inout
from atc_py.om.kernel_store import build_store, parse_store
from tests.helpers import MODELS, compile_om


def _sample() -> bytes:
    parts = [(pt.MODEL_DEF, b"md"), (pt.WEIGHTS_DATA, b"w" * 1000), (pt.TASK_INFO, b"ti")]
    return write_om([OmModel(parts)], "net").tobytes()


def test_header_is_256_bytes_with_ge_offsets():
    raw = ModelFileHeader(name=b"abc", model_num=3, model_length=77, is_unknow_model=1).pack()
    assert len(raw) == 256
    assert struct.unpack_from("<I", raw, 0)[0] == MODEL_FILE_MAGIC_NUM
    assert raw[:4] == b"IMOD"
    assert struct.unpack_from("<I", raw, 4)[0] == 256
    assert struct.unpack_from("<I", raw, 8)[0] == 0x20000000
    assert raw[84:87] == b"abc"
    assert struct.unpack_from("<I", raw, 156)[0] == 3
    assert struct.unpack_from("<Q", raw, 184)[0] == 77
    assert raw[193] == 1


def test_round_trip_and_table_layout():
    data = _sample()
    om = read_om(data)
    assert om.header.model_num == 1 and om.header.model_length == len(data) - 256
    assert [t for t, _ in om.models[0].partitions] == [pt.MODEL_DEF, pt.WEIGHTS_DATA, pt.TASK_INFO]
    assert om.models[0].get(pt.WEIGHTS_DATA) == b"w" * 1000
    num, = struct.unpack_from("<I", data, 256)
    assert num == 3
    ptype, _, off, size = struct.unpack_from("<IIQQ", data, 256 + 8 + 24)
    assert (ptype, off, size) == (pt.WEIGHTS_DATA, 2, 1000)  # offsets relative to the end of the table
    # the checksum: SHA-256 of the table bytes followed by each partition's digest (SHA-256 of the SHA-256s of
    # its 16 MiB pieces: one piece here)
    table = data[256:256 + 8 + 3 * 24]
    digests = b"".join(hashlib.sha256(hashlib.sha256(p).digest()).digest() for p in (b"md", b"w" * 1000, b"ti"))
    expect = hashlib.sha256(table + digests)
    assert om.header.checksum[:32] == expect.digest() and om.header.checksum[32:] == b"\0" * 32


def test_multi_model_round_trip():
    models = [OmModel([(pt.MODEL_DEF, b"root")]), OmModel([(pt.MODEL_DEF, b"sub"), (pt.TASK_INFO, b"t")])]
    om = read_om(write_om(models, "dyn", is_unknown=True).tobytes())
    assert om.is_dynamic and om.header.model_num == 2
    assert om.models[1].get(pt.TASK_INFO) == b"t"


@pytest.mark.parametrize("mutate,needle", [
    (lambda d: d[:100], "shorter than the 256-byte header"),
    (lambda d: d[:-1], "truncated or padded"),
    (lambda d: d + b"\0", "truncated or padded"),
    (lambda d: b"XXXX" + d[4:], "bad magic"),
    (lambda d: d[:-5] + bytes([d[-5] ^ 0xFF]) + d[-4:], "checksum mismatch"),
    (lambda d: d[:12] + b"\0" * 64 + d[76:256] + struct.pack("<I", 99) + d[260:], "partitions"),
])
def test_corruption_is_a_clean_error(mutate, needle):
    with pytest.raises(OmFormatError, match=needle):
        read_om(mutate(_sample()))


def test_wrong_partition_size_without_checksum():
    data = bytearray(_sample())
    data[12:76] = b"\0" * 64  # no checksum: the length checks must still catch it
    struct.pack_into("<Q", data, 256 + 8 + 24 + 16, 10**9)
    with pytest.raises(OmFormatError, match="does not fit"):
        read_om(bytes(data))


def test_kernel_store_round_trip_and_corruption():
    blob = build_store([("k2", b"bb"), ("k1", b"a")])
    assert parse_store(blob) == {"k1": b"a", "k2": b"bb"}
    assert struct.unpack_from("<I", blob)[0] == 0x5D776EFD
    with pytest.raises(ValueError, match="runs past"):
        parse_store(blob[:-1])


def test_inout_info_round_trip():
    blob = build_inout([IoDesc("x", (1, 3, 8, 8), 0, "NCHW", 768)], [IoDesc("y", (1, 10), 0, "ND", 40)])
    parsed = parse_inout(blob)
    assert parsed[0][0].name == "x" and parsed[0][0].shape == (1, 3, 8, 8)
    assert parsed[1][0].shape == (1, 10)


def test_compiled_model_partitions_in_ge_order_and_weights_aligned():
    om = read_om(compile_om(MODELS / "small_cnn.onnx"))
    types = [t for t, _ in om.models[0].partitions]
    assert types == [pt.MODEL_INOUT_INFO, pt.MODEL_DEF, pt.WEIGHTS_DATA, pt.TBE_KERNELS, pt.TASK_INFO]
    from atc_py.proto import ge_ir_pb2 as ge
    md = ge.ModelDef.FromString(om.models[0].get(pt.MODEL_DEF))
    consts = [op for op in md.graph[0].op if op.type == "Const"]
    assert consts
    for op in consts:
        t = op.attr["value"].t
        assert t.data == b"", "weights never live inside the protobuf"
        assert t.desc.data_offset % 512 == 0 and t.desc.data_offset >= 512
    weights = om.models[0].get(pt.WEIGHTS_DATA)
    assert len(weights) == md.attr["weight_size"].i


def test_same_input_same_bytes():
    assert compile_om(MODELS / "small_transformer.onnx") == compile_om(MODELS / "small_transformer.onnx")


def test_same_bytes_across_processes_with_different_hash_seeds(tmp_path):
    """No dependence on set/dict order or hash randomisation: two CLI runs, two seeds, same file."""
    import os
    import subprocess
    import sys

    from tests.helpers import ROOT
    outs = []
    for seed in ("1", "2"):
        cwd = tmp_path / f"m{seed}"
        cwd.mkdir()
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=str(ROOT))
        res = subprocess.run([sys.executable, "-m", "atc_py", f"--model={MODELS / 'small_cnn.onnx'}", "--framework=5",
                              "--output=cnn", "--soc_version=Ascend910B1"], cwd=cwd, env=env,
                             capture_output=True, text=True)
        assert res.returncode == 0, res.stdout
        outs.append((cwd / "cnn.om").read_bytes())
    # the command line is recorded in the om (atc_cmdline), so both runs use the same relative --output
    assert outs[0] == outs[1]


@pytest.mark.parametrize("workers", [1, 3])
def test_partition_digest_is_the_sha256_of_its_piece_digests_however_the_bytes_are_split(workers):
    rng = np.random.default_rng(0)
    blob = rng.integers(0, 256, DIGEST_PIECE * 2 + 12345, dtype=np.uint8).tobytes()
    pieces = [blob[k:k + DIGEST_PIECE] for k in range(0, len(blob), DIGEST_PIECE)]
    expect = hashlib.sha256(b"".join(hashlib.sha256(p).digest() for p in pieces)).digest()
    cuts = [0, 7, DIGEST_PIECE - 1, DIGEST_PIECE + 100, len(blob)]   # buffers straddling piece boundaries
    parts = [np.frombuffer(blob, np.uint8)[a:b] for a, b in zip(cuts, cuts[1:])]
    assert partition_digest(parts, workers) == expect
    chunks = Chunks([b"", *parts])
    chunks.start_digest()
    assert chunks.digest() == expect and len(chunks) == len(blob) and bytes(chunks) == blob


def test_weights_chunks_are_written_as_one_partition():
    w = Chunks([bytes(512), np.arange(6, dtype=np.float32).view(np.uint8)])
    om = read_om(write_om([OmModel([(pt.MODEL_DEF, b"md"), (pt.WEIGHTS_DATA, w)])], "c").tobytes())
    assert om.models[0].get(pt.WEIGHTS_DATA) == bytes(512) + np.arange(6, dtype=np.float32).tobytes()


def test_streamed_file_equals_the_image_bytes_wherever_the_stream_starts(tmp_path):
    """write_to puts the body first and the sealed header back over its slot (hashing overlaps writing)."""
    import io

    import atc_py
    r = atc_py.build(str(MODELS / "small_cnn.onnx"), {"ge.socVersion": "Ascend910B1"})
    out = tmp_path / "m.om"
    r.save(out)
    assert out.read_bytes() == r.om
    f = io.BytesIO()
    f.write(b"prefix")
    r.image.write_to(f)
    f.write(b"suffix")
    assert f.getvalue() == b"prefix" + r.om + b"suffix"


def test_deferred_parts_hash_and_join_as_their_bytes_and_report_their_failure():
    from atc_py.om.chunks import Deferred
    data = np.arange(1000, dtype=np.float32).view(np.uint8)
    lazy = Chunks([b"head", Deferred(data.size, lambda: data), b"tail"])
    plain = Chunks([b"head", data, b"tail"])
    assert len(lazy) == len(plain) and bytes(lazy) == bytes(plain)
    lazy.start_digest()
    assert lazy.digest() == plain.digest()

    def fails():
        raise RuntimeError("cast failed")
    broken = Chunks([b"x", Deferred(4, fails)])
    broken.start_digest()
    with pytest.raises(RuntimeError, match="cast failed"):
        broken.digest()
    with pytest.raises(ValueError, match="3 bytes, 4 were reserved"):
        bytes(Chunks([Deferred(4, lambda: b"abc")]))


@pytest.mark.parametrize("workers", [1, 3])
def test_deferred_parts_straddling_pieces_digest_as_plain_bytes(workers):
    from atc_py.om.chunks import Deferred
    rng = np.random.default_rng(5)
    a = rng.integers(0, 256, DIGEST_PIECE + 100, dtype=np.uint8)
    b = rng.integers(0, 256, 3 * DIGEST_PIECE // 2, dtype=np.uint8)
    plain = [b"0123456789", a, b"x" * 7, b]
    lazy = [b"0123456789", Deferred(a.size, lambda: a), b"x" * 7, Deferred(b.size, lambda: b)]
    assert partition_digest(lazy, workers) == partition_digest(plain, workers)


def test_the_weights_sit_past_any_feature_map_a_device_can_hold():
    """A feature map beyond 4 GiB (a 2 GiB input and output) overlapped the weights at 8 GiB, and om-run refused
    the .om atc-py had written: the weight base is past the largest device memory of every SoC."""
    import pathlib

    import atc_py.platform as platform
    from atc_py.passes.memory import FEATURE_MAP_BASE, WEIGHT_BASE
    from atc_py.platform import load_soc
    from om_run.load.limits import DEFAULT_DEVICE_MEMORY
    socs = [p.stem for p in pathlib.Path(platform.__file__).parent.joinpath("data").glob("*.ini")]
    assert socs
    for name in socs:
        memory = load_soc(name).memory_size or DEFAULT_DEVICE_MEMORY
        assert FEATURE_MAP_BASE + memory <= WEIGHT_BASE, name
