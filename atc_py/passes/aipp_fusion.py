"""AIPP in front of the first convolution, as CANN builds it (after the format pass).

* aipp_output: AIPP writes the map its consumer reads. CANN's Aipp produces fp16 NC1HWC0 (NC1HWC0_C04 with
  --enable_small_channel); the precision pass's Cast to fp16 and the format pass's TransData behind it fold into it.
* aipp_conv_fusion (UB fusion TbeAippConvFusion, switch name aipp_conv_fusion): the convolution that reads the
  AIPP's map takes the image and runs the AIPP itself (ops/stem_fusion.py), on the SoCs whose fusion list has it
  (Atlas inference 310P, 200I/500 A2 310B, training 910). Not fused, as TbeAippFusionRule checks: a 1 x 1 stride-1
  unpadded fp16 convolution (read with load2d), a 1-row filter with a row stride and no pads (the stride-h
  optimisation), a padded AIPP, or one whose minimal L1 tile does not fit the core's L1.
* aipp_conv_pool_fusion (TbeAippConvReluMaxpoolingFusion): on Ascend310P the ResNet stem — a C04 7 x 7 stride-2
  convolution of a [N, 3, 224, 224] map into at most 96 channels, pads 3, ReLU, then a 3 x 3 stride-2 MaxPoolV3
  with pads 1 — also pools before writing (the 310P conditions of that pass for MaxPoolV3)."""
from __future__ import annotations

from ..ir.formats import FRACTAL_Z_C04, NC1HWC0, NC1HWC0_C04, SMALL_CHANNEL
from ..ir.graph import Graph, Node, Value
from ..ops.aipp import Aipp
from ..ops.stem_fusion import AIPP_PREFIX, POOL_KSIZE, POOL_PADS, POOL_STRIDES
from ..platform.soc import SocSpec

AIPP_CONV_SOCS = ("Ascend310P", "Ascend310B", "Ascend910")     # the fusion passes' supported products
STEM_POOL_SOCS = ("Ascend310P",)
FUSABLE_ACT = (NC1HWC0, NC1HWC0_C04)


def _single(v: Value) -> tuple[Node, int] | None:
    return v.consumers[0] if len(v.consumers) == 1 else None


def aipp_output(graph: Graph) -> int:
    """Fold the fp32 -> fp16 Cast and the TransData into NC1HWC0(_C04) behind each Aipp into it; returns how many
    Aipp nodes changed."""
    changed = 0
    for aipp in [n for n in graph.nodes if n.op_type == "Aipp"]:
        folded = False
        while True:
            use = _single(aipp.outputs[0])
            nxt = use[0] if use else None
            if nxt is None:
                break
            v = aipp.outputs[0]
            if nxt.op_type == "Cast" and v.desc.dtype == "float32" and nxt.outputs[0].desc.dtype == "float16" \
                    and v.desc.format == "NCHW":
                aipp.attrs["dst_type"] = "float16"
            elif not (nxt.op_type == "TransData" and nxt.attrs.get("src_format") == "NCHW"
                      and nxt.attrs.get("dst_format") in FUSABLE_ACT):
                break
            out = nxt.outputs[0]
            graph.replace_all_uses(out, v)
            v.desc = out.desc
            graph.remove_node(nxt)
            folded = True
        changed += folded
    return changed


def _conv_taking(aipp: Node) -> Node | None:
    use = _single(aipp.outputs[0])
    if use is None or use[0].op_type != "Conv2D" or use[1] != 0:
        return None
    return use[0]


def _l1_fits(conv: Node, x_shape, w_shape, input_format: str, soc: SocSpec) -> bool:
    """TbeAippFusionRule's minimal-L1 check: the rows of 16-channel fp16 map the smallest tile needs."""
    _, _, _, width = x_shape
    kh, kw = w_shape[2:]
    sh, sw = (int(v) for v in conv.attrs.get("strides", [1, 1, 1, 1])[2:])
    dh, dw = (int(v) for v in conv.attrs.get("dilations", [1, 1, 1, 1])[2:])
    pads = [int(p) for p in conv.attrs.get("pads", [0, 0, 0, 0])]
    wo = (width - ((kw - 1) * dw + 1) + pads[2] + pads[3]) // max(sw, 1) + 1
    if wo <= 0:
        return False
    rows = ((16 // wo + 2) - 1) * sh + (kh - 1) * dh + 1
    need = 16 * 2 * (rows * width + (2 * width if input_format == "YUV420SP_U8" else 0))
    return soc.l1_size <= 0 or need <= soc.l1_size


def _fusable(aipp: Node, conv: Node, soc: SocSpec) -> bool:
    x, w = aipp.outputs[0].desc, conv.inputs[1].desc
    origin_w = w.origin_shape or w.shape
    if len(conv.inputs) > 3 and conv.inputs[3] is not None or any(int(p) for p in aipp.attrs.get("padding", [0] * 4)):
        return False
    if x.format not in FUSABLE_ACT or len(x.origin_shape or ()) != 4 or len(origin_w) != 4:
        return False
    kh, kw = origin_w[2:]
    strides = [int(v) for v in conv.attrs.get("strides", [1, 1, 1, 1])]
    pads = [int(p) for p in conv.attrs.get("pads", [0, 0, 0, 0])]
    if (kh, kw) == (1, 1) and strides[2:] == [1, 1] and not any(pads) and x.dtype == "float16":
        return False                                     # load2d
    if kh == 1 and strides[2] > 1 and not any(pads) and w.format != FRACTAL_Z_C04:
        return False                                     # the stride-h optimisation
    return _l1_fits(conv, x.origin_shape, origin_w, str(aipp.attrs.get("input_format", "")), soc)


def _stem_pool(conv: Node, x_shape, w_shape) -> Node | None:
    """The MaxPoolV3 after a ResNet stem that Ascend310P's TbeAippConvReluMaxpoolingFusion takes."""
    use = _single(conv.outputs[0])
    pool = use[0] if use else None
    a = conv.attrs
    if pool is None or pool.op_type != "MaxPoolV3" or not a.get(SMALL_CHANNEL) or not a.get("fused_relu"):
        return None
    if tuple(x_shape[1:]) != (3, 224, 224) or not (w_shape[0] <= 96 and tuple(w_shape[1:]) == (3, 7, 7)):
        return None
    if [int(p) for p in a.get("pads", [])] != [3, 3, 3, 3] or [int(s) for s in a.get("strides", [])][2:] != [2, 2] \
            or [int(d) for d in a.get("dilations", [1, 1, 1, 1])][2:] != [1, 1] or int(a.get("groups", 1)) != 1:
        return None
    p = pool.attrs
    if [int(k) for k in p.get("ksize") or []][-2:] != [3, 3] or [int(s) for s in p.get("strides", [])][-2:] != [2, 2] \
            or [int(v) for v in p.get("pads", [])] != [1, 1, 1, 1] or p.get("ceil_mode") \
            or [int(d) for d in p.get("dilations", [1, 1, 1, 1])][-2:] != [1, 1]:
        return None
    return pool


def aipp_conv_fusion(graph: Graph, soc: SocSpec, pool_fusion: bool = True) -> int:
    """Fuse each Aipp into the convolution behind it (and, on 310P, the stem's max pool); returns how many."""
    if soc.short_soc_version not in AIPP_CONV_SOCS:
        return 0
    fused = 0
    for aipp in [n for n in graph.nodes if n.op_type == "Aipp"]:
        conv = _conv_taking(aipp)
        if conv is None or not _fusable(aipp, conv, soc):
            continue
        x_shape = aipp.outputs[0].desc.origin_shape
        w_shape = conv.inputs[1].desc.origin_shape or conv.inputs[1].desc.shape
        for k in Aipp.attrs:
            if k != "dst_type" and k in aipp.attrs:
                conv.attrs[AIPP_PREFIX + k] = aipp.attrs[k]
        graph.set_input(conv, 0, aipp.inputs[0])
        graph.remove_node(aipp)
        pool = _stem_pool(conv, x_shape, w_shape) if pool_fusion and soc.short_soc_version in STEM_POOL_SOCS \
            else None
        if pool is not None:
            conv.attrs.update({POOL_KSIZE: list(pool.attrs["ksize"]), POOL_STRIDES: list(pool.attrs["strides"]),
                               POOL_PADS: list(pool.attrs["pads"])})
            graph.replace_all_uses(pool.outputs[0], conv.outputs[0])
            conv.outputs[0].desc = pool.outputs[0].desc
            graph.remove_node(pool)
        fused += 1
    if fused:
        graph.topo_sort()
    return fused
