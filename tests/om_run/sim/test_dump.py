"""Operator dumps: om-run --dump DIR / --acl_json (ACL's dump section) write each dumped operator's tensors as .npy
under CANN's {op_type}.{op_name}.{task_id}.{stream_id}.{timestamp} names, with an index mapping each file to its
task, stream, dtype, shape and the framework ops it covers; bad configurations are one E30002 each."""
import json

import numpy as np

from atc_py.ir.formats import from_device
from tests.helpers import MODELS, compile_om


def setup(tmp_path):
    om = tmp_path / "cnn.om"
    om.write_bytes(compile_om(MODELS / "small_cnn.onnx"))
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    return om


def test_dump_every_operator_with_its_index(om_run, tmp_path):
    om = setup(tmp_path)
    code, out, err = om_run(str(om), "--input", str(tmp_path / "x.npy"), "--dump", str(tmp_path / "d"),
                            "--output", str(tmp_path / "o"))
    assert code == 0, out + err
    index = json.loads((tmp_path / "d" / "small_cnn" / "dump_index.json").read_text())["dumps"]
    assert len(index) >= 8 and all(e["kind"] == "output" for e in index)
    for e in index:
        assert e["file"].startswith(f"{e['op_type']}.") and f".{e['task']}.{e['stream']}.{e['timestamp']}." in e["file"]
        arr = np.load(tmp_path / "d" / "small_cnn" / e["file"])
        assert list(arr.shape) == e["shape"] and str(arr.dtype) == e["dtype"] and e["original_names"]
    covered = {n for e in index for n in e["original_names"]}
    assert {"conv1", "fc", "bn1", "relu1", "residual_add"} <= covered      # fused and folded ops keep their names
    last = max(index, key=lambda e: e["task"])
    np.testing.assert_array_equal(np.load(tmp_path / "d" / "small_cnn" / last["file"]),
                                  np.load(tmp_path / "o" / "small_cnn_output_0.npy"))


def test_an_acl_json_dump_list_and_mode(om_run, tmp_path):
    om = setup(tmp_path)
    acl = tmp_path / "acl.json"
    acl.write_text(json.dumps({"dump": {"dump_path": str(tmp_path / "d"), "dump_mode": "all",
                                       "dump_list": [{"model_name": "small_cnn", "layer": ["conv1"]}]}}))
    code, out, err = om_run(str(om), "--input", str(tmp_path / "x.npy"), "--acl_json", str(acl))
    assert code == 0, out + err
    index = json.loads((tmp_path / "d" / "small_cnn" / "dump_index.json").read_text())["dumps"]
    assert {e["op_name"] for e in index} == {"conv1"} and {e["kind"] for e in index} == {"input", "output"}
    x = np.load(tmp_path / "x.npy")
    first_in = next(e for e in index if e["kind"] == "input" and e["index"] == 0)
    # the convolution reads its input as the device holds it, NC1HWC0: 3 channels padded to C0 = 16, and the
    # index says how to convert it back (what msit's compare does with a device dump)
    dumped = np.load(tmp_path / "d" / "small_cnn" / first_in["file"])
    assert first_in["format"] == "NC1HWC0" and first_in["origin_shape"] == list(x.shape)
    assert dumped.shape == (1, 1, 32, 32, 16) and not dumped[..., 3:].any()
    np.testing.assert_array_equal(from_device(dumped, "NC1HWC0", tuple(x.shape), first_in["origin_format"]), x)
    weight = next(e for e in index if e["kind"] == "input" and e["index"] == 1)
    assert weight["format"] == "FRACTAL_Z"


def test_bad_dump_configurations_are_one_error_each(om_run, tmp_path):
    om = setup(tmp_path)
    acl = tmp_path / "acl.json"
    cases = [({"dump": {"dump_path": str(tmp_path / "d"), "dump_list": [{"layer": ["no_such_op"]}]}},
              "names no op of the model"),
             ({"dump": {"dump_path": str(tmp_path / "d"), "dump_mode": "everything"}}, "dump_mode"),
             ({"dump": {}}, "dump_path"),
             ({"dump": {"dump_path": str(tmp_path / "d"), "dump_list": [{"model_name": "other"}]}}, "names model")]
    for doc, message in cases:
        acl.write_text(json.dumps(doc))
        code, out, err = om_run(str(om), "--input", str(tmp_path / "x.npy"), "--acl_json", str(acl))
        assert code == 1 and "E30002" in err and message in err and "Traceback" not in out + err, (doc, err)
    code, out, err = om_run(str(om), "--dump", str(tmp_path / "d"), "--acl_json", str(acl))
    assert code == 1 and "both say where to dump" in err
    code, out, err = om_run(str(om), "--acl_json", str(tmp_path))
    assert code == 1 and "not a regular file" in err
