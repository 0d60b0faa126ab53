"""AscGraph: size expressions, construction of GE's documented examples, validation (each rule names
the node and field), the nested-loop dump, and the GraphDef form GE stores graph attributes in."""
import numpy as np
import pytest

from atc_py.autofuse.expr import ExprError, Sym, ceil_div, parse, product
from atc_py.autofuse.graph import HINT, IMPL, AscGraph, AscGraphError, check_contract
from atc_py.autofuse.schedule import Nest, schedule
from atc_py.autofuse.serialize import from_graph_def, to_graph_def


# -- expressions -------------------------------------------------------------------------------------------------
def test_expressions_are_canonical_evaluate_and_read_back():
    s0, s1, s2 = Sym("s0"), Sym("s1"), Sym("s2")
    assert s1 * s2 == s2 * s1 and str(s1 * s2) == "s1*s2"
    assert str(s0 * 1) == "s0" and s0 * 0 == 0 and (s0 + 0) == s0
    e = ceil_div(product([s0, s1]), Sym("t"))
    assert str(e) == "Ceiling((s0*s1)/t)" and e.eval({"s0": 3, "s1": 5, "t": 4}) == 4
    for x in (e, s1 * s2 + 3, ceil_div(ceil_div(s0, Sym("a")), Sym("b"))):
        assert parse(str(x)) == x
    assert ceil_div(7, 2) == 4 and e.symbols() == {"s0", "s1", "t"}


@pytest.mark.parametrize("text", ["s0-1", "s0/", "(" * 40 + "s0" + ")" * 40, "x" * 600, "Ceiling(s0)", "9" * 25,
                                  "s0 $ s1", "1s"])
def test_bad_expressions_are_rejected(text):
    with pytest.raises(ExprError):
        parse(text)


def test_evaluation_needs_every_symbol_and_stays_in_range():
    with pytest.raises(ExprError, match="s1 has no value"):
        (Sym("s0") * Sym("s1")).eval({"s0": 2})
    with pytest.raises(ExprError, match="out of range"):
        (Sym("a") * Sym("a") * Sym("a")).eval({"a": 1 << 30})
    with pytest.raises(ExprError, match="divides by 0"):
        ceil_div(Sym("a"), Sym("b")).eval({"a": 1, "b": 0})


# -- GE's documented examples----------------------------------------------------------------------------------------
def four_axes():
    """The seed: four size variables s0..s3, four axes z0..z3 (z_k of size s_k)."""
    g = AscGraph("seed")
    sizes = [g.create_size_var(f"s{k}") for k in range(4)]
    axes = [g.create_axis(f"z{k}", sizes[k]) for k in range(4)]
    return g, sizes, axes


def cast_graph(dst="float16"):
    """Data -> Load -> Cast(dst_type) -> Store -> Output, every node in the loops z0..z3."""
    g, s, z = four_axes()
    loops = [a.id for a in z]
    data = g.add_node("Data", "x", [], {"index": 0}, loops, [g.tensor("float32", loops, s)])
    load = g.add_node("Load", "load", [(data, 0)], {"offset": parse("0")}, loops, [g.tensor("float32", loops, s)])
    cast = g.add_node("Cast", "cast", [(load, 0)], {"dst_type": dst}, loops, [g.tensor("float16", loops, s)])
    store = g.add_node("Store", "store", [(cast, 0)], {"offset": parse("0")}, loops, [g.tensor("float16", loops, s)])
    g.add_node("Output", "y", [(store, 0)], {"index": 0}, loops, [g.tensor("float16", loops, s)])
    return g


def test_seed_graph_four_axes_and_a_cast_with_dst_type():
    g = cast_graph()
    g.check()
    assert [a.name for a in g.axes] == ["z0", "z1", "z2", "z3"] and g.size_vars == ["s0", "s1", "s2", "s3"]
    assert [str(a.size) for a in g.axes] == ["s0", "s1", "s2", "s3"]
    cast = g.node("cast")
    assert cast.attrs["dst_type"] == "float16" and cast.sched_axis == [0, 1, 2, 3]
    assert [str(s) for s in cast.y.strides] == ["s1*s2*s3", "s2*s3", "s3", "1"]


def broadcast_graph(in_repeats=("s0", "1")):
    """A Broadcast over z1: its input repeats (s0, 1), its output (s0, s1)."""
    g = AscGraph("bcast")
    s0, s1 = g.create_size_var("s0"), g.create_size_var("s1")
    z0, z1 = g.create_axis("z0", s0), g.create_axis("z1", s1)
    loops = [z0.id, z1.id]
    data = g.add_node("Data", "x", [], {"index": 0}, loops, [g.tensor("float32", [z0.id], [s0])])
    load = g.add_node("Load", "load", [(data, 0)], {"offset": parse("0")}, loops,
                      [g.tensor("float32", loops, [parse(r) for r in in_repeats])])
    b = g.add_node("Broadcast", "b", [(load, 0)], {}, loops, [g.tensor("float32", loops, [s0, s1])])
    store = g.add_node("Store", "store", [(b, 0)], {"offset": parse("0")}, loops,
                       [g.tensor("float32", loops, [s0, s1])])
    g.add_node("Output", "y", [(store, 0)], {"index": 0}, loops, [g.tensor("float32", loops, [s0, s1])])
    return g


def test_seed_graph_broadcast_repeats():
    g = broadcast_graph()
    g.check()
    b = g.node("b")
    assert [str(r) for r in b.input_attr(0).repeats] == ["s0", "1"] and [str(s) for s in b.input_attr(0).strides] \
        == ["1", "0"]
    assert [str(r) for r in b.y.repeats] == ["s0", "s1"]


# -- validation: every rule names the node and the field ------------------------------------------------------------
def _rejects(g, where, field):
    with pytest.raises(AscGraphError) as e:
        g.check()
    assert where in e.value.where and field in e.value.field, str(e.value)
    return e.value


def test_an_axis_that_is_not_defined_is_rejected():
    g = cast_graph()
    g.node("cast").sched_axis = [0, 1, 2, 7]
    _rejects(g, "'cast'", "sched.axis")
    g = cast_graph()
    g.node("cast").y.axis = [0, 1, 2, 9]
    _rejects(g, "'cast'", "axis")


def test_edge_ends_that_disagree_are_rejected():
    g = cast_graph()
    cast = g.node("cast")
    view = g.tensor("float32", [0, 1, 2, 3], [Sym("s0"), Sym("s1"), Sym("s2"), 1])   # its own idea of the edge
    cast.in_views = [view]
    err = _rejects(g, "'cast'", "input 0 repeats")
    assert "'load'" in str(err)


def test_a_cast_whose_output_is_not_its_dst_type_is_rejected():
    _rejects(cast_graph(dst="int32"), "'cast'", "dst_type")


def test_a_broadcast_that_shrinks_or_grows_nothing_is_rejected():
    _rejects(broadcast_graph(("s0", "s1")), "'b'", "repeats")
    g = broadcast_graph()
    g.node("b").y.repeats[0] = Sym("s1")
    _rejects(g, "'b'", "repeats")


def test_unknown_size_variables_types_attributes_and_indices_are_rejected():
    g = cast_graph()
    g.node("cast").y.repeats[0] = Sym("s9")
    _rejects(g, "'cast'", "repeats")
    g = cast_graph()
    g.node("cast").type = "Nope"
    _rejects(g, "'cast'", "type")
    g = cast_graph()
    del g.node("cast").attrs["dst_type"]
    _rejects(g, "'cast'", "dst_type")
    g = cast_graph()
    g.node("x").attrs["index"] = 3
    _rejects(g, "graph", "Data.index")


def test_a_modified_data_or_output_of_an_impl_graph_breaks_the_contract():
    hint = broadcast_graph()
    hint.check()
    impl = schedule(hint)
    impl.check()
    check_contract(hint, impl)
    impl.node("x").y.strides[0] = Sym("s1")
    with pytest.raises(AscGraphError, match="contract"):
        check_contract(hint, impl)
    impl = schedule(hint)
    impl.node("y").y.repeats[1] = parse("1")
    with pytest.raises(AscGraphError) as e:
        impl.check()      # the Output's tensor must be the one it receives
    assert "'y'" in e.value.where


# -- dump -----------------------------------------------------------------------------------------------------------
def test_dump_prints_the_nested_loops():
    text = cast_graph().dump()
    lines = text.splitlines()
    assert lines[0] == "AscGraph seed (HintGraph)" and "sizes: s0, s1, s2, s3" in lines[1]
    loops = [ln.strip() for ln in lines if ln.strip().startswith("for ")]
    assert loops == ["for z0 in range(s0):", "for z1 in range(s1):", "for z2 in range(s2):", "for z3 in range(s3):"]
    cast = next(ln for ln in lines if "cast = Cast" in ln)
    assert cast.startswith(" " * 10) and "dst_type=float16" in cast and "repeats(s0, s1, s2, s3)" in cast
    assert lines[2:7] == ["  axes :", "    z0(0) ORIGINAL size s0", "    z1(1) ORIGINAL size s1",
                          "    z2(2) ORIGINAL size s2", "    z3(3) ORIGINAL size s3"]
    assert lines[7].strip().startswith("x = Data(index=0)") and lines[-1].strip().startswith("y = Output(store")


def test_impl_graph_dump_shows_cores_tiles_vectorized_axes_and_buffers():
    hint = cast_graph()
    impl = schedule(hint)
    text = impl.dump()
    assert "(ImplGraph)" in text and "z0z1z2z3(4) MERGED size s0*s1*s2*s3 from {z0, z1, z2, z3}" in text
    assert "z0z1z2z3t(6) TILE_IN size z0z1z2z3t_size" in text
    assert "for z0z1z2z3TB in range(Ceiling(Ceiling((s0*s1*s2*s3)/z0z1z2z3t_size)/z0z1z2z3Tb_size)):  # cores" in text
    assert "for z0z1z2z3Tb in range(z0z1z2z3Tb_size):  # tiles of a core" in text
    assert "vectorized{z0z1z2z3t:1}" in text and "buf_num 2, VECIN, 4*z0z1z2z3t_size B" in text
    assert "buf_num 2, VECOUT, 2*z0z1z2z3t_size B" in text
    nest = Nest.of(impl, hint)
    assert [impl.axes[a].name for a in nest.par] == ["z0", "z1", "z2", "z3"] and nest.red == []


# -- storage --------------------------------------------------------------------------------------------------------
def test_graph_def_round_trip_keeps_every_field():
    hint = broadcast_graph()
    impl = schedule(hint)
    for g in (hint, impl):
        gd = to_graph_def(g)
        back = from_graph_def(gd)
        assert to_graph_def(back).SerializeToString(deterministic=True) == gd.SerializeToString(deterministic=True)
        assert back.dump() == g.dump()
    assert impl.type == IMPL and hint.type == HINT


@pytest.mark.parametrize("mutate,field", [
    (lambda gd: gd.op[2].attr["sched.axis"].list.i.append(40), "sched.axis"),
    (lambda gd: gd.op[1].output_desc[0].attr["repeats"].list.s.__setitem__(0, b"s0-"), "repeats"),
    (lambda gd: gd.op[2].input.__setitem__(0, "nobody:0"), "input 0"),
    (lambda gd: gd.attr["axis_size"].list.s.__setitem__(0, b"q7"), "size"),
    (lambda gd: gd.op[1].attr["offset"].ClearField("s") or gd.op[1].attr["offset"].__setattr__("i", 3), "offset"),
    (lambda gd: gd.op[2].output_desc[0].__setattr__("dtype", 12), "dtype"),
])
def test_a_bad_graph_def_is_rejected_naming_node_and_field(mutate, field):
    gd = to_graph_def(broadcast_graph())
    mutate(gd)
    with pytest.raises(AscGraphError) as e:
        from_graph_def(gd)
    assert field in e.value.field, str(e.value)


def test_scalar_values_read_back_exactly():
    from atc_py.autofuse.build import scalar_text
    for v, dt in ((1.702, np.float16), (1e-5, np.float32), (-3, np.int32), (True, np.bool_)):
        x = np.asarray(v, dt)
        assert np.asarray(float(scalar_text(x)), dt) == x
