"""The one table of task types om-run runs (om_run/tasks/): a handler for every type of the compiler's enum, each
with its load-time checks, its decoding and its execution; the type sets the rest of om-run tests against derived
from the handlers' flags; a type without a handler refused at load; and loading, decoding and running all going
through the table."""
from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import numpy as np
import pytest

import om_run.tasks
from atc_py.common.errors import AtcError
from atc_py.om import partitions as pt
from atc_py.om import task_types as tt
from atc_py.proto import task_pb2
from om_run.cli import execute as cli_execute
from om_run.load.loader import load_model
from om_run.sim import device, program
from om_run.sim.host import Simulation
from om_run.sim.profile import RuntimeProfile
from om_run.tasks import table
from om_run.tasks.base import TaskHandler
from om_run.tasks.table import HANDLERS
from tests.helpers import MODELS, ROOT, compile_om
from tools.fuzz.om_mutants import OmDoc


def _handler_classes() -> list[type]:
    """Every handler class the package defines for a type (a family's base class names none)."""
    found = set()
    for info in pkgutil.iter_modules(om_run.tasks.__path__):
        mod = importlib.import_module(f"om_run.tasks.{info.name}")
        found |= {c for _, c in inspect.getmembers(mod, inspect.isclass)
                  if issubclass(c, TaskHandler) and "type" in c.__dict__}
    return sorted(found, key=lambda c: c.type)


def test_every_task_type_has_exactly_one_handler():
    assert set(HANDLERS) == set(tt.TASK_TYPE_NAMES)
    classes = _handler_classes()
    types = [c.type for c in classes]
    assert len(types) == len(set(types)), f"two handler classes for one type: {types}"
    assert {type(h) for h in HANDLERS.values()} == set(classes), "a handler class is not in the table"
    for t, h in HANDLERS.items():
        assert h.type == t and h.name == tt.TASK_TYPE_NAMES[t]


def test_each_handler_validates_decodes_and_executes():
    for h in HANDLERS.values():
        cls = type(h)
        for method in ("validate", "decode", "execute"):
            assert getattr(cls, method) is not getattr(TaskHandler, method), f"{h.name} has no {method}"
        assert h.blocks == (cls.blocked is not TaskHandler.blocked), f"{h.name}: blocks and blocked() disagree"
        assert h.type in table.GROUPS[h.group]


def test_the_type_sets_derive_from_the_handlers():
    assert table.GROUPS == {
        "kernels": {tt.KERNEL, tt.ALL_KERNEL, tt.FFTS_PLUS_TASK, tt.SUPER_KERNEL},
        "events": {tt.EVENT_RECORD, tt.EVENT_WAIT},
        "labels": {tt.LABEL_SET, tt.LABEL_GOTO_EX, tt.LABEL_SWITCH_BY_INDEX},
        "streams": {tt.STREAM_ACTIVE, tt.STREAM_SWITCH},
        "memcpy": {tt.MEMCPY_ASYNC},
        "hccl": {tt.HCCL},
        "tiling sink": {tt.PREPROCESS_KERNEL, tt.UPDATE, tt.NOP}}
    assert table.KERNEL_KINDS == {tt.KERNEL, tt.ALL_KERNEL, tt.FFTS_PLUS_TASK}
    assert table.KERNEL_KINDS < table.GROUPS["kernels"]
    assert table.BLOCKING_KINDS == {tt.EVENT_WAIT, tt.SUPER_KERNEL, tt.HCCL}
    assert table.VALUE_BRANCH_KINDS == {tt.LABEL_SWITCH_BY_INDEX, tt.STREAM_SWITCH}
    assert table.MEMORY_READ_KINDS == table.VALUE_BRANCH_KINDS | {tt.MEMCPY_ASYNC}
    assert table.STREAM_START_KINDS == table.GROUPS["streams"]
    assert table.LABEL_SET_KINDS == {tt.LABEL_SET}
    # the scheduler, the program and the command line use these very sets
    assert device.KERNEL_KINDS is table.KERNEL_KINDS and device.BLOCKING_KINDS is table.BLOCKING_KINDS
    assert program.VALUE_BRANCH_KINDS is table.VALUE_BRANCH_KINDS and program.KERNEL_KINDS is table.KERNEL_KINDS
    assert program.MEMORY_READ_KINDS is table.MEMORY_READ_KINDS
    assert cli_execute.VALUE_BRANCH_KINDS is table.VALUE_BRANCH_KINDS


def test_no_om_run_module_outside_the_table_names_a_task_type():
    """A new task type is a handler and its row: nothing else in om-run tests a TaskDef's type by name (the
    names table, for printing, aside)."""
    named = re.compile(r"\btt\.(?!TASK_TYPE_NAMES\b)[A-Z_]+\b|task_types import (?!TASK_TYPE_NAMES\b)")
    found = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in sorted((ROOT / "om_run").rglob("*.py"))
             if "tasks" not in p.relative_to(ROOT / "om_run").parts for m in named.finditer(p.read_text())]
    assert not found, found


def _with_task_type(om: bytes, kind: int) -> bytes:
    doc = OmDoc(om)
    mtd = task_pb2.ModelTaskDef.FromString(doc.get(0, pt.TASK_INFO))
    next(t for t in mtd.task if t.HasField("kernel")).type = kind
    doc.put(0, pt.TASK_INFO, mtd.SerializeToString())
    return doc.pack()


@pytest.fixture(scope="module")
def cnn_om() -> bytes:
    return compile_om(MODELS / "small_cnn.onnx")


def test_a_task_type_without_a_handler_is_refused_at_load(tmp_path, monkeypatch, cnn_om):
    path = tmp_path / "m.om"
    path.write_bytes(_with_task_type(cnn_om, 77))     # not a type of the enum
    with pytest.raises(AtcError, match="task type 77 is not one om-run executes"):
        load_model(str(path))
    path.write_bytes(cnn_om)
    load_model(str(path))
    monkeypatch.delitem(HANDLERS, tt.KERNEL)         # a type of the enum whose row is missing
    with pytest.raises(AtcError, match="E30001.*task type 0 is not one om-run executes"):
        load_model(str(path))


def _spying(monkeypatch) -> dict[str, set[int]]:
    """Each handler in the table replaced by one that notes the types it validated, decoded and executed."""
    seen: dict[str, set[int]] = {"validate": set(), "decode": set(), "execute": set()}

    def spy(cls):
        def validate(self, v, k, t):
            seen["validate"].add(self.type)
            return cls.validate(self, v, k, t)

        def decode(self, p, st, t):
            seen["decode"].add(self.type)
            return cls.decode(self, p, st, t)

        def execute(self, run, task, t, start, inline=False):
            seen["execute"].add(self.type)
            return cls.execute(self, run, task, t, start, inline)
        return type(f"Spy{cls.__name__}", (cls,), {"validate": validate, "decode": decode, "execute": execute})

    for kind, h in list(HANDLERS.items()):
        monkeypatch.setitem(HANDLERS, kind, spy(type(h))())
    return seen


@pytest.mark.parametrize("sample,options,compute,types", [
    ("superkernel", {"ge.tiling_schedule_optimize": "1"}, False,
     {tt.ALL_KERNEL, tt.SUPER_KERNEL, tt.PREPROCESS_KERNEL, tt.EVENT_RECORD, tt.EVENT_WAIT}),
    ("rnn_loop", {}, True, {tt.KERNEL, tt.ALL_KERNEL, tt.LABEL_SET, tt.LABEL_GOTO_EX, tt.LABEL_SWITCH_BY_INDEX,
                            tt.MEMCPY_ASYNC}),
])
def test_loading_decoding_and_running_go_through_the_table(tmp_path, monkeypatch, sample, options, compute, types):
    path = tmp_path / "m.om"
    path.write_bytes(compile_om(MODELS / f"{sample}.onnx", **options))
    seen = _spying(monkeypatch)
    model = load_model(str(path))
    inputs = [np.ones(io.desc.shape, io.desc.dtype) for io in model.inputs] if compute else None
    _, stats = Simulation(model, RuntimeProfile(), compute=compute).run(inputs)
    assert {t.type for t in model.tasks} == types
    assert seen == {"validate": types, "decode": types, "execute": types}
    assert stats.records and not stats.hazards
