"""--insert_op_conf: static AIPP (GE's insert_op.proto in protobuf text format) — parsed, checked and resolved
into the parameters of one Aipp op per configured input (passes/aipp.py inserts it, ops/aipp.py runs it).

Supported input formats: YUV420SP_U8 (NV12: a Y plane then interleaved U/V at half resolution; NV21 with
rbuv_swap_switch), RGB888_U8, XRGB8888_U8 (X first; ax_swap_switch for RGBX) and YUV400_U8. Steps in AIPP's
order: crop, colour-space conversion (csc_switch with the 3x3 matrix and the input/output biases, >> 8),
channel swap, data type conversion ((pixel - mean_chn - min_chn) * var_reci_chn), padding with
cpadding_value. Dynamic AIPP and resize are not supported (E10055). Every problem is GE's E10052 (AIPP
configuration is invalid) naming the field.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from google.protobuf import text_format

from ..common.errors import AtcError
from ..common.userfiles import read_bytes
from ..proto import insert_op_pb2 as iop

FORMATS = {"YUV420SP_U8": 1, "RGB888_U8": 3, "XRGB8888_U8": 4, "YUV400_U8": 1}   # -> image channels stored
OUT_CHANNELS = {"YUV420SP_U8": 3, "RGB888_U8": 3, "XRGB8888_U8": 3, "YUV400_U8": 1}
YUV = ("YUV420SP_U8", "YUV400_U8")
MAX_PADDING = 32
MAX_IMAGE = 4096 * 4


def invalid(reason: str) -> AtcError:
    return AtcError("E10052", reason=reason)


@dataclass
class AippSpec:
    """One static AIPP, resolved: what the Aipp op's attributes hold."""
    rank: int
    input_format: str
    src_h: int
    src_w: int
    crop: list[int] = field(default_factory=lambda: [0, 0, 0, 0])   # y0, x0, h, w (h = w = 0: no crop)
    csc: bool = False
    matrix: list[int] = field(default_factory=list)                  # 9 values, row major
    input_bias: list[int] = field(default_factory=lambda: [0, 0, 0])
    output_bias: list[int] = field(default_factory=lambda: [0, 0, 0])
    rbuv_swap: bool = False
    ax_swap: bool = False
    padding: list[int] = field(default_factory=lambda: [0, 0, 0, 0])  # top, bottom, left, right
    pad_value: float = 0.0
    mean: list[int] = field(default_factory=lambda: [0, 0, 0, 0])
    min: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0, 0.0])
    var_reci: list[float] = field(default_factory=lambda: [1.0, 1.0, 1.0, 1.0])

    @property
    def out_hw(self) -> tuple[int, int]:
        h, w = (self.crop[2], self.crop[3]) if self.crop[2] else (self.src_h, self.src_w)
        return h + self.padding[0] + self.padding[1], w + self.padding[2] + self.padding[3]

    def image_shape(self, n: int) -> tuple[int, int, int, int]:
        """The model input that replaces the original one: uint8 NHWC (YUV420SP: Y rows then UV rows)."""
        rows = self.src_h * 3 // 2 if self.input_format == "YUV420SP_U8" else self.src_h
        return (n, rows, self.src_w, FORMATS[self.input_format])

    def attrs(self) -> dict:
        return {"input_format": self.input_format, "src_image_size": [self.src_h, self.src_w], "crop": self.crop,
                "csc_switch": self.csc, "matrix": self.matrix or [0] * 9, "input_bias": self.input_bias,
                "output_bias": self.output_bias, "rbuv_swap_switch": self.rbuv_swap, "ax_swap_switch": self.ax_swap,
                "padding": self.padding, "cpadding_value": float(self.pad_value), "mean_chn": self.mean,
                "min_chn": [float(v) for v in self.min], "var_reci_chn": [float(v) for v in self.var_reci]}


def _one(p, name: str, default):
    """A static AIPP takes one value for each `repeated` parameter (dynamic AIPP keeps one per batch)."""
    values = list(getattr(p, name))
    if len(values) > 1:
        raise invalid(f"{name} has {len(values)} values; a static AIPP takes one")
    return values[0] if values else default


def _check_range(name: str, value, low, high) -> None:
    if not low <= value <= high:
        raise invalid(f"{name} = {value} is outside [{low}, {high}]")


def parse_config(path: str) -> list[iop.AippOpParams]:
    data = read_bytes(path, lambda why: AtcError("E10001", value=path, parameter="--insert_op_conf",
                                                 reason=f"The file cannot be read: {why}"), 1 << 20)
    msg = iop.InsertNewOps()
    try:
        text_format.Parse(data.decode("utf-8"), msg)
    except (text_format.ParseError, UnicodeDecodeError) as exc:
        raise AtcError("E13018", protofile=f"{path} ({str(exc)[:200]})") from None
    if not msg.aipp_op:
        raise invalid(f"{path} holds no aipp_op")
    return list(msg.aipp_op)


def resolve(p: iop.AippOpParams, n_inputs: int, model_shape: tuple[int, ...]) -> AippSpec:
    """One aipp_op checked against the input it applies to (original NCHW shape `model_shape`)."""
    if p.aipp_mode == iop.AippOpParams.dynamic:
        raise AtcError("E10055", reason="dynamic AIPP (aipp_mode: dynamic) is not supported by atc-py; use static")
    if p.aipp_mode != iop.AippOpParams.static:
        raise invalid("aipp_mode must be static")
    if not 0 <= p.related_input_rank < n_inputs:
        raise invalid(f"related_input_rank = {p.related_input_rank}, but the model has {n_inputs} input(s)")
    if p.input_format not in iop.AippOpParams.InputFormat.values():     # text format takes any number
        raise invalid(f"input_format {p.input_format} is not a value of AIPP's InputFormat (supported: "
                      f"{', '.join(FORMATS)})")
    fmt = iop.AippOpParams.InputFormat.Name(p.input_format)
    if fmt not in FORMATS:
        raise invalid(f"input_format {fmt} is not supported (supported: {', '.join(FORMATS)})")
    if p.resize:
        raise AtcError("E10055", reason="AIPP resize is not supported by atc-py")
    if len(model_shape) != 4:
        raise invalid(f"the input of related_input_rank {p.related_input_rank} is {list(model_shape)}; AIPP "
                      "needs a 4-D NCHW image input")
    n, c, h, w = model_shape
    if c != OUT_CHANNELS[fmt]:
        raise invalid(f"input_format {fmt} gives {OUT_CHANNELS[fmt]} channel(s); the model input has {c}")
    src_h = p.src_image_size_h or h
    src_w = p.src_image_size_w or w
    _check_range("src_image_size_h", src_h, 1, MAX_IMAGE)
    _check_range("src_image_size_w", src_w, 1, MAX_IMAGE)
    if fmt == "YUV420SP_U8" and (src_h % 2 or src_w % 2):
        raise invalid(f"src_image_size {src_w}x{src_h} must be even for YUV420SP_U8")
    spec = AippSpec(p.related_input_rank, fmt, src_h, src_w)
    if p.crop:
        y0, x0 = p.load_start_pos_h, p.load_start_pos_w
        ch, cw = p.crop_size_h or (h - p.top_padding_size - p.bottom_padding_size), \
            p.crop_size_w or (w - p.left_padding_size - p.right_padding_size)
        for name, v in (("load_start_pos_h", y0), ("load_start_pos_w", x0)):
            _check_range(name, v, 0, MAX_IMAGE)
        if ch < 1 or cw < 1 or y0 + ch > src_h or x0 + cw > src_w:
            raise invalid(f"the crop {cw}x{ch} at ({x0}, {y0}) does not fit the {src_w}x{src_h} source image")
        if fmt == "YUV420SP_U8" and (y0 % 2 or x0 % 2):
            raise invalid("load_start_pos_w/h must be even for YUV420SP_U8")
        spec.crop = [y0, x0, ch, cw]
    _check_range("cpadding_value", p.cpadding_value, -65504.0, 65504.0)    # NaN and infinities too
    if p.padding:
        pads = [p.top_padding_size, p.bottom_padding_size, p.left_padding_size, p.right_padding_size]
        for name, v in zip(("top_padding_size", "bottom_padding_size", "left_padding_size", "right_padding_size"),
                           pads):
            _check_range(name, v, 0, MAX_PADDING)
        spec.padding, spec.pad_value = pads, p.cpadding_value
    if p.csc_switch:
        if fmt == "YUV400_U8":
            raise invalid("csc_switch cannot be true for YUV400_U8")
        names = [f"matrix_r{r}c{c_}" for r in range(3) for c_ in range(3)]
        spec.csc = True
        spec.matrix = [_one(p, k, 0) for k in names]
        for k, v in zip(names, spec.matrix):
            _check_range(k, v, -32768, 32767)
        spec.input_bias = [_one(p, f"input_bias_{i}", 0) for i in range(3)]
        spec.output_bias = [_one(p, f"output_bias_{i}", 0) for i in range(3)]
        for i in range(3):
            _check_range(f"input_bias_{i}", spec.input_bias[i], 0, 255)
            _check_range(f"output_bias_{i}", spec.output_bias[i], 0, 255)
    spec.rbuv_swap, spec.ax_swap = bool(p.rbuv_swap_switch), bool(p.ax_swap_switch)
    if spec.ax_swap and fmt != "XRGB8888_U8":
        raise invalid("ax_swap_switch applies to XRGB8888_U8 only")
    spec.mean = [p.mean_chn_0, p.mean_chn_1, p.mean_chn_2, p.mean_chn_3]
    spec.min = [p.min_chn_0, p.min_chn_1, p.min_chn_2, p.min_chn_3]
    spec.var_reci = [_one(p, f"var_reci_chn_{i}", 1.0) for i in range(4)]
    for i in range(4):
        _check_range(f"mean_chn_{i}", spec.mean[i], 0, 255)
        _check_range(f"var_reci_chn_{i}", spec.var_reci[i], -65504.0, 65504.0)
        _check_range(f"min_chn_{i}", spec.min[i], -65504.0, 65504.0)
    if spec.out_hw != (h, w):
        raise invalid(f"the AIPP output is {spec.out_hw[1]}x{spec.out_hw[0]} (crop/source plus padding); the model "
                      f"input is {w}x{h}")
    return spec
