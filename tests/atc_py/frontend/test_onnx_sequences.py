"""ONNX sequences and optionals resolved at compile time: sequence model inputs and outputs as
one tensor per element (`s[k]`), SequenceMap expanded per element, a Loop carrying sequences unrolled when
imported (bounded), If branches giving sequences through a runtime condition, sequences captured by a
runtime loop body; everything checked against onnxruntime, and what cannot be resolved is an E-coded error
naming the node."""
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from atc_py.common.errors import AtcError
from atc_py.frontend.onnx.adapters import loop_unroll
from om_run.load.loader import load_model
from om_run.sim.host import Simulation
from tests.helpers import compile_om

OPSET = [h.make_opsetid("", 17)]
FLOAT_SEQ = h.make_sequence_type_proto(h.make_tensor_type_proto(T.FLOAT, None))


def _model(nodes, inputs, outputs, inits=()):
    return h.make_model(h.make_graph(nodes, "g", inputs, outputs, list(inits)), opset_imports=OPSET)


def _vi(name, dt, shape):
    return h.make_tensor_value_info(name, dt, shape)


def _seq(name):
    return h.make_value_info(name, FLOAT_SEQ)


def _shapes(**arrays) -> str:
    """--input_shape for named inputs; a list is a sequence input (`name[k]`)."""
    parts = []
    for name, x in arrays.items():
        items = [(f"{name}[{k}]", e) for k, e in enumerate(x)] if isinstance(x, list) else [(name, x)]
        parts += [f"{n}:{','.join(map(str, np.shape(e)))}" for n, e in items]
    return ";".join(parts)


def _compile(tmp_path, model, **arrays):
    path = tmp_path / "m.om"
    path.write_bytes(compile_om(model, input_shape=_shapes(**arrays)))
    return load_model(str(path))


def _run(m, **arrays):
    flat = [e for x in arrays.values() for e in (x if isinstance(x, list) else [x])]
    outs, stats = Simulation(m).run(flat)
    assert not stats.hazards
    return {io.name: o for io, o in zip(m.outputs, outs)}


def _ort(model, **feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def _rand(*shape, seed=0):
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape).astype(np.float32)


def test_sequence_inputs_and_outputs_are_one_tensor_per_element(tmp_path):
    """SequenceMap over elements of different shapes: the body is expanded per element; the model's inputs
    and outputs are the elements, named s[k] / y[k]."""
    body = h.make_graph([h.make_node("Mul", ["e", "e"], ["sq"]), h.make_node("Add", ["sq", "b"], ["o"])], "body",
                        [_vi("e", T.FLOAT, None), _vi("b", T.FLOAT, [1])], [_vi("o", T.FLOAT, None)])
    model = _model([h.make_node("SequenceMap", ["s", "b"], ["y"], body=body)],
                   [_seq("s"), _vi("b", T.FLOAT, [1])], [_seq("y")])
    s, b = [_rand(3), _rand(2, 5), _rand(4, 1, 2)], _rand(1)
    m = _compile(tmp_path, model, s=s, b=b)
    assert [io.name for io in m.inputs] == ["s[0]", "s[1]", "s[2]", "b"]
    got = _run(m, s=s, b=b)
    assert sorted(got) == ["y[0]", "y[1]", "y[2]"]
    for k, want in enumerate(_ort(model, s=s, b=b)[0]):
        np.testing.assert_allclose(got[f"y[{k}]"], want, rtol=1e-6)


def _insert_loop(trip_input: bool, with_scan: bool = False, trip: int = 3):
    """seq <- SequenceInsert(seq, x[:i+1] * w) per iteration (the sequence grows: the loop is unrolled), and
    optionally a scan output i * w."""
    nodes = [h.make_node("Identity", ["c_in"], ["c_out"]),
             h.make_node("Add", ["i", "one"], ["end"]),
             h.make_node("Unsqueeze", ["end", "zero"], ["end1"]),
             h.make_node("Slice", ["x", "zero", "end1"], ["part"]),
             h.make_node("Mul", ["part", "w"], ["scaled"]),
             h.make_node("SequenceInsert", ["s_in", "scaled"], ["s_out"])]
    outs = [_vi("c_out", T.BOOL, []), _seq("s_out")]
    if with_scan:
        nodes += [h.make_node("Cast", ["i"], ["fi"], to=T.FLOAT), h.make_node("Mul", ["fi", "w"], ["row"])]
        outs.append(_vi("row", T.FLOAT, [1]))
    body = h.make_graph(nodes, "body", [_vi("i", T.INT64, []), _vi("c_in", T.BOOL, []), _seq("s_in")], outs)
    inits = [h.make_tensor("one", T.INT64, [], [1]), h.make_tensor("zero", T.INT64, [1], [0]),
             h.make_tensor("c0", T.BOOL, [], [True])]
    inputs = [_vi("x", T.FLOAT, [5]), _vi("w", T.FLOAT, [1])]
    if trip_input:
        inputs.append(_vi("M", T.INT64, []))
    else:
        inits.append(h.make_tensor("M", T.INT64, [], [trip]))
    graph_outs = [_seq("y")] + ([_vi("rows", T.FLOAT, [trip, 1])] if with_scan else [])
    return _model([h.make_node("SequenceEmpty", [], ["s0"], dtype=T.FLOAT),
                   h.make_node("Loop", ["M", "c0", "s0"], ["y"] + (["rows"] if with_scan else []), body=body,
                               name="grow")],
                  inputs, graph_outs, inits)


def test_a_loop_carrying_a_sequence_is_unrolled_when_imported(tmp_path):
    model = _insert_loop(False, with_scan=True)
    x, w = _rand(5), _rand(1)
    m = _compile(tmp_path, model, x=x, w=w)
    assert not any(op.type == "While" for op in m.ops.values())
    got = _run(m, x=x, w=w)
    want_seq, want_rows = _ort(model, x=x, w=w)
    assert len(want_seq) == 3 and sorted(got) == ["rows", "y[0]", "y[1]", "y[2]"]
    for k, want in enumerate(want_seq):
        np.testing.assert_allclose(got[f"y[{k}]"], want, rtol=1e-6)
    np.testing.assert_allclose(got["rows"], want_rows, rtol=1e-6)


def test_a_loop_carrying_a_sequence_needs_its_trip_count_when_compiling(tmp_path):
    with pytest.raises(AtcError) as exc:
        _compile(tmp_path, _insert_loop(True), x=_rand(5), w=_rand(1), M=np.array(3))
    assert exc.value.code == "E14001" and "grow" in str(exc.value) and "trip count" in str(exc.value)


def test_unrolling_is_bounded(tmp_path, monkeypatch):
    """A huge trip count is refused at once; a condition that never turns false stops at the limit."""
    with pytest.raises(AtcError) as exc:
        _compile(tmp_path, _insert_loop(False, trip=10 ** 9), x=_rand(5), w=_rand(1))
    assert "MAX_IMPORT_UNROLL_ITERATIONS" in str(exc.value) and "grow" in str(exc.value)
    monkeypatch.setattr(loop_unroll, "MAX_IMPORT_UNROLL_ITERATIONS", 6)
    model = _insert_loop(False, trip=3)
    loop = model.graph.node[1]
    loop.input[0] = ""                          # no trip count: the (constant true) condition alone
    with pytest.raises(AtcError) as exc:
        _compile(tmp_path, model, x=_rand(5), w=_rand(1))
    assert "still holds after 6 iterations" in str(exc.value)


def _if_seq_model(else_len: int):
    """If(c) -> then: [x + 1, x * 2]; else: `else_len` elements of x - 1."""
    then = h.make_graph([h.make_node("Add", ["x", "one"], ["a"]), h.make_node("Mul", ["x", "two"], ["b"]),
                         h.make_node("SequenceConstruct", ["a", "b"], ["ts"])], "then", [], [_seq("ts")])
    els = h.make_graph([h.make_node("Sub", ["x", "one"], ["d"]),
                        h.make_node("SequenceConstruct", ["d"] * else_len, ["es"])], "else", [], [_seq("es")])
    inits = [h.make_tensor("one", T.FLOAT, [], [1.0]), h.make_tensor("two", T.FLOAT, [], [2.0])]
    return _model([h.make_node("If", ["c"], ["y"], then_branch=then, else_branch=els, name="pick")],
                  [_vi("x", T.FLOAT, [2, 3]), _vi("c", T.BOOL, [])], [_seq("y")], inits)


def test_if_branches_giving_sequences_with_a_runtime_condition(tmp_path):
    model = _if_seq_model(2)
    x = _rand(2, 3)
    m = _compile(tmp_path, model, x=x, c=np.array(True))
    assert any(op.type == "If" for op in m.ops.values())
    for c in (True, False):
        got = _run(m, x=x, c=np.array(c))
        for k, want in enumerate(_ort(model, x=x, c=np.array(c))[0]):
            np.testing.assert_allclose(got[f"y[{k}]"], want, rtol=1e-6)


def test_if_branches_giving_sequences_of_different_lengths(tmp_path):
    with pytest.raises(AtcError) as exc:
        _compile(tmp_path, _if_seq_model(3), x=_rand(2, 3), c=np.array(True))
    assert exc.value.code == "E14001" and "pick" in str(exc.value) and "a sequence of 2 against a sequence of 3" \
        in str(exc.value)


def test_a_runtime_loop_body_reads_an_outer_sequence(tmp_path):
    """The While's body captures the sequence's elements as tensors; its positions are constants."""
    body = h.make_graph([h.make_node("Identity", ["c_in"], ["c_out"]),
                         h.make_node("SequenceAt", ["s", "one"], ["e"]),
                         h.make_node("Add", ["v", "e"], ["v_out"])], "body",
                        [_vi("i", T.INT64, []), _vi("c_in", T.BOOL, []), _vi("v", T.FLOAT, [3])],
                        [_vi("c_out", T.BOOL, []), _vi("v_out", T.FLOAT, [3])])
    model = _model([h.make_node("Loop", ["M", "", "v0"], ["y"], body=body)],
                   [_seq("s"), _vi("v0", T.FLOAT, [3]), _vi("M", T.INT64, [])], [_vi("y", T.FLOAT, [3])],
                   [h.make_tensor("one", T.INT64, [], [1])])
    s, v0 = [_rand(2), _rand(3), _rand(4)], _rand(3)
    m = _compile(tmp_path, model, s=s, v0=v0, M=np.array(0))
    assert any(op.type == "While" for op in m.ops.values())
    for trip in (0, 4):
        got = _run(m, s=s, v0=v0, M=np.array(trip))
        np.testing.assert_allclose(got["y"], _ort(model, s=s, v0=v0, M=np.array(trip))[0], rtol=1e-6)


def test_sequence_input_shapes_must_be_given(tmp_path):
    model = _model([h.make_node("ConcatFromSequence", ["s"], ["y"], axis=0)], [_seq("s")],
                   [_vi("y", T.FLOAT, None)])
    with pytest.raises(AtcError) as exc:
        compile_om(model)
    assert exc.value.code == "E10001" and "s[0]:" in str(exc.value)
    with pytest.raises(AtcError) as exc:
        compile_om(model, input_shape="s[0]:2;s[2]:3")
    assert exc.value.code == "E10001" and "without gaps" in str(exc.value)
    with pytest.raises(AtcError) as exc:
        compile_om(model, input_shape="t[0]:2")
    assert exc.value.code == "E10016"


def test_an_absent_optional_input(tmp_path):
    """`o[]:` compiles an optional input absent: OptionalHasElement is the constant false, and the model has
    no input for it."""
    opt = h.make_value_info("o", h.make_optional_type_proto(h.make_tensor_type_proto(T.FLOAT, [2])))
    model = h.make_model(h.make_graph([h.make_node("OptionalHasElement", ["o"], ["y"])], "g", [opt],
                                      [_vi("y", T.BOOL, [])]), opset_imports=[h.make_opsetid("", 18)])
    for shapes, want in (("o[]:", False), ("o:2", True)):
        path = tmp_path / "o.om"
        path.write_bytes(compile_om(model, input_shape=shapes))
        m = load_model(str(path))
        assert len(m.inputs) == int(want)
        outs, _ = Simulation(m).run([np.ones(2, np.float32)] if want else [])
        assert bool(outs[0]) is want
    assert onnx.checker.check_model(model) is None


@pytest.mark.parametrize("pos", [0, 2, 3, -1, -3])
def test_sequence_insert_at_a_runtime_position_selects_on_the_device(tmp_path, pos):
    """SequenceInsert whose position is a model input, all elements of one shape: the length is known, each
    element of the result is selected on the device (every position, negative ones too, like onnxruntime)."""
    model = _model([h.make_node("SequenceInsert", ["s", "t", "p"], ["y"])],
                   [_seq("s"), _vi("t", T.FLOAT, [2, 3]), _vi("p", T.INT64, [])], [_seq("y")])
    s, t = [_rand(2, 3, seed=k) for k in range(3)], _rand(2, 3, seed=9)
    p = np.array(pos, np.int64)
    m = _compile(tmp_path, model, s=s, t=t, p=p)
    got = _run(m, s=s, t=t, p=p)
    want = _ort(model, s=s, t=t, p=p)[0]
    assert len(got) == len(want) == 4
    for k, w in enumerate(want):
        np.testing.assert_array_equal(got[f"y[{k}]"], w)


def test_sequence_insert_at_a_runtime_position_needs_one_element_shape(tmp_path):
    model = _model([h.make_node("SequenceInsert", ["s", "t", "p"], ["y"])],
                   [_seq("s"), _vi("t", T.FLOAT, [3]), _vi("p", T.INT64, [1])], [_seq("y")])
    with pytest.raises(AtcError) as exc:
        compile_om(model, input_shape="s[0]:4;s[1]:3;t:3;p:1")
    assert exc.value.code == "E14001" and "differ in shape" in str(exc.value)
