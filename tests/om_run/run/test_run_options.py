"""om-run's flags parsed once into RunOptions (om_run/run/options.py): typed values, E30002 for bad ones."""
import dataclasses

import pytest

from atc_py.common.errors import AtcError
from om_run.run.options import (
    GearFlag,
    InputFiles,
    RunOptions,
    parse_gear,
    parse_named_shapes,
    run_options,
)
from om_run.sim.profile import RuntimeProfile

DEFAULTS = dict(model_arg="m.om", model_opt=None, input_spec=None, output_dir=None, outfmt="npy", loop=1, seed=0,
                expected=None, op_plugin="", rtol=None, atol=None, sim_config=None, allow_hazards=False,
                tiling_cache="on", host_threads="1", summary_path=None, profile_dir=None, no_compute=False,
                max_loop_iterations=100, no_verify=False, device=0, output_size=None, dym_shape=None, dym_batch=None,
                dym_hw=None, dym_dims=None, threads=None)


def options(**given) -> RunOptions:
    return run_options(**{**DEFAULTS, **given})


def test_values_arrive_typed():
    o = options(input_spec="a.bin,b.npy", outfmt="bin", tiling_cache="off", host_threads="3", no_compute=True,
                no_verify=True, output_size="4000, 8", dym_shape="x:1,3,8,8;y:2", dym_hw="16, 12", rtol=0.5, threads=2)
    assert o.model_path == "m.om" and o.outfmt == "BIN" and o.inputs == InputFiles(paths=("a.bin", "b.npy"))
    assert (o.tiling_cache, o.host_threads, o.compute, o.verify) == (False, 3, False, False)
    assert o.output_size == (4000, 8) and o.dym_shape == {"x": (1, 3, 8, 8), "y": (2,)}
    assert o.gear == GearFlag("image", (16, 12)) and o.gear.text == "16,12" and o.gear.flag == "--dymHW"
    assert o.rtol == 0.5 and o.atol is None and o.threads == 2 and isinstance(o.profile, RuntimeProfile)
    assert options(input_spec="in.npz").inputs == InputFiles(npz="in.npz")
    assert options(input_spec="").inputs is None and options(output_size="").output_size is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.loop = 2


def test_gear_flags():
    assert parse_gear(4, None, None) == GearFlag("batch", (4,))
    dims = parse_gear(None, None, "input_ids:1,16; attention_mask:1,16")
    assert dims.shapes == {"input_ids": (1, 16), "attention_mask": (1, 16)}
    assert dims.text == "input_ids:1,16;attention_mask:1,16" and dims.flag == "--dymDims"
    assert parse_gear(None, None, None) is None


@pytest.mark.parametrize("given,message", [
    (dict(model_arg=None), "no model given"),
    (dict(model_opt="other.om"), "two models given"),
    (dict(rtol=float("nan")), "Invalid value for '--rtol': nan is not a finite number >= 0"),
    (dict(atol=-1.0), "Invalid value for '--atol': -1.0 is not a finite number >= 0"),
    (dict(output_size="8,x"), "--outputSize '8,x' is not comma-separated byte counts"),
    (dict(output_size="-8"), "--outputSize '-8' is not comma-separated byte counts"),
    (dict(dym_hw="16"), "--dymHW '16' is not h,w"),
    (dict(dym_dims=" ; "), "--dymDims is empty"),
    (dict(dym_dims="x:1,a"), "--dymDims item 'x:1,a' is not name:d,d,... (msame's format)"),
    (dict(dym_shape="x=1,3"), "--dymShape item 'x=1,3' is not name:d,d,... (msame's format)"),
    (dict(dym_batch=2, dym_hw="8,8"), "--dymBatch and --dymHW both choose a gear"),
])
def test_bad_values_are_e30002(given, message):
    with pytest.raises(AtcError) as err:
        options(**given)
    assert err.value.code == "E30002" and message in str(err.value)


def test_named_shapes_keep_msames_digit_limits():
    assert parse_named_shapes("--dymShape", "x:" + "9" * 12, 12) == {"x": (int("9" * 12),)}
    with pytest.raises(AtcError):
        parse_named_shapes("--dymDims", "x:" + "9" * 11, 10)
