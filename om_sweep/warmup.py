"""Imported by the fork server that job processes are forked from: everything a job needs that the tools load
lazily (the pipeline, both frontends, the op registry, the SoC files, first-use caches, om-run serve's modules) is
loaded once here instead of in every job (~0.25 s a job otherwise, against ~10-50 ms of work)."""
from __future__ import annotations

import os
import tempfile


def warm_up() -> None:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper

    import atc_py.frontend.onnx  # noqa: F401
    import atc_py.frontend.tensorflow.converter  # noqa: F401
    import atc_py.pipeline  # noqa: F401
    import om_run.serve.capacity  # noqa: F401
    import om_run.serve.command  # noqa: F401
    import om_run.serve.results  # noqa: F401
    import om_run.serve.scheduler  # noqa: F401
    import om_run.serve.session  # noqa: F401
    import om_run.serve.step_pricer  # noqa: F401
    import om_run.serve.workload  # noqa: F401
    from atc_py.ops.core.registry import all_ops
    from atc_py.platform.soc import load_soc, supported_socs
    from om_run.load.loader import load_model
    from om_run.run.simulate import simulate
    from om_run.sim.profile import RuntimeProfile

    from . import serve_job  # noqa: F401

    all_ops()
    for soc in supported_socs():
        load_soc(soc)
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "warmup",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    result = atc_py.build(model, {"ge.socVersion": "Ascend910B1", "om_name": "warmup"})
    with tempfile.TemporaryDirectory(prefix="om-sweep-warmup-") as tmp:
        path = os.path.join(tmp, "warmup.om")
        result.save(path)
        simulate(load_model(path), RuntimeProfile(), [np.ones((1, 4), np.float32)], 1, True)


try:
    warm_up()
except Exception:  # noqa: BLE001 -- only speed is at stake: jobs load what they need themselves
    pass

import gc  # noqa: E402

gc.collect()
gc.freeze()     # job processes' collections skip the server's objects: fewer copy-on-write page copies per job
