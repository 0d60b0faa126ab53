"""GE's label makers for static models (graph/label/{if,case,while}_op_label_maker.cc): control nodes become
runtime tasks around their subgraphs' tasks, all on the control node's stream.

While(W): cond = [LabelSet Lc, StreamActive, <cond>, Cast(int32), LabelSwitchByIndex -> [Le, Lb]]
          body = [LabelSet Lb, StreamActive, <body>, MemcpyAsync -> carried buffers, LabelGotoEx Lc, LabelSet Le]
If / Case: the parent gets Cast(int32) + LabelSwitchByIndex -> [L_else, L_then] (Case: [L_0 .. L_n-1]);
          branch k = [LabelSet L_k, StreamActive, <branch>, MemcpyAsync -> outputs, LabelGotoEx Lleave]; the
          last branch ends with LabelSet Lleave instead of the goto.

If rebuilt from a TensorFlow v1 cond (Switch ... Merge; GE's parser keeps those ops and its
SwitchToStreamSwitchPass / MergeToStreamMergePass lower them): streams, not labels. The parent's stream ends
with Cast(int32) + StreamSwitch_t (index EQUAL 1 -> the then stream) + StreamSwitch_f (index EQUAL 0 -> the
else stream); each branch runs on its own stream = [<branch>, MemcpyAsync -> outputs, StreamActive -> the
merge stream], and what followed the If on the parent's stream continues on the merge stream (GE's
StreamMerge stream, which Active_t / Active_f start). Only an If of the root graph whose branches hold no
control node is lowered so; any other keeps labels (the stream ids are given at task generation).

Memory (control_memory.py): a While's outputs are its inputs' bytes (each input first copied into a buffer of
its own unless the While is its only reader), its cond and body read them in place through their Data nodes;
the body's results are copied back at the end of each iteration (a result that *is* the carried input needs
no copy). Branch Data nodes read the If's inputs in place; branch results are copied into the If's outputs.
The switch reads its index as uint32 from device memory, so a bool or int64 predicate is cast to int32 first.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..ir.graph import Graph, Node, TensorDesc, Value
from ..ops import get_op
from ..ops.control import SCAN_OUTPUTS, Case

LABEL_INDEX = "_label_switch_index"     # GE ATTR_NAME_LABEL_SWITCH_INDEX (LabelSet / LabelGotoEx)
LABEL_LIST = "_label_switch_list"       # GE ATTR_NAME_LABEL_SWITCH_LIST (LabelSwitchByIndex)
ACTIVE_STREAMS = "active_stream_list"   # GE ATTR_NAME_ACTIVE_STREAM_LIST (StreamActive)
LABEL_OWNER = "_label_owner"            # the control node an RTS node of the parent graph belongs to
PINNED = "_pinned_to"                   # meta: the parent Value whose bytes this subgraph Value is
STREAM_SWITCH_IF = "_lower_with_stream_switch"   # an If rebuilt from a TF v1 cond (frontend/tensorflow)
SWITCH_STREAMS = "_switch_streams"      # meta of such an If: (then stream, else stream, merge stream)
SWITCH_TRUE_BRANCH_FLAG = "_switch_true_branch_flag"   # GE ATTR_NAME_SWITCH_TRUE_BRANCH_FLAG
SWITCH_DATA_TYPE = "_switch_data_type"  # GE ATTR_NAME_SWITCH_DATA_TYPE: RT_SWITCH_INT32 = 0
MERGE_ACTIVE = "_activates_merge_stream"   # the branch's last StreamActive: starts the merge stream
RT_EQUAL = 0                            # rtCondition_t


@dataclass
class LabelPlan:
    label_num: int = 0
    region: dict[str, list[Node]] = field(default_factory=dict)   # control node -> its nodes in task order
    stream_switches: list[Node] = field(default_factory=list)     # Ifs lowered to StreamSwitch, in order


def _rts(g: Graph, name: str, op_type: str, inputs=(), attrs=None, out_descs=()) -> Node:
    node = g.add_node(g.unique_name(name), op_type, list(inputs), list(out_descs), dict(attrs or {}))
    node.attrs["_rts_label_node"] = True
    return node


def _root(v: Value) -> Value:
    """The Value owning v's bytes (through views)."""
    while v.producer is not None and get_op(v.producer.op_type).no_task and v.producer.inputs \
            and v.producer.op_type not in ("Data", "Const"):
        v = v.producer.inputs[0]
    return v


def _index_cast(g: Graph, name: str, v: Value) -> Value:
    """The switch index as int32 (the runtime reads 4 bytes)."""
    if v.desc.dtype == "int32":
        return v
    node = g.add_node(g.unique_name(name), "Cast", [v], [TensorDesc(v.desc.shape, "int32")], {"dst_type": "int32"})
    return node.outputs[0]


def _needs_copy_in(node: Node, k: int) -> bool:
    """A While input needs a buffer of its own unless the While is the only reader of a kernel's output."""
    v = node.inputs[k]
    p = v.producer
    if p is None or p.op_type in ("Data", "Const") or get_op(p.op_type).no_task:
        return True
    if get_op(p.op_type).task_kind != "kernel":
        return True
    return len(v.consumers) != 1 or any(c.op_type == "NetOutput" for c, _ in v.consumers)


class LabelMaker:
    def __init__(self, graph: Graph, stream_switch: bool = True):
        self.root = graph
        self.plan = LabelPlan()
        self.stream_switch = stream_switch

    def label(self) -> int:
        self.plan.label_num += 1
        return self.plan.label_num - 1

    def run(self, g: Graph) -> None:
        """Lower every control node of g (outer first: labels are numbered in task order), then recurse."""
        for node in list(g.nodes):
            if node.op_type == "While":
                self.while_(g, node)
            elif node.op_type == "If" and g is self.root and self.stream_switch and node.attrs.get(STREAM_SWITCH_IF) \
                    and not any(is_control(n) for sub in node.subgraphs.values() for n in sub.nodes):
                self.stream_switch_if(g, node)
            elif node.op_type in ("If", "Case"):
                self.branches(g, node)
            for sub in node.subgraphs.values():
                self.run(sub)

    # -- pieces ----------------------------------------------------------------------------------------
    def _head(self, sub: Graph, owner: Node, tag: str, label: int) -> list[Node]:
        ls = _rts(sub, f"{owner.name}/{tag}LabelSet", "LabelSet", attrs={LABEL_INDEX: label})
        sa = _rts(sub, f"{owner.name}/{tag}StreamActive", "StreamActive",
                  attrs={ACTIVE_STREAMS: [], "_subgraph_first_active": True})
        return [ls, sa]

    def _copies(self, sub: Graph, owner: Node, targets: list[Value], skip_same_data: bool) -> list[Node]:
        """MemcpyAsync of each result into the parent's buffer `targets[k]` (pinned); the NetOutput then reads
        the copies. A loop result that is its own carried input (Data k) needs none."""
        net = sub.net_output
        copies = []
        data_of = {int(d.attrs["index"]): d.outputs[0] for d in sub.data_nodes}
        data_ids = {id(x) for x in data_of.values()}
        if skip_same_data:      # a result that reads another carried buffer is copied aside first (a swap)
            for k, v in enumerate(list(net.inputs)):
                if data_of.get(k) is not v and id(_root(v)) in data_ids:
                    t = _rts(sub, f"{owner.name}/{sub.name}/Keep{k}", "MemcpyAsync", [v], out_descs=[v.desc])
                    sub.set_input(net, k, t.outputs[0])
                    copies.append(t)
        for k, (v, target) in enumerate(zip(list(net.inputs), targets)):
            if skip_same_data and data_of.get(k) is v:
                continue
            c = _rts(sub, f"{owner.name}/{sub.name}/Memcpy{k}", "MemcpyAsync", [v], out_descs=[v.desc])
            c.outputs[0].desc = TensorDesc(v.desc.shape, v.desc.dtype, v.desc.format, v.desc.origin_format)
            c.meta[PINNED] = [target]
            sub.set_input(net, k, c.outputs[0])
            copies.append(c)
        return copies

    def _pin_data(self, sub: Graph, parent_inputs: list[Value]) -> None:
        for d in sub.data_nodes:
            d.meta[PINNED] = [parent_inputs[int(d.attrs["index"])]]

    @staticmethod
    def _reorder(sub: Graph, head: list[Node], tail: list[Node]) -> None:
        ids = {id(n) for n in head + tail}
        middle = [n for n in sub.nodes if id(n) not in ids]
        nets = [n for n in middle if n.op_type == "NetOutput"]
        sub.nodes[:] = head + [n for n in middle if n.op_type != "NetOutput"] + tail + nets

    # -- While -------------------------------------------------------------------------------------------
    def while_(self, g: Graph, node: Node) -> None:
        if node.attrs.get(SCAN_OUTPUTS):
            raise ValueError(f"While {node.name} stacks scan outputs: it is a dynamic loop")
        for k in range(len(node.inputs)):
            if _needs_copy_in(node, k):
                v = node.inputs[k]
                c = _rts(g, f"{node.name}/CopyIn{k}", "MemcpyAsync", [v], out_descs=[v.desc])
                c.attrs[LABEL_OWNER] = node.name   # runs on the loop's stream, first thing of its region
                g.set_input(node, k, c.outputs[0])
                g.nodes.remove(c)
                g.nodes.insert(g.nodes.index(node), c)
        cond, body = node.subgraphs["cond"], node.subgraphs["body"]
        lc, lb, le = self.label(), self.label(), self.label()
        carried = list(node.outputs)
        self._pin_data(cond, carried)
        self._pin_data(body, carried)
        # cond
        head = self._head(cond, node, "Cond", lc)
        pred = cond.net_output.inputs[0]
        idx = _index_cast(cond, f"{node.name}/CondIndex", pred)
        cast = [idx.producer] if idx is not pred else []
        sw = _rts(cond, f"{node.name}/LabelSwitch", "LabelSwitchByIndex", [idx], {LABEL_LIST: [le, lb]})
        self._reorder(cond, head, cast + [sw])
        # body
        head = self._head(body, node, "Enter", lb)
        copies = self._copies(body, node, carried, skip_same_data=True)
        goto = _rts(body, f"{node.name}/LabelGoto", "LabelGotoEx", attrs={LABEL_INDEX: lc})
        leave = _rts(body, f"{node.name}/LeaveLabelSet", "LabelSet", attrs={LABEL_INDEX: le, "_subgraph_end_node": True})
        self._reorder(body, head, copies + [goto, leave])

    # -- If from a v1 cond: StreamSwitch ---------------------------------------------------------------------
    def stream_switch_if(self, g: Graph, node: Node) -> None:
        idx = _index_cast(g, f"{node.name}/SwitchIndex", node.inputs[0])
        if idx is not node.inputs[0]:
            g.set_input(node, 0, idx)
            g.nodes.remove(idx.producer)
            g.nodes.insert(g.nodes.index(node), idx.producer)
        for flag, tag in ((True, "t"), (False, "f")):       # GE: StreamSwitch_t / _f, each with its Constant
            value = g.add_const(g.unique_name(f"{node.name}/StreamSwitch_{tag}_Constant_{tag}"),
                                np.array(int(flag), np.int32))
            sw = _rts(g, f"{node.name}/StreamSwitch_{tag}", "StreamSwitch", [idx, value],
                      {"switch_condition": RT_EQUAL, SWITCH_DATA_TYPE: 0, ACTIVE_STREAMS: [],
                       SWITCH_TRUE_BRANCH_FLAG: flag})
            sw.attrs[LABEL_OWNER] = node.name
            node.meta.setdefault("_owned_switches", []).append(sw)
        args = list(node.inputs[1:])
        for sub, tag in ((node.subgraphs["then_branch"], "t"), (node.subgraphs["else_branch"], "f")):
            self._pin_data(sub, args)
            head = [_rts(sub, f"{node.name}/{sub.name}/StreamActive", "StreamActive",
                         attrs={ACTIVE_STREAMS: [], "_subgraph_first_active": True})]
            copies = self._copies(sub, node, list(node.outputs), skip_same_data=False)
            active = _rts(sub, f"{node.name}/Active_{tag}", "StreamActive",
                          attrs={ACTIVE_STREAMS: [], MERGE_ACTIVE: True, "_subgraph_end_node": True})
            self._reorder(sub, head, copies + [active])
        self.plan.stream_switches.append(node)

    # -- If / Case ----------------------------------------------------------------------------------------
    def branches(self, g: Graph, node: Node) -> None:
        subs = [node.subgraphs["then_branch"], node.subgraphs["else_branch"]] if node.op_type == "If" \
            else Case().branches(node)
        leave = self.label()
        labels = [self.label() for _ in subs]
        idx = _index_cast(g, f"{node.name}/SwitchIndex", node.inputs[0])
        switch_list = [labels[1], labels[0]] if node.op_type == "If" else labels   # If: false -> else, true -> then
        if idx is not node.inputs[0]:           # the node reads the cast predicate (GE's CondPass does the same)
            g.set_input(node, 0, idx)
            g.nodes.remove(idx.producer)
            g.nodes.insert(g.nodes.index(node), idx.producer)
        sw = _rts(g, f"{node.name}/LabelSwitch", "LabelSwitchByIndex", [idx], {LABEL_LIST: switch_list})
        sw.attrs[LABEL_OWNER] = node.name       # the first task of the node's region (task generation)
        args = list(node.inputs[1:])
        tag = ["Then", "Else"] if node.op_type == "If" else [f"Branch{k}_" for k in range(len(subs))]
        for k, sub in enumerate(subs):
            self._pin_data(sub, args)
            head = self._head(sub, node, tag[k], labels[k])
            copies = self._copies(sub, node, list(node.outputs), skip_same_data=False)
            if k + 1 < len(subs):
                end = _rts(sub, f"{node.name}/LabelGoto_{k}", "LabelGotoEx", attrs={LABEL_INDEX: leave})
            else:
                end = _rts(sub, f"{node.name}/LeaveLabelSet", "LabelSet",
                           attrs={LABEL_INDEX: leave, "_subgraph_end_node": True})
            self._reorder(sub, head, copies + [end])


def lower_labels(graph: Graph, stream_switch: bool = True) -> LabelPlan:
    """Insert the label / stream-active / copy nodes; returns how many labels the model uses. With
    stream_switch False (a single-stream build) v1 conds keep labels too."""
    m = LabelMaker(graph, stream_switch)
    m.run(graph)
    return m.plan


def give_switch_streams(plan: LabelPlan, first: int) -> int:
    """Stream ids for the Ifs lowered to StreamSwitch (then, else, merge: three each from `first`), written
    into their StreamSwitch / StreamActive nodes; returns the next free stream id."""
    for node in plan.stream_switches:
        t, f, m = first, first + 1, first + 2
        first += 3
        node.meta[SWITCH_STREAMS] = (t, f, m)
        for sw in node.meta.get("_owned_switches", []):
            sw.attrs[ACTIVE_STREAMS] = [t if sw.attrs[SWITCH_TRUE_BRANCH_FLAG] else f]
        for sub in (node.subgraphs["then_branch"], node.subgraphs["else_branch"]):
            for n in sub.nodes:
                if n.attrs.get(MERGE_ACTIVE):
                    n.attrs[ACTIVE_STREAMS] = [m]
    return first


def branch_regions(node: Node) -> list[list[Node]]:
    """A lowered control node's nodes in task order, one list per subgraph (nested control nodes expanded)."""
    subs = [node.subgraphs["cond"], node.subgraphs["body"]] if node.op_type == "While" else \
        [node.subgraphs["then_branch"], node.subgraphs["else_branch"]] if node.op_type == "If" else \
        Case().branches(node)
    return [_sub_region(sub) for sub in subs]


def region_nodes(node: Node) -> list[Node]:
    """A lowered control node's nodes in task order (nested control nodes expanded)."""
    return [n for part in branch_regions(node) for n in part]


def _sub_region(sub: Graph) -> list[Node]:
    out: list[Node] = []
    owned: dict[str, list[Node]] = {}
    for n in sub.nodes:
        if LABEL_OWNER in n.attrs:
            owned.setdefault(n.attrs[LABEL_OWNER], []).append(n)
    for n in sub.nodes:
        if LABEL_OWNER in n.attrs:
            continue           # opens its owner's region, below
        out.append(n)
        if n.subgraphs:
            out.extend(owned.get(n.name, []) + region_nodes(n))
    return out


def is_control(node: Node) -> bool:
    return get_op(node.op_type).task_kind == "control"


__all__ = ["LabelPlan", "lower_labels", "region_nodes", "branch_regions", "give_switch_streams", "is_control", "np"]
