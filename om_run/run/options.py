"""om-run's flags, parsed once: every value checked and turned into its type where the command line is read, so
that what runs the model never sees a flag's text. What needs the model (a --dymShape name among its inputs, a
--dymDims shape among its gears, --outputSize against its outputs) is checked where the model is known; the
syntax is checked here."""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field

from atc_py.common.errors import AtcError

from ..sim.profile import RuntimeProfile
from .conventions import OM_RUN, Conventions, ToolSettings, check_output_dirname

GEAR_FLAGS = {"batch": "--dymBatch", "image": "--dymHW", "dims": "--dymDims"}

Shapes = dict[str, tuple[int, ...]]


def _bad(reason: str) -> AtcError:
    return AtcError("E30002", reason=reason)


@dataclass(frozen=True)
class InputFiles:
    """--input: one .npz keyed by input names (or arr_0..), or one file or folder per input, in input order."""
    npz: str | None = None
    paths: tuple[str, ...] = ()


@dataclass(frozen=True)
class GearFlag:
    """The gear msame's flags choose: --dymBatch N, --dymHW h,w or --dymDims "x:1,128;y:1,128"."""
    kind: str                          # "batch", "image" or "dims" (gears.KINDS)
    dims: tuple[int, ...] = ()         # batch: (N,); image: (h, w); dims: every value, in the order given
    shapes: Shapes | None = None       # dims: each named input's shape

    @property
    def flag(self) -> str:
        return GEAR_FLAGS[self.kind]

    @property
    def text(self) -> str:
        """The value as msame spells it (for messages)."""
        if self.shapes is not None:
            return format_shapes(self.shapes)
        return ",".join(map(str, self.dims))


@dataclass(frozen=True)
class RunOptions:
    """Everything om-run's flags say, typed. Tolerances of None follow the model (compare.default_tolerance);
    threads None: the idle cores om-run may use (threads.py)."""
    model_path: str
    inputs: InputFiles | None = None
    output_dir: str | None = None
    outfmt: str = "NPY"
    loop: int = 1
    seed: int = 0
    expected: str | None = None
    op_plugin: str = ""
    rtol: float | None = None
    atol: float | None = None
    profile: RuntimeProfile = field(default_factory=RuntimeProfile)
    allow_hazards: bool = False
    tiling_cache: bool = True
    host_threads: int = 1
    threads: int | None = None
    summary_path: str | None = None
    profile_dir: str | None = None
    compute: bool = True
    max_loop_iterations: int | None = None
    verify: bool = True
    device: int = 0
    output_size: tuple[int, ...] | None = None
    dym_shape: Shapes | None = None
    gear: GearFlag | None = None
    generate: int | None = None        # --generate N: a greedy decode loop of N new tokens (generate.py)
    max_tasks: int | None = None       # --max-tasks: executed tasks per execution (None: from the model, budget.py)
    check_overflow: bool | None = None  # --check-overflow (None: as the build recorded, atc-py --status_check)
    dump: object | None = None         # --dump DIR / --acl_json: a sim.dump.DumpConfig
    batchsize: int | None = None       # ais_bench --batchsize (throughput; None: the first input's first dim)
    warmup_count: int = 0              # ais_bench --warmup_count: executions before the timed ones
    output_dirname: str | None = None  # ais_bench --output_dirname: outputs under --output/<this> (a relative path)
    devices: tuple[int, ...] = (0,)    # --device 0,1 (ais_bench): the run once per device
    conventions: Conventions = OM_RUN  # whose folders, file names and lines (conventions.py)
    tool: ToolSettings = field(default_factory=ToolSettings)   # the tool's own settings (its entry point's)
    # several devices (cli/world.py): --world-size N, HCCL's --rank-table, --topology, --link-calibration
    world_size: int | None = None
    rank_table: str | None = None
    topology: str | None = None
    link_calibration: str | None = None
    input_template: str | None = None  # --input as given (a {rank} in it names each rank's files)

    @property
    def several_devices(self) -> bool:
        return bool(self.world_size and self.world_size > 1 or self.rank_table or os.environ.get("RANK_TABLE_FILE"))


def run_options(*, model_arg, model_opt, input_spec, output_dir, outfmt, loop, seed, expected, op_plugin, rtol, atol,
                sim_config, allow_hazards, tiling_cache, host_threads, summary_path, profile_dir, no_compute,
                max_loop_iterations, no_verify, device, output_size, dym_shape, dym_batch, dym_hw, dym_dims,
                threads, generate=None, max_tasks=None, check_overflow=False, dump_dir=None,
                acl_json=None, batchsize=None, warmup_count=0, output_dirname=None,
                auto_set_dymdims_mode=0, tool: ToolSettings | None = None, world_size=None, rank_table=None,
                topology=None, link_calibration=None) -> RunOptions:
    """RunOptions from click's values (which already hold click's types and ranges); `tool`: what the ais_bench or
    msame entry point adds (None: om-run's own conventions)."""
    tool = tool or ToolSettings()
    devices = parse_devices(str(device))
    return RunOptions(
        model_path=model_path(model_arg, model_opt),
        inputs=parse_inputs(input_spec) if not (input_spec and "{rank}" in input_spec) else None, output_dir=output_dir or None,
        outfmt=outfmt.upper(), loop=loop, seed=seed, expected=expected or None, op_plugin=op_plugin or "",
        rtol=tolerance("--rtol", rtol), atol=tolerance("--atol", atol), profile=RuntimeProfile.load(sim_config),
        allow_hazards=allow_hazards, tiling_cache=tiling_cache == "on", host_threads=int(host_threads),
        threads=threads, summary_path=summary_path or None, profile_dir=profile_dir or None, compute=not no_compute,
        max_loop_iterations=max_loop_iterations, verify=not no_verify, device=devices[0],
        output_size=parse_output_size(output_size, positive=not tool.conventions.exact_output_size),
        dym_shape=parse_named_shapes("--dymShape", dym_shape, 12),
        gear=parse_gear(dym_batch, dym_hw, dym_dims), generate=generate, max_tasks=max_tasks,
        check_overflow=True if check_overflow else None, dump=dump_config(dump_dir, acl_json),
        batchsize=batchsize, warmup_count=warmup_count,
        output_dirname=check_output_dirname(output_dirname, output_dir), devices=devices,
        conventions=tool.conventions, tool=tool, world_size=world_size, rank_table=rank_table or None,
        topology=topology or None, link_calibration=link_calibration or None,
        input_template=input_spec if input_spec and "{rank}" in input_spec else None)


MAX_DEVICE_ID = 255      # msame's and ais_bench's range
MAX_DEVICES = 256        # ais_bench: DEVICE_COUNT_MAX


def parse_devices(text: str) -> tuple[int, ...]:
    """--device N, or ais_bench's list "0,1": ids 0..255."""
    parts = [p.strip() for p in text.split(",")]
    if not 1 <= len(parts) <= MAX_DEVICES or not all(re.fullmatch(r"\d{1,3}", p) for p in parts) \
            or any(int(p) > MAX_DEVICE_ID for p in parts):
        raise _bad(f"--device '{text}' is not a device id 0..{MAX_DEVICE_ID} or a comma-separated list of at most "
                   f"{MAX_DEVICES} of them")
    return tuple(int(p) for p in parts)


def dump_config(dump_dir: str | None, acl_json: str | None):
    """--dump DIR (every operator's outputs) or --acl_json (ACL's dump section); not both."""
    from ..sim.dump import DumpConfig, read_acl_json
    if dump_dir and acl_json:
        raise _bad("--dump and --acl_json both say where to dump: give one")
    if acl_json:
        return read_acl_json(acl_json)
    return DumpConfig(dump_dir) if dump_dir else None


def model_path(model_arg: str | None, model_opt: str | None) -> str:
    if model_opt and model_arg and model_opt != model_arg:
        raise _bad(f"two models given ({model_arg} and --model {model_opt})")
    path = model_opt or model_arg
    if not path:
        raise _bad("no model given: om-run MODEL.om or om-run --model MODEL.om")
    return path


def tolerance(flag: str, value: float | None) -> float | None:
    if value is not None and (not math.isfinite(value) or value < 0):
        raise _bad(f"Invalid value for '{flag}': {value} is not a finite number >= 0 (om-run --help lists the "
                   "options)")
    return value


def parse_inputs(text: str | None) -> InputFiles | None:
    if not text:
        return None
    if text.endswith(".npz"):
        return InputFiles(npz=text)
    return InputFiles(paths=tuple(text.split(",")))


MAX_OUTPUT_SIZES = 256   # ais_bench: CUSTOM_MAX_COUNT


def parse_output_size(text: str | None, positive: bool = False) -> tuple[int, ...] | None:
    """msame --outputSize "4000,8": bytes of each output buffer (positive: each > 0, at most 256 of them, as
    ais_bench's check_custom_size wants)."""
    if not text:
        return None
    if not re.fullmatch(r"\s*\d{1,18}\s*(,\s*\d{1,18}\s*)*", text):
        raise _bad(f"--outputSize '{text}' is not comma-separated byte counts")
    sizes = tuple(int(v) for v in text.split(","))
    if positive and (0 in sizes or len(sizes) > MAX_OUTPUT_SIZES):
        raise _bad(f"--outputSize '{text}': ais_bench takes 1..{MAX_OUTPUT_SIZES} sizes, each above 0")
    return sizes


def named_items(flag: str, text: str, max_digits: int) -> list[tuple[str, tuple[int, ...]]]:
    """msame's "x:1,3,224,224;y:1,128", item by item in the order given (a name ends at the item's last colon, as
    msame's Utils::SplitStringSimple splits it: TensorFlow's "x:0:1,3" names x:0)."""
    out = []
    for part in (p.strip() for p in text.split(";") if p.strip()):
        m = re.fullmatch(rf"(.+):(\d{{1,{max_digits}}}(?:,\d{{1,{max_digits}}})*)", part)
        if m is None:
            raise _bad(f"{flag} item '{part}' is not name:d,d,... (msame's format)")
        out.append((m.group(1), tuple(int(d) for d in m.group(2).split(","))))
    return out


def parse_named_shapes(flag: str, text: str | None, max_digits: int) -> Shapes | None:
    """--dymShape: a shape per input name (None when not given)."""
    if not text:
        return None
    return dict(named_items(flag, text, max_digits))


def format_shapes(shapes: Shapes) -> str:
    return ";".join(f"{name}:{','.join(map(str, s))}" for name, s in shapes.items())


def parse_gear(batch: int | None, hw: str | None, dims: str | None) -> GearFlag | None:
    given = [kind for kind, v in (("batch", batch), ("image", hw), ("dims", dims)) if v is not None]
    if len(given) > 1:
        raise _bad(f"{GEAR_FLAGS[given[0]]} and {GEAR_FLAGS[given[1]]} both choose a gear")
    if batch is not None:
        return GearFlag("batch", (batch,))
    if hw is not None:
        m = re.fullmatch(r"\s*(\d{1,10})\s*,\s*(\d{1,10})\s*", hw)
        if m is None:
            raise _bad(f"--dymHW '{hw}' is not h,w")
        return GearFlag("image", (int(m.group(1)), int(m.group(2))))
    if dims is not None:
        items = named_items("--dymDims", dims, 10)
        if not items:
            raise _bad("--dymDims is empty")
        return GearFlag("dims", tuple(d for _, shape in items for d in shape), dict(items))
    return None
