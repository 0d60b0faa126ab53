"""A loaded model as the simulator sees it: DeviceModel (a static model: ops, tasks, memory, weights),
HostModel (an unknown subgraph the host executor runs) or RootModel (a multi-model om: root graph + sub-models
by name), and their inputs and outputs. Its own module so that the loader and the validator both depend on it
and not on each other."""
from __future__ import annotations

from dataclasses import dataclass, field

from atc_py.common.errors import AtcError
from atc_py.ir.dtypes import dtype_from_proto
from atc_py.ir.formats import DEVICE_FORMATS, SMALL_CHANNEL, FormatError, device_shape
from atc_py.ir.graph import TensorDesc
from atc_py.om.attrs import from_attr
from atc_py.proto import ge_ir_pb2 as ge


@dataclass
class IoTensor:
    name: str
    desc: TensorDesc
    address: int | None
    ranges: list[tuple[int, int]] | None = None   # per dim (low, high; high -1 unbounded) of a dynamic input


@dataclass
class ModelBase:
    name: str
    soc_version: str
    ops: dict[int, ge.OpDef]
    weights: bytes | memoryview   # WEIGHTS_DATA (a view of the mapped file when weights_file)
    weight_base: int
    attrs: dict
    inputs: list[IoTensor] = field(default_factory=list)
    outputs: list[IoTensor] = field(default_factory=list)
    # MODEL_DEF's graphs: the root (graph 0) and the subgraphs control ops own, each op's graph by op id
    graphs: dict[str, list] = field(default_factory=dict)
    root_graph: str = ""
    graph_of: dict[int, str] = field(default_factory=dict)
    # weights left in the .om and mapped (om_run/load/mapped.py): `weights` is then a read-only view of the mapping
    weights_file: object | None = None

    def graph_ops(self, name: str | None = None) -> list:
        """A graph's ops in id order (the root graph's by default)."""
        return sorted(self.graphs[name or self.root_graph], key=lambda o: o.id)


@dataclass
class DeviceModel(ModelBase):
    tasks: list = field(default_factory=list)
    memory_size: int = 0
    fm_base: int = 0
    stream_num: int = 1
    event_num: int = 0
    label_num: int = 0
    kernels: dict[str, bytes] = field(default_factory=dict)


@dataclass
class HostModel(ModelBase):
    """An unknown-shape subgraph: run node by node on the host (infer shape, tiling, launch)."""


@dataclass
class RootModel(ModelBase):
    subs: dict[str, ModelBase] = field(default_factory=dict)

    @property
    def tasks(self) -> list:
        return [t for s in self.subs.values() if isinstance(s, DeviceModel) for t in s.tasks]

    @property
    def memory_size(self) -> int:
        return sum(s.memory_size for s in self.subs.values() if isinstance(s, DeviceModel))

    @property
    def stream_num(self) -> int:
        return max([s.stream_num for s in self.subs.values() if isinstance(s, DeviceModel)] or [0])


def desc_from_proto(td: ge.TensorDescriptor) -> TensorDesc:
    dt = dtype_from_proto(td.dtype)
    if dt is None:
        raise AtcError("E30001", path="", reason=f"tensor dtype {td.dtype} is not supported")
    fmt = td.layout or "ND"
    if fmt not in DEVICE_FORMATS:
        return TensorDesc(tuple(td.shape.dim), dt.name, fmt, fmt)
    return _device_desc(td, fmt, dt.name)


MAX_ORIGIN_RANK = 8
ORIGIN_FORMATS = {"NCHW", "NHWC", "ND", "NCDHW"}


def _device_desc(td: ge.TensorDescriptor, fmt: str, dtype: str) -> TensorDesc:
    """A device-format descriptor (NC1HWC0, FRACTAL_Z, ...): its origin format and shape (GE's attrs), checked to
    give exactly its shape in that format before anything sizes or converts by them."""
    shape = tuple(td.shape.dim)
    of = td.attr["origin_format"].s.decode("ascii", "replace") if "origin_format" in td.attr else ""
    origin = tuple(td.attr["origin_shape"].list.i) if "origin_shape" in td.attr else ()
    try:
        ok = of in ORIGIN_FORMATS and 0 < len(origin) <= MAX_ORIGIN_RANK and min(origin) >= 0 and \
            device_shape(origin, fmt, of, dtype) == shape
    except FormatError:
        ok = False
    if not ok:
        raise AtcError("E30001", path="", reason=f"a {fmt} tensor descriptor of shape {list(shape)} has origin "
                                                 f"format {of!r} and shape {list(origin)[:8]}, which do not give it")
    return TensorDesc(shape, dtype, fmt, of, origin)


def describe(io) -> str:
    """An input's shape as the user may give it: dims, with lo~hi (or -1) for the dynamic ones."""
    if not io.ranges:
        return str(list(io.desc.shape))
    return "[" + ", ".join(str(d) if d >= 0 else (f"{lo}~{hi}" if hi >= 0 else "-1")
                           for d, (lo, hi) in zip(io.desc.shape, io.ranges)) + "]"


def shape_fits(io, shape) -> bool:
    """Static dims equal; a dynamic dim within its range (ATC E10050 on a real device)."""
    if len(shape) != len(io.desc.shape):
        return False
    ranges = io.ranges or [(d, d) for d in io.desc.shape]
    return all(d == want if want >= 0 else (lo <= d and (hi < 0 or d <= hi))
               for d, want, (lo, hi) in zip(shape, io.desc.shape, ranges))


COMPILER_ATTRS_PREFIXES = ("_", "tvm_", "compile_info_json", "op_para_size")


# compiler attributes the kernel reads: the dtype it computes in (passes/soc_kernels.py), its implementation
# mode (ops/core/impl_modes.py: Gelu's fast form) and a convolution's FRACTAL_Z_C04 filter (its tiling and cube work)
KERNEL_COMPILER_ATTRS = ("_internal_dtype", "_op_impl_mode", SMALL_CHANNEL)


def op_attrs(op) -> dict:
    return {k: from_attr(v) for k, v in op.attr.items()
            if not k.startswith(COMPILER_ATTRS_PREFIXES) or k in KERNEL_COMPILER_ATTRS}
