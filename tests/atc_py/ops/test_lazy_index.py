"""The lazy op/adapter registries (a compile imports only the op and adapter modules its model uses):
the generated indexes match the eager registries, lazy lookups give the very classes the eager load does,
and a small compile leaves the unused families unimported."""
from __future__ import annotations

import json
import subprocess
import sys

from tests.helpers import ROOT


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return out.stdout


def test_checked_in_indexes_match_a_fresh_eager_import():
    code = ("import sys; sys.path.insert(0, 'tools'); import gen_lazy_index as g, json; "
            "print(json.dumps(g.render(*g.compute())))")
    ops_text, adapters_text = json.loads(_run(code))
    assert (ROOT / "atc_py/ops/core/op_index.py").read_text() == ops_text, "run python tools/gen_lazy_index.py"
    assert (ROOT / "atc_py/frontend/onnx/adapter_index.py").read_text() == adapters_text, \
        "run python tools/gen_lazy_index.py"


def test_lazy_lookups_give_the_eager_registrations():
    # every key looked up lazily first (in reverse order, so families load out of their eager order), then the
    # eager load: each lookup must have returned the object the eager registries end with
    code = """
import json
from atc_py.ops.core import registry
from atc_py.ops.core.op_index import OP_MODULES
from atc_py.frontend.onnx.adapter import ADAPTERS
from atc_py.frontend.onnx.adapter_index import ADAPTER_MODULES
from atc_py.frontend.onnx.adapters import load_all
ops = {t: registry.get_op(t) for t in sorted(OP_MODULES, reverse=True)}
ads = {k: ADAPTERS[k] for k in sorted(ADAPTER_MODULES, reverse=True)}
unknown = [registry.get_op("NoSuchOp"), ADAPTERS.get(("", "NoSuchOp")), ("", "NoSuchOp") in ADAPTERS,
           ("", "Relu") in ADAPTERS]
eager = registry.all_ops()
load_all()
print(json.dumps({"ops_same": all(eager[t] is s for t, s in ops.items()), "ops_all": sorted(eager) == sorted(ops),
                  "ads_same": all(dict.get(ADAPTERS, k) is c for k, c in ads.items()),
                  "ads_all": sorted(dict(ADAPTERS)) == sorted(ads), "unknown": unknown}))
"""
    got = json.loads(_run(code))
    assert got == {"ops_same": True, "ops_all": True, "ads_same": True, "ads_all": True,
                   "unknown": [None, None, False, True]}


def test_a_small_compile_imports_only_the_families_it_uses(tmp_path):
    code = f"""
import sys, json
from atc_py.cli.main import run
from tests.helpers import ROOT
code = run(["--model=models/small_cnn.onnx", "--framework=5", "--output={tmp_path}/m", "--soc_version=Ascend910B1"])
assert code == 0, code
print(json.dumps(sorted(m for m in sys.modules if m.startswith(("atc_py.ops.", "atc_py.frontend.onnx.adapters.")))))
"""
    loaded = set(json.loads(_run(code).splitlines()[-1]))
    assert (tmp_path / "m.om").is_file()
    assert "atc_py.ops.conv_pool" in loaded and "atc_py.frontend.onnx.adapters.nn" in loaded
    for unused in ("strings", "signal", "detection", "rnn", "losses", "window_ops", "trig", "bitwise"):
        assert f"atc_py.ops.{unused}" not in loaded
    for unused in ("signal", "sequence", "sequence_map", "losses", "recurrent", "optional", "training"):
        assert f"atc_py.frontend.onnx.adapters.{unused}" not in loaded
