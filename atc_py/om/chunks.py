"""Partition bytes kept as several buffers (Chunks) and the partition digest used by the .om checksum.

partition_digest = SHA-256 of the concatenated SHA-256s of the partition's consecutive 4 MiB pieces (the
last one shorter; an empty partition has one empty piece). Pieces hash independently, so the weights of a
large model hash on all host cores, and from the moment their layout is fixed (Chunks.start_digest) while
the compiler goes on with the rest: SHA-256 runs at ~300 MB/s per core here, a 90 MB weight blob took
longer than the whole compile before this.
"""
from __future__ import annotations

import bisect
import hashlib
import os
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

DIGEST_PIECE = 4 << 20


def _views(buffers: list) -> tuple[list, list[int]]:
    """Byte views of the buffers (a Deferred one stays as it is, resolved by the piece that needs it) and
    where each starts."""
    views = [b if isinstance(b, Deferred) else memoryview(b).cast("B") for b in buffers]
    starts, pos = [], 0
    for v in views:
        starts.append(pos)
        pos += v.nbytes
    return views, starts


def _piece(views, starts, lo: int, hi: int) -> bytes:
    h = hashlib.sha256()
    k = max(0, bisect.bisect_right(starts, lo) - 1)
    while k < len(views) and starts[k] < hi:
        v = views[k]
        if isinstance(v, Deferred):   # waits for this buffer only: earlier pieces hash meanwhile
            v = memoryview(v.resolve()).cast("B")
        a, b = max(lo - starts[k], 0), min(hi - starts[k], len(v))
        if a < b:
            h.update(v[a:b])
        k += 1
    return h.digest()


def partition_digest(buffers: list, workers: int = 1) -> bytes:
    views, starts = _views(buffers)
    total = sum(v.nbytes for v in views)
    spans = [(lo, min(lo + DIGEST_PIECE, total)) for lo in range(0, max(total, 1), DIGEST_PIECE)]
    digests: list[bytes | None] = [None] * len(spans)
    errors: list[BaseException] = []

    def run(ks):
        try:
            for k in ks:
                digests[k] = _piece(views, starts, *spans[k])
        except BaseException as exc:   # noqa: BLE001 -- a deferred buffer failed: raised below, on the calling thread
            errors.append(exc)
    workers = max(1, min(workers, len(spans)))
    threads = [threading.Thread(target=run, args=(range(w, len(spans), workers),), daemon=True)
               for w in range(1, workers)]
    for t in threads:
        t.start()
    run(range(0, len(spans), workers))
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return hashlib.sha256(b"".join(digests)).digest()


STREAM_CHUNK = 4 * DIGEST_PIECE   # what file_digest reads at a time (16 MiB)


def file_digest(f, offset: int, size: int, workers: int = 1,
                progress: Callable[[int], None] | None = None) -> bytes:
    """partition_digest of `size` bytes of an open file from `offset`, read STREAM_CHUNK at a time into one of two
    reused buffers: the pieces of one chunk hash on `workers` threads (hashlib releases the GIL) while the next
    chunk is read. Memory stays two chunks whatever the size; progress(bytes) after each chunk. A file shorter
    than offset + size is an EOFError."""
    from concurrent.futures import ThreadPoolExecutor
    bufs = [bytearray(min(STREAM_CHUNK, max(size, 1))) for _ in range(2 if size > STREAM_CHUNK else 1)]
    digests: list[bytes] = []
    pending: list = []
    f.seek(offset)
    with ThreadPoolExecutor(max(1, workers), thread_name_prefix="om-sha256") as pool:
        pos, k = 0, 0
        while pos < size or k == 0:
            n = min(STREAM_CHUNK, size - pos)
            buf = memoryview(bufs[k % len(bufs)])[:n]
            got = 0
            while got < n:   # the futures that used this buffer (two chunks ago) are done: see below
                r = f.readinto(buf[got:])
                if not r:
                    raise EOFError(f"the file ends {size - pos - got} bytes before the end of the partition")
                got += r
            futures = [pool.submit(lambda v: hashlib.sha256(v).digest(), buf[a:a + DIGEST_PIECE])
                       for a in range(0, max(n, 1), DIGEST_PIECE)]
            digests += [fu.result() for fu in pending]   # the chunk before: its buffer is free for the next read
            pending = futures
            pos, k = pos + n, k + 1
            if progress is not None:
                progress(n)
        digests += [fu.result() for fu in pending]
    return hashlib.sha256(b"".join(digests)).digest()


def _hash_segments(segments: list) -> bytes:
    h = hashlib.sha256()
    for seg in segments:
        h.update(seg)
    return h.digest()


_hash_pool: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    global _hash_pool
    if _hash_pool is None:
        _hash_pool = ThreadPoolExecutor(os.cpu_count() or 1, thread_name_prefix="om-sha256")
    return _hash_pool


class StreamDigest:
    """partition_digest of bytes given in order (update), in buffers of any size: each piece is hashed on a
    pool thread as soon as it is complete, at most `ahead` bytes of pieces waiting at a time (the caller may
    drop its buffers once update returns: the pieces keep what they need until hashed)."""

    def __init__(self, ahead: int = 16 * DIGEST_PIECE):
        self.ahead = ahead
        self.segments: list = []    # the current piece's bytes
        self.fill = 0
        self.queued: deque = deque()   # (future digest, piece size), in piece order
        self.queued_bytes = 0
        self.digests: list[bytes] = []

    def update(self, buf) -> None:
        view = memoryview(buf).cast("B")
        pos = 0
        while pos < len(view):
            take = min(DIGEST_PIECE - self.fill, len(view) - pos)
            self.segments.append(view[pos:pos + take])
            self.fill += take
            pos += take
            if self.fill == DIGEST_PIECE:
                self._submit()

    def _submit(self) -> None:
        segments, size = self.segments, self.fill
        self.segments, self.fill = [], 0
        self.queued.append((_pool().submit(_hash_segments, segments), size))
        self.queued_bytes += size
        while self.queued_bytes > self.ahead:
            self._collect()

    def _collect(self) -> None:
        future, size = self.queued.popleft()
        self.digests.append(future.result())
        self.queued_bytes -= size

    def digest(self) -> bytes:
        if self.fill or not (self.queued or self.digests):   # the last, shorter piece (an empty partition: one)
            self._submit()
        while self.queued:
            self._collect()
        return hashlib.sha256(b"".join(self.digests)).digest()


class Deferred:
    """A part whose bytes a host thread is still computing (a weight being cast): its size is known now,
    its buffer when resolve() returns (it waits). A `streamed` one is read from its file (or computed) anew
    at each resolve and held by nobody: it is resolved once, when the partition is written."""

    def __init__(self, nbytes: int, resolve: Callable[[], Any], streamed: bool = False):
        self.nbytes = nbytes
        self._resolve = resolve
        self.streamed = streamed

    def resolve(self):
        buf = self._resolve()
        if memoryview(buf).nbytes != self.nbytes:
            raise ValueError(f"deferred part has {memoryview(buf).nbytes} bytes, {self.nbytes} were reserved")
        return buf


class Chunks:
    """A partition made of several buffers (bytes, uint8 numpy views of the constants, or Deferred ones),
    never copied into one: len() is the total size, bytes() joins on demand."""

    def __init__(self, parts: list | None = None):
        self.parts: list = []
        self.size = 0
        self._digest: list[bytes] = []
        self._error: BaseException | None = None
        self._hasher: threading.Thread | None = None
        for p in parts or []:
            self.append(p)

    def append(self, buf) -> None:
        n = buf.nbytes if isinstance(buf, Deferred) else memoryview(buf).nbytes
        if n:
            self.parts.append(buf)
            self.size += n

    @property
    def streamed(self) -> bool:
        """Whether a part is streamed (Deferred.streamed): its bytes are in no buffer until resolved."""
        return any(isinstance(p, Deferred) and p.streamed for p in self.parts)

    def buffers(self) -> list:
        """The parts with deferred ones resolved (waits for them)."""
        return [p.resolve() if isinstance(p, Deferred) else p for p in self.parts]

    def iter_buffers(self):
        """The parts one at a time, each deferred one resolved when its turn comes."""
        for p in self.parts:
            yield p.resolve() if isinstance(p, Deferred) else p

    def __len__(self) -> int:
        return self.size

    def __bytes__(self) -> bytes:
        return b"".join(self.buffers())

    def _hash(self) -> None:
        try:
            if self.streamed:   # each part resolved once, in order (partition_digest resolves one per piece)
                h = StreamDigest()
                for buf in self.iter_buffers():
                    h.update(buf)
                self._digest.append(h.digest())
                return
            self._digest.append(partition_digest(self.parts, os.cpu_count() or 1))
        except BaseException as exc:   # noqa: BLE001 -- a deferred part failed: digest() re-raises it on the caller's thread
            self._error = exc

    def start_digest(self) -> None:
        """Hash on other threads from now on (hashlib releases the GIL); the parts must not change."""
        if self._hasher is None and not self._digest:
            self._hasher = threading.Thread(target=self._hash, name="weights-sha256", daemon=True)
            self._hasher.start()

    def digest(self) -> bytes:
        if self._hasher is not None:
            self._hasher.join()
        elif not self._digest and self._error is None:
            self._hash()
        if self._error is not None:
            raise self._error
        return self._digest[0]


def partition_digest_of(data) -> bytes:
    """The digest of a partition given as bytes or as Chunks (whose digest may be on its way already)."""
    return data.digest() if isinstance(data, Chunks) else partition_digest([data], os.cpu_count() or 1)
