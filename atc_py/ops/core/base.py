"""One registration per GE op type: prototype + infer, info, tiling, tiling dependency, kernel, cost.

CANN splits these over its op proto, op info, op impl and tiling libraries; we keep them side by side
(one class per op) so that a reader sees everything about an op in one place.
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np

from ...ir.graph import Node, TensorDesc
from ...platform.soc import SocSpec
from .impl_modes import upcast_inside

AICORE, AICPU = "AICORE", "AICPU"
# neither AI Core nor AICPU: GE's HCCL ops kernel library (ops_kernel_info_hccl, engine DNN_HCCL) runs the collectives
HCCL = "HCCL"
AIC, AIV, MIX = "AIC", "AIV", "MIX"            # cube, vector, both
HOST, ON_AICPU = "HOST", "AICPU"               # tiling placements (TILING_ON_AICPU)


class OpError(Exception):
    """A user-visible problem with one node (bad attribute, incompatible shapes, bad value)."""


def covered(rows: int, per_block: int, block_dim: int) -> int:
    """Blocks b < block_dim each take rows [b * per_block, (b + 1) * per_block): they cover [0, this). Kernels
    whose rows are independent compute that range in one numpy call, which is what the blocks compute."""
    return max(0, min(rows, per_block * block_dim))


class TilingStruct:
    """A packed little-endian struct the op declares for its tiling data."""

    def __init__(self, *fields: tuple[str, str]):
        self.names = tuple(n for n, _ in fields)
        self._st = struct.Struct("<" + "".join(f for _, f in fields))
        self._seen: dict[bytes, tuple] = {}

    @property
    def size(self) -> int:
        return self._st.size

    def pack(self, **values: Any) -> bytes:
        return self._st.pack(*(values[n] for n in self.names))

    def unpack(self, data: bytes) -> dict[str, Any]:
        """A fresh dict per call (kernels may keep it); the decoded values are memoised per tiling blob."""
        values = self._seen.get(data)
        if values is None:
            if len(data) < self._st.size:
                raise OpError(f"tiling data has {len(data)} bytes, the kernel expects {self._st.size}")
            values = self._st.unpack_from(data)
            if len(self._seen) < 4096:
                self._seen[bytes(data)] = values
        return dict(zip(self.names, values))


@dataclass
class TilingResult:
    block_dim: int
    tiling_key: int
    tiling_data: bytes
    workspace: list[int] = field(default_factory=list)


@dataclass
class TilingContext:
    """What a tiling function may look at: descs, attrs, the SoC and the values of dependent inputs."""

    inputs: list[TensorDesc | None]
    outputs: list[TensorDesc]
    attrs: dict[str, Any]
    soc: SocSpec
    depend_values: dict[int, np.ndarray] = field(default_factory=dict)
    byte_scale: float = 1.0       # bytes the device formats move per byte of the logical descs (C0 padding)


@dataclass
class KernelArgs:
    """What a kernel is launched with: the tiling it was given, attrs and output descs."""

    tiling: dict[str, Any]
    tiling_key: int
    block_dim: int
    attrs: dict[str, Any]
    outputs: list[TensorDesc]
    # where the outputs land, when the caller lets the kernel write them there now (None: return fresh arrays);
    # a kernel that does returns that very array, and must not when it overlaps an input
    out: list | None = None


def direct_output(args: KernelArgs, acc, inputs) -> np.ndarray | None:
    """The view output 0 lands in, when the caller offers it (KernelArgs.out), it is C-contiguous in the
    given dtype (the kernel computes in it: no cast at the end) and no input may overlap it; else None (compute, then copy)."""
    out = args.out
    if not out or not isinstance(out[0], np.ndarray):
        return None
    dst = out[0]
    if dst.dtype != acc or dst.shape != tuple(args.outputs[0].shape) or not dst.flags.c_contiguous \
            or not dst.flags.writeable:
        return None
    if any(x is not None and np.may_share_memory(x, dst) for x in inputs):
        return None
    return dst


@dataclass
class Work:
    """Work of one launch (work()) or of its largest block (block_work()): cube fractal MACs, vector element-ops,
    bytes moved between global memory and the cores, and how (ops describe it, the cost model prices it for
    every kernel alike: atc_py/ops/core/cost.py and om_run/sim). `pipelined`: the block's data movement overlaps
    its compute (double-buffered queues); False serialises them."""

    fractals: int = 0
    vector_ops: int = 0
    bytes: int = 0
    dtype: str = "float32"
    flops: int = 0                  # useful FLOPs (2 per MAC of the unpadded problem); 0: the fractals' MACs
    vector_class: str = "elementwise"   # whose vector efficiency applies (RuntimeProfile.vector_efficiency)
    cube_tiles: int = 0             # L0C output tiles (each drains through the fixpipe)
    syncs: int = 0                  # cross-core barriers the block waits at (a split reduction's combine)
    out_elems: int = 0              # output elements written (an epilogue costs one vector op per element)
    reuse_window: int = 0           # bytes the L2 must hold for re-reads (bytes beyond inputs + outputs) to hit;
    #                                 0: the inputs and outputs themselves
    pipelined: bool = True          # MTE overlaps compute (double-buffered); False: one after the other
    mte_moves: int = 0              # MTE instructions that cost more than their bytes: a kernel moving rows or
    #                                 channels one instruction each (ops/core/move_plans.py); 0 for bulk movers

    def share(self, blocks: int) -> "Work":
        """The largest of `blocks` even parts of this work (each count rounded up)."""
        b = max(1, blocks)
        return replace(self, fractals=ceil_div(self.fractals, b), vector_ops=ceil_div(self.vector_ops, b),
                       bytes=ceil_div(self.bytes, b), flops=ceil_div(self.flops, b),
                       cube_tiles=ceil_div(self.cube_tiles, b), out_elems=ceil_div(self.out_elems, b),
                       mte_moves=ceil_div(self.mte_moves, b))


class OpSpec:
    """Base of every op registration. Subclasses set the class attributes and override the methods."""

    op_type: ClassVar[str] = ""
    inputs: ClassVar[tuple[str, ...]] = ()        # a trailing "?" marks an optional input
    outputs: ClassVar[tuple[str, ...]] = ("y",)
    attrs: ClassVar[dict[str, Any]] = {}          # attribute defaults; REQUIRED marks mandatory ones
    engine: ClassVar[str] = AICORE
    core_type: ClassVar[str] = AIV
    dtypes: ClassVar[tuple[str, ...]] = ("float32", "float16")
    # the op information library's formats: input/output name -> the device format its AI Core kernel
    # takes it in (NC1HWC0, FRACTAL_Z, ...); empty: the framework's layout. passes/formats.py reads it.
    formats: ClassVar[dict[str, str]] = {}
    # per SoC (Short_SoC_version -> formats), where an SoC's kernel differs from the default (the matmuls of the
    # Ascend310 / 310P / 310B / 910 take FRACTAL_NZ; the 910B's read ND)
    soc_formats: ClassVar[dict[str, dict[str, str]]] = {}
    tiling_depend: ClassVar[frozenset[int]] = frozenset()
    infer_depend: ClassVar[frozenset[int]] = frozenset()  # inputs whose *values* decide the output shape
    # its infer reasons about inputs of unknown rank (GE's -2) itself; other ops given one have outputs of unknown
    # rank too (ops/core/infer.py), never a rank read off the placeholder (-2,)
    unknown_rank_aware: ClassVar[bool] = False
    # GE's DEPEND_COMPUTE ("third-class") ops: the output shape is known only once the kernel ran (NMS's count of
    # selected boxes); infer gives -1 dims, the host executor takes the shape of what the kernel returned
    shape_from_compute: ClassVar[bool] = False
    tiling_placements: ClassVar[frozenset[str]] = frozenset({HOST})
    tiling_keys: ClassVar[tuple[int, ...]] = (0,)  # entries of the kernel binary; >1 → ALL_KERNEL task
    tiling_struct: ClassVar[TilingStruct | None] = None
    no_task: ClassVar[bool] = False                # view ops: output aliases input memory, no kernel
    task_kind: ClassVar[str] = "kernel"            # "control" (If/While/Case: owns subgraphs), "rts" (runtime task),
    #                                                "hccl" (a collective: HCCL's task, engines/hccl.py)
    # its outputs are a function of its inputs alone: folding may compute it at compile time, CSE merge two alike,
    # dead-node removal drop it unread. A collective is not: its result is the group's, and every rank must run it
    pure: ClassVar[bool] = True
    is_custom: ClassVar[bool] = False
    # the vector instructions its kernel is built on where SoCs differ (the transcendental ones): an fp32 op whose
    # instruction the SoC has in fp16 only computes in fp16 inside (passes/soc_kernels.py)
    vector_intrinsics: ClassVar[tuple[str, ...]] = ()
    # a kernel with a high-precision and a high-performance implementation: the mode it runs when the build names
    # none for it (ops/core/impl_modes.py); None: one implementation
    impl_default: ClassVar[str | None] = None
    # its vector work runs over the padded device-format elements it moves (C0 lanes, 16 x 16 fractals), as the
    # bytes do (TilingContext.byte_scale); False where work() already counts the device layout (move plans)
    padded_vector_work: ClassVar[bool] = True

    def alias_input(self, node: Node, k: int) -> int | None:
        """The input whose bytes output k shares (views: input 0; While: its loop-carried input k), or None."""
        return 0 if self.no_task and node.op_type not in ("Data", "Const") and node.inputs else None

    # -- prototype -------------------------------------------------------------------------------
    def attr(self, node_or_attrs, name: str) -> Any:
        attrs = node_or_attrs.attrs if isinstance(node_or_attrs, Node) else node_or_attrs
        if name in attrs:
            return attrs[name]
        default = self.attrs.get(name, REQUIRED)
        if default is REQUIRED:
            raise OpError(f"required attribute '{name}' of {self.op_type} is missing")
        return default

    def infer(self, node: Node) -> list[TensorDesc]:
        raise NotImplementedError(self.op_type)

    # -- tiling ----------------------------------------------------------------------------------
    def tiling(self, ctx: TilingContext) -> TilingResult:
        raise NotImplementedError(self.op_type)

    def decode_tiling(self, data: bytes, attrs: dict[str, Any]) -> dict[str, Any]:
        """The tiling data a kernel is launched with, as named values (the op's declared struct)."""
        return self.tiling_struct.unpack(data) if self.tiling_struct else {}

    def scratch_needs(self, tiling: dict[str, Any], attrs: dict[str, Any], inputs: list, outputs: list
                      ) -> tuple[dict[str, int], dict[str, int]]:
        """The host scratch (ops/core/host_pool.scratch: name -> bytes) a launch with this decoded tiling uses on the
        calling thread, and on each thread running its pieces: reserved before a model's first execution.
        Most kernels use none."""
        return {}, {}

    def tiling_data_size(self, attrs: dict[str, Any]) -> int:
        """Bytes of tiling data the kernel reads (validation of a file's args)."""
        return self.tiling_struct.size if self.tiling_struct else 0

    def check_launch(self, attrs: dict[str, Any], tiling_data: bytes, tiling_key: int, block_dim: int,
                     inputs: list[TensorDesc], outputs: list[TensorDesc], soc: SocSpec) -> None:
        """OpError if a launch as a file describes it could not run as the kernel expects (om-run validates
        every kernel task with it before running anything). Most kernels take any tiling their struct holds."""

    def kernel_key(self, attrs: dict[str, Any]) -> str:
        """What besides op type, core type and dtypes selects the kernel binary (a generated kernel's graph)."""
        return ""

    def placeholder_values(self, ctx: TilingContext) -> dict[int, np.ndarray]:
        """Values of the tiling-dependent inputs for the one compile-time host tiling run of a sink op
        (it sizes the workspace). Ops override this with their worst case; the default is zeros."""
        return {i: np.zeros(ctx.inputs[i].shape, ctx.inputs[i].dtype) for i in self.tiling_depend
                if i < len(ctx.inputs) and ctx.inputs[i] is not None}

    # -- kernel ----------------------------------------------------------------------------------
    def compute(self, args: KernelArgs, inputs: list[np.ndarray | None]) -> list[np.ndarray]:
        raise NotImplementedError(self.op_type)

    # -- cost ------------------------------------------------------------------------------------
    def work(self, ctx: TilingContext) -> Work:
        """Total work; the default is a streaming op: one vector op per output element."""
        out_elems = sum(d.numel for d in ctx.outputs)
        moved = sum(d.nbytes for d in ctx.inputs if d is not None) + sum(d.nbytes for d in ctx.outputs)
        return Work(vector_ops=out_elems, bytes=moved, dtype=ctx.outputs[0].dtype if ctx.outputs else "float32")

    def inside_dtype(self, dtype: str, soc: SocSpec, mode: str) -> str | None:
        """The dtype the kernel computes `dtype` tensors in on `soc` under implementation mode `mode`
        (--op_select_implmode / --op_precision_mode), when that is not what compute() does by default; None
        otherwise. A two-implementation kernel (impl_default set) computes fp16 in fp32 under high_precision
        where the SoC has fp32 vexp (ops/core/impl_modes.py); ops with another rule override it."""
        return upcast_inside(dtype, soc, mode) if self.impl_default else None

    def own_kernel_only(self, attrs: dict[str, Any]) -> bool:
        """Whether the implementation this node runs is one automatic fusion's lowering rule does not compute
        (Gelu's fast form): such a node keeps its own kernel."""
        return False

    def launch_work(self, ctx: TilingContext) -> Work:
        """work() plus the epilogue a fusion pass gave this launch (fused_relu: one vector op per output element)."""
        w = self.work(ctx)
        if ctx.byte_scale != 1.0:   # padded device formats (NC1HWC0's C0, FRACTAL_Z's 16x16 fractals)
            w.bytes = int(w.bytes * ctx.byte_scale)
        w.out_elems = w.out_elems or sum(d.numel for d in ctx.outputs)
        if ctx.attrs.get("fused_relu"):
            w.vector_ops += sum(d.numel for d in ctx.outputs)
        return self._padded(_inside(w, ctx, 1), ctx)

    def block_work(self, ctx: TilingContext, block_dim: int) -> Work:
        """The work of the launch's largest block when it runs with `block_dim` blocks (the largest block decides
        the kernel's time). The default splits work() evenly; ops whose tiling splits unevenly or adds a step
        (a K split's reduction, a reduction's combine) override it."""
        w = self.work(ctx)
        w.out_elems = w.out_elems or sum(d.numel for d in ctx.outputs)
        return w.share(block_dim)

    def launch_block_work(self, ctx: TilingContext, block_dim: int) -> Work:
        """block_work() plus the fused epilogue on the block's outputs."""
        w = self.block_work(ctx, block_dim)
        if ctx.byte_scale != 1.0:
            w.bytes = int(w.bytes * ctx.byte_scale)
        if ctx.attrs.get("fused_relu"):
            w.vector_ops += w.out_elems
        return self._padded(_inside(w, ctx, block_dim), ctx)

    def _padded(self, w: Work, ctx: TilingContext) -> Work:
        """Vector instructions walk whole C0 blocks and fractals, the padding too: the vector work of a launch on
        padded device formats grows as its bytes do (byte_scale)."""
        if ctx.byte_scale > 1.0 and self.padded_vector_work:
            w.vector_ops = int(w.vector_ops * ctx.byte_scale)
        return w

    def epilogue(self, attrs: dict[str, Any], out: np.ndarray) -> np.ndarray:
        """Apply the kernel's fused epilogue in place (relu_fusion's fused_relu) to its result."""
        if attrs.get("fused_relu"):
            np.maximum(out, 0, out=out)
        return out


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()


# -- helpers shared by tiling functions ----------------------------------------------------------
def check_tiling_shape(name: str, arr, want: tuple) -> None:
    """A kernel whose tiling depends on input values (tiling_depend) keeps the tiling data of the file: nothing at
    load can recompute it. The shapes it gives must be the operand's before the kernel indexes with them."""
    if arr is not None and tuple(np.shape(arr)) != tuple(int(d) for d in want):
        raise OpError(f"its tiling data describes {name} as {[int(d) for d in want]}, but it is {list(np.shape(arr))}")


def check_bias(node, index: int, channels: int) -> None:
    """A cube kernel's optional bias (input `index`) adds one value per output channel: it must hold `channels`
    elements (the frontends and fusions make it a vector of that length). A file giving it another shape would
    reach the kernel's reshape or broadcast."""
    if index < len(node.inputs) and node.inputs[index] is not None:
        b = node.input_desc(index)
        if any(d < 0 for d in b.shape) or channels < 0:
            return                 # unknown until run time: the kernel's shapes are checked when they are known
        if prod(b.shape) != channels:
            raise OpError(f"bias {list(b.shape)} has {prod(b.shape)} elements; the output has {channels} channels")


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def split_rows(rows: int, cores: int, align: int = 1) -> tuple[int, int]:
    """Split `rows` over at most `cores` blocks in chunks aligned to `align`: (block_dim, rows_per_block)."""
    if rows <= 0:
        return 1, 0
    per = ceil_div(rows, max(1, cores))
    per = ceil_div(per, align) * align
    return ceil_div(rows, per), per


def block_align_elems(soc: SocSpec, dtype: str) -> int:
    """Elements in one UB block (the 32-byte granule data moves in)."""
    ub_block = int(soc.raw.get("AICoreSpec", {}).get("ubblock_size", "32") or 32)
    return max(1, ub_block // np.dtype(dtype).itemsize)


def cores_for(spec: OpSpec, soc: SocSpec) -> int:
    if spec.core_type == AIC:
        return soc.cube_cores
    if spec.core_type == AIV:
        return soc.vector_cores
    return soc.cube_cores  # MIX: one cube core plus its vector cores per block


def prod(xs) -> int:
    return int(math.prod(xs)) if xs else 1


def _inside(w: Work, ctx: TilingContext, blocks: int) -> Work:
    """A kernel computing in another dtype inside (`_internal_dtype`, passes/soc_kernels.py) runs its vector work
    at that dtype's rate and casts its inputs and outputs: one vector op per element each way."""
    inside = ctx.attrs.get("_internal_dtype")
    if not inside or inside == w.dtype:
        return w
    casts = sum(d.numel for d in ctx.inputs if d is not None and d.dtype in ("float16", "float32", "bfloat16"))
    casts += sum(d.numel for d in ctx.outputs)
    w.vector_ops += -(-casts // max(1, blocks))
    w.dtype = inside
    return w
