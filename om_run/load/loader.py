""".om -> a loaded model (model.py): decoded, validated (validate.py), its inputs and outputs read."""
from __future__ import annotations

import os
import stat
from typing import BinaryIO, Callable

from google.protobuf.message import DecodeError

from atc_py.common.errors import AtcError
from atc_py.om import partitions as pt
from atc_py.om.attrs import from_attr
from atc_py.om.container import InFile, OmFormatError, OmModel, read_om_file
from atc_py.om.kernel_store import parse_store
from atc_py.proto import ge_ir_pb2 as ge
from atc_py.proto import task_pb2

from . import limits
from .mapped import MappedFile, MappedWeights
from .model import DeviceModel, HostModel, IoTensor, ModelBase, RootModel, desc_from_proto
from .validate import Invalid, validate, validate_calls


def _fail(path, reason: str) -> AtcError:
    return AtcError("E30001", path=str(path), reason=reason)


def _parse(path, msg, data: bytes | None, what: str):
    if data is None:
        raise _fail(path, f"the model has no {what} partition (not an executable om)")
    try:
        msg.ParseFromString(data)
    except (DecodeError, RecursionError) as exc:
        raise _fail(path, f"the {what} partition does not parse ({exc})") from None
    return msg


def _io(model: ModelBase) -> None:
    """Inputs (Data by index) and outputs (NetOutput's inputs) of a validated model: its root graph's."""
    ops = model.graph_ops()
    data = sorted((o for o in ops if o.type == "Data"), key=lambda o: from_attr(o.attr["index"]))
    for op in data:
        flat = from_attr(op.attr["_shape_range"]) if "_shape_range" in op.attr else None
        ranges = [(flat[k], flat[k + 1]) for k in range(0, len(flat), 2)] if flat else None
        model.inputs.append(IoTensor(op.output_desc[0].name or op.name, desc_from_proto(op.output_desc[0]),
                                     op.output_i[0] if op.output_i else None, ranges))
    for op in ops:
        if op.type == "NetOutput":
            for k, td in enumerate(op.input_desc):
                model.outputs.append(IoTensor(td.name or op.input[k], desc_from_proto(td),
                                              op.input_i[k] if k < len(op.input_i) else None))


def _attr_int(attrs: dict, key: str, default: int) -> int:
    """A model attribute the dataclasses hold as int: anything else becomes -1, which validation rejects."""
    v = attrs.get(key, default)
    return v if isinstance(v, int) and not isinstance(v, bool) else -1


def _load_one(path, m: OmModel, op_lists: dict, mapped: MappedFile | None = None) -> ModelBase:
    md = _parse(path, ge.ModelDef(), m.get(pt.MODEL_DEF), "MODEL_DEF")
    if not md.graph:
        raise _fail(path, f"MODEL_DEF of model {md.name!r} has no graph")
    if len(md.graph) > limits.MAX_GRAPHS:
        raise _fail(path, f"MODEL_DEF of model {md.name!r} has {len(md.graph)} graphs (limit {limits.MAX_GRAPHS})")
    graphs: dict[str, list] = {}
    for g in md.graph:
        if g.name in graphs:
            raise _fail(path, f"MODEL_DEF of model {md.name!r} has two graphs named {g.name!r}")
        graphs[g.name] = list(g.op)
    attrs = {k: from_attr(v) for k, v in md.attr.items()}
    weights, weights_file = m.part(pt.WEIGHTS_DATA) or b"", None
    if isinstance(weights, InFile):   # left in the file (checked against its size by the reader): mapped
        weights_file = MappedWeights(mapped, weights.offset, weights.size)
        weights = weights_file.view()
    if attrs.get("weight_size", len(weights)) != len(weights):
        raise _fail(path, f"weight_size {attrs.get('weight_size')} does not match WEIGHTS_DATA ({len(weights)} B)")
    op_list = [op for g in md.graph for op in g.op]
    if len(op_list) > limits.MAX_OPS:
        raise _fail(path, f"{len(op_list)} ops (limit {limits.MAX_OPS})")
    ops = {op.id: op for op in op_list}
    soc = attrs.get("soc_version", "")
    common = dict(name=md.name, soc_version=soc if isinstance(soc, str) else "", ops=ops, weights=weights,
                  weights_file=weights_file,
                  weight_base=_attr_int(attrs, "task_gen_weight_addr", 0), attrs=attrs, graphs=graphs,
                  root_graph=md.graph[0].name, graph_of={op.id: g.name for g in md.graph for op in g.op})
    if attrs.get("_is_unknown_shape") is True:
        model: ModelBase = HostModel(**common)
    elif m.get(pt.TASK_INFO) is None and any(op.type == "PartitionedCall" for op in md.graph[0].op):
        model = RootModel(**common)
    else:
        mtd = _parse(path, task_pb2.ModelTaskDef(), m.get(pt.TASK_INFO), "TASK_INFO")
        try:
            kernels = parse_store(m.get(pt.TBE_KERNELS) or b"")
        except ValueError as exc:
            raise _fail(path, f"TBE_KERNELS: {exc}") from None
        model = DeviceModel(**common, tasks=list(mtd.task), memory_size=_attr_int(attrs, "memory_size", 0),
                            fm_base=_attr_int(attrs, "task_gen_base_addr", 0),
                            stream_num=_attr_int(attrs, "stream_num", 1), event_num=_attr_int(attrs, "event_num", 0),
                            label_num=_attr_int(attrs, "label_num", 0), kernels=kernels)
    op_lists[id(model)] = op_list
    return model


MAP_MIN_BYTES = 16 << 20   # a WEIGHTS_DATA partition this large is mapped (mapped.py), a smaller one read


def open_model_file(path: str, max_bytes: int = limits.MAX_OM_BYTES) -> tuple[BinaryIO, int]:
    """The file open for reading and its size: a regular file of at most max_bytes (a FIFO would block,
    /dev/zero never ends). Opened without blocking and checked on the open descriptor (fstat), so the file
    checked is the file read."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError) as exc:
        raise _fail(path, f"cannot read the file ({getattr(exc, 'strerror', None) or exc})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _fail(path, "it is not a regular file")
        if st.st_size > max_bytes:
            raise _fail(path, f"the file has {st.st_size} bytes (limit {max_bytes})")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb"), st.st_size
    except BaseException:
        os.close(fd)
        raise


def load_model(path: str, verify: bool = True, progress: Callable[[str, int, int], None] | None = None) -> ModelBase:
    """Read, decode and validate (validate.py) an .om; every problem is one E30001. verify=False (om-run
    --no-verify) accepts a file whose checksum is all zero; a wrong checksum is never accepted.

    Only the partition tables and the small partitions are read; a WEIGHTS_DATA of MAP_MIN_BYTES or more is
    memory-mapped (mapped.py), not read, once the tables are checked against the file's size, and the checksum
    streams the file (atc_py.om.chunks.file_digest). progress(stage, done, total) hears of both (atc_py.common.progress.StageProgress)."""
    f, size = open_model_file(path)
    mapped = None
    try:
        try:
            om = read_om_file(f, size, allow_unsealed=not verify, progress=progress,
                              in_file=lambda ptype, n: ptype == pt.WEIGHTS_DATA and n >= MAP_MIN_BYTES)
        except OmFormatError as exc:
            raise _fail(path, str(exc)) from None
        if any(isinstance(d, InFile) for m in om.models for _, d in m.partitions):
            if progress is not None:
                progress("mapping", 0, size)
            try:
                mapped = MappedFile(f, size)
            except (OSError, ValueError, OverflowError) as exc:   # no memory, a file system that cannot map
                raise _fail(path, f"cannot map the file ({getattr(exc, 'strerror', None) or exc})") from None
            if progress is not None:
                progress("mapping", size, size)
    finally:
        if mapped is None:
            f.close()
    op_lists: dict = {}
    models = [_load_one(path, m, op_lists, mapped) for m in om.models]
    root = models[0]
    if om.is_dynamic:
        if not isinstance(root, RootModel):
            raise _fail(path, "the first model of a multi-model om is not a partitioned root graph")
        for sub in models[1:]:
            if isinstance(sub, RootModel):
                raise _fail(path, f"sub-model {sub.name!r} is itself a root graph")
            if sub.name in root.subs:
                raise _fail(path, f"two sub-models are named {sub.name!r}")
            root.subs[sub.name] = sub
    elif not isinstance(root, DeviceModel) or len(models) != 1:
        raise _fail(path, "a single-model om holds one static model (with TASK_INFO); dynamic parts come in a "
                          "multi-model om under a root graph")
    try:
        validate(root, op_lists)
        for m in [root, *getattr(root, "subs", {}).values()]:
            _io(m)
        if isinstance(root, RootModel):
            validate_calls(root, op_lists)
    except Invalid as exc:
        raise _fail(path, str(exc)) from None
    return root
