"""The one layer between reading an .om and running it: every field the simulator will use is checked here
against the file's own tables and the limits in limits.py, so that nothing downstream re-validates and no
field of the file sizes an allocation, indexes memory, names a path or bounds a loop unchecked.

What is checked, per model: the SoC; the model attributes' types and ranges (memory size against the SoC's
memory, stream and event counts); every op (unique id and name, registered type, tensor descriptors:
dtype, rank, dims, bytes; inputs that name an existing output of an earlier op; attribute types against the
op's declared defaults, required attributes present); the graph's inputs and outputs; for static models every
task (type, stream, event, its op, the args format items, each address inside device memory with the bytes
its tensor needs, block_dim, tiling data length, SUPER_KERNEL member tables, UPDATE and tiling tasks of sink
ops: each task type's own checks are its handler's in om_run/tasks/, built from the checks here); for
multi-model files the root graph's calls (known subgraphs, matching arity and tensor descriptors).
A failure is one E30001 naming the model, the op or task and the field.
"""
from __future__ import annotations

from atc_py.common.errors import AtcError
from atc_py.engines.aicore import TILING_SINK_BLOCK_DIM
from atc_py.engines.args import TILING, ArgsError, format_items, output_item, parse, tensor_ref
from atc_py.ir.dtypes import dtype_from_proto
from atc_py.ir.formats import DEVICE_FORMATS
from atc_py.ir.graph import Node, TensorDesc, Value
from atc_py.om.attrs import from_attr
from atc_py.ops import get_op
from atc_py.ops.core.base import REQUIRED, OpError
from atc_py.platform import load_soc

from ..tasks.table import HANDLERS
from . import limits
from .model import DeviceModel, RootModel, desc_from_proto
from .validate_shapes import check_inferred, check_tiling

INT_ATTRS = ("memory_size", "weight_size", "task_gen_base_addr", "task_gen_weight_addr", "stream_num",
             "event_num", "label_num", "batch_num")
STR_ATTRS = ("precision_mode", "input_format")   # read by om-run as strings (compare.py, layercmp)
ROOT_OPS = {"Data", "PartitionedCall", "NetOutput"}
CONTROL_SUBGRAPHS = {"If": (2, 2), "While": (2, 2), "Case": (1, 4096)}   # subgraphs a control op owns
GENERATED = ("AscBackend", "FusedAscBackend")   # kernels whose computation is a graph attribute


class Invalid(Exception):
    """One failed check; load_model turns it into E30001 with the file's path."""


def _int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _type_ok(default, value) -> bool:
    """An attribute value against the type of the op's declared default (None and REQUIRED: any type)."""
    if default is None or default is REQUIRED:
        return True
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, int):
        return _int(value)
    if isinstance(default, float):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(default, str):
        return isinstance(value, str)
    if isinstance(default, (list, tuple)):
        return isinstance(value, list)
    return True


def parse_ref(ref: str) -> tuple[str, int] | None:
    """'op:k' -> (op, k); None when malformed."""
    name, sep, k = ref.rpartition(":")
    if not sep or not name or not k.isdigit() or len(k) > 6:
        return None
    return name, int(k)


class ModelValidator:
    def __init__(self, model, op_list: list, is_static: bool):
        self.m = model
        self.ops = op_list
        self.static = is_static
        self.where = f"model {model.name!r}"

    def fail(self, reason: str) -> None:
        raise Invalid(f"{self.where}: {reason}")

    # -- model level ------------------------------------------------------------------------------------
    def check(self) -> None:
        self.soc_and_attrs()
        self.op_table()
        for op in self.ops:
            self.op(op)
        self.io()
        self.subgraphs()

    def soc_and_attrs(self) -> None:
        m = self.m
        if not isinstance(m.soc_version, str) or not m.soc_version:
            self.fail("soc_version is missing")
        try:
            self.soc = load_soc(m.soc_version)
        except AtcError:
            self.fail(f"soc_version {m.soc_version!r} is not a SoC om-run knows")
        self.device_memory = self.soc.memory_size or limits.DEFAULT_DEVICE_MEMORY
        for key in INT_ATTRS:
            if key in m.attrs and not _int(m.attrs[key]):
                self.fail(f"model attribute {key} must be an integer, got {type(m.attrs[key]).__name__}")
        for key in STR_ATTRS:
            if key in m.attrs and not isinstance(m.attrs[key], str):
                self.fail(f"model attribute {key} must be a string, got {type(m.attrs[key]).__name__}")
        unknown = m.attrs.get("_is_unknown_shape")
        if unknown is not None and not isinstance(unknown, bool):
            self.fail("model attribute _is_unknown_shape must be a bool")
        if not 0 <= m.weight_base < limits.MAX_ADDRESS:
            self.fail(f"task_gen_weight_addr {m.weight_base} is outside the address space")
        if len(m.weights) > self.device_memory:
            self.fail(f"weights of {len(m.weights)} B do not fit the {self.device_memory} B of {m.soc_version}")
        if len(self.ops) > limits.MAX_OPS:
            self.fail(f"{len(self.ops)} ops (limit {limits.MAX_OPS})")

    def op_table(self) -> None:
        self.by_name: dict[str, object] = {}
        ids = set()
        for op in self.ops:
            if op.id in ids:
                self.fail(f"op id {op.id} is used twice")
            ids.add(op.id)
            if not op.name:
                self.fail(f"op {op.id} has no name")
            if op.name in self.by_name:
                self.fail(f"op name {op.name!r} is used twice")
            self.by_name[op.name] = op
        self.order = {op.name: k for k, op in enumerate(sorted(self.ops, key=lambda o: o.id))}
        missing = sorted({op.type for op in self.ops if get_op(op.type) is None})
        if missing:
            self.fail(f"op type(s) {', '.join(repr(t) for t in missing)} are not registered: load the custom "
                      "operator package with --op_plugin or ASCEND_CUSTOM_OPP_PATH")

    # -- one op ---------------------------------------------------------------------------------------------
    def desc(self, op, td, what: str):
        dt = dtype_from_proto(td.dtype)
        if dt is None:
            self.fail(f"op {op.name!r} ({op.type}) {what}: dtype {td.dtype} is not supported")
        dims = list(td.shape.dim)
        if len(dims) > limits.MAX_RANK:
            self.fail(f"op {op.name!r} ({op.type}) {what}: rank {len(dims)} (limit {limits.MAX_RANK})")
        lowest = 0 if self.static else -2
        for d in dims:
            if not lowest <= d <= limits.MAX_DIM:
                self.fail(f"op {op.name!r} ({op.type}) {what}: dim {d} is out of range [{lowest}, {limits.MAX_DIM}]")
        known = [d for d in dims if d >= 0]
        n = 1
        for d in known:
            n *= d
        if n * dt.itemsize > self.device_memory:
            self.fail(f"op {op.name!r} ({op.type}) {what}: shape {dims} needs {n * dt.itemsize} B, more than the "
                      f"{self.device_memory} B of device memory")
        if (td.layout or "ND") in DEVICE_FORMATS:    # NC1HWC0 / FRACTAL_Z: its origin shape must give its shape
            try:
                desc_from_proto(td)
            except AtcError as exc:
                self.fail(f"op {op.name!r} ({op.type}) {what}: {exc.fields.get('reason', exc.message)}")
        return dt

    def op(self, op) -> None:
        spec = get_op(op.type)
        present = [i for i, s in enumerate(op.input) if s]
        if len(op.input_desc) != len(present):
            self.fail(f"op {op.name!r} ({op.type}) has {len(present)} inputs but {len(op.input_desc)} input "
                      "descriptors")
        for k, td in enumerate(op.input_desc):
            self.desc(op, td, f"input {present[k]}")
        for k, td in enumerate(op.output_desc):
            self.desc(op, td, f"output {k}")
        for i in present:
            ref = parse_ref(op.input[i])
            if ref is None:
                self.fail(f"op {op.name!r} ({op.type}) input {i} {op.input[i]!r} is not 'op:index'")
            src = self.by_name.get(ref[0])
            if src is None or self.m.graph_of.get(src.id) != self.m.graph_of.get(op.id):
                self.fail(f"op {op.name!r} ({op.type}) input {i} names op {ref[0]!r}, which the graph does not have")
            if ref[1] >= len(src.output_desc):
                self.fail(f"op {op.name!r} ({op.type}) input {i} reads output {ref[1]} of {ref[0]!r}, which has "
                          f"{len(src.output_desc)}")
            if self.order[src.name] >= self.order[op.name]:
                self.fail(f"op {op.name!r} ({op.type}) input {i} comes from {ref[0]!r}, which runs after it")
            self.same_as_source(op, i, present.index(i), src, ref[1])
        if spec.inputs and not any(n.endswith("*") for n in spec.inputs):
            if len(op.input) > len(spec.inputs):
                self.fail(f"op {op.name!r} ({op.type}) has {len(op.input)} inputs; {op.type} takes {len(spec.inputs)}")
            for i, n in enumerate(spec.inputs):
                if not n.endswith("?") and (i >= len(op.input) or not op.input[i]) and op.type not in ("Data", "Const"):
                    self.fail(f"op {op.name!r} ({op.type}) lacks its required input {i} ({n})")
        if spec.outputs and not any(n.endswith("*") for n in spec.outputs) and op.type != "Const" \
                and len(op.output_desc) != len(spec.outputs):
            self.fail(f"op {op.name!r} ({op.type}) has {len(op.output_desc)} outputs; {op.type} has "
                      f"{len(spec.outputs)}")
        values = self.attrs(op, spec)
        if op.type in GENERATED:
            self.generated(op, spec, values)
        elif self.static:
            reason = check_inferred(op, [desc_from_proto_checked(td) for td in op.input_desc],   # device formats
                                    [desc_from_proto_checked(td) for td in op.output_desc])  # compared logically
            if reason:
                self.fail(f"op {op.name!r} ({op.type}): {reason}")
        if op.type == "Data":
            if "index" not in op.attr or not _int(from_attr(op.attr["index"])):
                self.fail(f"Data op {op.name!r} has no integer attribute index")
            if len(op.output_desc) != 1:
                self.fail(f"Data op {op.name!r} has {len(op.output_desc)} outputs")
            if "_shape_range" in op.attr:
                self.shape_range(op)
        if op.type == "Const" and not self.static:
            if len(op.output_desc) != 1:
                self.fail(f"Const op {op.name!r} has {len(op.output_desc)} outputs")
            td = op.output_desc[0]
            nbytes = self.nbytes(td)
            if td.data_offset < 0 or td.data_offset + nbytes > len(self.m.weights) or nbytes < 0:
                self.fail(f"Const op {op.name!r}: {nbytes} B at weight offset {td.data_offset} are outside the "
                          f"{len(self.m.weights)} B of weights")
        if op.type == "PartitionedCall" and len(op.subgraph_name) != 1:
            self.fail(f"PartitionedCall {op.name!r} names {len(op.subgraph_name)} subgraphs; it calls one")

    def same_as_source(self, op, i: int, slot: int, src, k: int) -> None:
        """An input is its producer's output: the descriptor the kernel reads it by (its shape sizes views of
        device memory) must be the one its producer writes it by."""
        if slot >= len(op.input_desc):
            return
        a, b = op.input_desc[slot], src.output_desc[k]
        if list(a.shape.dim) != list(b.shape.dim) or a.dtype != b.dtype or (a.layout or "ND") != (b.layout or "ND"):
            self.fail(f"op {op.name!r} ({op.type}) input {i} is described as {_show(a)}, but {src.name!r} "
                      f"({src.type}) output {k} is {_show(b)}")

    def shape_range(self, op) -> None:
        """A dynamic input's `_shape_range`: (low, high) per dim, 0 <= low <= high (or high -1), matching its dims."""
        flat = from_attr(op.attr["_shape_range"])
        dims = list(op.output_desc[0].shape.dim)
        if not isinstance(flat, list) or len(flat) != 2 * len(dims) or not all(_int(v) for v in flat):
            self.fail(f"input {op.name!r}: _shape_range must hold two integers per dim of {dims}")
        for d, lo, hi in zip(dims, flat[::2], flat[1::2]):
            if not (0 <= lo <= limits.MAX_DIM and (hi == -1 or lo <= hi <= limits.MAX_DIM)) or (d >= 0 and lo != d):
                self.fail(f"input {op.name!r}: range {lo}~{hi} does not fit dim {d}")

    def attrs(self, op, spec) -> None:
        values = {}
        for key, a in op.attr.items():
            v = from_attr(a)
            values[key] = v
            if key.startswith("_") or key in ("tvm_blockdim",):
                continue
            if key in spec.attrs and not _type_ok(spec.attrs[key], v):
                self.fail(f"op {op.name!r} ({op.type}) attribute {key} must be "
                          f"{type(spec.attrs[key]).__name__}, got {type(v).__name__}")
        for key, default in spec.attrs.items():
            if default is REQUIRED and key not in values:
                self.fail(f"op {op.name!r} ({op.type}) lacks its required attribute {key}")
        for key in ("tvm_blockdim", "_tiling_key"):
            if key in values and not _int(values[key]):
                self.fail(f"op {op.name!r} ({op.type}) attribute {key} must be an integer")
        bd = values.get("tvm_blockdim")
        if bd is not None and not 1 <= bd <= limits.MAX_BLOCK_DIM:
            self.fail(f"op {op.name!r} ({op.type}) tvm_blockdim {bd} is out of range [1, {limits.MAX_BLOCK_DIM}]")
        return values

    def generated(self, op, spec, values: dict) -> None:
        """An AscBackend / FusedAscBackend: its graphs decode and pass every AscGraph rule (the error names the
        graph's node and field), and they compute the op's outputs from its inputs (shapes and dtypes)."""
        attrs = {k: v for k, v in values.items() if not k.startswith("_")}
        ins = [desc_from_proto_checked(td).logical for td in op.input_desc]   # its graph computes on these
        node = Node(op.name, op.type, attrs)
        node.inputs = [Value(f"{op.name}:in{k}", d, None) for k, d in enumerate(ins)]
        try:
            spec.kernel(attrs)
            if any(d < 0 for td in ins for d in td.shape):   # a dynamic model: shapes are met at run time
                return
            outs = spec.infer(node)
        except OpError as exc:
            self.fail(f"op {op.name!r} ({op.type}): {exc}")
        got = [(tuple(d.shape), d.dtype) for d in (desc_from_proto_checked(td).logical for td in op.output_desc)]
        want = [(tuple(d.shape), d.dtype) for d in outs]
        if got != want:
            self.fail(f"op {op.name!r} ({op.type}) outputs {got} are not what its graph computes: {want}")

    @staticmethod
    def nbytes(td) -> int:
        n = dtype_from_proto(td.dtype).itemsize
        for d in td.shape.dim:
            n *= max(d, 0)
        return n

    # -- inputs and outputs ---------------------------------------------------------------------------------
    def io(self) -> None:
        root = self.m.graphs.get(self.m.root_graph, self.ops)
        data = [op for op in root if op.type == "Data"]
        idx = sorted(from_attr(op.attr["index"]) for op in data)
        if idx != list(range(len(data))):
            self.fail(f"Data indices {idx} are not 0..{len(data) - 1}")
        for gname, gops in (self.m.graphs or {"": self.ops}).items():
            n = sum(1 for op in gops if op.type == "NetOutput")
            if n != 1:
                self.fail(f"graph {gname!r} has {n} NetOutput ops; it must have one")
        nets = [op for op in root if op.type == "NetOutput"]
        names = [td.name or nets[0].input[k] for k, td in enumerate(nets[0].input_desc)]
        if len(set(names)) != len(names):
            self.fail(f"output names {names} are not unique")


    # -- control-flow subgraphs ----------------------------------------------------------------------------
    def subgraphs(self) -> None:
        """Every graph but the root belongs to exactly one control op (If/While/Case), nested at most
        MAX_SUBGRAPH_DEPTH deep, with Data indices its owner passes and the output count its owner takes."""
        graphs = self.m.graphs
        owner: dict[str, object] = {}
        for op in self.ops:
            if op.type == "PartitionedCall":
                continue        # calls a sub-model of a multi-model om (RootValidator.check_calls)
            names = list(op.subgraph_name)
            if op.type in CONTROL_SUBGRAPHS:
                lo, hi = CONTROL_SUBGRAPHS[op.type]
                if not lo <= len(names) <= hi:
                    self.fail(f"{op.type} op {op.name!r} owns {len(names)} subgraphs; it needs {lo}..{hi}")
            elif names:
                self.fail(f"op {op.name!r} ({op.type}) names subgraphs but is not a control-flow op")
            for name in names:
                if name not in graphs or name == self.m.root_graph:
                    self.fail(f"op {op.name!r} names subgraph {name!r}, which MODEL_DEF does not hold")
                if name in owner:
                    self.fail(f"subgraph {name!r} is owned by two ops ({owner[name].name!r} and {op.name!r})")
                owner[name] = op
        for name in graphs:
            if name != self.m.root_graph and name not in owner:
                self.fail(f"graph {name!r} is not owned by any control-flow op")
        for name in graphs:     # the owner chain of every graph ends at the root, within the depth limit
            depth, cur = 0, name
            while cur != self.m.root_graph:
                depth += 1
                if depth > limits.MAX_SUBGRAPH_DEPTH:
                    self.fail(f"subgraph {name!r} is nested more than {limits.MAX_SUBGRAPH_DEPTH} deep (or in a cycle)")
                cur = self.m.graph_of[owner[cur].id]
        for name, op in owner.items():
            self.subgraph_io(op, name)

    def subgraph_io(self, op, name: str) -> None:
        gops = self.m.graphs[name]
        n_args = len(op.input) - (0 if op.type == "While" else 1)
        for d in (o for o in gops if o.type == "Data"):
            k = from_attr(d.attr["index"])
            if not 0 <= k < n_args:
                self.fail(f"Data op {d.name!r} of subgraph {name!r} reads input {k}; {op.name!r} passes {n_args}")
        net = next(o for o in gops if o.type == "NetOutput")
        if op.type == "While" and list(op.subgraph_name).index(name) == 0:
            want = 1
        else:
            want = len(op.output_desc)
        if len(net.input) != want:
            self.fail(f"subgraph {name!r} of {op.name!r} gives {len(net.input)} outputs; {op.name!r} takes {want}")


class StaticValidator(ModelValidator):
    """A static model: its memory, tasks and their args too. Each task is checked by its type's handler
    (om_run/tasks/), which is handed this validator: the checks below are what handlers are built from, and the
    tables they fill say what holds between tasks (whose kernel an op has, which ops tile on the device, labels
    set and jumped to, UPDATEs)."""
    limits = limits    # the bounds a field is held to (the handlers read them here: their package is below load)

    def check(self) -> None:
        self.fm_used = 0   # the end of the feature map's bytes that tensors and tasks address (in_memory)
        super().check()
        m = self.m
        if not 0 <= m.memory_size <= self.device_memory:
            self.fail(f"memory_size {m.memory_size} is outside [0, {self.device_memory}] (the device memory of "
                      f"{m.soc_version})")
        if not 0 <= m.fm_base < limits.MAX_ADDRESS:
            self.fail(f"task_gen_base_addr {m.fm_base} is outside the address space")
        if m.fm_base < m.weight_base + len(m.weights) and m.weight_base < m.fm_base + m.memory_size:
            self.fail("the feature map and the weights overlap in device memory")
        if not 1 <= m.stream_num <= max(self.soc.stream_num, 1):
            self.fail(f"stream_num {m.stream_num} is outside [1, {max(self.soc.stream_num, 1)}]")
        if not 0 <= m.event_num <= limits.MAX_EVENTS:
            self.fail(f"event_num {m.event_num} is outside [0, {limits.MAX_EVENTS}]")
        if len(m.tasks) > limits.MAX_TASKS:
            self.fail(f"{len(m.tasks)} tasks (limit {limits.MAX_TASKS})")
        self.kernel_of_op: dict[int, int] = {}
        self.tiling_of_op: set[int] = set()
        self.updates: list[tuple[int, int]] = []
        if not 0 <= m.label_num <= limits.MAX_LABELS:
            self.fail(f"label_num {m.label_num} is outside [0, {limits.MAX_LABELS}]")
        self.label_set: dict[int, int] = {}           # label -> its LABEL_SET task
        self.label_uses: list[tuple[int, int]] = []   # (task, label) of jumps
        for k, t in enumerate(m.tasks):
            self.where = f"model {m.name!r} task {k}"
            self.task(k, t)
        self.where = f"model {m.name!r}"
        for handler in HANDLERS.values():
            handler.check_model(self)
        self.static_io()
        self.feature_map_size()

    def feature_map_size(self) -> None:
        """om-run holds the feature map in host memory: a memory_size far beyond the bytes the model's tensors and
        tasks address (atc-py's is that end, aligned) would only allocate gigabytes no task touches."""
        m = self.m
        room = max(self.fm_used, limits.FM_SLACK_BYTES)
        if m.memory_size > self.fm_used + room:
            self.fail(f"memory_size {m.memory_size} is far beyond the {self.fm_used} B of feature map its tensors and "
                      f"tasks address (at most {self.fm_used + room})")

    def in_memory(self, addr: int, nbytes: int) -> bool:
        """[addr, addr + nbytes) lies in the feature map or the weights; an empty tensor may sit at a region's end
        (atc-py places a 0-byte constant or output where the next tensor would go)."""
        m = self.m
        for base, size in ((m.fm_base, m.memory_size), (m.weight_base, len(m.weights))):
            if base <= addr and addr + nbytes <= base + size:
                if base == m.fm_base:
                    self.fm_used = max(self.fm_used, addr + nbytes - base)
                return True
        return False

    def static_io(self) -> None:
        for op in self.ops:
            if op.type == "Data":
                if len(op.output_i) != 1 or not self.in_memory(op.output_i[0], self.nbytes(op.output_desc[0])):
                    self.fail(f"input {op.name!r} has no address inside device memory for its "
                              f"{self.nbytes(op.output_desc[0])} B")
            elif op.type == "NetOutput":
                if len(op.input_i) != len(op.input_desc):
                    self.fail(f"NetOutput has {len(op.input_i)} addresses for {len(op.input_desc)} outputs")
                for k, (a, td) in enumerate(zip(op.input_i, op.input_desc)):
                    if not self.in_memory(a, self.nbytes(td)):
                        self.fail(f"output {k}: {self.nbytes(td)} B at 0x{a:X} are outside device memory")

    def op_of(self, index: int, task_kind: str):
        op = self.m.ops.get(index)
        if op is None:
            self.fail(f"{task_kind} refers to op index {index}, which MODEL_DEF does not have")
        return op

    def task(self, k: int, t) -> None:
        handler = HANDLERS.get(t.type)
        if handler is None:
            self.fail(f"task type {t.type} is not one om-run executes")
        if not 0 <= t.stream_id < self.m.stream_num:
            self.fail(f"stream {t.stream_id}; the model has {self.m.stream_num} streams")
        handler.validate(self, k, t)

    # -- what the task handlers check with ------------------------------------------------------------------------
    def label_id(self, label: int) -> int:
        if not 0 <= label < self.m.label_num:
            self.fail(f"label {label}; the model has {self.m.label_num} labels (label_num)")
        return label

    def rts_op(self, index: int, kind: str, op_type: str):
        op = self.op_of(index, kind)
        if op.type != op_type:
            self.fail(f"{kind} refers to op {op.name!r} of type {op.type}, not {op_type}")
        return op

    def stream_id(self, s: int, what: str) -> None:
        if not 0 <= s < self.m.stream_num:
            self.fail(f"{what} names stream {s}; the model has {self.m.stream_num} streams")

    def input_addr(self, op, slot: int, nbytes: int, what: str) -> None:
        if slot >= len(op.input_i) or not self.in_memory(op.input_i[slot], nbytes):
            self.fail(f"{what} of op {op.name!r} has no address inside device memory for its {nbytes} B")

    def kernel_op(self, op, kind: str) -> None:
        spec = get_op(op.type)
        if spec.no_task:
            self.fail(f"{kind} launches op {op.name!r} of type {op.type}, which has no kernel")

    def claim_kernel(self, op, k: int, sink: bool) -> None:
        if op.id in self.kernel_of_op:
            self.fail(f"op {op.name!r} has two kernel tasks ({self.kernel_of_op[op.id]} and {k})")
        self.kernel_of_op[op.id] = k
        if sink and op.id not in self.tiling_of_op:
            self.fail(f"the sink kernel of op {op.name!r} has no PREPROCESS_KERNEL (device tiling) task before it")

    def block_dim(self, op, bd: int, sink: bool) -> None:
        """A sink kernel starts from its task's block_dim (the placeholder, until UPDATE patches it); the others
        run with the op's tvm_blockdim (checked with the attributes)."""
        if sink and bd != TILING_SINK_BLOCK_DIM and not 1 <= bd <= limits.MAX_BLOCK_DIM:
            self.fail(f"block_dim {bd} of sink op {op.name!r} is neither the placeholder 0xFFFFFFFF nor in "
                      f"[1, {limits.MAX_BLOCK_DIM}]")

    def items(self, op, fmt: str) -> list[str]:
        try:
            return format_items(fmt, f"op {op.name!r}")
        except ArgsError as exc:
            self.fail(str(exc))

    def args(self, op, fmt: str, args: bytes) -> dict[str, int]:
        """The args of a kernel of `op` parsed against their format: its tiling data and tensor addresses checked."""
        try:
            addrs, tiling = parse(fmt, args, f"op {op.name!r}")
        except ArgsError as exc:
            self.fail(str(exc))
        if TILING in addrs:
            self.tiling_data(op, tiling)
        self.addresses(op, addrs)
        return addrs

    def tiling_data(self, op, data: bytes) -> None:
        spec = get_op(op.type)
        attrs = {k: from_attr(a) for k, a in op.attr.items() if not k.startswith("_")}
        try:
            size = spec.tiling_data_size(attrs)
        except OpError as exc:
            self.fail(f"op {op.name!r} ({op.type}): {exc}")
        if len(data) < size:
            self.fail(f"the tiling data of op {op.name!r} has {len(data)} bytes, its kernel reads {size}")
        # as the kernel sees them: in the framework's layout (a device format's origin, ir/formats.py)
        ins = [desc_from_proto_checked(td).logical for td in op.input_desc]
        outs = [desc_from_proto_checked(td).logical for td in op.output_desc]
        if op.type in GENERATED:   # the launch as the simulator will run it: block_dim and key from the attributes
            key = from_attr(op.attr["_tiling_key"]) if "_tiling_key" in op.attr else 0
            bd = from_attr(op.attr["tvm_blockdim"]) if "tvm_blockdim" in op.attr else 1
            try:
                spec.check_launch(attrs, data, key, bd, ins, outs, self.soc)
            except OpError as exc:
                self.fail(f"op {op.name!r} ({op.type}) launch: {exc}")
        reason = check_tiling(op, data, ins, outs, self.soc)
        if reason:
            self.fail(f"op {op.name!r} ({op.type}): {reason}")

    def addresses(self, op, addrs: dict[str, int]) -> None:
        present = [i for i, s in enumerate(op.input) if s]
        for it, a in addrs.items():
            ref = tensor_ref(it)
            if ref is None:
                continue
            kind, n = ref
            if kind == "i":
                if n not in present:
                    self.fail(f"args item {{{it}}} of op {op.name!r}: input {n} is absent")
                nbytes = self.nbytes(op.input_desc[present.index(n)])
            elif kind == "o":
                if n >= len(op.output_desc):
                    self.fail(f"args item {{{it}}} of op {op.name!r}: the op has {len(op.output_desc)} outputs")
                nbytes = self.nbytes(op.output_desc[n])
            else:
                if n >= len(op.workspace_bytes):
                    self.fail(f"args item {{{it}}} of op {op.name!r}: the op has {len(op.workspace_bytes)} workspaces")
                nbytes = op.workspace_bytes[n]
                if not 0 <= nbytes <= limits.MAX_WORKSPACE_BYTES:
                    self.fail(f"workspace {n} of op {op.name!r} has {nbytes} bytes")
            if not self.in_memory(a, nbytes):
                self.fail(f"args item {{{it}}} of op {op.name!r}: {nbytes} B at 0x{a:X} are outside device memory")
        for k in range(len(op.output_desc)):
            if output_item(k) not in addrs:
                self.fail(f"the args of op {op.name!r} give no address for output {k}")


class RootValidator(ModelValidator):
    """The root of a multi-model om: Data, calls of the sub-models, NetOutput."""

    def check_calls(self, subs: dict) -> None:
        descs = {}
        for op in sorted(self.ops, key=lambda o: o.id):
            if op.type not in ROOT_OPS:
                self.fail(f"the root graph holds op {op.name!r} of type {op.type}; it may hold only "
                          f"{', '.join(sorted(ROOT_OPS))}")
            if op.type == "Data":
                descs[f"{op.name}:0"] = _desc_key(op.output_desc[0])
            elif op.type == "PartitionedCall":
                sub = subs.get(op.subgraph_name[0])
                if sub is None:
                    self.fail(f"PartitionedCall {op.name!r} calls subgraph {op.subgraph_name[0]!r}, which the om "
                              "does not contain")
                if len(op.input) != len(sub.inputs) or len(op.output_desc) != len(sub.outputs):
                    self.fail(f"PartitionedCall {op.name!r} passes {len(op.input)} inputs and takes "
                              f"{len(op.output_desc)} outputs; subgraph {sub.name!r} has {len(sub.inputs)} and "
                              f"{len(sub.outputs)}")
                for k, (ref, io) in enumerate(zip(op.input, sub.inputs)):
                    if descs.get(ref) != (tuple(io.desc.shape), io.desc.dtype) and -1 not in io.desc.shape:
                        self.fail(f"PartitionedCall {op.name!r} input {k} ({ref}) does not match input "
                                  f"{io.name!r} of subgraph {sub.name!r}")
                for k, io in enumerate(sub.outputs):
                    descs[f"{op.name}:{k}"] = (tuple(io.desc.shape), io.desc.dtype)


def desc_from_proto_checked(td) -> TensorDesc:
    """A descriptor desc() already checked (dtype, rank, dims; a device format's origin)."""
    if (td.layout or "ND") in DEVICE_FORMATS:
        return desc_from_proto(td)
    dt = dtype_from_proto(td.dtype)
    return TensorDesc(tuple(td.shape.dim), dt.name, td.layout or "ND", td.layout or "ND")


def _show(td) -> str:
    dt = dtype_from_proto(td.dtype)
    return f"{dt.name if dt else td.dtype}{list(td.shape.dim)} {td.layout or 'ND'}"


def _desc_key(td) -> tuple:
    dt = dtype_from_proto(td.dtype)
    return tuple(td.shape.dim), dt.name if dt else None


def validate(model, op_lists: dict[int, list]) -> None:
    """Check a decoded model (for a multi-model om, the root and every sub-model); op_lists: id(model) -> its
    OpDefs in file order."""
    if isinstance(model, RootModel):
        RootValidator(model, op_lists[id(model)], False).check()
        for sub in model.subs.values():
            validate(sub, op_lists)
        return
    cls = StaticValidator if isinstance(model, DeviceModel) else ModelValidator
    cls(model, op_lists[id(model)], isinstance(model, DeviceModel)).check()


def validate_calls(root, op_lists: dict[int, list]) -> None:
    """The root graph's calls against the sub-models' inputs and outputs (once those are read)."""
    RootValidator(root, op_lists[id(root)], False).check_calls(root.subs)
