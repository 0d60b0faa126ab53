"""Writing an OmImage to a file, one buffer at a time, its checksum taken on the way.

The header goes last (into the space kept for it at the start): its checksum covers each partition's digest,
and the digest of a streamed weights partition (om/chunks.py: parts read from the model's data file, or
computed from it, when their turn comes) is known only once every part has gone through. Each streamed part
is resolved on a helper thread and fed to the digest (whose pieces hash on the pool threads) while the part
before it is being written: a part is read once, at most about two are held at a time, and reading, hashing
and writing overlap. Other partitions are written as they are, with the digest they already have (the
in-memory weights are hashed while the compiler works).

A file that cannot seek (a pipe or a terminal behind a character device) gets the digests first, then the
header and the body: the streamed parts are then read twice.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import BinaryIO

from .chunks import Chunks, Deferred, StreamDigest, partition_digest_of
from .header import MODEL_FILE_HEAD_LEN


def _resolve(part):
    return part.resolve() if isinstance(part, Deferred) else part


def _nbytes(buf) -> int:
    return memoryview(buf).nbytes


def _streamed(f: BinaryIO, chunks: Chunks, progress) -> bytes:
    """Writes the parts in order; returns the partition digest."""
    digest = StreamDigest()

    def read_and_hash(part):
        buf = _resolve(part)
        digest.update(buf)
        return buf
    parts = chunks.parts
    with ThreadPoolExecutor(1, thread_name_prefix="om-read") as reader:
        nxt = reader.submit(read_and_hash, parts[0]) if parts else None
        for k in range(len(parts)):
            buf = nxt.result()
            # the next part is read (and hashed) while this one is written; digest.update runs in part order
            nxt = reader.submit(read_and_hash, parts[k + 1]) if k + 1 < len(parts) else None
            try:
                f.write(buf)
            except BaseException:
                if nxt is not None:
                    nxt.cancel()
                raise
            progress.advance(_nbytes(buf))
            del buf
    return digest.digest()


def _plain(f: BinaryIO, data, progress) -> bytes:
    if isinstance(data, Chunks):
        for buf in data.iter_buffers():
            f.write(buf)
            progress.advance(_nbytes(buf))
    else:
        f.write(data)
        progress.advance(len(data))
    return partition_digest_of(data)


def write_partition(f: BinaryIO, data, progress) -> bytes:
    if isinstance(data, Chunks) and data.streamed:
        return _streamed(f, data, progress)
    return _plain(f, data, progress)


def write_image(f: BinaryIO, image, progress) -> None:
    """The header's slot, each model's table and partitions, then the sealed header over its slot."""
    if not f.seekable():
        f.write(image.seal())
        progress.advance(MODEL_FILE_HEAD_LEN)
        for m in image.models:
            table = m.table()
            f.write(table)
            progress.advance(len(table))
            for _, data in m.partitions:
                _plain(f, data, progress)
        return
    start = f.tell()
    f.write(bytes(MODEL_FILE_HEAD_LEN))
    progress.advance(MODEL_FILE_HEAD_LEN)
    digests = []
    for m in image.models:
        table = m.table()
        f.write(table)
        progress.advance(len(table))
        digests.append((table, [write_partition(f, data, progress) for _, data in m.partitions]))
    end = f.tell()
    f.seek(start)
    f.write(image.seal(digests))
    f.seek(end)
