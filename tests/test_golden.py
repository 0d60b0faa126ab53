"""Golden files: the --mode=1 JSON (MODEL_DEF + tasks) of every sample compiled for Ascend910B1.

Regenerate with `make golden` (pytest --update-golden) and review the diff.
"""
import json

import pytest

from atc_py.om import read_om
from atc_py.om import partitions as pt
from atc_py.om.json_dump import om_to_json
from atc_py.proto import ge_ir_pb2 as ge
from atc_py.proto import task_pb2

from .conftest import MODELS, ROOT, SAMPLES, compile_om

GOLDEN = ROOT / "tests" / "golden"
SOCS = ["Ascend910B1"]


def dump(name: str, soc: str) -> str:
    om = read_om(compile_om(MODELS / f"{name}.onnx", soc=soc))
    md = ge.ModelDef.FromString(om.models[0].get(pt.MODEL_DEF))
    mtd = task_pb2.ModelTaskDef.FromString(om.models[0].get(pt.TASK_INFO))
    return json.dumps(om_to_json(md, mtd), indent=1, sort_keys=False) + "\n"


@pytest.mark.parametrize("soc", SOCS)
@pytest.mark.parametrize("name", SAMPLES)
def test_golden(name, soc, update_golden):
    path = GOLDEN / f"{name}.{soc}.json"
    text = dump(name, soc)
    if update_golden:
        path.write_text(text)
    assert path.exists(), f"{path} is missing: run `make golden`"
    assert text == path.read_text(), f"{path.name} changed: review, then `make golden`"
