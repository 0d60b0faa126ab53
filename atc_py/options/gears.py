"""Gears: --dynamic_batch_size, --dynamic_image_size, --dynamic_dims (ATC's multi-batch).

The user marks dims -1 in --input_shape and lists the values they may take ("profiles", gears); GE builds one
static subgraph per gear and a Case that picks one at run time (passes/multi_batch.py). This module parses the
three flags with ATC's checks, in ATC's order (CheckDynamicInputParamValid and multi_batch_options.cc):
E10009 more than one dynamic form, E10004 no --input_shape, E10040 no -1 / a '~' in --input_shape, E10003 /
E10020 malformed values, E10035 / E10036 too few / too many gears, E10037 gears of different lengths, E10038
a dim <= 0, E10039 duplicate gears, E10031 / E10018 batch -1 missing / not on N, E10019 image -1 not on H and
W, E10003 a dims gear whose length is not the number of -1 dims, E10001 --dynamic_dims with AIPP.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..common.errors import AtcError
from .flag_table import FLAGS
from .shapes import InputShapes

MIN_GEARS, MAX_GEARS = 2, 100
MAX_GEAR_DIM = 1 << 30           # larger dims fail the tensor-size limits anyway; keeps the ints bounded
FLAG = {"batch": "dynamic_batch_size", "image": "dynamic_image_size", "dims": "dynamic_dims"}
OPTION = {kind: FLAGS[flag].ge_key for kind, flag in FLAG.items()}     # the GE options of the three flags
# GE's DynamicInputType values (the .om's model attribute `mbatch_dynamic_type`)
DYNAMIC_TYPE = {"batch": 1, "image": 2, "dims": 3}
HW_AXES = {"NCHW": (2, 3), "NHWC": (1, 2)}


@dataclass
class GearSpec:
    """The gears and where their values go: `slots` lists each dynamic input (its --input_shape key) with the
    positions of its -1 dims; a gear fills them in that order (batch: every slot's N from the one value;
    image: every slot's H, W; dims: the values one after another across the inputs, in --input_shape order)."""
    kind: str
    text: str
    gears: list[tuple[int, ...]]
    slots: list[tuple[str | int, list[int]]]

    def shape(self, key, dims: list[int], gear: tuple[int, ...]) -> list[int]:
        """The input's dims at this gear."""
        out = list(dims)
        if self.kind == "dims":
            pos = 0
            for k, axes in self.slots:
                if k == key:
                    for a, v in zip(axes, gear[pos:pos + len(axes)]):
                        out[a] = v
                pos += len(axes)
            return out
        for k, axes in self.slots:
            if k == key:
                for a, v in zip(axes, gear):
                    out[a] = v
        return out

    def input_shapes(self, shapes: InputShapes, gear: tuple[int, ...]) -> InputShapes:
        """--input_shape with this gear's values in place of the -1s (static: no ranges)."""
        out = InputShapes()
        for key, dims in shapes.items():
            out[key] = self.shape(key, dims, gear)
        return out

    @property
    def info(self) -> str:
        """GE's all_gears_info string: gears ';'-separated, values ','-separated."""
        return ";".join(",".join(map(str, g)) for g in self.gears)


def _profiles(text: str, sep: str) -> list[str]:
    """The profiles of a flag's value: one separator at its end is dropped (ATC erases it), any other empty
    profile stays, for the caller to refuse (a gear of nothing is no gear: '1,,2', '1,2;;3,4')."""
    body = text.rstrip()
    return (body[:-1] if body.endswith(sep) else body).split(sep)


def _values(kind: str, text: str) -> list[tuple[int, ...]]:
    flag = FLAG[kind]
    if kind == "batch":
        if not re.fullmatch(r"[0-9,]+", text):
            raise AtcError("E10003", value=text, parameter=flag,
                           reason="Only digits (0-9) and ',' are allowed, e.g. \"1,2,4,8\"")
        groups = [[t] for t in _profiles(text, ",")]
        if [""] in groups:
            raise AtcError("E10003", value=text, parameter=flag,
                           reason=f"profile {groups.index(['']) + 1} is empty: profiles are separated by one ',', "
                                  "e.g. \"1,2,4,8\"")
    elif kind == "image":
        if not re.fullmatch(r"[0-9, ;]+", text):
            raise AtcError("E10020", dynamic_image_size=text)
        groups = [[t.strip() for t in g.split(",")] for g in _profiles(text, ";")]
        if any(len(g) != 2 or "" in g for g in groups):
            raise AtcError("E10020", dynamic_image_size=text)
    else:
        groups = [[t.strip() for t in g.split(",")] for g in _profiles(text, ";")]
        empty = [k + 1 for k, g in enumerate(groups) if g == [""]]
        if empty:
            raise AtcError("E10003", value=text, parameter=flag,
                           reason=f"profile {empty[0]} is empty: profiles are separated by one ';', "
                                  "e.g. \"1,128;4,256\"")
        if any(not re.fullmatch(r"[0-9]+", t) for g in groups for t in g):
            raise AtcError("E10003", value=text, parameter=flag,
                           reason="Each profile is digits separated by ',', profiles separated by ';', "
                                  "e.g. \"1,128;4,256\"")
    out = []
    for g in groups:
        if any(len(t) > 10 for t in g) or any(int(t) > MAX_GEAR_DIM for t in g):
            raise AtcError("E10003", value=text, parameter=flag, reason=f"a dim is larger than {MAX_GEAR_DIM}")
        out.append(tuple(int(t) for t in g))
    return out


def _check_count(gears: list[tuple[int, ...]]) -> None:
    if len(gears) < MIN_GEARS:
        raise AtcError("E10035", shapesize=len(gears), minshapesize=MIN_GEARS)
    if len(gears) > MAX_GEARS:
        raise AtcError("E10036", shapesize=len(gears), maxshapesize=MAX_GEARS)
    for g in gears:
        if len(g) != len(gears[0]):
            raise AtcError("E10037", shapesize1=len(gears[0]), shapesize2=len(g))
    for g in gears:
        for d in g:
            if d <= 0:
                raise AtcError("E10038", dim=d)
    if len(set(gears)) != len(gears):
        raise AtcError("E10039")


def _slots(kind: str, shapes: InputShapes, fmt: str) -> list[tuple[str | int, list[int]]]:
    slots = [(key, [a for a, d in enumerate(dims) if d == -1]) for key, dims in shapes.items() if -1 in dims]
    if kind == "batch":
        for key, axes in slots:
            if axes != [0]:
                raise AtcError("E10018", shape=",".join(map(str, shapes[key])), index=key)
        if not slots:
            raise AtcError("E10031")
    elif kind == "image":
        hw = HW_AXES.get(fmt or "NCHW", (2, 3))
        for key, axes in slots:
            if len(shapes[key]) != 4 or axes != list(hw):
                raise AtcError("E10019")
    return slots


def parse_gears(texts: dict[str, str], shape_text: str, shapes: InputShapes, fmt: str, ranges_given: bool = False,
                aipp_given: bool = False) -> GearSpec | None:
    """The gears of the build, or None without the flags. `texts`: kind -> the flag's text ("" when not given);
    `shape_text`/`shapes`: --input_shape as given and parsed; `fmt`: --input_format (H, W axes of image sizes)."""
    kinds = [kind for kind in OPTION if texts.get(kind, "")]
    if not kinds:
        return None
    if len(kinds) > 1 or ranges_given:
        raise AtcError("E10009")
    kind = kinds[0]
    text = texts[kind]
    if not shape_text:
        raise AtcError("E10004", parameter="input_shape")
    if "~" in shape_text or not any(-1 in dims for dims in shapes.values()):
        raise AtcError("E10040")
    gears = _values(kind, text)
    _check_count(gears)
    slots = _slots(kind, shapes, fmt)
    if kind == "dims":
        wanted = sum(len(axes) for _, axes in slots)
        if len(gears[0]) != wanted:
            raise AtcError("E10003", value=text, parameter=FLAG[kind],
                           reason=f"each profile has {len(gears[0])} dims; --input_shape has {wanted} -1 dims")
        if aipp_given:
            raise AtcError("E10001", value=text, parameter="--dynamic_dims",
                           reason="The dynamic dims function does not support AIPP.")
    return GearSpec(kind, text, gears, slots)
