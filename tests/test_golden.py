"""Golden files: the --mode=1 JSON (MODEL_DEF + tasks, every sub-model) of each sample.

Regenerate with `make golden` (pytest --update-golden) and review the diff.
"""
import json

import pytest

from atc_py.om import read_om
from atc_py.om.json_dump import om_file_to_json

from .conftest import MODELS, ROOT, compile_om

GOLDEN = ROOT / "tests" / "golden"
# (sample, soc, tiling_schedule_optimize)
CASES = [("small_cnn", "Ascend910B1", "0"), ("small_transformer", "Ascend910B1", "0"), ("rnn_loop", "Ascend910B1", "0")] + [
    (name, soc, sink) for name in ("decoder_step", "superkernel", "custom_op") for soc in ("Ascend910B1", "Ascend310P3")
    for sink in ("0", "1")]


def dump(name: str, soc: str, sink: str) -> str:
    from .conftest import PLUGIN
    om = read_om(compile_om(MODELS / f"{name}.onnx", soc=soc, **{"ge.tiling_schedule_optimize": sink,
                                                                  "op_plugin": str(PLUGIN)}))
    return json.dumps(om_file_to_json(om), indent=1) + "\n"


@pytest.mark.parametrize("name,soc,sink", CASES)
def test_golden(name, soc, sink, update_golden):
    path = GOLDEN / f"{name}.{soc}.sink{sink}.json"
    text = dump(name, soc, sink)
    if update_golden:
        path.write_text(text)
    assert path.exists(), f"{path} is missing: run `make golden`"
    assert text == path.read_text(), f"{path.name} changed: review, then `make golden`"
