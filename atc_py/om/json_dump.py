"""`--mode=1`: MODEL_DEF as JSON the way GE's Pb2Json writes it, plus the tasks (our addition).

Rules (those of GE's own JSON dump of a model): protobuf field names; only set fields; enums by name; floats as
"%g" strings; maps as [{"key", "value"}]; bytes as C-escaped strings; black-listed fields dropped.
Tasks are dumped with the same rules except that `args` bytes are shown as hex.
"""
from __future__ import annotations

from google.protobuf.descriptor import FieldDescriptor as FD
from google.protobuf.message import Message

OM_BLACK_FIELDS = {"output", "data_offset", "data", "workspace", "workspace_bytes", "memory_size", "weight_size",
                   "size", "bt", "quantize_factor"}


def _c_escape(b: bytes) -> str:
    out = []
    for ch in b:
        if ch in (0x22, 0x5C):
            out.append("\\" + chr(ch))
        elif 0x20 <= ch < 0x7F:
            out.append(chr(ch))
        else:
            out.append(f"\\{ch:03o}")
    return "".join(out)


def _scalar(f, v, hex_bytes: bool):
    if f.type == FD.TYPE_ENUM:
        ev = f.enum_type.values_by_number.get(v)
        return ev.name if ev else v
    if f.type in (FD.TYPE_FLOAT, FD.TYPE_DOUBLE):
        return f"{v:g}"
    if f.type == FD.TYPE_BYTES:
        return v.hex() if hex_bytes else _c_escape(v)
    return v


def _is_repeated(f) -> bool:
    """protobuf >= 6 has `is_repeated`; older runtimes only `label`."""
    rep = getattr(f, "is_repeated", None)
    return rep if rep is not None else f.label == FD.LABEL_REPEATED


def message_to_json(msg: Message, black: set[str] = frozenset(), hex_bytes: bool = False) -> dict:
    out: dict = {}
    present = {f.name for f, _ in msg.ListFields()}
    for f in msg.DESCRIPTOR.fields:
        if f.name in black or f.name not in present:
            continue
        v = getattr(msg, f.name)
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            vf = f.message_type.fields_by_name["value"]
            items = []
            for k in sorted(v):
                val = v[k]
                items.append({"key": k, "value": message_to_json(val, black, hex_bytes)
                              if vf.message_type is not None else _scalar(vf, val, hex_bytes)})
            out[f.name] = items
        elif _is_repeated(f):
            out[f.name] = [message_to_json(x, black, hex_bytes) if f.message_type is not None
                           else _scalar(f, x, hex_bytes) for x in v]
        elif f.message_type is not None:
            out[f.name] = message_to_json(v, black, hex_bytes)
        else:
            out[f.name] = _scalar(f, v, hex_bytes)
    return out


def om_to_json(model_def, task_def=None) -> dict:
    doc = message_to_json(model_def, OM_BLACK_FIELDS)
    if task_def is not None:
        doc["task_info"] = message_to_json(task_def, hex_bytes=True)
    return doc


def om_file_to_json(om) -> dict:
    """Model 0 as GE dumps it (plus its tasks); a multi-model om adds its sub-models under "submodels"."""
    from ..proto import ge_ir_pb2, task_pb2
    from . import partitions as pt

    def one(m) -> dict:
        md = ge_ir_pb2.ModelDef.FromString(m.get(pt.MODEL_DEF) or b"")
        ti = m.get(pt.TASK_INFO)
        return om_to_json(md, task_pb2.ModelTaskDef.FromString(ti) if ti else None)

    doc = one(om.models[0])
    if len(om.models) > 1:
        doc["submodels"] = [one(m) for m in om.models[1:]]
    return doc
