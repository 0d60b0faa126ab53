"""The flag table (atc_py/options/flag_table.py) is the one home of a flag: each row reaches the command line's
syntax and value checks, its CheckFlags order, the GE option dict BuildOptions.parse reads, `--help` and the
generated reference page; a row added to the table (here by monkeypatching) shows up in all of them."""
from __future__ import annotations

import pytest

from atc_py.cli import flags as cmdline
from atc_py.cli import main as atc_main
from atc_py.common.errors import AtcError
from atc_py.options.build_options import BuildOptions
from atc_py.options.flag_table import FLAGS, Flag
from tests.helpers import MODELS
from tools import gen_docs

SOC = {"ge.socVersion": "Ascend910B1"}
COMMAND_LINE_ONLY = {"mode", "model", "output", "om", "json", "check_report", "log", "display_model_info", "help"}


class _Reads(dict):
    """An option dict that remembers which keys were read."""

    def __init__(self, *args):
        super().__init__(*args)
        self.read: set[str] = set()

    def get(self, key, default=None):
        self.read.add(key)
        return super().get(key, default)

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)


def test_every_row_with_a_ge_option_reaches_the_ge_dict_under_it():
    given = {name: f"value of {name}" for name in FLAGS}
    options = atc_main._options(given, [])
    for flag in FLAGS.values():
        if flag.ge_key:
            assert options[flag.ge_key] == f"value of {flag.name}", flag.name
    assert {f.name for f in FLAGS.values() if not f.ge_key} == COMMAND_LINE_ONLY
    assert len({f.ge_key for f in FLAGS.values() if f.ge_key}) == len(FLAGS) - len(COMMAND_LINE_ONLY)


def test_every_ge_option_of_the_table_is_read_by_build_options():
    options = _Reads(SOC)
    BuildOptions.parse(options)
    assert {f.ge_key for f in FLAGS.values() if f.ge_key} <= options.read


def test_defaults_reach_the_ge_dict_when_a_flag_is_not_given():
    options = atc_main._options({}, [])
    assert options["ge.bufferOptimize"] == "l2_optimize" and options["ge.tiling_schedule_optimize"] == "0"
    assert options["ge.buildGraphMode"] == "offline" and options["om_name"] == ""


def test_every_row_is_in_the_help_and_the_reference_page():
    text, page = cmdline.usage(), gen_docs.atc_py_flags()
    for flag in FLAGS.values():
        assert f"--{flag.name} " in text and flag.help in text, flag.name
        assert f"| `--{flag.name}` |" in page, flag.name
        if flag.ge_key:
            assert f"`{flag.ge_key}`" in page, flag.name
    assert f"{len(FLAGS)} flags." in page


def test_every_check_of_a_row_runs_in_the_check_order():
    checked = {name for name, flag in FLAGS.items() if flag.check is not None}
    assert checked == set(atc_main.CHECK_ORDER)
    assert set(atc_main.PRECHECK_ORDER) <= checked


@pytest.mark.parametrize("name", [n for n, f in FLAGS.items() if f.allowed])
def test_a_value_outside_a_rows_range_is_its_rows_error(name):
    flag = FLAGS[name]
    with pytest.raises(AtcError) as exc:
        cmdline.parse([f"--{name}=nosuchvalue"])
    assert exc.value.code == flag.range_code
    for value in flag.allowed:
        cmdline.check(name, value)


@pytest.mark.parametrize("name, key", [("enable_small_channel", "ge.enableSmallChannel"),
                                       ("status_check", "ge.status_check"), ("op_debug_level", "ge.opDebugLevel")])
def test_the_python_api_and_the_command_line_refuse_a_range_alike(name, key):
    with pytest.raises(AtcError) as api:
        BuildOptions.parse({**SOC, key: "7"})
    with pytest.raises(AtcError) as cli:
        cmdline.parse([f"--{name}=7"])
    assert str(api.value) == str(cli.value)


@pytest.mark.parametrize("text", ["-2", "+5", "1e3", " 5", "abc"])
def test_the_lower_limit_is_one_check_on_both_paths(text, tmp_path):
    """--static_model_ops_lower_limit: the command line checks it in ATC's order (before the SoC is loaded), the
    Python API in BuildOptions.parse, with one function: the same error either way."""
    with pytest.raises(AtcError) as api:
        BuildOptions.parse({**SOC, "ge.exec.static_model_ops_lower_limit": text})
    given = {"framework": "5", "model": str(MODELS / "small_cnn.onnx"), "output": str(tmp_path / "m"),
             "soc_version": "Ascend999", "static_model_ops_lower_limit": text}
    with pytest.raises(AtcError) as cli:
        atc_main._check_flags(given)
    assert str(api.value) == str(cli.value) and "--static_model_ops_lower_limit" in str(cli.value)
    assert BuildOptions.parse({**SOC, "ge.exec.static_model_ops_lower_limit": "-1"}).static_ops_lower_limit == -1


def test_a_row_added_to_the_table_shows_up_everywhere(monkeypatch, capsys):
    row = Flag("zz_test_knob", help="A knob only this test has", ge_key="ge.zzTestKnob", allowed=("on", "off"))
    monkeypatch.setitem(FLAGS, row.name, row)
    assert atc_main.run(["--help"]) == 0
    out = capsys.readouterr().out
    assert "--zz_test_knob" in out and "A knob only this test has" in out
    given = cmdline.parse(["--zz_test_knob", "off", "--soc_version=Ascend910B1"])
    assert atc_main._options(given, [])["ge.zzTestKnob"] == "off"
    assert cmdline.parse(["--zz_test=on"]) == {"zz_test_knob": "on"}      # a unique prefix of its name
    with pytest.raises(AtcError, match=r"E10001.*\[off\] \[on\]"):
        cmdline.parse(["--zz_test_knob=maybe"])
    page = gen_docs.atc_py_flags()
    assert "| `--zz_test_knob` |" in page and "`ge.zzTestKnob`" in page
