"""om-run and the .om reader against hostile files: one test per finding of an audit. Each
mutant is sealed again (checksum recomputed), as any writer can, so the validation layer — not the
checksum — is what must stop it."""
from __future__ import annotations

import json
import os
import re

import pytest

from atc_py.engines.aicore import kernel_of
from atc_py.om import partitions as pt
from atc_py.proto import ge_ir_pb2 as ge
from tests.helpers import MODELS, compile_om
from tests.helpers.om_files import edit, first_kernel, op_named, run_om_bytes
from tools.fuzz.om_mutants import OmDoc


@pytest.fixture(scope="module")
def cnn_om() -> bytes:
    return compile_om(MODELS / "small_cnn.onnx")


@pytest.fixture(scope="module")
def sk_om() -> bytes:
    return compile_om(MODELS / "superkernel.onnx", **{"ge.tiling_schedule_optimize": "1"})



def test_outputs_are_named_from_the_output_folder_not_the_model_name(om_run, tmp_path, cnn_om):
    """Finding 1: a model name like ../x or /abs/path chose where outputs were written."""
    canary = tmp_path / "canary"
    for name in ("../escape", str(canary / "abs"), "a/b/c", "..", ""):
        def rename(md, n=name):
            md.name = n
        out = tmp_path / "out"
        code, stdout, _ = run_om_bytes(om_run, tmp_path, edit(cnn_om, rename), "--output", str(out))
        assert code == 0, stdout
        written = sorted(p.name for p in out.iterdir())
        assert written and all("/" not in w and not w.startswith(".") for w in written)
        assert not canary.exists() and not (tmp_path / "escape_output_0.npy").exists()
        for p in out.iterdir():
            p.unlink()


@pytest.mark.parametrize("mutate,expect", [
    (lambda md: md.attr["memory_size"].__setattr__("i", 2**40), "memory_size"),
    (lambda md: md.attr["memory_size"].__setattr__("i", -1), "memory_size"),
    (lambda md: md.attr["_is_unknown_shape"].__setattr__("i", 1), "_is_unknown_shape"),
    (lambda md: md.attr["_is_unknown_shape"].__setattr__("b", True), "single-model om"),
    (lambda md: md.attr["stream_num"].__setattr__("i", 2**31), "stream_num"),
    (lambda md: op_named(md, "Conv2D").output_desc[0].shape.dim.__setitem__(0, 2**40), "dim"),
    (lambda md: op_named(md, "Conv2D").attr["tvm_blockdim"].__setattr__("i", 2**62), "tvm_blockdim"),
    (lambda md: op_named(md, "Conv2D").attr["strides"].__setattr__("s", b"x"), "strides"),
    (lambda md: op_named(md, "Data").attr["index"].__setattr__("s", b"0"), "index"),
    (lambda md: op_named(md, "Conv2D").input.__setitem__(0, "nosuch:0"), "nosuch"),
    (lambda md: op_named(md, "Conv2D").input_desc[0].__setattr__("dtype", 99), "dtype"),
    (lambda md: md.graph[0].op.add().CopyFrom(op_named(md, "Conv2D")), "used twice"),
])
def test_model_def_fields_are_checked_before_anything_runs(om_run, tmp_path, cnn_om, mutate, expect):
    """Finding 2: sealed mutants ended in tracebacks, MemoryError or hangs."""
    code, _, err = run_om_bytes(om_run, tmp_path, edit(cnn_om, mutate))
    assert code == 1 and "E30001" in err and expect in err and "Traceback" not in err


def _set_arg(mtd, slot: int, value: int):
    # the first kernel reading two inputs or more: the first convolution (a TransData, one input, comes before it)
    k = next(t for t in mtd.task if t.HasField("kernel") and "{i1}" in t.kernel.context.args_format).kernel
    args = bytearray(k.args)
    args[8 * slot:8 * slot + 8] = value.to_bytes(8, "little")
    k.args = bytes(args)


@pytest.mark.parametrize("mutate,expect", [
    (lambda mtd: _set_arg(mtd, 0, 2**60), "outside device memory"),
    (lambda mtd: _set_arg(mtd, 1, 0), "outside device memory"),
    (lambda mtd: first_kernel(mtd).kernel.__setattr__("args", b"\0" * 5), "bytes"),
    (lambda mtd: first_kernel(mtd).kernel.context.__setattr__("args_format", "{i0}{i0}{o0}"), "repeats"),
    (lambda mtd: first_kernel(mtd).kernel.context.__setattr__("args_format", "{x9}"), "knows"),
    (lambda mtd: first_kernel(mtd).kernel.context.__setattr__("op_index", 2**31 - 1), "op index"),
    (lambda mtd: first_kernel(mtd).__setattr__("type", 999), "task type"),
    (lambda mtd: first_kernel(mtd).__setattr__("stream_id", 7), "stream"),
])
def test_task_fields_are_checked_before_anything_runs(om_run, tmp_path, cnn_om, mutate, expect):
    code, _, err = run_om_bytes(om_run, tmp_path, edit(cnn_om, tasks=mutate))
    assert code == 1 and "E30001" in err and expect in err


@pytest.mark.parametrize("ext", [("[" * 200000 + "]" * 200000).encode(), b'{"members": 5}', b"{",
                                 b'{"members": [{"op_index": 0, "offset": -5, "size": 99999999, "args_format": "{i0}"}]}'])
def test_super_kernel_member_table_is_checked(om_run, tmp_path, sk_om, ext):
    def mutate(mtd):
        next(t for t in mtd.task if t.type == 44).kernel.kernel_ext_info = ext
    code, _, err = run_om_bytes(om_run, tmp_path, edit(sk_om, tasks=mutate))
    assert code == 1 and "E30001" in err and "SUPER_KERNEL" in err


def test_a_zero_checksum_is_refused_unless_no_verify(om_run, tmp_path, cnn_om):
    """Finding 4: an all-zero checksum used to switch verification off."""
    unsealed = edit(cnn_om, seal=False)
    code, _, err = run_om_bytes(om_run, tmp_path, unsealed)
    assert code == 1 and "checksum is all zero" in err
    code, out, _ = run_om_bytes(om_run, tmp_path, unsealed, "--no-verify")
    assert code == 0 and "finished successfully" in out
    tampered = bytearray(cnn_om)
    tampered[-1] ^= 1
    code, _, err = run_om_bytes(om_run, tmp_path, bytes(tampered), "--no-verify")
    assert code == 1 and "checksum mismatch" in err


@pytest.mark.parametrize("field,value", [("version", 7), ("om_ir_version", 9), ("genmode", 3), ("modeltype", 5),
                                         ("is_unknow_model", 1), ("length", 12345), ("platform_type", 2)])
def test_header_fields_are_checked(om_run, tmp_path, cnn_om, field, value):
    code, _, err = run_om_bytes(om_run, tmp_path, edit(cnn_om, header=lambda h: setattr(h, field, value)))
    assert code == 1 and "E30001" in err and "Traceback" not in err


def test_files_that_are_not_regular_files_are_refused_without_blocking(om_run, tmp_path):
    """Finding 7: /dev/zero exhausted memory, a FIFO blocked forever."""
    fifo = tmp_path / "fifo.om"
    os.mkfifo(fifo)
    for path in (str(fifo), "/dev/zero", str(tmp_path)):
        code, _, err = om_run("--model", path)
        assert code == 1 and "E30001" in err and "regular file" in err


def test_input_files_are_checked_before_arrays_are_allocated(om_run, tmp_path, cnn_om):
    claims = tmp_path / "claims.npy"   # a header promising 2^40 floats over a few bytes of data
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }"
    header += " " * (63 - len(header) % 64) + "\n"
    claims.write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + b"\0" * 16)
    fifo = tmp_path / "in.npy"
    os.mkfifo(fifo)
    for spec in (str(claims), str(fifo), "/dev/zero"):
        code, _, err = run_om_bytes(om_run, tmp_path, cnn_om, "--input", spec)
        assert code == 1 and "E30002" in err, err


@pytest.mark.parametrize("config,expect", [('{"nop_ns": NaN}', "not a JSON number"), ('{"nop_ns": 1e300}', "at most"),
                                           ('{"h2d_gbps": 0}', "> 0"), ('{"nop_ns": true}', "a number"),
                                           ("[" * 100000 + "]" * 100000, "not valid JSON")])
def test_sim_config_values_are_checked(om_run, tmp_path, cnn_om, config, expect):
    cfg = tmp_path / "cfg.json"
    cfg.write_text(config)
    code, _, err = run_om_bytes(om_run, tmp_path, cnn_om, "--sim-config", str(cfg))
    assert code == 1 and "E30002" in err and expect in err


@pytest.mark.parametrize("args", [["--seed", "-1"], ["--rtol", "nan"], ["--atol", "-1"], ["--loop", "0"],
                                  ["--nosuch"]])
def test_bad_flag_values_are_one_coded_line(om_run, tmp_path, cnn_om, args):
    code, out, err = run_om_bytes(om_run, tmp_path, cnn_om, *args)
    assert code == 1 and err.startswith("[ERROR] E30002") and "Usage:" not in out + err


def test_profile_and_summary_paths_that_cannot_be_written(om_run, tmp_path, cnn_om):
    a_file = tmp_path / "f.txt"
    a_file.write_text("keep")
    for args in (["--profile", str(a_file)], ["--summary-json", str(tmp_path)],
                 ["--summary-json", str(a_file / "x.json")]):
        code, _, err = run_om_bytes(om_run, tmp_path, cnn_om, *args)
        assert code == 1 and "E13004" in err, (args, err)
    assert a_file.read_text() == "keep"


def test_internal_faults_are_one_line_and_debug_shows_the_traceback(om_run, tmp_path, cnn_om, monkeypatch):
    from om_run.sim import host

    def broken(*a, **k):
        raise RuntimeError("simulated bug")
    monkeypatch.setattr(host.Simulation, "run", broken)
    code, _, err = run_om_bytes(om_run, tmp_path, cnn_om)
    assert code == 1 and "E19999" in err and "simulated bug" in err and "Traceback" not in err
    monkeypatch.setenv("ATC_PY_DEBUG", "1")
    code, _, _ = run_om_bytes(om_run, tmp_path, cnn_om)
    assert code != 0


def test_json_dump_and_model_info_survive_wrong_attribute_types(atc, tmp_path, cnn_om):
    def mutate(md):
        md.attr["memory_size"].Clear()
        md.attr["memory_size"].list.i.extend([1, 2])
        md.attr["om_info_list"].Clear()
        md.attr["om_info_list"].s = b"x"
    p = tmp_path / "m.om"
    p.write_bytes(edit(cnn_om, mutate))
    code, out, _ = atc("--mode=6", f"--om={p}")
    assert code == 0 and "Display Model Info end" in out
    code, out, _ = atc("--mode=1", f"--om={p}", f"--json={tmp_path / 'm.json'}")
    assert code == 0 and json.loads((tmp_path / "m.json").read_text())["name"]


# -- mutants that once reached Python exceptions (E30004 "the kernel failed: ValueError", E19999
# ZeroDivisionError) or MemoryError (E30006): each is now one E30001 from the validator naming the op and field
def _zero_list(attr):
    for j in range(len(attr.list.i)):
        attr.list.i[j] = 0


def _both_ends(md, op_type: str, i: int, change):
    """The op's input i and the output of the op it reads, changed alike (the Const keeps its weight bytes)."""
    op = op_named(md, op_type)
    name, k = op.input[i].rsplit(":", 1)
    src = next(o for o in md.graph[0].op if o.name == name)
    change(op.input_desc[i])
    change(src.output_desc[int(k)])


def _matmul_k(md, k: int):
    """K of the MatMul set in both inputs (and their producers' outputs): descriptors that agree with each other,
    not with the tiling."""
    for i in (0, 1):
        _both_ends(md, "MatMulV2", i, lambda d: d.shape.dim.__setitem__(1, k))


@pytest.mark.parametrize("mutate,expect", [
    (lambda md: op_named(md, "MatMulV2").input_desc[0].shape.dim.__setitem__(1, 0), "input 0 is described as"),
    (lambda md: _both_ends(md, "MatMulV2", 0, lambda d: d.shape.dim.__setitem__(1, 0)), "inner dimensions differ"),
    (lambda md: _matmul_k(md, 0), "field k is 32; its descriptors give 0"),
    (lambda md: op_named(md, "MatMulV2").output_desc[0].shape.dim.__setitem__(1, 0), "output 0 descriptor"),
    (lambda md: op_named(md, "SoftmaxV2").output_desc[0].shape.dim.__setitem__(1, 2), "output 0 descriptor"),
    # a 5HD output (passes/formats.py): its shape no longer what its origin shape gives, named as such
    (lambda md: op_named(md, "Conv2D").output_desc[0].shape.dim.__setitem__(2, 2), "output 0: a NC1HWC0 tensor"),
    (lambda md: op_named(md, "SoftmaxV2").output_desc[0].shape.dim.append(1), "output 0 descriptor"),
    (lambda md: op_named(md, "Conv2D").input_desc[0].shape.dim.append(1), "input 0: a NC1HWC0 tensor"),  # 5HD
    (lambda md: _both_ends(md, "MatMulV2", 0, lambda d: d.shape.dim.append(1)), "2-D"),
    (lambda md: _zero_list(op_named(md, "Conv2D").attr["strides"]), "attribute strides [0, 0, 0, 0]"),
    # fuzz seed 37: a bias descriptor of no elements reached the kernel's reshape (E30004 ValueError): the input
    # no longer its producer's output...
    (lambda md: op_named(md, "Conv2D").input_desc[2].shape.dim.__setitem__(0, 0), "input 2 is described as"),
    # ...and both changed alike: the kernel's bias must still hold one value per output channel
    (lambda md: _both_ends(md, "Conv2D", 2, lambda d: d.shape.dim.__setitem__(0, 0)), "bias [0] has 0 elements"),
    (lambda md: _both_ends(md, "MatMulV2", 2, lambda d: d.shape.dim.append(2)), "elements; the output has"),
    (lambda md: _zero_list(op_named(md, "MaxPoolV3").attr["strides"]), "attribute strides [0, 0, 0, 0]"),
    (lambda md: md.attr["memory_size"].__setattr__("i", 2**32 - 1), "memory_size 4294967295 is far beyond"),
    (lambda md: md.attr["memory_size"].__setattr__("i", 20 << 30), "memory_size 21474836480 is far beyond"),
    (lambda md: md.attr["precision_mode"].list.s.extend([b"force_fp16"]), "precision_mode must be a string"),
])
def test_descriptors_tiling_and_sizes_the_kernels_trust_are_checked(om_run, tmp_path, cnn_om, mutate, expect):
    code, _, err = run_om_bytes(om_run, tmp_path, edit(cnn_om, mutate))
    assert code == 1 and err.startswith("[ERROR] E30001") and expect in err, err
    assert "m.om" in err and not re.search(r"\b\w+Error\b", err), err   # the validator's line, no Python exception


def _kernel_of_op(mtd, md_ops, name: str):
    """The KernelDef of the op's task (an ALL_KERNEL task keeps it in kernel_with_handle)."""
    op_id = next(op.id for op in md_ops if op.name == name)
    return next(kernel_of(t) for t in mtd.task if kernel_of(t) is not None and kernel_of(t).context.op_index == op_id)


def _tiling_offset(k) -> int:
    slot = k.context.args_format.split("{").index("t}") - 1
    return int.from_bytes(k.args[8 * slot:8 * slot + 8], "little")


def _set_tiling_word(cnn_om, name: str, byte: int, value: int):
    ops = ge.ModelDef.FromString(OmDoc(cnn_om).get(0, pt.MODEL_DEF)).graph[0].op

    def mutate(mtd):
        k = _kernel_of_op(mtd, ops, name)
        args = bytearray(k.args)
        pos = _tiling_offset(k) + byte
        args[pos:pos + 8] = value.to_bytes(8, "little")
        k.args = bytes(args)
    return mutate


def _cut_tiling(mtd):
    k = first_kernel(mtd).kernel
    k.args = k.args[:_tiling_offset(k) + 4]


@pytest.mark.parametrize("field_byte,value,expect", [(16, 0, "field k is 0; its descriptors give 32"),
                                                      (8, 2**62, "field m is 4611686018427387904"),
                                                      (0, 2**64 - 1, "field batch is 18446744073709551615")])
def test_static_tiling_data_must_be_what_the_descriptors_give(om_run, tmp_path, cnn_om, field_byte, value, expect):
    """The MatMul kernel takes m, k, n from its tiling (MATMUL_TILING: batch, m, k, n as u64 from byte 0)."""
    code, _, err = run_om_bytes(om_run, tmp_path, edit(cnn_om, tasks=_set_tiling_word(cnn_om, "fc", field_byte, value)))
    assert code == 1 and err.startswith("[ERROR] E30001") and "op 'fc' (MatMulV2)" in err and expect in err, err


@pytest.mark.parametrize("mutate,expect", [
    (_cut_tiling, "its kernel reads"),
    (lambda mtd: _set_arg(mtd, 0, 2**64 - 1), "outside device memory"),
    (lambda mtd: _set_arg(mtd, 3, 2**64 - 1), "outside device memory"),
    (lambda mtd: _set_arg(mtd, 4, 2**64 - 1), "tiling offset 18446744073709551615"),
])
def test_short_tiling_and_all_ones_args_slots_are_refused(om_run, tmp_path, cnn_om, mutate, expect):
    code, _, err = run_om_bytes(om_run, tmp_path, edit(cnn_om, tasks=mutate))
    assert code == 1 and err.startswith("[ERROR] E30001") and expect in err, err


def test_validated_models_still_run_and_keep_their_memory_size(om_run, tmp_path, cnn_om):
    """The new checks accept what atc-py writes: a memory_size a little above what the tasks address is fine."""
    code, out, err = run_om_bytes(om_run, tmp_path, edit(cnn_om, lambda md: md.attr["memory_size"].__setattr__(
        "i", md.attr["memory_size"].i + 4096)))
    assert code == 0 and "finished successfully" in out, err


def test_an_attention_of_empty_batch_is_refused_at_load(om_run, tmp_path, sk_om):
    """Fuzz seed 38: IncreFlashAttention's descriptors all given batch 0 (consistent with each other) reached its
    device tiling, whose longest-sequence search had nothing to search (E30004 ValueError)."""
    def mutate(md):
        op = op_named(md, "IncreFlashAttention")
        for d in list(op.input_desc) + list(op.output_desc):
            d.shape.dim[0] = 0
    code, _, err = run_om_bytes(om_run, tmp_path, edit(sk_om, mutate), "--no-compute")
    assert code == 1 and err.startswith("[ERROR] E30001") and "op 'ifa' (IncreFlashAttention)" in err, err
    assert not re.search(r"\b\w+Error\b", err), err


def test_the_attention_kernels_inference_refuses_an_empty_dimension():
    """What the load check above relies on once the descriptors agree with their producers: IncreFlashAttention's
    inference (its device tiling searches the sequence lengths of B >= 1 batches)."""
    from atc_py.ir.graph import Node, TensorDesc, Value
    from atc_py.ops import get_op
    from atc_py.ops.core.base import OpError
    spec = get_op("IncreFlashAttention")
    node = Node("ifa", "IncreFlashAttention", {"num_heads": 2, "input_layout": "BNSD"})
    descs = [TensorDesc((0, 2, 1, 16), "float16"), TensorDesc((0, 2, 32, 16), "float16"),
             TensorDesc((0, 2, 32, 16), "float16"), TensorDesc((0,), "int64")]
    node.inputs = [Value(f"in{i}", d, None) for i, d in enumerate(descs)]
    with pytest.raises(OpError, match="empty dimension"):
        spec.infer(node)


def test_value_dependent_kernels_check_the_shapes_their_file_tiling_gives():
    """Fuzz seed 39: a static Cumsum's tiling data (its tiling reads the axis value, so the load cannot recompute
    it) claimed 4095 rows of a 4-element input and reached numpy's reshape (E30004 ValueError). The kernels whose
    tiling depends on values check the shapes in it against their operands."""
    import numpy as np

    from atc_py.ir.graph import TensorDesc
    from atc_py.ops import get_op
    from atc_py.ops.core.base import OpError, TilingResult
    from atc_py.ops.core.execute import launch
    from atc_py.ops.scan_mask import CUMSUM_TILING
    x = np.arange(4, dtype=np.float32)
    bad = CUMSUM_TILING.pack(outer=4095, axis_len=4, inner=1, rows_per_block=1, axis=0, exclusive=0, reverse=0)
    good = CUMSUM_TILING.pack(outer=1, axis_len=4, inner=1, rows_per_block=1, axis=0, exclusive=0, reverse=0)
    spec, out = get_op("Cumsum"), [TensorDesc((4,), "float32")]
    with pytest.raises(OpError, match=r"describes x as \[16380\], but it is \[4\]"):
        launch(spec, TilingResult(1, 0, bad), {}, out, [x, np.array([0], np.int64)])
    (y,) = launch(spec, TilingResult(1, 0, good), {}, out, [x, np.array([0], np.int64)])
    assert y.tolist() == [0, 1, 3, 6]
