"""KernelStore items (TBE_KERNELS / CUST_AICPU_KERNELS): {u32 magic, u32 name_len, u32 bin_len} + name + bin."""
from __future__ import annotations

import struct

KERNEL_ITEM_MAGIC = 0x5D776EFD
_ITEM = struct.Struct("<III")


def build_store(items: list[tuple[str, bytes]]) -> bytes:
    out = bytearray()
    for name, binary in sorted(items):
        nb = name.encode()
        out += _ITEM.pack(KERNEL_ITEM_MAGIC, len(nb), len(binary)) + nb + binary
    return bytes(out)


def parse_store(data: bytes) -> dict[str, bytes]:
    items, pos = {}, 0
    while pos < len(data):
        if pos + _ITEM.size > len(data):
            raise ValueError(f"kernel store item header at {pos} is truncated")
        magic, nlen, blen = _ITEM.unpack_from(data, pos)
        if magic != KERNEL_ITEM_MAGIC:
            raise ValueError(f"kernel store item at {pos} has bad magic 0x{magic:08X}")
        pos += _ITEM.size
        if pos + nlen + blen > len(data):
            raise ValueError(f"kernel store item at {pos} runs past the partition")
        name = data[pos:pos + nlen].decode("utf-8", "replace")
        items[name] = data[pos + nlen:pos + nlen + blen]
        pos += nlen + blen
    return items
