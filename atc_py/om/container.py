"""Writer and reader of the .om container: header | (table | partitions) per model.

Tables are GE's 64-bit ModelPartitionTable (u32 num, u32 pad, {u32 type, u32 pad, u64 offset, u64 size}*),
offsets relative to the end of the model's table. We fill the first 32 bytes of `checksum` with the
SHA-256 of everything after the header; a reader verifies it when it is not all zero.

The writer never joins the file into one bytes object: a partition may be `Chunks` (the weights: padding and
the constants' own arrays), and `OmImage.write_to` streams the body while another thread hashes it (both
release the GIL), then writes the header. On a 150 MB model that saves several copies and the hash time.
"""
from __future__ import annotations

import hashlib
import struct
import threading
from dataclasses import dataclass, field
from typing import BinaryIO, Union

from .header import MODEL_FILE_HEAD_LEN, MODEL_FILE_MAGIC_NUM, MODEL_VERSION, ModelFileHeader
from .partitions import NAMES

_TABLE_HEAD = struct.Struct("<II")
_ENTRY = struct.Struct("<IIQQ")
MAX_PARTITIONS = 8        # GE accepts 1..8 partitions per table (PARTITION_SIZE 5 + 3)
MAX_MODELS = 4096


class OmFormatError(Exception):
    """The file is not a well-formed .om; the message says what is wrong and where."""


class Chunks:
    """A partition made of several buffers (bytes, or uint8 numpy views of the constants), never copied
    into one: len() is the total size, bytes() joins on demand."""

    def __init__(self, parts: list | None = None):
        self.parts: list = []
        self.size = 0
        for p in parts or []:
            self.append(p)

    def append(self, buf) -> None:
        n = memoryview(buf).nbytes
        if n:
            self.parts.append(buf)
            self.size += n

    def __len__(self) -> int:
        return self.size

    def __bytes__(self) -> bytes:
        return b"".join(self.parts)


Blob = Union[bytes, Chunks]


def _buffers(data: Blob) -> list:
    return list(data.parts) if isinstance(data, Chunks) else [data]


@dataclass
class OmModel:
    partitions: list[tuple[int, Blob]] = field(default_factory=list)

    def get(self, ptype: int) -> bytes | None:
        for t, data in self.partitions:
            if t == ptype:
                return bytes(data)
        return None

    def buffers(self) -> list:
        """The table then the partitions, as the file holds them."""
        table = bytearray(_TABLE_HEAD.pack(len(self.partitions), 0))
        offset = 0
        for t, data in self.partitions:
            table += _ENTRY.pack(t, 0, offset, len(data))
            offset += len(data)
        return [bytes(table)] + [b for _, data in self.partitions for b in _buffers(data)]

    def pack(self) -> bytes:
        return b"".join(self.buffers())


@dataclass
class OmImage:
    """A whole .om before it is written: the header (checksum still to fill) and the body's buffers."""
    header: ModelFileHeader
    body: list

    def _hash(self) -> bytes:
        h = hashlib.sha256()
        for b in self.body:
            h.update(b)
        return h.digest()

    def write_to(self, f: BinaryIO) -> None:
        """Body first (hashed on another thread meanwhile), then the header with the checksum."""
        digest: list[bytes] = []
        hasher = threading.Thread(target=lambda: digest.append(self._hash()), name="om-checksum")
        hasher.start()
        f.seek(MODEL_FILE_HEAD_LEN)
        for b in self.body:
            f.write(b)
        hasher.join()
        self.header.checksum = digest[0] + b"\0" * 32
        f.seek(0)
        f.write(self.header.pack())

    def tobytes(self) -> bytes:
        self.header.checksum = self._hash() + b"\0" * 32
        return b"".join([self.header.pack()] + self.body)


@dataclass
class OmFile:
    header: ModelFileHeader
    models: list[OmModel]

    @property
    def is_dynamic(self) -> bool:
        return self.header.version >= MODEL_VERSION and (self.header.model_num > 1 or self.header.is_unknow_model == 1)


def write_om(models: list[OmModel], name: str, is_unknown: bool = False) -> OmImage:
    for m in models:
        if any(len(d) == 0 for _, d in m.partitions):
            raise ValueError("empty partitions are never written")
        if not 1 <= len(m.partitions) <= MAX_PARTITIONS:
            raise ValueError(f"a model has {len(m.partitions)} partitions; 1..{MAX_PARTITIONS} allowed")
    body = [b for m in models for b in m.buffers()]
    header = ModelFileHeader(name=name.encode()[:31], model_num=len(models),
                             model_length=sum(memoryview(b).nbytes for b in body), is_unknow_model=int(is_unknown))
    return OmImage(header, body)


def read_om(data: bytes) -> OmFile:
    size = len(data)
    if size < MODEL_FILE_HEAD_LEN:
        raise OmFormatError(f"file has {size} bytes, shorter than the {MODEL_FILE_HEAD_LEN}-byte header")
    h = ModelFileHeader.unpack(data[:MODEL_FILE_HEAD_LEN])
    if h.magic != MODEL_FILE_MAGIC_NUM:
        raise OmFormatError(f"bad magic 0x{h.magic:08X} (expected 0x{MODEL_FILE_MAGIC_NUM:08X}): not an .om file")
    if h.headsize != MODEL_FILE_HEAD_LEN:
        raise OmFormatError(f"header size {h.headsize} is not {MODEL_FILE_HEAD_LEN}")
    if h.is_encrypt:
        raise OmFormatError("encrypted models are not supported")
    model_len = h.model_length if h.model_length else h.length
    if model_len != size - MODEL_FILE_HEAD_LEN:
        raise OmFormatError(f"header says {model_len} bytes follow the header, the file has "
                            f"{size - MODEL_FILE_HEAD_LEN} (truncated or padded)")
    if h.model_length == 0:
        raise OmFormatError("legacy 32-bit partition tables (model_length == 0) are not supported")
    body = data[MODEL_FILE_HEAD_LEN:]
    digest = h.checksum[:32]
    if any(digest) and hashlib.sha256(body).digest() != digest:
        raise OmFormatError("checksum mismatch: the file is corrupted")
    if not 1 <= h.model_num <= MAX_MODELS:
        raise OmFormatError(f"model_num {h.model_num} is out of range 1..{MAX_MODELS}")
    models, pos = [], 0
    for k in range(h.model_num):
        if pos + _TABLE_HEAD.size > len(body):
            raise OmFormatError(f"partition table of model {k} at offset {pos} is truncated")
        num, _ = _TABLE_HEAD.unpack_from(body, pos)
        if not 1 <= num <= MAX_PARTITIONS:
            raise OmFormatError(f"model {k} has {num} partitions; 1..{MAX_PARTITIONS} allowed")
        table_end = pos + _TABLE_HEAD.size + num * _ENTRY.size
        if table_end > len(body):
            raise OmFormatError(f"partition table of model {k} runs past the end of the file")
        entries = [_ENTRY.unpack_from(body, pos + _TABLE_HEAD.size + i * _ENTRY.size) for i in range(num)]
        cursor, parts = table_end, []
        for ptype, _, _, psize in entries:
            if psize == 0 or cursor + psize > len(body):
                raise OmFormatError(f"partition {NAMES.get(ptype, ptype)} of model {k} has size {psize}, "
                                    f"which does not fit the file")
            parts.append((ptype, body[cursor:cursor + psize]))
            cursor += psize
        models.append(OmModel(parts))
        pos = cursor
    if pos != len(body):
        raise OmFormatError(f"{len(body) - pos} bytes after the last partition are not described by any table")
    return OmFile(h, models)
