"""MODEL_INOUT_INFO: TLV {u32 type, u32 length, value}; INPUT_DESC (0) / OUTPUT_DESC (1) tensor-desc blocks.

Block = u32 count, then per tensor ModelTensorDescBaseInfo {u64 size; i32 format; i32 dtype (ge::DataType);
u32 name_len, dims_len, dimsV2_len, shape_range_len} (32 bytes, lengths in bytes) + name + dims (i64) + dimsV2.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

INPUT_DESC, OUTPUT_DESC = 0, 1
FORMAT_INT = {"NCHW": 0, "NHWC": 1, "ND": 2}
_TLV = struct.Struct("<II")
_BASE = struct.Struct("<QiiIIII")


@dataclass
class IoDesc:
    name: str
    shape: tuple[int, ...]
    dtype_cpp: int
    format: str
    size: int


def _block(descs: list[IoDesc]) -> bytes:
    out = bytearray(struct.pack("<I", len(descs)))
    for d in descs:
        name = d.name.encode()
        dims = struct.pack(f"<{len(d.shape)}q", *d.shape)
        out += _BASE.pack(d.size, FORMAT_INT.get(d.format, 2), d.dtype_cpp, len(name), len(dims), len(dims), 0)
        out += name + dims + dims
    return bytes(out)


def build_inout(inputs: list[IoDesc], outputs: list[IoDesc], extra: list[tuple[int, bytes]] = ()) -> bytes:
    out = bytearray()
    for t, block in [(INPUT_DESC, _block(inputs)), (OUTPUT_DESC, _block(outputs)), *extra]:
        out += _TLV.pack(t, len(block)) + block
    return bytes(out)


def parse_inout(data: bytes) -> dict[int, list[IoDesc] | bytes]:
    fmt_names = {v: k for k, v in FORMAT_INT.items()}
    res: dict[int, list[IoDesc]] = {}
    pos = 0
    while pos < len(data):
        if pos + _TLV.size > len(data):
            raise ValueError("MODEL_INOUT_INFO record header is truncated")
        t, length = _TLV.unpack_from(data, pos)
        pos += _TLV.size
        end = pos + length
        if end > len(data):
            raise ValueError("MODEL_INOUT_INFO record runs past the partition")
        if t in (INPUT_DESC, OUTPUT_DESC):
            (count,) = struct.unpack_from("<I", data, pos)
            p = pos + 4
            descs = []
            for _ in range(count):
                if p + _BASE.size > end:
                    raise ValueError("tensor desc is truncated")
                size, fmt, dt, nlen, dlen, d2len, rlen = _BASE.unpack_from(data, p)
                p += _BASE.size
                if p + nlen + dlen + d2len + rlen > end or dlen % 8:
                    raise ValueError("tensor desc lengths run past the record")
                name = data[p:p + nlen].decode("utf-8", "replace")
                dims = struct.unpack_from(f"<{dlen // 8}q", data, p + nlen)
                p += nlen + dlen + d2len + rlen
                descs.append(IoDesc(name, tuple(dims), dt, fmt_names.get(fmt, "ND"), size))
            res[t] = descs
        else:
            res[t] = data[pos:end]      # a vector block (gears): parse_vector_block
        pos = end
    return res


# Gear blocks (a model built with --dynamic_batch_size / --dynamic_image_size / --dynamic_dims). Each is a vector
# block: u32 count, count u32 element sizes (values per element), then the values (i64; DESIGNATE_SHAPE_ORDER:
# the names' UTF-8 bytes, its sizes in bytes). DYNAMIC_OUTPUT_SHAPE's elements are [gear, output, dims...].
DYNAMIC_BATCH, DYNAMIC_HW, DYNAMIC_DIMS, DYNAMIC_OUTPUT_SHAPE, DESIGNATE_SHAPE_ORDER = 2, 3, 4, 5, 6
_GEAR_BLOCK = {1: DYNAMIC_BATCH, 2: DYNAMIC_HW, 3: DYNAMIC_DIMS}   # by GE's DynamicInputType


def _vector_block(items: list[list[int]]) -> bytes:
    out = bytearray(struct.pack("<I", len(items)))
    out += struct.pack(f"<{len(items)}I", *(len(i) for i in items))
    for i in items:
        out += struct.pack(f"<{len(i)}q", *i)
    return bytes(out)


def _names_block(names: list[str]) -> bytes:
    raw = [n.encode() for n in names]
    return struct.pack(f"<I{len(raw)}I", len(raw), *(len(r) for r in raw)) + b"".join(raw)


def gear_blocks(attrs: dict) -> list[tuple[int, bytes]]:
    """The DYNAMIC_* blocks of a gear model (passes/multi_batch.gear_attrs gives `attrs`); none otherwise."""
    import json
    kind = attrs.get("mbatch_dynamic_type")
    if kind not in _GEAR_BLOCK:
        return []
    gears = [[int(v) for v in g.split(",")] for g in attrs["all_gears_info"].split(";")]
    outs = json.loads(attrs["_mbatch_output_shapes"])
    shapes = [[g, k, *dims] for g, per in enumerate(outs) for k, dims in enumerate(per)]
    return [(_GEAR_BLOCK[kind], _vector_block(gears)), (DYNAMIC_OUTPUT_SHAPE, _vector_block(shapes)),
            (DESIGNATE_SHAPE_ORDER, _names_block(attrs["user_designate_shape_order"]))]


def parse_vector_block(data: bytes) -> list[list[int]]:
    """A vector block's elements (for display and tests); ValueError when its sizes run past the data."""
    if len(data) < 4:
        raise ValueError("vector block is truncated")
    (count,) = struct.unpack_from("<I", data)
    if 4 + 4 * count > len(data):
        raise ValueError("vector block sizes run past the record")
    sizes = struct.unpack_from(f"<{count}I", data, 4)
    pos, out = 4 + 4 * count, []
    for n in sizes:
        if pos + 8 * n > len(data):
            raise ValueError("vector block values run past the record")
        out.append(list(struct.unpack_from(f"<{n}q", data, pos)))
        pos += 8 * n
    return out
