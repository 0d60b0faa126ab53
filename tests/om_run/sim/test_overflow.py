"""fp16 overflow location: atc-py --status_check=1 records the check, om-run (--check-overflow, or by default for such
a model) lists in execution order the operators whose outputs hold inf/NaN while their inputs are finite — the op
where a value left fp16's range, not the ones that inherit it — with the framework ops it covers."""
import json

import numpy as np

from tests.helpers.overflow_models import X, model, overflow_ops


def test_status_check_builds_locate_the_first_overflowing_op(atc, om_run, tmp_path):
    src = model(tmp_path / "m.onnx")
    np.save(tmp_path / "x.npy", X)
    code, out, err = atc(f"--model={src}", "--framework=5", f"--output={tmp_path / 'm'}", "--soc_version=Ascend910B1",
                         "--status_check=1", "--optimization_switch=autofuse:off")
    assert code == 0, out + err
    code, out, err = om_run(str(tmp_path / "m.om"), "--input", str(tmp_path / "x.npy"), "--summary-json",
                            str(tmp_path / "s.json"))
    assert code == 0, out + err
    assert "first task" in out and "scale_up (Mul)" in out
    ops = json.loads((tmp_path / "s.json").read_text())["overflow_ops"]
    assert [o["op_name"] for o in ops] == ["scale_up"]          # relu and add_one only inherit the inf
    assert ops[0]["original_names"] == ["scale_up"] and ops[0]["outputs"] == [0]



def test_a_fused_kernel_names_its_framework_ops_and_fp32_has_none(atc, om_run, tmp_path):
    src, ops = overflow_ops(atc, om_run, tmp_path, "f")
    assert len(ops) == 1 and ops[0]["op_type"] == "AscBackend"
    assert {"scale_up", "relu", "add_one"} <= set(ops[0]["original_names"])
    code, out, err = om_run(str(tmp_path / "f.om"), "--input", str(tmp_path / "x.npy"))   # not asked: not checked
    assert code == 0 and "overflow" not in out
    assert atc(f"--model={src}", "--framework=5", f"--output={tmp_path / 'w'}", "--soc_version=Ascend910B1",
               "--precision_mode=force_fp32", "--status_check=1")[0] == 0
    code, out, err = om_run(str(tmp_path / "w.om"), "--input", str(tmp_path / "x.npy"), "--summary-json",
                            str(tmp_path / "w.json"))
    assert code == 0 and "overflow" not in out and "overflow_ops" not in json.loads((tmp_path / "w.json").read_text())


def test_status_check_takes_0_or_1(atc, tmp_path):
    src = model(tmp_path / "m.onnx")
    code, out, err = atc(f"--model={src}", "--framework=5", f"--output={tmp_path / 'm'}", "--soc_version=Ascend910B1",
                         "--status_check=2")
    assert code != 0 and "E10006" in out + err
