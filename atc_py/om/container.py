"""Writer and reader of the .om container: header | (table | partitions) per model.

Tables are GE's 64-bit ModelPartitionTable (u32 num, u32 pad, {u32 type, u32 pad, u64 offset, u64 size}*),
offsets relative to the end of the model's table. We fill the first 32 bytes of `checksum` with a
SHA-256 over the body: for each model its partition table bytes, then the digest of each of its partitions
in table order (model_checksum; partition_digest in chunks.py); a reader verifies it when it is not all zero.
Digesting per partition lets the compiler hash the weights while it is still compiling.

read_om parses a file held in memory; read_om_file parses an open file, reading the tables before any partition
and leaving the partitions a caller asks for in the file (InFile; om-run maps its weights), the checksum
streamed. The writer never joins the file into one bytes object: a partition may be `Chunks` (the weights: padding and
the constants' own arrays) and `OmImage.write_to` streams the buffers, then writes the header.
"""
from __future__ import annotations

import hashlib
import os
import struct
from dataclasses import dataclass, field
from typing import BinaryIO, Callable, Union

from ..common.progress import NoProgress
from .chunks import Chunks, file_digest, partition_digest_of
from .header import MODEL_FILE_HEAD_LEN, MODEL_FILE_MAGIC_NUM, MODEL_VERSION, OM_PROTO_VERSION, ModelFileHeader
from .partitions import NAMES
from .writer import write_image

_TABLE_HEAD = struct.Struct("<II")
_ENTRY = struct.Struct("<IIQQ")
MAX_PARTITIONS = 8        # GE accepts 1..8 partitions per table (PARTITION_SIZE 5 + 3)
MAX_MODELS = 4096


class OmFormatError(Exception):
    """The file is not a well-formed .om; the message says what is wrong and where."""


Blob = Union[bytes, Chunks]


def _buffers(data: Blob) -> list:
    return data.buffers() if isinstance(data, Chunks) else [data]


def _table(partitions) -> bytes:
    table = bytearray(_TABLE_HEAD.pack(len(partitions), 0))
    offset = 0
    for t, data in partitions:
        table += _ENTRY.pack(t, 0, offset, len(data))
        offset += len(data)
    return bytes(table)


def model_checksum(tables_and_partitions) -> bytes:
    """SHA-256 of each model's table bytes followed by the digest of each of its partitions (chunks.py)."""
    return checksum_of_digests((table, [partition_digest_of(d) for d in partitions])
                               for table, partitions in tables_and_partitions)


def checksum_of_digests(tables_and_digests) -> bytes:
    """model_checksum from each model's table bytes and its partitions' digests."""
    h = hashlib.sha256()
    for table, digests in tables_and_digests:
        h.update(table)
        for d in digests:
            h.update(d)
    return h.digest()


@dataclass
class OmModel:
    partitions: list[tuple[int, Blob]] = field(default_factory=list)

    def get(self, ptype: int) -> bytes | None:
        data = self.part(ptype)
        if isinstance(data, InFile):
            raise ValueError(f"partition {NAMES[ptype]} was left in the file (read_om_file)")
        return None if data is None else bytes(data)

    def part(self, ptype: int):
        """The partition as held: bytes, Chunks, or an InFile read_om_file left in the file."""
        for t, data in self.partitions:
            if t == ptype:
                return data
        return None

    def table(self) -> bytes:
        return _table(self.partitions)

    def buffers(self) -> list:
        """The table then the partitions, as the file holds them."""
        return [_table(self.partitions)] + [b for _, data in self.partitions for b in _buffers(data)]

    def pack(self) -> bytes:
        return b"".join(self.buffers())


@dataclass
class OmImage:
    """A whole .om before it is written: the header (checksum filled when written) and the body's buffers."""
    header: ModelFileHeader
    models: list[OmModel]

    @property
    def body(self) -> list:
        return [b for m in self.models for b in m.buffers()]

    @property
    def size(self) -> int:
        return MODEL_FILE_HEAD_LEN + self.header.model_length

    def seal(self, digests=None) -> bytes:
        """The header with its checksum, from each model's (table, partition digests) when the writer has them
        (om/writer.py), else computed here."""
        if digests is None:
            digests = [(m.table(), [partition_digest_of(d) for _, d in m.partitions]) for m in self.models]
        self.header.checksum = checksum_of_digests(digests) + b"\0" * 32
        return self.header.pack()

    def write_to(self, f: BinaryIO, progress=None) -> None:
        """The body first, then the header over the space kept for it: the checksum needs the weights' digest,
        which host threads are still computing or which is taken while the weights stream through
        (om/writer.py). `progress` (atc_py/common/progress.py) is told the bytes written."""
        write_image(f, self, progress if progress is not None else NoProgress())

    def tobytes(self) -> bytes:
        return b"".join([self.seal()] + self.body)


@dataclass
class OmFile:
    header: ModelFileHeader
    models: list[OmModel]

    @property
    def is_dynamic(self) -> bool:
        return self.header.model_num > 1 or self.header.is_unknow_model == 1


def write_om(models: list[OmModel], name: str, is_unknown: bool = False) -> OmImage:
    for m in models:
        if any(len(d) == 0 for _, d in m.partitions):
            raise ValueError("empty partitions are never written")
        if not 1 <= len(m.partitions) <= MAX_PARTITIONS:
            raise ValueError(f"a model has {len(m.partitions)} partitions; 1..{MAX_PARTITIONS} allowed")
    length = sum(len(_table(m.partitions)) + sum(len(d) for _, d in m.partitions) for m in models)
    header = ModelFileHeader(name=name.encode()[:31], model_num=len(models), model_length=length,
                             is_unknow_model=int(is_unknown))
    return OmImage(header, models)


def check_header(h: ModelFileHeader, size: int) -> None:
    """Every header field against what a writer of this format may put there."""
    if h.magic != MODEL_FILE_MAGIC_NUM:
        raise OmFormatError(f"bad magic 0x{h.magic:08X} (expected 0x{MODEL_FILE_MAGIC_NUM:08X}): not an .om file")
    if h.headsize != MODEL_FILE_HEAD_LEN:
        raise OmFormatError(f"header size {h.headsize} is not {MODEL_FILE_HEAD_LEN}")
    if h.version != MODEL_VERSION:
        raise OmFormatError(f"header version 0x{h.version:08X} is not 0x{MODEL_VERSION:08X}")
    if h.is_encrypt:
        raise OmFormatError("encrypted models are not supported")
    if h.om_ir_version != OM_PROTO_VERSION:
        raise OmFormatError(f"om_ir_version {h.om_ir_version} is not {OM_PROTO_VERSION}")
    for name in ("is_checksum", "genmode", "need_check_os_cpu_info", "is_unknow_model"):
        if getattr(h, name) not in (0, 1):
            raise OmFormatError(f"header field {name} is {getattr(h, name)}; it is 0 or 1")
    if h.modeltype != 0 or h.platform_type != 0:
        raise OmFormatError(f"header modeltype {h.modeltype} / platform_type {h.platform_type}: only 0 (an offline "
                            "model for the device) is supported")
    if h.model_length == 0:
        raise OmFormatError("legacy 32-bit partition tables (model_length == 0) are not supported")
    if h.length not in (0, h.model_length):
        raise OmFormatError(f"header length {h.length} disagrees with model_length {h.model_length}")
    if h.model_length != size - MODEL_FILE_HEAD_LEN:
        raise OmFormatError(f"header says {h.model_length} bytes follow the header, the file has "
                            f"{size - MODEL_FILE_HEAD_LEN} (truncated or padded)")
    if not 1 <= h.model_num <= MAX_MODELS:
        raise OmFormatError(f"model_num {h.model_num} is out of range 1..{MAX_MODELS}")
    if h.is_unknow_model != (h.model_num > 1):
        raise OmFormatError(f"is_unknow_model {h.is_unknow_model} with {h.model_num} models: a multi-model om is "
                            "exactly an unknown-shape one")
    try:
        h.name.decode("utf-8")
    except UnicodeDecodeError:
        raise OmFormatError("the model name in the header is not UTF-8") from None


class InFile:
    """A partition read_om_file left in the file: where it lies (offset from the start of the file) and its size,
    both checked against the file; its bytes were only hashed (streamed) when the checksum was verified."""
    __slots__ = ("offset", "size")

    def __init__(self, offset: int, size: int):
        self.offset, self.size = offset, size

    def __len__(self) -> int:
        return self.size


class _BytesSource:
    def __init__(self, data):
        self.view = memoryview(data).cast("B")
        self.size = self.view.nbytes

    def read(self, offset: int, n: int) -> bytes:
        return bytes(self.view[offset:offset + n])


class _FileSource:
    """An open .om of `size` bytes (fstat's): every read is exact, a short one (the file shrank since) an error."""

    def __init__(self, f: BinaryIO, size: int):
        self.f, self.size = f, size

    def read(self, offset: int, n: int) -> bytes:
        try:
            self.f.seek(offset)
            data = self.f.read(n)
        except OSError as exc:
            raise OmFormatError(f"cannot read {n} bytes at offset {offset} ({exc.strerror or exc})") from None
        if len(data) != n:
            raise OmFormatError(f"the file ends at byte {offset + len(data)}, {n} bytes at offset {offset} were "
                                "expected (truncated while being read?)")
        return data


def read_om(data: bytes, allow_unsealed: bool = False) -> OmFile:
    """Parse and verify a whole file. The checksum is always verified; a zero checksum (an unsealed file) is
    an error unless allow_unsealed (om-run --no-verify)."""
    return _read(_BytesSource(data), allow_unsealed, None, None)


def read_om_file(f: BinaryIO, size: int, allow_unsealed: bool = False,
                 in_file: Callable[[int, int], bool] | None = None,
                 progress: Callable[[str, int, int], None] | None = None) -> OmFile:
    """read_om of an open file of `size` bytes that reads only what it must: the header and the partition
    tables first, every offset and size checked against `size`, then the partitions, except those for which
    in_file(type, size) is true: those stay InFile (the caller maps them, om_run/load/loader.py). The checksum is
    computed streaming (chunks.file_digest: 16 MiB at a time, never the whole file in memory); progress(stage,
    bytes done, bytes total) is told as it goes."""
    return _read(_FileSource(f, size), allow_unsealed, in_file, progress)


def _read(src, allow_unsealed: bool, in_file, progress) -> OmFile:
    size = src.size
    if size < MODEL_FILE_HEAD_LEN:
        raise OmFormatError(f"file has {size} bytes, shorter than the {MODEL_FILE_HEAD_LEN}-byte header")
    h = ModelFileHeader.unpack(src.read(0, MODEL_FILE_HEAD_LEN))
    check_header(h, size)
    body_len = size - MODEL_FILE_HEAD_LEN
    models, tables, pos = [], [], 0
    for k in range(h.model_num):
        if pos + _TABLE_HEAD.size > body_len:
            raise OmFormatError(f"partition table of model {k} at offset {pos} is truncated")
        num, pad = _TABLE_HEAD.unpack(src.read(MODEL_FILE_HEAD_LEN + pos, _TABLE_HEAD.size))
        if not 1 <= num <= MAX_PARTITIONS or pad:
            raise OmFormatError(f"model {k} has {num} partitions (pad {pad}); 1..{MAX_PARTITIONS} allowed")
        table_end = pos + _TABLE_HEAD.size + num * _ENTRY.size
        if table_end > body_len:
            raise OmFormatError(f"partition table of model {k} runs past the end of the file")
        table = src.read(MODEL_FILE_HEAD_LEN + pos, table_end - pos)
        entries = [_ENTRY.unpack_from(table, _TABLE_HEAD.size + i * _ENTRY.size) for i in range(num)]
        cursor, spans, seen = table_end, [], set()
        for ptype, epad, offset, psize in entries:
            if ptype not in NAMES or epad:
                raise OmFormatError(f"model {k} has a partition of unknown type {ptype}")
            if ptype in seen:
                raise OmFormatError(f"model {k} has two {NAMES[ptype]} partitions")
            seen.add(ptype)
            if psize == 0 or cursor + psize > body_len or offset != cursor - table_end:
                raise OmFormatError(f"partition {NAMES[ptype]} of model {k} (offset {offset}, size {psize}) does "
                                    "not fit the file")
            spans.append((ptype, MODEL_FILE_HEAD_LEN + cursor, psize))
            cursor += psize
        models.append(spans)
        tables.append(table)
        pos = cursor
    if pos != body_len:
        raise OmFormatError(f"{body_len - pos} bytes after the last partition are not described by any table")
    # every table checked against the file: now the partitions, read or left where they are
    parts = [[(t, InFile(off, n) if in_file is not None and in_file(t, n) else src.read(off, n))
              for t, off, n in spans] for spans in models]
    digest = h.checksum[:32]
    if not any(digest):
        if not allow_unsealed:
            raise OmFormatError("the checksum is all zero (an unsealed or hand-made file); om-run --no-verify "
                                "runs it anyway")
    elif _checksum(src, tables, parts, progress) != digest:
        raise OmFormatError("checksum mismatch: the file is corrupted")
    if any(h.checksum[32:]):
        raise OmFormatError("the second half of the checksum field is not zero")
    return OmFile(h, [OmModel(p) for p in parts])


def _checksum(src, tables, parts, progress) -> bytes:
    """model_checksum, the partitions left in the file streamed from it (their bytes never all in memory)."""
    total = sum(len(d) for p in parts for _, d in p)
    done = 0

    def tell(n: int) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress("checksum", done, total)
    h = hashlib.sha256()
    for table, p in zip(tables, parts):
        h.update(table)
        for _, data in p:
            if isinstance(data, InFile):
                try:
                    h.update(file_digest(src.f, data.offset, data.size, os.cpu_count() or 1, tell))
                except EOFError as exc:
                    raise OmFormatError(f"{exc} (truncated while being read?)") from None
                except OSError as exc:
                    raise OmFormatError(f"cannot read the file ({exc.strerror or exc})") from None
            else:
                h.update(partition_digest_of(data))
                tell(len(data))
    return h.digest()
