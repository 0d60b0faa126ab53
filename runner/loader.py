""".om -> DeviceModel: ops by id, tasks per stream, memory sizes, weights, model inputs/outputs."""
from __future__ import annotations

import pathlib
from dataclasses import dataclass, field

from google.protobuf.message import DecodeError

from atc_py.errors import AtcError
from atc_py.ir.dtypes import dtype_from_proto
from atc_py.ir.graph import TensorDesc
from atc_py.om import read_om
from atc_py.om import partitions as pt
from atc_py.om.attrs import from_attr
from atc_py.om.container import OmFormatError
from atc_py.om.kernel_store import parse_store
from atc_py.proto import ge_ir_pb2 as ge
from atc_py.proto import task_pb2


@dataclass
class IoTensor:
    name: str
    desc: TensorDesc
    address: int


@dataclass
class DeviceModel:
    name: str
    soc_version: str
    ops: dict[int, ge.OpDef]
    tasks: list[task_pb2.TaskDef]
    memory_size: int
    weights: bytes
    fm_base: int
    weight_base: int
    stream_num: int
    inputs: list[IoTensor] = field(default_factory=list)
    outputs: list[IoTensor] = field(default_factory=list)
    kernels: dict[str, bytes] = field(default_factory=dict)
    attrs: dict = field(default_factory=dict)


def desc_from_proto(td: ge.TensorDescriptor) -> TensorDesc:
    dt = dtype_from_proto(td.dtype)
    if dt is None:
        raise AtcError("E30001", path="", reason=f"tensor dtype {td.dtype} is not supported")
    fmt = td.layout or "ND"
    return TensorDesc(tuple(td.shape.dim), dt.name, fmt, fmt)


def _fail(path, reason: str) -> AtcError:
    return AtcError("E30001", path=str(path), reason=reason)


def load_model(path: str) -> DeviceModel:
    p = pathlib.Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise _fail(path, f"cannot read the file ({exc.strerror or exc})") from None
    try:
        om = read_om(data)
    except OmFormatError as exc:
        raise _fail(path, str(exc)) from None
    if om.is_dynamic:
        raise _fail(path, "multi-model (dynamic-shape) .om files are not supported by this version of om-run")
    m = om.models[0]
    md_bytes, task_bytes = m.get(pt.MODEL_DEF), m.get(pt.TASK_INFO)
    if md_bytes is None or task_bytes is None:
        raise _fail(path, "the model has no MODEL_DEF or TASK_INFO partition (not an executable om)")
    md, mtd = ge.ModelDef(), task_pb2.ModelTaskDef()
    try:
        md.ParseFromString(md_bytes)
        mtd.ParseFromString(task_bytes)
    except DecodeError as exc:
        raise _fail(path, f"a protobuf partition does not parse ({exc})") from None
    if not md.graph:
        raise _fail(path, "MODEL_DEF has no graph")
    attrs = {k: from_attr(v) for k, v in md.attr.items()}
    weights = m.get(pt.WEIGHTS_DATA) or b""
    if attrs.get("weight_size", 0) != len(weights):
        raise _fail(path, f"weight_size {attrs.get('weight_size')} does not match WEIGHTS_DATA ({len(weights)} B)")
    kernels = parse_store(m.get(pt.TBE_KERNELS) or b"") if m.get(pt.TBE_KERNELS) else {}
    ops = {op.id: op for op in md.graph[0].op}
    model = DeviceModel(name=md.name, soc_version=attrs.get("soc_version", ""), ops=ops, tasks=list(mtd.task),
                        memory_size=int(attrs.get("memory_size", 0)), weights=weights,
                        fm_base=int(attrs.get("task_gen_base_addr", 0)),
                        weight_base=int(attrs.get("task_gen_weight_addr", 0)),
                        stream_num=int(attrs.get("stream_num", 1)), kernels=kernels, attrs=attrs)
    for op in sorted(ops.values(), key=lambda o: from_attr(o.attr["index"]) if "index" in o.attr else 0):
        if op.type == "Data":
            model.inputs.append(IoTensor(op.output_desc[0].name or op.name, desc_from_proto(op.output_desc[0]),
                                         op.output_i[0]))
    for op in ops.values():
        if op.type == "NetOutput":
            for k, td in enumerate(op.input_desc):
                model.outputs.append(IoTensor(td.name or op.input[k], desc_from_proto(td), op.input_i[k]))
    for t in model.tasks:
        k = t.kernel if t.HasField("kernel") else t.kernel_with_handle if t.HasField("kernel_with_handle") else None
        if k is not None and k.context.op_index not in ops:
            raise _fail(path, f"task {t.id} refers to op index {k.context.op_index}, which MODEL_DEF does not have")
    return model
