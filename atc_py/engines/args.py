"""Kernel args: the one definition of their format, written by the engines (`build`) and read by om-run (`parse`).

An args block is one u64 per item of its format `{i0}{o0}{ws0}{t}`: a tensor's logical address per
`{i<n>}{o<n>}{ws<n>}` item, then the `{t}` slot, then the tiling data. The `{t}` slot holds the byte offset of
the tiling data inside the block (the runtime turns it into a device address when it copies the args); tiling
data starts 8-aligned right after the address slots. A sink kernel has `{tiling_context.tiling_data}` in place
of `{t}` (its tiling is computed on the device), a SUPER_KERNEL member adds the tiling key, block count and the
event its tiling notifies, and the device-tiling task's own args are `{tiling_context}{*op_type}...`.
"""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass

ADDR = struct.Struct("<Q")

# the items that are not a tensor's address
TILING = "t"                                      # offset of the (static) tiling data in the block
TILING_CONTEXT = "tiling_context"                 # the device tiling's context (its task's args)
SINK_TILING_DATA = "tiling_context.tiling_data"   # a sink kernel's tiling data, written by the device tiling
SINK_TILING_KEY = "tiling_context.tiling_key"
SINK_BLOCK_DIM = "tiling_context.block_dim"
OP_TYPE = "*op_type"
EMPTY = ""                                        # a slot the kernel does not read
FIXED_ITEMS = (TILING, TILING_CONTEXT, SINK_TILING_DATA, SINK_TILING_KEY, SINK_BLOCK_DIM, OP_TYPE, EMPTY)

TENSOR_ITEM = re.compile(r"(i|o|ws)(\d{1,6})(\*?)")    # input, output or workspace k (`*`: a pointer to it)
EVENT_ITEM = re.compile(r"event_addr(\d{1,6})\*")      # the address of event k
ITEM = re.compile("|".join([TENSOR_ITEM.pattern, EVENT_ITEM.pattern] + [re.escape(i) for i in FIXED_ITEMS]))
_BRACED = re.compile(r"\{([^{}]*)\}")
MAX_FORMAT_CHARS = 65536


def input_item(k: int) -> str:
    return f"i{k}"


def output_item(k: int) -> str:
    return f"o{k}"


def workspace_item(k: int, pointer: bool = False) -> str:
    return f"ws{k}" + ("*" if pointer else "")


def event_item(k: int) -> str:
    return f"event_addr{k}*"


def format_of(items: list[str]) -> str:
    return "".join(f"{{{i}}}" for i in items)


def tensor_ref(item: str) -> tuple[str, int] | None:
    """("i" | "o" | "ws", k) of a tensor's item (`{i0}`, `{ws1*}`); None for the other items."""
    m = TENSOR_ITEM.fullmatch(item)
    return (m.group(1), int(m.group(2))) if m else None


class ArgsError(ValueError):
    """A format or an args block that is not what `build` writes; the message names `of` (e.g. "op 'fc'")."""


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
        return format_of(self.items)


def build(inputs: list[int | None], outputs: list[int], workspaces: list[int], tiling: bytes) -> ArgsLayout:
    """A kernel's args: an item per present input, per output and per workspace, then `{t}`."""
    items, addrs = [], []
    for k, a in enumerate(inputs):
        if a is not None:
            items.append(input_item(k))
            addrs.append(a)
    for k, a in enumerate(outputs):
        items.append(output_item(k))
        addrs.append(a)
    for k, a in enumerate(workspaces):
        items.append(workspace_item(k))
        addrs.append(a)
    items.append(TILING)
    addrs.append(8 * (len(addrs) + 1))
    return ArgsLayout(items, addrs, tiling)


def format_items(args_format: str, of: str = "the kernel") -> list[str]:
    """The items of a format in order; ArgsError for text outside `{}`, an unknown item or a repeated one."""
    if len(args_format) > MAX_FORMAT_CHARS:
        raise ArgsError(f"args format of {of} is {len(args_format)} characters long")
    items = _BRACED.findall(args_format)
    if _BRACED.sub("", args_format):
        raise ArgsError(f"args format {args_format[:80]!r} of {of} has text outside {{items}}")
    for it in items:
        if not ITEM.fullmatch(it):
            raise ArgsError(f"args format item {{{it[:40]}}} of {of} is not one om-run knows")
    named = [it for it in items if it]
    if len(set(named)) != len(named):
        raise ArgsError(f"args format {args_format[:80]!r} of {of} repeats an item")
    return items


def parse(args_format: str, args: bytes, of: str = "the kernel") -> tuple[dict[str, int], bytes]:
    """Inverse of build: the u64 per item, and the tiling data the `{t}` slot points at (b"" without one)."""
    items = format_items(args_format, of)
    if len(args) < 8 * len(items):
        raise ArgsError(f"args of {of} have {len(args)} bytes, format {args_format[:80]!r} needs {8 * len(items)}")
    addrs = {it: ADDR.unpack_from(args, 8 * k)[0] for k, it in enumerate(items)}
    tiling = b""
    if TILING in addrs:
        off = addrs[TILING]
        if off > len(args):
            raise ArgsError(f"the tiling offset {off} of {of} is past its {len(args)} B of args")
        tiling = args[off:]
    return addrs, tiling
