"""The world of several ranks: turns in simulated time, each collective's rendezvous and result, the ranks that
disagree, and a deadlock reported (with who waits) instead of a hang. These drive the rendezvous the way the
host executor does (WorldBinding.host_collective) with hand-made OpDefs; whole models: test_world_models.py."""
import threading

import numpy as np
import pytest

from atc_py.common.errors import AtcError
from atc_py.ir.graph import TensorDesc
from atc_py.ops import collective_math as cm
from atc_py.proto import ge_ir_pb2
from om_run.sim.world import World, WorldBinding

COST_NS = 1000


def _cost(kind, nbytes, ranks, dtype, reduction="sum"):
    return COST_NS + nbytes          # a stand-in link: the tests below check the rendezvous, not the link model


def _op(op_type, name="c", **attrs):
    op = ge_ir_pb2.OpDef(name=name, type=op_type)
    for k, v in attrs.items():
        if isinstance(v, str):
            op.attr[k].s = v.encode()
        elif isinstance(v, list):
            op.attr[k].list.i.extend(v)
        else:
            op.attr[k].i = v
    return op


class _Sim:
    compute = True


def _desc(a):
    return TensorDesc(tuple(a.shape), str(a.dtype))


def _run(n, program, timeout=20):
    """Each rank r runs program(binding, r) in its thread, as run_world does; returns (results, first error)."""
    world = World(n, _cost)
    results, errors = [None] * n, [None] * n

    def body(r):
        b = WorldBinding(world, r)
        try:
            world.turn(r, 0)
            results[r] = program(b, r)
        except BaseException as exc:   # noqa: BLE001
            errors[r] = exc
            world.fail(exc)
        finally:
            world.finish(r)
    threads = [threading.Thread(target=body, args=(r,), daemon=True) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), "a rank hangs"
    return results, world


@pytest.mark.parametrize("n", [2, 8])
@pytest.mark.parametrize("dtype", ["float16", "float32", "int32"])
@pytest.mark.parametrize("op_type, extra", [("HcomAllReduce", {"reduction": "sum"}),
                                            ("HcomAllReduce", {"reduction": "max"}),
                                            ("HcomAllReduce", {"reduction": "prod"}),
                                            ("HcomReduceScatter", {"reduction": "min"}),
                                            ("HcomAllGather", {}), ("HcomBroadcast", {"root_rank": 1}),
                                            ("HcomAllToAll", {})])
def test_each_collective_gives_its_exact_result_on_every_rank(n, dtype, op_type, extra):
    rng = np.random.default_rng(n)
    xs = [(rng.standard_normal((8, 3)) * 3).astype(dtype) for _ in range(n)]
    want = {"HcomAllReduce": lambda: cm.all_reduce(xs, extra.get("reduction")),
            "HcomReduceScatter": lambda: cm.reduce_scatter(xs, "min"), "HcomAllGather": lambda: cm.all_gather(xs),
            "HcomBroadcast": lambda: cm.broadcast(xs, 1), "HcomAllToAll": lambda: cm.all_to_all(xs)}[op_type]()
    op = _op(op_type, **extra)

    def program(b, r):
        start = 100 * r                      # the ranks arrive at different times
        return b.host_collective(_Sim(), op, [xs[r]], [_desc(xs[r])], [_desc(want[r])], start)
    results, world = _run(n, program)
    assert world.failure is None
    nbytes = xs[0].nbytes * (n if op_type == "HcomAllGather" else 1)     # HCCL's n: all-gather counts its output
    for r, (s, e, outs) in enumerate(results):
        assert s == 100 * (n - 1) and e == s + COST_NS + nbytes      # from the latest arrival
        np.testing.assert_array_equal(outs[0], want[r])
    assert world.log[0]["ranks"] == list(range(n)) and world.log[0]["kind"]


def test_send_and_receive_pair_by_peer_and_tag():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    send = _op("HcomSend", dest_rank=1, sr_tag=7)
    recv = _op("HcomReceive", src_rank=0, sr_tag=7)

    def program(b, r):
        if r == 0:
            return b.host_collective(_Sim(), send, [x], [_desc(x)], [], 50)
        return b.host_collective(_Sim(), recv, [], [], [_desc(x)], 10)
    results, world = _run(2, program)
    assert world.failure is None
    np.testing.assert_array_equal(results[1][2][0], x)
    assert results[0][0] == results[1][0] == 50


def test_a_rank_that_never_arrives_is_a_deadlock_naming_the_waiting_ranks():
    op = _op("HcomAllReduce", name="ar0", reduction="sum")
    x = np.ones(4, np.float32)

    def program(b, r):
        if r == 2:
            return None                      # rank 2 finishes without the collective
        return b.host_collective(_Sim(), op, [x], [_desc(x)], [_desc(x)], 10)
    results, world = _run(4, program)
    assert isinstance(world.failure, AtcError)
    msg = str(world.failure)
    assert "deadlock" in msg and "ar0" in msg and "[0, 1, 3] wait" in msg and "[2] never reach" in msg


def test_ranks_disagreeing_on_shape_or_op_are_one_error_naming_them():
    x4, x5 = np.ones(4, np.float32), np.ones(5, np.float32)

    def shapes(b, r):
        x = x5 if r == 1 else x4
        return b.host_collective(_Sim(), _op("HcomAllReduce", name="ar"), [x], [_desc(x)], [_desc(x)], 0)
    _, world = _run(2, shapes)
    assert "rank 0 gives float32[4], rank 1 gives float32[5]" in str(world.failure)

    def kinds(b, r):
        op = _op("HcomAllReduce" if r == 0 else "HcomAllGather", name=f"op{r}")
        return b.host_collective(_Sim(), op, [x4], [_desc(x4)], [_desc(x4)], 0)
    _, world = _run(2, kinds)
    assert "collective mismatch" in str(world.failure) and "rank 1 runs HcomAllGather" in str(world.failure)


def test_a_group_naming_a_rank_twice_or_outside_the_world_is_refused():
    x = np.ones(2, np.float32)
    for ids, message in (([0, 0], "rank(s) [0] twice"), ([0, 5], "rank(s) [5], the world has ranks 0..1")):
        _, world = _run(2, lambda b, r: b.host_collective(_Sim(), _op("HcomAllReduce", rank_ids=ids), [x],
                                                          [_desc(x)], [_desc(x)], 0))
        assert message in str(world.failure)


def test_subgroups_meet_separately_and_in_issue_order():
    """Ranks {0,1} and {2,3} each all-reduce twice; the k-th collective of a group meets the k-th."""
    def program(b, r):
        ids = [0, 1] if r < 2 else [2, 3]
        outs = []
        for k in range(2):
            x = np.full(2, 10 * k + r, np.int32)
            outs.append(b.host_collective(_Sim(), _op("HcomAllReduce", name=f"ar{k}", rank_ids=ids), [x],
                                          [_desc(x)], [_desc(x)], 1000 * k + r)[2][0])
        return outs
    results, world = _run(4, program)
    assert world.failure is None
    assert [list(o) for o in results[0]] == [[1, 1], [21, 21]]
    assert [list(o) for o in results[3]] == [[5, 5], [25, 25]]
