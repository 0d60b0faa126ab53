""".om mutants: valid files from the compiler, changed at one to three places, then sealed again (the checksum
recomputed, as any writer can) — or, for a few, left unsealed or with the checksum zeroed.

Mutations work on the decoded structures (header fields, partition tables, ModelDef attributes, ops, tensor
descriptors, tasks, kernel args, SUPER_KERNEL member JSON, kernel stores, weights) and on raw bytes, with
the values that break parsers: 0, -1, 2^31, 2^32, 2^40, 2^62, names that walk out of a folder; and
mutants that stay self-consistent where a random one would not: a zero stride or window, an output descriptor
cut short, one size set to 0 across an op's descriptors, a field of the static tiling data, tiling data cut
short, a string model attribute of another type.
"""
from __future__ import annotations

import random
import struct

from atc_py.om import partitions as pt
from atc_py.om.container import OmImage, OmModel, read_om
from atc_py.om.header import MODEL_FILE_HEAD_LEN, ModelFileHeader
from atc_py.proto import ge_ir_pb2 as ge
from atc_py.proto import task_pb2

INTS = [0, 1, 2, 3, 7, -1, -2, 255, 256, 4095, 65535, 65536, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**40, 2**62,
        2**63 - 1, -2**31, -2**63]
NAMES = ["../escape", "../../escape", "/tmp/../{canary}/abs", "{canary}/abs", "a/b/c", "..", ".", "",
         "x" * 300, "nul\0name", "space name", "über", "-rf", "CON", "a\nb"]
STRINGS = ["", "x", "float", "float16", "NCHW", "{", "[]", "{\"a\": 1}", "\0", "ü" * 10, "1e309"]


def interesting_int(rng: random.Random) -> int:
    return rng.choice(INTS) if rng.random() < 0.8 else rng.randrange(-2**40, 2**40)


def _set_int(msg, field: str, value: int) -> None:
    """Set an integer field, wrapping to its width when the value does not fit (protobuf checks ranges)."""
    try:
        setattr(msg, field, value)
    except (ValueError, TypeError):
        for bits in (64, 32):
            try:
                setattr(msg, field, value % (1 << bits))
                return
            except (ValueError, TypeError):
                continue


class OmDoc:
    """A decoded .om: header and per model its partitions (type, bytes), changed in place, packed by seal()."""

    def __init__(self, data: bytes):
        om = read_om(data)
        self.header = om.header
        self.models = [[(t, bytes(d)) for t, d in m.partitions] for m in om.models]

    def get(self, m: int, ptype: int) -> bytes | None:
        for t, d in self.models[m]:
            if t == ptype:
                return d
        return None

    def put(self, m: int, ptype: int, data: bytes) -> None:
        self.models[m] = [(t, data if t == ptype else d) for t, d in self.models[m]]

    def pack(self, seal: bool = True) -> bytes:
        models = [OmModel([(t, d) for t, d in parts if d]) for parts in self.models]
        models = [m for m in models if m.partitions] or [OmModel([(pt.MODEL_DEF, b"\0")])]
        h = self.header
        h.model_num = len(models)
        h.model_length = sum(len(b) for m in models for b in m.buffers())
        image = OmImage(h, models)
        data = image.tobytes()
        if not seal:
            data = data[:12] + b"\0" * 64 + data[76:]   # the checksum field (after magic, headsize, version)
        return data


# -- ModelDef / TaskDef helpers ----------------------------------------------------------------------------
def _decoded(doc: OmDoc, m: int, ptype: int, cls):
    """A partition decoded as protobuf `cls`, or None when it is absent or does not parse."""
    raw = doc.get(m, ptype)
    if raw is None:
        return None
    msg = cls()
    try:
        msg.ParseFromString(raw)
    except Exception:  # noqa: BLE001
        return None
    return msg


def _model_def(doc: OmDoc, m: int) -> ge.ModelDef | None:
    return _decoded(doc, m, pt.MODEL_DEF, ge.ModelDef)


def _tasks(doc: OmDoc, m: int) -> task_pb2.ModelTaskDef | None:
    return _decoded(doc, m, pt.TASK_INFO, task_pb2.ModelTaskDef)


def _random_attr_value(a: ge.AttrDef, rng: random.Random) -> None:
    kind = rng.choice(["i", "f", "s", "b", "list_i", "list_s", "list_f", "none", "empty", "deep_list"])
    a.Clear()
    if kind == "i":
        a.i = max(-2**63, min(2**63 - 1, interesting_int(rng)))
    elif kind == "f":
        a.f = rng.choice([0.0, -1.0, float("nan"), float("inf"), 1e30, 1e-30])
    elif kind == "s":
        a.s = rng.choice(STRINGS + NAMES + ["\udcff"]).encode("utf-8", "surrogatepass")
    elif kind == "b":
        a.b = rng.random() < 0.5
    elif kind == "list_i":
        a.list.i.extend(max(-2**63, min(2**63 - 1, interesting_int(rng))) for _ in range(rng.choice([0, 1, 2, 4, 9])))
        a.list.val_type = ge.AttrDef.ListValue.VT_LIST_INT
    elif kind == "list_s":
        a.list.s.extend(rng.choice(STRINGS).encode() for _ in range(rng.choice([0, 1, 3])))
        a.list.val_type = ge.AttrDef.ListValue.VT_LIST_STRING
    elif kind == "list_f":
        a.list.f.extend(rng.choice([0.0, float("nan"), -1.0, 1e38]) for _ in range(rng.choice([0, 1, 3])))
        a.list.val_type = ge.AttrDef.ListValue.VT_LIST_FLOAT
    elif kind == "deep_list":
        a.list.val_type = rng.choice(list(ge.AttrDef.ListValue.ListValueType.values()))
    # "none"/"empty": nothing set


def _mutate_desc(td: ge.TensorDescriptor, rng: random.Random) -> None:
    what = rng.choice(["dim", "dim", "rank", "dtype", "layout", "offset", "clear_shape", "many_dims"])
    if what == "dim" and td.shape.dim:
        td.shape.dim[rng.randrange(len(td.shape.dim))] = max(-2**63, min(2**63 - 1, interesting_int(rng)))
    elif what == "rank":
        if td.shape.dim and rng.random() < 0.5:
            del td.shape.dim[rng.randrange(len(td.shape.dim))]
        else:
            td.shape.dim.append(rng.choice([0, 1, 2, 2**20, -1]))
    elif what == "dtype":
        td.dtype = rng.choice([0, 1, 2, 3, 4, 8, 11, 12, 13, 14, 15, 16, 17, 26, 27, 28, 99])
    elif what == "layout":
        td.layout = rng.choice(STRINGS + ["NC1HWC0", "FRACTAL_Z"])
    elif what == "offset":
        _set_int(td, "data_offset", interesting_int(rng))
    elif what == "clear_shape":
        td.ClearField("shape")
    else:
        del td.shape.dim[:]
        td.shape.dim.extend([2] * rng.choice([9, 33, 70]))


DIVISOR_ATTRS = ("strides", "dilations", "ksize", "pads", "kernel_shape", "group", "groups", "axis")


def _zero_divisor(op: ge.OpDef, rng: random.Random) -> None:
    """A stride, window or group of 0 (shape inference and tiling once divided by it)."""
    keys = [k for k in op.attr if k in DIVISOR_ATTRS]
    if not keys:
        return
    a = op.attr[rng.choice(sorted(keys))]
    if a.HasField("list") and a.list.i:
        for j in range(len(a.list.i)):
            if rng.random() < 0.7:
                a.list.i[j] = 0
    else:
        a.i = 0


def _shrink_output(op: ge.OpDef, rng: random.Random) -> None:
    """An output descriptor smaller than what the kernel writes (a dim cut to 0, 1 or half)."""
    if op.output_desc:
        dims = op.output_desc[rng.randrange(len(op.output_desc))].shape.dim
        if dims:
            k = rng.randrange(len(dims))
            dims[k] = rng.choice([0, 1, dims[k] // 2])


def _consistent_zero(op: ge.OpDef, rng: random.Random) -> None:
    """One size set to 0 wherever it appears in the op's descriptors (MatMul's K in both inputs): descriptors
    that agree with each other but not with the tiling data compiled for the old size."""
    sizes = sorted({d for td in list(op.input_desc) + list(op.output_desc) for d in td.shape.dim if d > 1})
    if not sizes:
        return
    victim = rng.choice(sizes)
    for td in list(op.input_desc) + list(op.output_desc):
        for j, d in enumerate(td.shape.dim):
            if d == victim:
                td.shape.dim[j] = 0


def mutate_op(op: ge.OpDef, rng: random.Random, all_names: list[str]) -> None:
    what = rng.choice(["type", "id", "input", "input_i", "output_i", "in_desc", "out_desc", "out_desc", "attr",
                       "attr", "attr_del", "workspace", "subgraph", "name", "desc_count", "zero_divisor",
                       "shrink_output", "consistent_zero"])
    if what == "zero_divisor":
        _zero_divisor(op, rng)
    elif what == "shrink_output":
        _shrink_output(op, rng)
    elif what == "consistent_zero":
        _consistent_zero(op, rng)
    elif what == "type":
        op.type = rng.choice(["Add", "Conv2D", "NetOutput", "Data", "Const", "PartitionedCall", "NoSuchOp", "",
                              "MatMulV2", "Cast", "IncreFlashAttention"])
    elif what == "id":
        _set_int(op, "id", interesting_int(rng))
    elif what == "name":
        op.name = rng.choice(NAMES + all_names[:5])
    elif what == "input":
        if op.input and rng.random() < 0.7:
            op.input[rng.randrange(len(op.input))] = rng.choice(
                ["nosuch:0", "", f"{rng.choice(all_names or ['x'])}:{rng.choice([0, 1, 99, -1])}", "x:y", ":::"])
        else:
            op.input.append(rng.choice(all_names or ["x"]) + ":0")
    elif what in ("input_i", "output_i", "workspace"):
        field = {"workspace": "workspace_bytes"}.get(what, what)
        seq = getattr(op, field)
        if seq and rng.random() < 0.8:
            seq[rng.randrange(len(seq))] = max(-2**63, min(2**63 - 1, interesting_int(rng)))
        elif seq:
            del seq[rng.randrange(len(seq))]
        else:
            seq.append(max(-2**63, min(2**63 - 1, interesting_int(rng))))
    elif what in ("in_desc", "out_desc"):
        descs = op.input_desc if what == "in_desc" else op.output_desc
        if descs:
            _mutate_desc(descs[rng.randrange(len(descs))], rng)
    elif what == "desc_count":
        descs = op.input_desc if rng.random() < 0.5 else op.output_desc
        if descs and rng.random() < 0.5:
            del descs[rng.randrange(len(descs))]
        elif descs:
            descs.add().CopyFrom(descs[0])
    elif what == "attr":
        if op.attr and rng.random() < 0.85:
            key = rng.choice(sorted(op.attr))
        else:
            key = rng.choice(["axis", "perm", "index", "tvm_blockdim", "_tiling_key", "num_heads", "strides", "x"])
        _random_attr_value(op.attr[key], rng)
    elif what == "attr_del" and op.attr:
        del op.attr[rng.choice(sorted(op.attr))]
    elif what == "subgraph":
        if op.subgraph_name and rng.random() < 0.5:
            op.subgraph_name[0] = rng.choice(NAMES)
        else:
            op.subgraph_name.append(rng.choice(NAMES))


def mutate_model_def(md: ge.ModelDef, rng: random.Random, canary: str) -> None:
    what = rng.choice(["attr", "attr", "attr", "op", "op", "op", "op", "op", "name", "drop_op", "dup_op",
                       "swap_ops", "graph"])
    ops = md.graph[0].op if md.graph else None
    names = [o.name for o in ops] if ops is not None else []
    if what == "attr":
        keys = sorted(md.attr) + ["memory_size", "weight_size", "stream_num", "event_num", "task_gen_base_addr",
                                  "task_gen_weight_addr", "soc_version", "_is_unknown_shape",
                                  "precision_mode"]
        key = rng.choice(keys)
        if key in ("precision_mode", "input_format") and rng.random() < 0.5:   # a string attribute of another type
            _random_attr_value(md.attr[key], rng)
        elif rng.random() < 0.6 and key not in ("soc_version",):
            md.attr[key].Clear()
            md.attr[key].i = max(-2**63, min(2**63 - 1, interesting_int(rng)))
        elif key == "soc_version":
            md.attr[key].Clear()
            md.attr[key].s = rng.choice(["Ascend910A", "Ascend310B1", "Ascend999", "", "../x"]).encode()
        else:
            _random_attr_value(md.attr[key], rng)
    elif what == "name":
        md.name = rng.choice(NAMES).replace("{canary}", canary)
    elif what == "graph":
        if rng.random() < 0.5 and md.graph:
            del md.graph[0]
        else:
            md.graph.add()
    elif ops:
        if what == "op":
            mutate_op(ops[rng.randrange(len(ops))], rng, names)
        elif what == "drop_op":
            del ops[rng.randrange(len(ops))]
        elif what == "dup_op":
            ops.add().CopyFrom(ops[rng.randrange(len(ops))])
        elif what == "swap_ops" and len(ops) > 1:
            a, b = rng.sample(range(len(ops)), 2)
            x, y = ge.OpDef(), ge.OpDef()
            x.CopyFrom(ops[a])
            y.CopyFrom(ops[b])
            ops[a].CopyFrom(y)
            ops[b].CopyFrom(x)


def _deep_json(depth: int) -> bytes:
    return ("[" * depth + "]" * depth).encode() if depth % 2 else ('{"a":' * depth + "1" + "}" * depth).encode()


def _mutate_tiling(k, rng: random.Random) -> None:
    """The static tiling data after the address slots ({t} gives its offset): a field set to a hostile value
    (m, k, n of a MatMul, a conv's pads), or the data cut short."""
    items = k.context.args_format.count("{")
    slot = k.context.args_format.split("{").index("t}") - 1 if "{t}" in k.context.args_format else -1
    if slot < 0 or len(k.args) < 8 * items:
        return
    args = bytearray(k.args)
    off = int.from_bytes(args[8 * slot:8 * slot + 8], "little")
    if not 8 * items <= off < len(args):
        return
    if rng.random() < 0.25:
        del args[rng.randrange(off, len(args)):]   # short tiling data
    else:
        width = rng.choice([4, 8])
        pos = off + width * rng.randrange(max(1, (len(args) - off) // width))
        if pos + width <= len(args):
            args[pos:pos + width] = (interesting_int(rng) % (1 << (8 * width))).to_bytes(width, "little")
    k.args = bytes(args)


def mutate_task(t: task_pb2.TaskDef, rng: random.Random) -> None:
    what = rng.choice(["type", "stream", "event", "block_dim", "args", "args", "args_format", "op_index",
                       "ext_info", "ffts", "update", "private", "tiling", "tiling"])
    k = t.kernel if t.HasField("kernel") else None
    if what == "type":
        t.type = rng.choice([0, 1, 2, 26, 29, 41, 42, 43, 44, 5, 999])
    elif what == "stream":
        _set_int(t, "stream_id", interesting_int(rng))
    elif what == "event":
        _set_int(t, "event_id", interesting_int(rng))
    elif what == "block_dim" and k is not None:
        _set_int(k, "block_dim", interesting_int(rng))
    elif what == "tiling" and k is not None and "{t}" in k.context.args_format:
        _mutate_tiling(k, rng)
    elif what == "args" and k is not None:
        args = bytearray(k.args)
        choice = rng.random()
        if choice < 0.3 and args:
            del args[rng.randrange(len(args)):]
        elif choice < 0.8 and len(args) >= 8:
            slot = rng.randrange(len(args) // 8)
            args[8 * slot:8 * slot + 8] = struct.pack("<Q", interesting_int(rng) % (1 << 64))
        else:
            args += bytes(rng.randrange(256) for _ in range(rng.choice([1, 8, 100])))
        k.args = bytes(args)
    elif what == "args_format" and k is not None:
        k.context.args_format = rng.choice(["", "{i0}", "{i0}{i0}{o0}", "{o9}", "{ws99}", "{t}{t}", "{",
                                            "{i-1}", "{x}", k.context.args_format * 2,
                                            "{tiling_context.tiling_data}"])
    elif what == "op_index" and k is not None:
        _set_int(k.context, "op_index", interesting_int(rng))
    elif what == "ext_info" and k is not None:
        k.kernel_ext_info = rng.choice([_deep_json(rng.choice([50, 5000, 200000])), b"{", b"null", b"[]",
                                        b'{"members": 5}', b'{"members": [{"op_index": "x"}]}',
                                        b'{"members": [{"op_index": 0, "offset": -5, "size": 99999999, '
                                        b'"args_format": "{i0}"}]}'])
    elif what == "ffts" and t.HasField("ffts_plus_task"):
        f = t.ffts_plus_task
        c = rng.random()
        if c < 0.3:
            _set_int(f, "op_index", interesting_int(rng))
        elif c < 0.5:
            del f.ffts_plus_ctx[:]
        elif c < 0.75 and f.ffts_plus_ctx:
            mix = f.ffts_plus_ctx[0].mix_aic_aiv_ctx
            if mix.task_addr:
                mix.task_addr[rng.randrange(len(mix.task_addr))] = interesting_int(rng) % (1 << 64)
        else:
            _set_int(f.ffts_plus_sqe.sqe_header, "block_dim", interesting_int(rng))
    elif what == "update" and t.HasField("update_pc_task"):
        _set_int(t.update_pc_task, "op_index", interesting_int(rng))
    elif what == "private":
        t.private_def = bytes(rng.randrange(256) for _ in range(rng.choice([0, 3, 64])))


def mutate_task_def(mtd: task_pb2.ModelTaskDef, rng: random.Random) -> None:
    if not mtd.task:
        return
    what = rng.random()
    if what < 0.75:
        mutate_task(mtd.task[rng.randrange(len(mtd.task))], rng)
    elif what < 0.85:
        del mtd.task[rng.randrange(len(mtd.task))]
    elif what < 0.93:
        mtd.task.add().CopyFrom(mtd.task[rng.randrange(len(mtd.task))])
    elif len(mtd.task) > 1:
        a, b = rng.sample(range(len(mtd.task)), 2)
        x, y = task_pb2.TaskDef(), task_pb2.TaskDef()
        x.CopyFrom(mtd.task[a])
        y.CopyFrom(mtd.task[b])
        mtd.task[a].CopyFrom(y)
        mtd.task[b].CopyFrom(x)


def _flip(data: bytes, rng: random.Random, n: int) -> bytes:
    b = bytearray(data)
    for _ in range(n):
        if b:
            b[rng.randrange(len(b))] = rng.randrange(256)
    return bytes(b)


HEADER_FIELDS = ["version", "om_ir_version", "model_num", "is_unknow_model", "platform_type", "modeltype",
                 "genmode", "is_checksum", "need_check_os_cpu_info", "length", "ops", "headsize", "is_encrypt"]


def mutate(data: bytes, rng: random.Random, canary: str) -> tuple[bytes, str]:
    """One mutant of a valid .om and a short description of what changed."""
    doc = OmDoc(data)
    seal, changes = True, []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        m = rng.randrange(len(doc.models))
        what = rng.choice(["model_def"] * 8 + ["tasks"] * 7 + ["header", "name", "kernels", "weights",
                                                                "bytes", "drop_partition", "unsealed"])
        changes.append(f"{what}@{m}")
        if what == "model_def":
            md = _model_def(doc, m)
            if md is not None:
                mutate_model_def(md, rng, canary)
                doc.put(m, pt.MODEL_DEF, md.SerializeToString())
        elif what == "tasks":
            mtd = _tasks(doc, m)
            if mtd is not None:
                mutate_task_def(mtd, rng)
                doc.put(m, pt.TASK_INFO, mtd.SerializeToString())
        elif what == "header":
            field = rng.choice(HEADER_FIELDS)
            changes[-1] += f":{field}"
            width = {"is_unknow_model": 8, "platform_type": 8, "modeltype": 8, "genmode": 8, "is_checksum": 8,
                     "need_check_os_cpu_info": 8, "is_encrypt": 8, "model_length": 64}.get(field, 32)
            setattr(doc.header, field, interesting_int(rng) % (1 << width))
        elif what == "name":
            doc.header.name = rng.choice(NAMES + ["\udcff"]).replace("{canary}", canary).encode(
                "utf-8", "surrogatepass")[:31]
            md = _model_def(doc, m)
            if md is not None:
                md.name = rng.choice(NAMES).replace("{canary}", canary)
                doc.put(m, pt.MODEL_DEF, md.SerializeToString())
        elif what == "kernels":
            for ptype in (pt.TBE_KERNELS, pt.CUST_AICPU_KERNELS):
                raw = doc.get(m, ptype)
                if raw:
                    doc.put(m, ptype, _flip(raw, rng, rng.choice([1, 4])))
        elif what == "weights":
            raw = doc.get(m, pt.WEIGHTS_DATA)
            if raw:
                doc.put(m, pt.WEIGHTS_DATA, _flip(raw, rng, 8) if rng.random() < 0.6 else raw[:len(raw) // 2])
        elif what == "bytes":
            ptype = rng.choice([pt.MODEL_DEF, pt.TASK_INFO, pt.MODEL_INOUT_INFO])
            raw = doc.get(m, ptype)
            if raw:
                doc.put(m, ptype, _flip(raw, rng, rng.choice([1, 2, 8])))
        elif what == "drop_partition" and len(doc.models[m]) > 1:
            del doc.models[m][rng.randrange(len(doc.models[m]))]
        elif what == "unsealed":
            seal = False
    out = doc.pack(seal)
    if rng.random() < 0.03:   # a raw change to the tables or the header after sealing
        pos = rng.randrange(min(len(out), MODEL_FILE_HEAD_LEN + 64))
        out = out[:pos] + bytes([rng.randrange(256)]) + out[pos + 1:]
        changes.append(f"raw@{pos}")
    return out, ",".join(changes)


__all__ = ["mutate", "OmDoc", "ModelFileHeader"]
