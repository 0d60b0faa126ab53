"""Kernel args: one u64 logical address per `{i<n>}{o<n>}{ws<n>}` item, a `{t}` slot, then the tiling data.

The `{t}` slot holds the byte offset of the tiling data inside the args block (the runtime turns it into
a device address when it copies the args); tiling data starts 8-aligned right after the address slots.
"""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass

ADDR = struct.Struct("<Q")
_ITEM = re.compile(r"\{([^{}]*)\}")


@dataclass
class ArgsLayout:
    items: list[str]          # "i0", "o0", "ws0", "t"
    addresses: list[int]      # per item (the t slot holds the tiling offset)
    tiling: bytes

    def pack(self) -> bytes:
        slots = b"".join(ADDR.pack(a) for a in self.addresses)
        return slots + self.tiling

    @property
    def format(self) -> str:
        return "".join(f"{{{i}}}" for i in self.items)


def build_args(inputs: list[int | None], outputs: list[int], workspaces: list[int], tiling: bytes) -> ArgsLayout:
    items, addrs = [], []
    for k, a in enumerate(inputs):
        if a is not None:
            items.append(f"i{k}")
            addrs.append(a)
    for k, a in enumerate(outputs):
        items.append(f"o{k}")
        addrs.append(a)
    for k, a in enumerate(workspaces):
        items.append(f"ws{k}")
        addrs.append(a)
    items.append("t")
    addrs.append(8 * (len(addrs) + 1))
    return ArgsLayout(items, addrs, tiling)


def parse_args(args_format: str, args: bytes) -> tuple[dict[str, int], bytes]:
    """Inverse of build_args: address per item, and the tiling data the {t} slot points at."""
    items = _ITEM.findall(args_format)
    if len(args) < 8 * len(items):
        raise ValueError(f"args has {len(args)} bytes, format {args_format} needs {8 * len(items)}")
    addrs = {it: ADDR.unpack_from(args, 8 * k)[0] for k, it in enumerate(items)}
    tiling = b""
    if "t" in addrs:
        off = addrs["t"]
        if off > len(args):
            raise ValueError(f"tiling offset {off} is past the end of args ({len(args)} bytes)")
        tiling = args[off:]
    return addrs, tiling
