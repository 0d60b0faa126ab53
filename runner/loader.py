""".om -> a loaded model: DeviceModel (a static model: ops, tasks, memory, weights), HostModel (an unknown
subgraph the host executor runs) or RootModel (a multi-model om: root graph + sub-models by name)."""
from __future__ import annotations

import pathlib
from dataclasses import dataclass, field

from google.protobuf.message import DecodeError

from atc_py.engines import task_types as tt
from atc_py.errors import AtcError
from atc_py.ir.dtypes import dtype_from_proto
from atc_py.ir.graph import TensorDesc
from atc_py.om import read_om
from atc_py.om import partitions as pt
from atc_py.om.attrs import from_attr
from atc_py.om.container import OmFormatError, OmModel
from atc_py.om.kernel_store import parse_store
from atc_py.platform import load_soc
from atc_py.proto import ge_ir_pb2 as ge
from atc_py.proto import task_pb2


@dataclass
class IoTensor:
    name: str
    desc: TensorDesc
    address: int | None


@dataclass
class ModelBase:
    name: str
    soc_version: str
    ops: dict[int, ge.OpDef]
    weights: bytes
    weight_base: int
    attrs: dict
    inputs: list[IoTensor] = field(default_factory=list)
    outputs: list[IoTensor] = field(default_factory=list)


@dataclass
class DeviceModel(ModelBase):
    tasks: list = field(default_factory=list)
    memory_size: int = 0
    fm_base: int = 0
    stream_num: int = 1
    event_num: int = 0
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
    return TensorDesc(tuple(td.shape.dim), dt.name, fmt, fmt)


def _fail(path, reason: str) -> AtcError:
    return AtcError("E30001", path=str(path), reason=reason)


def _parse(path, msg, data: bytes | None, what: str):
    if data is None:
        raise _fail(path, f"the model has no {what} partition (not an executable om)")
    try:
        msg.ParseFromString(data)
    except DecodeError as exc:
        raise _fail(path, f"the {what} partition does not parse ({exc})") from None
    return msg


def _io(model: ModelBase) -> None:
    ops = sorted(model.ops.values(), key=lambda o: o.id)
    data = sorted((o for o in ops if o.type == "Data"), key=lambda o: from_attr(o.attr["index"]) if "index" in o.attr else 0)
    for op in data:
        model.inputs.append(IoTensor(op.output_desc[0].name or op.name, desc_from_proto(op.output_desc[0]),
                                     op.output_i[0] if op.output_i else None))
    for op in ops:
        if op.type == "NetOutput":
            for k, td in enumerate(op.input_desc):
                model.outputs.append(IoTensor(td.name or op.input[k], desc_from_proto(td),
                                              op.input_i[k] if k < len(op.input_i) else None))


def _check_ops_registered(path, ops) -> None:
    from atc_py.ops import get_op
    missing = sorted({op.type for op in ops.values() if get_op(op.type) is None})
    if missing:
        raise _fail(path, f"op type(s) {', '.join(missing)} are not registered: load the custom operator package "
                          "with --op_plugin or ASCEND_CUSTOM_OPP_PATH")


def _load_one(path, m: OmModel) -> ModelBase:
    md = _parse(path, ge.ModelDef(), m.get(pt.MODEL_DEF), "MODEL_DEF")
    if not md.graph:
        raise _fail(path, "MODEL_DEF has no graph")
    attrs = {k: from_attr(v) for k, v in md.attr.items()}
    weights = m.get(pt.WEIGHTS_DATA) or b""
    if attrs.get("weight_size", len(weights)) != len(weights):
        raise _fail(path, f"weight_size {attrs.get('weight_size')} does not match WEIGHTS_DATA ({len(weights)} B)")
    ops = {op.id: op for op in md.graph[0].op}
    _check_ops_registered(path, ops)
    common = dict(name=md.name, soc_version=attrs.get("soc_version", ""), ops=ops, weights=weights,
                  weight_base=int(attrs.get("task_gen_weight_addr", 0)), attrs=attrs)
    if attrs.get("_is_unknown_shape"):
        model: ModelBase = HostModel(**common)
    elif m.get(pt.TASK_INFO) is None and any(op.type == "PartitionedCall" for op in ops.values()):
        model = RootModel(**common)
    else:
        mtd = _parse(path, task_pb2.ModelTaskDef(), m.get(pt.TASK_INFO), "TASK_INFO")
        try:
            kernels = parse_store(m.get(pt.TBE_KERNELS) or b"")
        except ValueError as exc:
            raise _fail(path, f"TBE_KERNELS: {exc}") from None
        model = DeviceModel(**common, tasks=list(mtd.task), memory_size=int(attrs.get("memory_size", 0)),
                            fm_base=int(attrs.get("task_gen_base_addr", 0)),
                            stream_num=int(attrs.get("stream_num", 1)), event_num=int(attrs.get("event_num", 0)),
                            kernels=kernels)
        _check_tasks(path, model)
    _io(model)
    return model


def _check_tasks(path, model: DeviceModel) -> None:
    from atc_py.engines.aicore import task_op_index
    for t in model.tasks:
        idx = task_op_index(t)
        if idx is not None and idx not in model.ops:
            raise _fail(path, f"task {t.id} refers to op index {idx}, which MODEL_DEF does not have")
        if t.stream_id >= max(model.stream_num, 1):
            raise _fail(path, f"task {t.id} is on stream {t.stream_id}; the model has {model.stream_num} streams")
        if t.type in (tt.EVENT_RECORD, tt.EVENT_WAIT) and t.event_id >= model.event_num:
            raise _fail(path, f"task {t.id} uses event {t.event_id}; the model has {model.event_num} events")
    if any(t.type == tt.UPDATE for t in model.tasks) and model.soc_version:
        try:
            soc = load_soc(model.soc_version)
        except AtcError:
            return
        if not soc.model_task_update:
            raise _fail(path, f"the model uses UPDATE tasks (tiling sink) but {model.soc_version} has no task-update "
                              "capability (FEATURE_TYPE_MODEL_TASK_UPDATE); compile it without "
                              "--tiling_schedule_optimize=1 for this SoC")


def load_model(path: str) -> ModelBase:
    p = pathlib.Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise _fail(path, f"cannot read the file ({exc.strerror or exc})") from None
    try:
        om = read_om(data)
    except OmFormatError as exc:
        raise _fail(path, str(exc)) from None
    if not om.is_dynamic:
        return _load_one(path, om.models[0])
    root = _load_one(path, om.models[0])
    if not isinstance(root, RootModel):
        raise _fail(path, "the first model of a multi-model om is not a partitioned root graph")
    for m in om.models[1:]:
        sub = _load_one(path, m)
        root.subs[sub.name] = sub
    for op in root.ops.values():
        if op.type == "PartitionedCall":
            for name in op.subgraph_name:
                if name not in root.subs:
                    raise _fail(path, f"PartitionedCall {op.name} calls subgraph {name}, which the om does not contain")
    return root
