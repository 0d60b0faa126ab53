"""A gear model in om-run (atc-py --dynamic_batch_size / --dynamic_image_size / --dynamic_dims).

The .om's inputs are the model's inputs sized for the largest gear plus `ascend_mbatch_shape_data`, the dims
of the gear to run; its outputs are sized for the largest gear too. The model attributes (written by
atc_py/passes/multi_batch.gear_attrs) list the gears and, per gear, the shapes the branch reads and writes.
As the ACL runtime does for aclmdlSetDynamicBatchSize / HWSize / InputDynamicDims, om-run writes the gear's
tensors at the front of the input buffers and the gear's dims into the shape data, and reads each output's
gear shape back from the front of its buffer.

The gear is chosen by msame's flags (--dymBatch N, --dymHW h,w, --dymDims "x:1,128;y:1,128" by its values in
input order as msame and ais_bench read it, or --dymShape by name),
else by the shapes of the inputs given, else (random inputs) it is the largest gear. Every attribute is
checked against the model's own input and output buffers before it shapes an array (never trust a file).
"""
from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass

import numpy as np

from atc_py.common.errors import AtcError
from atc_py.ir.dtypes import dtype_by_name
from atc_py.ir.graph import TensorDesc

from ..load import limits
from .options import GEAR_FLAGS, GearFlag

SHAPE_DATA = "ascend_mbatch_shape_data"
KINDS = {1: "batch", 2: "image", 3: "dims"}
BUILT_WITH = {"batch": "--dynamic_batch_size", "image": "--dynamic_image_size", "dims": "--dynamic_dims"}
GEAR_ATTRS = {"batch": "dynamic_batch", "image": "dynamic_hw", "dims": "dynamic_dims"}   # model attrs of gear builds
MAX_GEARS = 256          # ATC allows 100 (256 on Ascend950)
MAX_INFO_CHARS = 1 << 16


def _bad(path: str, reason: str) -> AtcError:
    return AtcError("E30001", path=path, reason=f"gear table: {reason}")


def _shapes(path: str, text, what: str, gears: int, count: int) -> list[list[tuple[int, ...]]]:
    if not isinstance(text, str) or len(text) > MAX_INFO_CHARS * 4:
        raise _bad(path, f"{what} is not a JSON string of bounded size")
    try:
        data = json.loads(text)
    except ValueError:
        raise _bad(path, f"{what} is not JSON") from None
    ok = isinstance(data, list) and len(data) == gears and all(
        isinstance(per, list) and len(per) == count and all(
            isinstance(s, list) and len(s) <= limits.MAX_RANK and all(
                isinstance(d, int) and not isinstance(d, bool) and 0 <= d <= limits.MAX_DIM for d in s)
            for s in per) for per in data)
    if not ok:
        raise _bad(path, f"{what} must list, for each of the {gears} gears, {count} shapes of dims >= 0")
    return [[tuple(s) for s in per] for per in data]


@dataclass
class Gears:
    kind: str
    values: list[tuple[int, ...]]
    inputs: list[list[tuple[int, ...]]]      # per gear, each user input's shape
    outputs: list[list[tuple[int, ...]]]     # per gear, each output's shape
    data_index: int                          # position of the shape data among the model's inputs

    def label(self, g: int) -> str:
        v = ",".join(map(str, self.values[g]))
        return {"batch": "batch ", "image": "image size "}.get(self.kind, "dims ") + v

    @property
    def listing(self) -> str:
        return ";".join(",".join(map(str, v)) for v in self.values)

    # -- choosing the gear ----------------------------------------------------------------------------
    def from_flags(self, flag: GearFlag | None, dym: dict[str, tuple[int, ...]], model) -> int | None:
        """The gear --dymBatch / --dymHW / --dymDims choose, else the one whose inputs --dymShape gives (None:
        neither was given)."""
        if flag is not None:
            if flag.kind != self.kind:
                raise AtcError("E30002", reason=f"{flag.flag}: the model was built with {BUILT_WITH[self.kind]} "
                                                f"(gears {self.listing}); choose one with {GEAR_FLAGS[self.kind]}")
            if flag.kind == "dims":
                return self._by_values(flag.dims, model, f"{flag.flag} {flag.text}")
            if flag.dims not in self.values:
                raise AtcError("E30002", reason=f"{flag.flag} {flag.text} is not a gear of the model (gears "
                                                f"{self.listing})")
            return self.values.index(flag.dims)
        if dym:
            return self._by_shapes(dym, model, "--dymShape")
        return None

    def _by_shapes(self, named: dict[str, tuple[int, ...]], model, what: str) -> int:
        names = self.user_names(model)
        unknown = [n for n in named if n not in names]
        if unknown:
            raise AtcError("E30002", reason=f"{what} names '{unknown[0]}'; the model's inputs are {names}")
        for g, shapes in enumerate(self.inputs):
            if all(shapes[names.index(n)] == tuple(s) for n, s in named.items()):
                return g
        raise AtcError("E30002", reason=f"{what} is no gear of the model; its gears give the inputs " +
                                        "; ".join(self._gear_shapes(g, names) for g in range(len(self.values))))

    def _by_values(self, values: tuple[int, ...], model, what: str) -> int:
        """--dymDims as msame and ais_bench read it: its values, in the order given, against each gear's input
        shapes one after the other (aclmdlGetInputDynamicDims' dims); the names play no part."""
        for g, shapes in enumerate(self.inputs):
            if tuple(d for s in shapes for d in s) == values:
                return g
        names = self.user_names(model)
        raise AtcError("E30002", reason=f"{what} is no gear of the model; its gears give the inputs " +
                                        "; ".join(self._gear_shapes(g, names) for g in range(len(self.values))))

    def unknown_names(self, flag: GearFlag | None, model) -> list[str]:
        """The --dymDims names that are none of the model's inputs (ais_bench warns about each)."""
        names = self.user_names(model)
        return [n for n in (flag.shapes or {}) if n not in names] if flag is not None and flag.kind == "dims" else []

    def _gear_shapes(self, g: int, names: list[str]) -> str:
        return ", ".join(f"{n}:{','.join(map(str, s))}" for n, s in zip(names, self.inputs[g]))

    def from_arrays(self, arrays: list[np.ndarray], model) -> int:
        shapes = [tuple(a.shape) for a in arrays]
        for g, want in enumerate(self.inputs):
            if shapes == want:
                return g
        raise AtcError("E30002", reason=f"the inputs' shapes {[list(s) for s in shapes]} are no gear of the model; its "
                                        "gears give " + "; ".join(self._gear_shapes(g, self.user_names(model))
                                                                  for g in range(len(self.values))))

    def largest(self, model) -> int:
        """The gear whose inputs take the most bytes (the one the memory is planned for)."""
        sizes = [sum(int(np.prod(s, dtype=np.int64)) * dtype_by_name(io.desc.dtype).np.itemsize
                     for s, io in zip(shapes, self.user_inputs(model))) for shapes in self.inputs]
        return int(np.argmax(sizes))

    # -- the model as the user sees it, and as the device runs it --------------------------------------
    def user_inputs(self, model) -> list:
        return [io for k, io in enumerate(model.inputs) if k != self.data_index]

    def user_names(self, model) -> list[str]:
        return [io.name for io in self.user_inputs(model)]

    def view(self, model, g: int | None):
        """The model with the user's inputs only; at gear g (None: dims that differ between gears are -1, within
        the gears' range, so files of any gear load)."""
        v = copy.copy(model)
        v.inputs, v.outputs = [], []
        for k, io in enumerate(self.user_inputs(model)):
            per = [shapes[k] for shapes in self.inputs]
            if g is not None:
                v.inputs.append(_with_shape(io, per[g]))
                continue
            dims = tuple(d if all(s[a] == d for s in per) else -1 for a, d in enumerate(per[0]))
            ranges = [(min(s[a] for s in per), max(s[a] for s in per)) for a in range(len(dims))]
            v.inputs.append(_with_shape(io, dims, ranges if -1 in dims else None))
        for k, io in enumerate(model.outputs):
            v.outputs.append(_with_shape(io, self.outputs[g][k]) if g is not None else io)
        return v

    def device_inputs(self, model, g: int, arrays: list[np.ndarray]) -> list[np.ndarray]:
        """Each gear tensor at the front of its (largest-gear) input buffer, and the gear's dims as shape data."""
        out, user = [], iter(arrays)
        for k, io in enumerate(model.inputs):
            if k == self.data_index:
                out.append(np.array(self.values[g], dtype=np.int32))
                continue
            arr = np.ascontiguousarray(next(user))
            buf = np.zeros(io.desc.shape, dtype=arr.dtype)
            buf.reshape(-1)[:arr.size] = arr.reshape(-1)
            out.append(buf)
        return out

    def transfer_bytes(self, model, g: int) -> tuple[list[int], list[int]]:
        """What the H2D / D2H copies move at gear g: the gear's tensors (and the shape data), not whole buffers."""
        def size(io, shape):
            return int(np.prod(shape, dtype=np.int64)) * dtype_by_name(io.desc.dtype).np.itemsize
        user = iter(self.inputs[g])
        ins = [io.desc.nbytes if k == self.data_index else size(io, next(user)) for k, io in enumerate(model.inputs)]
        return ins, [size(io, s) for io, s in zip(model.outputs, self.outputs[g])]

    def gear_outputs(self, g: int, outputs: list[np.ndarray]) -> list[np.ndarray]:
        """Each output's gear shape, read from the front of its buffer."""
        return [np.ascontiguousarray(o).reshape(-1)[:int(np.prod(s, dtype=np.int64))].reshape(s).copy()
                for o, s in zip(outputs, self.outputs[g])]


def _with_shape(io, shape, ranges=None):
    c = copy.copy(io)
    c.desc = TensorDesc(tuple(shape), io.desc.dtype, io.desc.format, io.desc.origin_format)
    c.ranges = ranges
    return c


def refuse_gear_flag(model, flag: GearFlag | None) -> None:
    """--dymBatch / --dymHW / --dymDims on a model built without gears."""
    if flag is not None and not model.attrs.get(GEAR_ATTRS[flag.kind]):
        raise AtcError("E30002", reason=f"{flag.flag} {flag.text}: the model was not built with "
                                        f"{BUILT_WITH[flag.kind]} gears")


def read_gears(model, path: str = "") -> Gears | None:
    """The model's gears, checked against its inputs and outputs; None for a model built without gears."""
    a = model.attrs
    if "mbatch_dynamic_type" not in a:
        return None
    kind = KINDS.get(a["mbatch_dynamic_type"]) if isinstance(a["mbatch_dynamic_type"], int) else None
    info = a.get("all_gears_info")
    if kind is None or not isinstance(info, str) or len(info) > MAX_INFO_CHARS \
            or not re.fullmatch(r"\d{1,10}(,\d{1,10})*(;\d{1,10}(,\d{1,10})*)*", info):
        raise _bad(path, "mbatch_dynamic_type / all_gears_info are not a gear kind and a gear list")
    values = [tuple(int(v) for v in g.split(",")) for g in info.split(";")]
    width = {"batch": 1, "image": 2}.get(kind, len(values[0]))
    if not 1 <= len(values) <= MAX_GEARS or any(len(v) != width for v in values) or len(set(values)) != len(values):
        raise _bad(path, f"all_gears_info '{info[:80]}' is not 1..{MAX_GEARS} distinct gears of {width} values")
    names = [io.name for io in model.inputs]
    if names.count(SHAPE_DATA) != 1:
        raise _bad(path, f"the model has no single {SHAPE_DATA} input")
    k = names.index(SHAPE_DATA)
    sd = model.inputs[k].desc
    if sd.dtype != "int32" or tuple(sd.shape) != (width,):
        raise _bad(path, f"{SHAPE_DATA} is {sd.dtype}{list(sd.shape)}, not int32[{width}]")
    ins = _shapes(path, a.get("_mbatch_input_shapes"), "_mbatch_input_shapes", len(values), len(names) - 1)
    outs = _shapes(path, a.get("_mbatch_output_shapes"), "_mbatch_output_shapes", len(values), len(model.outputs))
    user = [io for j, io in enumerate(model.inputs) if j != k]
    for per_in, per_out in zip(ins, outs):
        for io, s in list(zip(user, per_in)) + list(zip(model.outputs, per_out)):
            if len(s) != len(io.desc.shape) or not io.desc.known or \
                    int(np.prod(s, dtype=np.int64)) > int(np.prod(io.desc.shape, dtype=np.int64)):
                raise _bad(path, f"a gear's {io.name} {list(s)} does not fit its buffer {list(io.desc.shape)}")
    return Gears(kind, values, ins, outs, k)
