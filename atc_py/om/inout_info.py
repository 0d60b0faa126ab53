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


def build_inout(inputs: list[IoDesc], outputs: list[IoDesc]) -> bytes:
    out = bytearray()
    for t, descs in ((INPUT_DESC, inputs), (OUTPUT_DESC, outputs)):
        block = _block(descs)
        out += _TLV.pack(t, len(block)) + block
    return bytes(out)


def parse_inout(data: bytes) -> dict[int, list[IoDesc]]:
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
        pos = end
    return res
