"""What many tests share: the repository's paths, compiling a model in-process, and (in the modules of this
package) model builders, .om editing, sweep files, replayed command lines, reference decoders. Test modules take
what they share from here, never from each other; fixtures stay in tests/conftest.py."""
from __future__ import annotations

import pathlib

import atc_py

ROOT = pathlib.Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
DATA = TESTS / "data"
GOLDEN = TESTS / "golden"
MODELS = ROOT / "models"
PLUGIN = ROOT / "plugins" / "example_custom_ops.py"
SAMPLES = sorted(p.stem for p in MODELS.glob("*.onnx"))
ORT_SAMPLES = ["small_cnn", "small_transformer", "inception_block"]   # the others use the ascend/custom domains ORT cannot run
NODE_EXCLUSIONS = TESTS / "conformance" / "node_exclusions.txt"

ORIGIN_DTYPE = {"ge.exec.precision_mode": "must_keep_origin_dtype"}  # fp32 kernels vs fp32 references


def compile_om(model, soc="Ascend910B1", **options) -> bytes:
    opts = {"ge.socVersion": soc, **ORIGIN_DTYPE, "om_name": pathlib.Path(str(model)).stem if isinstance(model, (str, pathlib.Path)) else "m"}
    opts.update(options)
    return atc_py.build(str(model) if isinstance(model, pathlib.Path) else model, opts).om
