"""TensorFlow GraphDefs built and run in process, as the TensorFlow frontend tests do (fp32 kernels, Ascend910B1)."""
from __future__ import annotations

import atc_py
from tests.helpers.om_files import simulate_om

OPTS = {"ge.socVersion": "Ascend910B1", "ge.frameworkType": "3", "ge.exec.precision_mode": "must_keep_origin_dtype"}


def build_and_run_tf(tmp_path, model, inputs, **opts):
    """Compile a GraphDef (a path or a message) and run it: (the build result, the outputs); no hazard allowed."""
    result = atc_py.build(model, {**OPTS, **opts})
    outs, stats = simulate_om(result.om, inputs, tmp_path)
    assert stats.hazards == []
    return result, outs
