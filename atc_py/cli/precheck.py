"""ATC's pre-check (`--mode=3`, and a `--mode=0` build that fails while parsing): every node of the model gets a
verdict, written as GE's `check_result.json` (parser/common/pre_checker.cc's keys: the model's name, result,
total / pass / fail, and per op its name, type, result and causes {code, message}) and, beside it, msit
analyze's `result.csv` (ori_op_name, ori_op_type, op_name, op_type, soc_type, engine, is_supported, details).

The whole graph is checked: every op type without an adapter (all of them, in subgraphs too) fails with
TYPE_UNSUPPORTED; the model is compiled as `--mode=0` would (no .om is written) — with unsupported nodes, the
model without them (precheck_cut.py) — and each supported node is then on the engine and core type its kernel
got (AI Core / AI Vector / AICPU), folded into constants, or fused into another node (named); an error of the
build of the whole model that names a node fails that node with PARAM_INVALID and its message. The report's path: --check_report, else $ASCEND_WORK_PATH/check_result.json, else ./check_result.json.
"""
from __future__ import annotations

import csv
import io
import json
import os

from ..common.atomic_write import write_atomic, write_in_folder
from ..common.errors import AtcError

OK, PARAM_INVALID, TYPE_UNSUPPORTED = 0, 1, 3    # GE's pre-check ErrorCode values
REPORT = "check_result.json"
CSV_COLUMNS = ["ori_op_name", "ori_op_type", "op_name", "op_type", "soc_type", "engine", "is_supported", "details"]


def report_path(check_report: str) -> str:
    if check_report:
        return check_report
    work = os.environ.get("ASCEND_WORK_PATH", "")
    return os.path.join(work, REPORT) if work else REPORT


class Verdicts:
    """Per original node, in the model's order: (name, type, causes[(code, message)], engine, op_name, op_type)."""

    def __init__(self, model_name: str, nodes: list[tuple[str, str]]):
        self.model = model_name
        self.order = [n for n, _ in nodes]
        self.types = dict(nodes)
        self.causes: dict[str, list[tuple[int, str]]] = {n: [] for n in self.order}
        self.engine: dict[str, tuple[str, str, str, str]] = {}    # name -> (engine, core_type, op_name, op_type)
        self.notes: dict[str, str] = {}                      # name -> what became of a supported node

    def fail(self, name: str, code: int, message: str) -> None:
        if name in self.causes and (code, message) not in self.causes[name]:
            self.causes[name].append((code, message))

    @property
    def failed(self) -> int:
        return sum(1 for n in self.order if self.causes[n])

    def as_json(self) -> dict:
        ops = []
        for n in self.order:
            op = {"name": n, "type": self.types[n], "result": "failed" if self.causes[n] else "success"}
            if self.causes[n]:
                op["cause"] = [{"code": c, "message": m} for c, m in self.causes[n]]
            elif self.engine.get(n, ("",))[0]:     # beyond GE's keys: where the supported node runs
                op["engine"], op["core_type"], op["op_name"], op["op_type"] = self.engine[n]
            ops.append(op)
        return {"name": self.model, "result": "failed" if self.failed else "success", "total": len(self.order),
                "pass": len(self.order) - self.failed, "fail": self.failed, "op": ops}

    def as_csv(self, soc: str) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(CSV_COLUMNS)
        for n in self.order:
            engine, _, op_name, op_type = self.engine.get(n, ("", "", "", ""))
            details = "; ".join(m for _, m in self.causes[n]) or self.notes.get(n, "")
            w.writerow([n, self.types[n], op_name, op_type, soc, engine, "False" if self.causes[n] else "True",
                        details])
        return buf.getvalue()


def onnx_nodes(model) -> list[tuple[str, str]]:
    """(label, op type) of every node, subgraphs' as parent/attr/name (the labels E19010 uses)."""
    from ..frontend.onnx.converter import _all_nodes
    return [(label, n.op_type) for n, label in _all_nodes(model.graph)]


def unsupported_onnx(model) -> dict[str, str]:
    """label -> why, for every node whose op type has no adapter at the model's opset."""
    from ..frontend.onnx.converter import ADAPTERS, DOMAIN_ALIASES, _all_nodes
    opsets = {DOMAIN_ALIASES.get(o.domain, o.domain): o.version for o in model.opset_import}
    out = {}
    for n, label in _all_nodes(model.graph):
        domain = DOMAIN_ALIASES.get(n.domain, n.domain)
        cls, opset = ADAPTERS.get((domain, n.op_type)), opsets.get(domain)
        if cls is None:
            out[label] = f"no parser is registered for {n.op_type} (domain {domain or 'ai.onnx'})"
        elif opset is None:
            out[label] = f"its domain {domain} is not imported by the model"
        elif not cls.supports(opset):
            out[label] = f"{n.op_type} is supported at opsets {cls.versions()[0]}-{cls.last_opset}, the model uses {opset}"
    return out


def _ir_name(name: str) -> str:
    """The IR node an ONNX node becomes (the converter's naming rule)."""
    from ..frontend.onnx.converter import _safe
    return _safe(name)


def engines_of(graph, verdicts: Verdicts) -> None:
    """Each original node's engine from the compiled graph: its own IR node, or the fused node that lists it."""
    from ..ir.graph import ORIGIN_NAMES
    owner: dict[str, tuple[str, str, str]] = {}
    for node in graph.nodes:
        if node.op_type in ("Data", "Const", "NetOutput"):
            continue
        entry = (node.meta.get("engine", "AICORE"), node.meta.get("core_type", ""), node.name, node.op_type)
        for name in [node.name] + list(node.attrs.get(ORIGIN_NAMES, []) or []):
            owner.setdefault(name, entry)
    for n in verdicts.order:
        hit = owner.get(n) or owner.get(_ir_name(n))
        if hit is None:    # an IR node named after it with a suffix (an adapter's helper nodes)
            prefix = _ir_name(n)
            hit = next((v for k, v in owner.items() if k.startswith(prefix + "_")), None)
        if verdicts.causes[n]:
            continue
        verdicts.engine[n] = hit if hit is not None else ("", "", "", "")
        if hit is not None and hit[2] not in (n, _ir_name(n)) and not hit[2].startswith(_ir_name(n) + "_"):
            verdicts.notes[n] = f"fused into {hit[2]} ({hit[3]})"
        if hit is None:
            verdicts.notes[n] = "no kernel of its own: fused into a neighbouring op or folded by a graph pass"


def run_precheck(model_path: str, framework: str, build, soc: str, check_report: str,
                 build_loaded=None) -> Verdicts:
    """The verdicts of every node; `build()` compiles the model as --mode=0 would (its result, or an AtcError);
    `build_loaded(LoadedOnnx)` the same for a model in memory (None: the supported nodes of a model with
    unsupported ones get no engine)."""
    verdicts = _collect(model_path, framework, build, build_loaded)
    path = report_path(check_report)
    write_atomic(path, (json.dumps(verdicts.as_json(), indent=4) + "\n").encode())
    # the report's path is the user's; result.csv beside it is the tool's own name (a planted link is replaced)
    write_in_folder(os.path.join(os.path.dirname(os.path.abspath(path)), "result.csv"), verdicts.as_csv(soc).encode())
    return verdicts


def _collect(model_path: str, framework: str, build, build_loaded=None) -> Verdicts:
    if framework == "5":
        from ..frontend.onnx.loader import load_onnx_lazy
        proto, weights = load_onnx_lazy(model_path)     # external weights stay on disk
        verdicts = Verdicts(proto.graph.name or os.path.basename(model_path), onnx_nodes(proto))
        missing = unsupported_onnx(proto)
        for label, why in missing.items():
            verdicts.fail(label, TYPE_UNSUPPORTED, f"The type is not supported: {why}")
        if missing:
            _engines_without(proto, weights, model_path, set(missing), verdicts, build_loaded)
            return verdicts
    else:
        verdicts = Verdicts(os.path.basename(model_path), _tf_nodes(model_path))
    try:
        result = build()
    except AtcError as exc:
        node = _named_node(exc, verdicts)
        if node is None:    # a model-level failure: every node is still unchecked past it
            verdicts.order.append("(model)")
            verdicts.types["(model)"] = ""
            verdicts.causes["(model)"] = []
            node = "(model)"
        verdicts.fail(node, TYPE_UNSUPPORTED if exc.code == "E19010" else PARAM_INVALID, f"{exc.code}: {exc.message}")
        return verdicts
    engines_of(result.graph, verdicts)
    return verdicts


def _engines_without(proto, weights, model_path: str, missing: set[str], verdicts: Verdicts, build_loaded) -> None:
    """The supported nodes' engines from a build of the model without its unsupported nodes."""
    from ..pipeline import LoadedOnnx
    from .precheck_cut import without_unsupported
    why = "no engine: the pre-check builds a model with unsupported nodes only from atc-py --mode=3"
    if build_loaded is not None:
        cut = without_unsupported(proto, weights, missing)
        try:
            engines_of(build_loaded(LoadedOnnx(cut.model, weights, model_path)).graph, verdicts)
            why = ""
        except AtcError as exc:
            why = f"no engine: the model without its unsupported nodes does not build ({exc.code}: {exc.message})"
        for label, reason in cut.reasons.items():
            verdicts.engine.pop(label, None)
            verdicts.notes[label] = reason
    owners = {m.split("/")[0] for m in missing}
    for n in verdicts.order:
        if verdicts.causes[n]:
            continue
        if n.split("/")[0] in owners and n not in owners:
            verdicts.engine.pop(n, None)
            verdicts.notes[n] = f"no engine: inside {n.split('/')[0]}, which holds an unsupported node"
        elif why and not verdicts.engine.get(n, ("",))[0]:
            verdicts.notes.setdefault(n, why)


def _named_node(exc: AtcError, verdicts: Verdicts) -> str | None:
    """The original node an ATC error names (E14001's opname, or a node name quoted in its text)."""
    text = exc.message
    names = sorted(verdicts.order, key=len, reverse=True)
    for n in names:
        if n and (f" {n} " in text or f"'{n}'" in text or f"Op {_ir_name(n)} " in text or f"Op {n} " in text):
            return n
    return None


def _tf_nodes(path: str) -> list[tuple[str, str]]:
    from ..frontend.tensorflow.loader import load_tf
    g = load_tf(path)
    return [(n.name, n.op) for n in g.node]
