"""The pass table (atc_py/options/pass_table.py) is the one home of a graph pass: each row's function resolves, the
build runs it from the table (switched off, it is not called and its summary count is 0), and the GE fusion pass
names of its row switch it through a --fusion_switch_file."""
from __future__ import annotations

import inspect
import json
from collections import defaultdict

import pytest

import atc_py
from atc_py.cli import flags as cmdline
from atc_py.options.build_options import BuildOptions
from atc_py.options.pass_table import MODEL, OPTIMIZATION_PASSES, PASSES, PHASES
from atc_py.options.precision import fusion_switches
from atc_py.passes import optimize as optimize_module
from atc_py.passes.optimize import PassInputs, resolve
from tests.helpers import MODELS

SOC = {"ge.socVersion": "Ascend910B1"}
ORIGIN = {**SOC, "ge.exec.precision_mode": "must_keep_origin_dtype"}   # no Casts: every pass may be off alone
CNN = str(MODELS / "small_cnn.onnx")
# a sub-switch: no function of its own, it is an argument of the pass sharing its function
SUB_SWITCHES = {"aipp_conv_pool_fusion": ("aipp_conv_fusion", "pool_fusion")}


@pytest.mark.parametrize("name", list(PASSES))
def test_each_rows_function_resolves_and_takes_what_the_row_gives(name):
    row = PASSES[name]
    fn = resolve(row.function)
    assert callable(fn) and fn.__name__ == row.function.rpartition(":")[2]
    assert row.function.startswith(("atc_py.passes.", "atc_py.autofuse.")), "at or below the passes layer"
    params = inspect.signature(fn).parameters
    fields = set(PassInputs.__dataclass_fields__)
    assert set(row.takes) <= fields and set(row.takes) <= set(params), row.takes
    assert row.phase in PHASES and (row.phase != MODEL or row.stat != "" or name in SUB_SWITCHES)


def test_the_switch_names_and_help_are_the_rows():
    assert OPTIMIZATION_PASSES == tuple(PASSES)
    assert all(name in cmdline.FLAGS["optimization_switch"].help for name in PASSES)
    stats = [p.stat for p in PASSES.values() if p.stat]
    assert len(stats) == len(set(stats)), "one summary key per pass"


def _spy(monkeypatch) -> dict[str, list[dict]]:
    """Records every call of a pass function the build resolves from the table: reference -> keyword arguments."""
    calls: dict[str, list[dict]] = defaultdict(list)
    real = optimize_module.resolve

    def spying(reference):
        fn = real(reference)

        def called(*args, **kwargs):
            calls[reference].append(kwargs)
            return fn(*args, **kwargs)
        return called
    monkeypatch.setattr(optimize_module, "resolve", spying)
    return calls


def test_every_pass_runs_from_the_table(monkeypatch):
    calls = _spy(monkeypatch)
    res = atc_py.build(CNN, SOC)
    assert {p.function for p in PASSES.values()} <= set(calls)
    assert {p.stat for p in PASSES.values() if p.stat} <= set(res.summary)


@pytest.mark.parametrize("name", [n for n in PASSES if n not in SUB_SWITCHES])
def test_a_pass_switched_off_is_skipped_and_counts_zero(name, monkeypatch):
    row = PASSES[name]
    calls = _spy(monkeypatch)
    res = atc_py.build(CNN, {**ORIGIN, "optimization_switch": f"{name}:off"})
    assert row.function not in calls, f"{name} ran while switched off"
    assert res.summary[row.stat] == 0


@pytest.mark.parametrize("name", list(SUB_SWITCHES))
def test_a_sub_switch_reaches_its_pass(name, monkeypatch):
    parent, keyword = SUB_SWITCHES[name]
    assert PASSES[name].function == PASSES[parent].function and keyword in PASSES[name].takes
    for state in (True, False):
        calls = _spy(monkeypatch)
        atc_py.build(CNN, {**SOC, "optimization_switch": f"{name}:{'on' if state else 'off'}"})
        assert [kw[keyword] for kw in calls[PASSES[parent].function]] == [state]


@pytest.mark.parametrize("name", [n for n, p in PASSES.items() if p.fusion])
def test_the_ge_fusion_names_of_a_row_switch_it(name, tmp_path):
    for kind, ge_name in PASSES[name].fusion:
        as_json = tmp_path / f"{ge_name}.json"
        as_json.write_text(json.dumps({"Switch": {kind: {ge_name: "off"}}}))
        as_text = tmp_path / f"{ge_name}.cfg"
        as_text.write_text(f"{ge_name}:off\n")
        for path in (as_json, as_text):
            assert fusion_switches(str(path)) == {name: False}
            opts = BuildOptions.parse({**SOC, "fusion_switch_file": str(path)})
            assert not opts.switch(name) and all(opts.switch(other) for other in PASSES if other != name)


def test_a_ge_fusion_name_switches_one_pass_only():
    names = [(kind, ge) for p in PASSES.values() for kind, ge in p.fusion]
    assert len(names) == len(set(names))


def test_all_off_switches_every_pass_with_a_ge_name(tmp_path):
    f = tmp_path / "all.cfg"
    f.write_text("ALL:off\n")
    assert fusion_switches(str(f)) == {n: False for n, p in PASSES.items() if p.fusion}
