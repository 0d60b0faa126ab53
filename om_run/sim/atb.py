"""ATB's host-side mechanisms in om-run's host executor, switched by ATB's own environment variables.

An LLM server on Ascend runs each operator through ATB: Setup (build the operator's kernel graph, InferShape),
tiling, then the launch. ATB saves host time four ways, each modelled here per operator ("Operation object": one
node of the model, kept across executions as a loaded model keeps its operations):
  * Setup reuse (ATB_OPSRUNNER_SETUP_CACHE_ENABLE, default 1): an operation whose input shapes and parameters equal
    its previous call's skips the kernel-graph build and InferShape;
  * kernel (tiling) cache (ATB_OPSRUNNER_KERNEL_CACHE_TYPE 0 none, 1 local, 2 global, 3 both, default 3): tiling
    data reused when the inputs and parameters match a cached entry — the local cache lives in the operation
    (ATB_OPSRUNNER_KERNEL_CACHE_LOCAL_COUNT slots, default 1), the global one is shared by every operation of a type
    (ATB_OPSRUNNER_KERNEL_CACHE_GLOBAL_COUNT slots, default 5; ATB's older `GLOABL` spelling is read too); both evict
    the least recently used entry;
  * the Runner pool (ATB_RUNNER_POOL_SIZE, default 64): a kernel-graph build that needs a runner takes one from the
    pool of its type instead of creating it;
  * workspace (ATB_WORKSPACE_MEM_ALLOC_GLOBAL, default 0): 1 — one global workspace for every operation's
    intermediate tensors, allocated once and grown, instead of an allocation per operation;
and moves tiling data to the device either with the launch (ATB_LAUNCH_KERNEL_WITH_TILING=1, the default) or as a
copy of its own per kernel through ring buffers of ATB_HOST_TILING_BUFFER_BLOCK_NUM host blocks (default 128) and
ATB_DEVICE_TILING_BUFFER_BLOCK_NUM device blocks (default 32): a device block is reused only when the kernel that
used it ended, so a host more than that many kernels ahead of the device waits.
Defaults and ranges are those of ATB's set_env.sh and its environment-variable reference (hiascend.com, ascendtb
"环境变量参考"); the costs are named entries of the runtime profile (profile.py).
"""
from __future__ import annotations

import os
from collections import OrderedDict, deque
from dataclasses import dataclass, field

from atc_py.common.errors import AtcError

# variable -> (field, default, low, high); booleans take 0 / 1
VARIABLES = {
    "ATB_OPSRUNNER_SETUP_CACHE_ENABLE": ("setup_cache", 1, 0, 1),
    "ATB_OPSRUNNER_KERNEL_CACHE_TYPE": ("kernel_cache_type", 3, 0, 3),
    "ATB_OPSRUNNER_KERNEL_CACHE_LOCAL_COUNT": ("local_slots", 1, 1, 1024),
    "ATB_OPSRUNNER_KERNEL_CACHE_GLOBAL_COUNT": ("global_slots", 5, 1, 1024),
    "ATB_RUNNER_POOL_SIZE": ("runner_pool", 64, 0, 1024),
    "ATB_WORKSPACE_MEM_ALLOC_GLOBAL": ("workspace_global", 0, 0, 1),
    "ATB_HOST_TILING_BUFFER_BLOCK_NUM": ("host_tiling_blocks", 128, 128, 1024),
    "ATB_DEVICE_TILING_BUFFER_BLOCK_NUM": ("device_tiling_blocks", 32, 32, 1024),
    "ATB_LAUNCH_KERNEL_WITH_TILING": ("launch_with_tiling", 1, 0, 1),
}
ALIASES = {"ATB_OPSRUNNER_KERNEL_CACHE_GLOABL_COUNT": "ATB_OPSRUNNER_KERNEL_CACHE_GLOBAL_COUNT"}   # ATB's own typo


@dataclass(frozen=True)
class AtbSettings:
    setup_cache: int = 1
    kernel_cache_type: int = 3
    local_slots: int = 1
    global_slots: int = 5
    runner_pool: int = 64
    workspace_global: int = 0
    host_tiling_blocks: int = 128
    device_tiling_blocks: int = 32
    launch_with_tiling: int = 1

    @classmethod
    def from_env(cls, env=None) -> "AtbSettings":
        """The settings ATB's variables give (unset: ATB's default); a value outside ATB's range is E30002."""
        env = os.environ if env is None else env
        values = {}
        names = {**{v: v for v in VARIABLES}, **ALIASES}
        for name, canonical in names.items():
            text = env.get(name)
            if text is None or text.strip() == "":
                continue
            fld, _, lo, hi = VARIABLES[canonical]
            try:
                v = int(text.strip(), 10)
            except ValueError:
                v = None
            if v is None or not lo <= v <= hi:
                raise AtcError("E30002", reason=f"environment variable {name}={text[:40]!r}: ATB takes an integer "
                                                f"in {lo}~{hi}")
            values[fld] = v
        return cls(**values)

    @property
    def local_cache(self) -> bool:
        return self.kernel_cache_type in (1, 3)

    @property
    def global_cache(self) -> bool:
        return self.kernel_cache_type in (2, 3)


class _Lru:
    def __init__(self, slots: int):
        self.slots, self.keys = slots, OrderedDict()

    def hit(self, key) -> bool:
        if key in self.keys:
            self.keys.move_to_end(key)
            return True
        return False

    def put(self, key) -> None:
        self.keys[key] = None
        self.keys.move_to_end(key)
        while len(self.keys) > self.slots:
            self.keys.popitem(last=False)


@dataclass
class AtbHost:
    """What ATB's context and operations remember across executions of one loaded model."""
    settings: AtbSettings = field(default_factory=AtbSettings)
    last_setup: dict = field(default_factory=dict)        # operation -> its last (shapes, params)
    local: dict = field(default_factory=dict)             # operation -> _Lru
    shared: dict = field(default_factory=dict)            # op type -> _Lru (the thread's global cache)
    pooled: dict = field(default_factory=dict)            # op type -> runners in its pool
    workspace_bytes: int = 0                              # the global workspace's size so far
    host_ring: deque = field(default_factory=deque)      # (start, end) of the kernels holding tiling blocks
    setup_hits: int = 0
    kernel_hits: int = 0

    def setup(self, op: str, key) -> bool:
        """Whether `op`'s Setup (kernel graph, InferShape) is reused for inputs/params `key`."""
        hit = bool(self.settings.setup_cache) and self.last_setup.get(op) == key
        self.last_setup[op] = key
        self.setup_hits += hit
        return hit

    def runner_pooled(self, op_type: str) -> bool:
        """A kernel-graph build's runner: True when the pool of its type had one (no creation)."""
        have = self.pooled.get(op_type, 0)
        if have:
            return True
        self.pooled[op_type] = 1 if self.settings.runner_pool else 0   # the runner returns to its pool
        return False

    def kernel_cache(self, op: str, op_type: str, key, enabled: bool = True) -> bool:
        """Whether `op`'s tiling for `key` comes from the local or the global kernel cache (then it is cached)."""
        s = self.settings
        if not enabled or s.kernel_cache_type == 0:
            return False
        local = self.local.setdefault(op, _Lru(s.local_slots)) if s.local_cache else None
        shared = self.shared.setdefault(op_type, _Lru(s.global_slots)) if s.global_cache else None
        hit = (local is not None and local.hit(key)) or (shared is not None and shared.hit(key))
        for cache in (local, shared):
            if cache is not None:
                cache.put(key)
        self.kernel_hits += hit
        return hit

    def workspace_grows(self, nbytes: int) -> bool:
        """With the global workspace: whether this operation's intermediates need it to grow (an allocation)."""
        if nbytes <= self.workspace_bytes:
            return False
        self.workspace_bytes = nbytes
        return True

    def tiling_block_free_at(self) -> int:
        """When the kernel about to launch may write its tiling data (ATB_LAUNCH_KERNEL_WITH_TILING=0): a host block is
        free once the kernel that used it `host blocks` launches ago has started (its copy ran before it), a device
        block once the kernel that used it `device blocks` launches ago has ended."""
        s = self.settings
        host = self.host_ring[0][0] if len(self.host_ring) >= s.host_tiling_blocks else 0
        device = self.host_ring[-s.device_tiling_blocks][1] if len(self.host_ring) >= s.device_tiling_blocks else 0
        return max(host, device)

    def tiling_block_used(self, kernel_start: int, kernel_end: int) -> None:
        self.host_ring.append((kernel_start, kernel_end))
        keep = max(self.settings.host_tiling_blocks, self.settings.device_tiling_blocks)
        while len(self.host_ring) > keep:
            self.host_ring.popleft()
