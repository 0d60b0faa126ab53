"""om-run --generate: greedy decoding with KV-cache decoders exported in optimum / onnxruntime-genai naming
(tools/kv_decoder.py, random weights), against onnxruntime's greedy loop on the same model; TTFT / TPOT / tokens/s;
ATB's host caches switched by ATB's environment variables; clear errors for what a decode loop cannot do."""
import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from tests.helpers import MODELS
from tests.helpers.decoders import (
    FP32,
    NEW,
    PROMPT,
    SHAPE,
    compile_decoder,
    prompt_file,
    static_shape,
)
from tools.kv_decoder import build, greedy_reference


@pytest.fixture(scope="module")
def reference():
    """onnxruntime's greedy tokens for each layout (the same weights give the same tokens in both)."""
    out = {}
    for layout in ("growing", "static"):
        sess = ort.InferenceSession(build(SHAPE, layout, seed=3).SerializeToString(),
                                    providers=["CPUExecutionProvider"])
        out[layout] = greedy_reference(sess, layout, SHAPE, PROMPT, NEW)
    assert np.array_equal(out["growing"], out["static"])
    return out



@pytest.mark.parametrize("layout", ["growing", "static"])
def test_generate_gives_onnxruntimes_greedy_tokens_and_the_llm_metrics(layout, atc, om_run, tmp_path, reference):
    om, _ = compile_decoder(atc, tmp_path, layout)
    out_dir, summary, prof = tmp_path / "out", tmp_path / "s.json", tmp_path / "prof"
    code, out, err = om_run("--model", str(om), "--input", str(prompt_file(tmp_path)), "--generate", str(NEW),
                            "--output", str(out_dir), "--summary-json", str(summary), "--profile", str(prof))
    assert code == 0, out + err
    tokens = np.load(out_dir / "tokens.npy")
    assert tokens.dtype == np.int64 and tokens.shape == (1, NEW)
    np.testing.assert_array_equal(tokens, reference[layout])
    s = json.loads(summary.read_text())
    assert s["layout"] == layout and s["generated_tokens"] == NEW and s["prompt_tokens"] == PROMPT.shape[1]
    assert s["ttft_us"] > s["tpot_us"] > 0 and s["tokens_per_s"] > 0
    assert len(s["steps"]) == NEW and [st["token"] for st in s["steps"]] == list(tokens[0])
    assert all(st["e2e_us"] > 0 and st["device_us"] > 0 for st in s["steps"])
    assert s["steps"][0]["phase"] == "prefill" and {st["phase"] for st in s["steps"][1:]} == {"decode"}
    cache_len = SHAPE.max_cache if layout == "static" else PROMPT.shape[1] + NEW - 1
    assert s["kv_cache_bytes"] == 2 * SHAPE.layers * SHAPE.heads * cache_len * SHAPE.head_dim * 4
    # a static cache runs the prompt token by token: its prompt steps are counted into the first token's time
    assert s["executions"] == (PROMPT.shape[1] + NEW - 1 if layout == "static" else NEW)
    rows = (prof / "steps.csv").read_text().splitlines()
    assert rows[0].startswith("step,phase") and len(rows) == 1 + s["executions"]
    assert "TTFT" in out and "TPOT" in out and "tokens/s" in out


def test_the_static_cache_compiles_fully_static(atc, tmp_path):
    om, _ = compile_decoder(atc, tmp_path, "static")
    from om_run.load.loader import load_model
    from om_run.load.model import DeviceModel
    assert isinstance(load_model(str(om)), DeviceModel)


def test_atb_caches_hit_and_save_host_time_and_switch_off(atc, om_run, tmp_path, monkeypatch):
    om, _ = compile_decoder(atc, tmp_path, "growing")
    prompt = prompt_file(tmp_path)
    got = {}
    for name, env in (("default", {}), ("off", {"ATB_OPSRUNNER_SETUP_CACHE_ENABLE": "0",
                                                "ATB_OPSRUNNER_KERNEL_CACHE_TYPE": "0"})):
        for k in ("ATB_OPSRUNNER_SETUP_CACHE_ENABLE", "ATB_OPSRUNNER_KERNEL_CACHE_TYPE"):
            monkeypatch.delenv(k, raising=False)
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        summary = tmp_path / f"{name}.json"
        code, out, err = om_run("--model", str(om), "--input", str(prompt), "--generate", str(NEW),
                                "--summary-json", str(summary))
        assert code == 0, out + err
        got[name] = json.loads(summary.read_text())
    on, off = got["default"], got["off"]
    assert on["setup_cache_hits"] > 0 and on["kernel_cache_hits"] > 0
    assert off["setup_cache_hits"] == 0 and off["kernel_cache_hits"] == 0
    host = {k: np.median([st["host_us"] for st in v["steps"][1:]]) for k, v in got.items()}
    assert host["default"] < host["off"]
    assert on["atb_settings"]["ATB_OPSRUNNER_KERNEL_CACHE_TYPE"] == 3
    assert off["atb_settings"]["ATB_OPSRUNNER_SETUP_CACHE_ENABLE"] == 0


def test_atb_variables_are_read_as_atb_documents_them(monkeypatch):
    from atc_py.common.errors import AtcError
    from om_run.sim.atb import AtbHost, AtbSettings
    s = AtbSettings.from_env({"ATB_OPSRUNNER_KERNEL_CACHE_GLOABL_COUNT": "7", "ATB_LAUNCH_KERNEL_WITH_TILING": "0"})
    assert s.global_slots == 7 and s.launch_with_tiling == 0 and s.local_slots == 1   # ATB's typo is read too
    for bad in ({"ATB_OPSRUNNER_KERNEL_CACHE_TYPE": "4"}, {"ATB_OPSRUNNER_KERNEL_CACHE_LOCAL_COUNT": "0"},
                {"ATB_HOST_TILING_BUFFER_BLOCK_NUM": "64"}, {"ATB_RUNNER_POOL_SIZE": "many"}):
        with pytest.raises(AtcError) as e:
            AtbSettings.from_env(bad)
        assert e.value.code == "E30002" and next(iter(bad)) in str(e.value)
    # one local slot: the operation's last tiling only; the global cache of its type holds five
    host = AtbHost(AtbSettings(kernel_cache_type=1))
    assert [host.kernel_cache("a", "T", k) for k in (1, 1, 2, 1)] == [False, True, False, False]
    host = AtbHost(AtbSettings(kernel_cache_type=2))
    assert [host.kernel_cache("a", "T", k) for k in (1, 2, 1)] == [False, False, True]
    assert host.kernel_cache("b", "T", 2)          # the global cache is shared by operations of a type


def test_tiling_copies_wait_for_a_free_device_block(atc, om_run, tmp_path, monkeypatch):
    """ATB_LAUNCH_KERNEL_WITH_TILING=0: a copy per kernel costs host time on every step."""
    om, _ = compile_decoder(atc, tmp_path, "growing")
    prompt = prompt_file(tmp_path)
    host = {}
    for v in ("1", "0"):
        monkeypatch.setenv("ATB_LAUNCH_KERNEL_WITH_TILING", v)
        summary = tmp_path / f"t{v}.json"
        code, out, err = om_run("--model", str(om), "--input", str(prompt), "--generate", "3", "--summary-json",
                                str(summary))
        assert code == 0, out + err
        host[v] = json.loads(summary.read_text())["steps"][-1]["host_us"]
    assert host["0"] > host["1"]


def test_bad_generations_are_one_clear_error(atc, om_run, tmp_path):
    growing, _ = compile_decoder(atc, tmp_path, "growing")
    static, _ = compile_decoder(atc, tmp_path, "static")
    prompt = prompt_file(tmp_path)
    (tmp_path / "long").mkdir()
    long_prompt = prompt_file(tmp_path / "long", np.arange(20, dtype=np.int64)[None])
    plain = tmp_path / "plain.om"
    code, out, err = atc(f"--model={MODELS / 'small_cnn.onnx'}", "--framework=5", f"--output={tmp_path / 'plain'}",
                         *FP32)
    assert code == 0, out + err
    cases = [
        ((str(growing), "--input", str(prompt), "--generate", "0"), "at least 1"),
        ((str(plain), "--input", str(prompt), "--generate", "3"), "not a decoder with a KV cache"),
        ((str(static), "--input", str(long_prompt), "--generate", "2"), "more than the static cache's 16"),
        ((str(static), "--input", str(prompt), "--generate", "13"), "need 17 cache positions"),
        ((str(growing), "--input", str(long_prompt), "--generate", "2"), "input_ids"),   # the range is 1~16
        ((str(growing), "--generate", "2"), "give the prompt with --input"),
        ((str(growing), "--input", str(prompt), "--generate", "2", "--loop", "3"), "--loop does not apply"),
    ]
    for argv, message in cases:
        code, out, err = om_run("--model", *argv)
        assert code == 1, (argv, out, err)
        assert "E30002" in err and message in err and "Traceback" not in out + err, (argv, err)


def test_genai_config_names_the_inputs_and_outputs(atc, om_run, tmp_path, reference):
    """A model whose cache tensors have other names works when genai_config.json (beside the .om) names them."""
    model = build(SHAPE, "static", seed=3)
    rename = {f"past_key_values.{k}.{io}": f"cache_in_{io}_{k}" for k in range(SHAPE.layers) for io in ("key", "value")}
    rename.update({f"present.{k}.{io}": f"cache_out_{io}_{k}" for k in range(SHAPE.layers) for io in ("key", "value")})
    for vi in list(model.graph.input) + list(model.graph.output):
        vi.name = rename.get(vi.name, vi.name)
    for node in model.graph.node:
        node.input[:] = [rename.get(n, n) for n in node.input]
        node.output[:] = [rename.get(n, n) for n in node.output]
    src = tmp_path / "renamed.onnx"
    onnx.save_model(model, src)
    shape = static_shape().replace("past_key_values.", "cache_in_")
    for k in range(SHAPE.layers):
        for io in ("key", "value"):
            shape = shape.replace(f"cache_in_{k}.{io}", f"cache_in_{io}_{k}")
    out_dir = tmp_path / "om"
    out_dir.mkdir()
    code, out, err = atc(f"--model={src}", "--framework=5", f"--output={out_dir / 'renamed'}", *FP32,
                         f"--input_shape={shape}")
    assert code == 0, out + err
    om = out_dir / "renamed.om"
    code, out, err = om_run("--model", str(om), "--input", str(prompt_file(tmp_path)), "--generate", "2")
    assert code == 1 and "not a decoder with a KV cache" in err
    (out_dir / "genai_config.json").write_text(json.dumps({"model": {"decoder": {
        "inputs": {"input_ids": "input_ids", "position_ids": "position_ids", "cache_position": "cache_position",
                   "past_key_names": "cache_in_key_%d", "past_value_names": "cache_in_value_%d"},
        "outputs": {"logits": "logits", "present_key_names": "cache_out_key_%d",
                    "present_value_names": "cache_out_value_%d"}}}}))
    code, out, err = om_run("--model", str(om), "--input", str(prompt_file(tmp_path)), "--generate", str(NEW),
                            "--output", str(tmp_path / "o"))
    assert code == 0, out + err
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "tokens.npy"), reference["static"])


def test_static_cache_attention_sinks_as_incre_flash_attention(atc, om_run, tmp_path, reference):
    """--tiling_schedule_optimize=1: the decode attention over the static cache becomes IncreFlashAttention with the
    lengths (cache_position + 1) as device data; its tiling sinks (PREPROCESS_KERNEL + UPDATE); the same tokens."""
    from atc_py.om import task_types as tt
    from om_run.load.loader import load_model
    om, _ = compile_decoder(atc, tmp_path, "static", extra=("--tiling_schedule_optimize=1",))
    model = load_model(str(om))
    kinds = [t.type for t in model.tasks]
    assert kinds.count(tt.PREPROCESS_KERNEL) == SHAPE.layers and kinds.count(tt.UPDATE) == SHAPE.layers
    names = {op.type for op in model.ops.values()}
    assert "IncreFlashAttention" in names and "SoftmaxV2" not in names
    code, out, err = om_run("--model", str(om), "--input", str(prompt_file(tmp_path)), "--generate", str(NEW),
                            "--output", str(tmp_path / "o"))
    assert code == 0, out + err
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "tokens.npy"), reference["static"])
    (tmp_path / "plain").mkdir()
    plain, _ = compile_decoder(atc, tmp_path / "plain", "static")
    assert "IncreFlashAttention" not in {op.type for op in load_model(str(plain)).ops.values()}


def test_the_default_fp16_build_sinks_the_static_cache_attention_too():
    """An fp16 build saturates the exporter's float32-lowest mask value to -65504 (fp16-safe masks): still "not
    attended", so the attention still becomes IncreFlashAttention."""
    import atc_py
    shape = ";".join(["input_ids:1,1", "position_ids:1,1", "cache_position:1"] +
                     [f"past_key_values.{k}.{io}:1,{SHAPE.heads},{SHAPE.max_cache},{SHAPE.head_dim}"
                      for k in range(SHAPE.layers) for io in ("key", "value")])
    res = atc_py.build(build(SHAPE, "static", seed=0), {"ge.socVersion": "Ascend910B1", "input_shape": shape,
                                                        "ge.tiling_schedule_optimize": "1"})
    assert res.summary["static_cache_attention"] == SHAPE.layers
    assert sum(n.op_type == "IncreFlashAttention" for n in res.graph.nodes) == SHAPE.layers


def test_a_mask_that_is_not_a_length_mask_is_left_alone(atc, tmp_path):
    """A mask of -1 (a bias, not "not attended") is not a prefix of filled positions: no IncreFlashAttention."""
    from onnx import numpy_helper

    from om_run.load.loader import load_model
    model = build(SHAPE, "static", seed=3)
    for k, init in enumerate(model.graph.initializer):
        if init.name == "mask_min":
            model.graph.initializer[k].CopyFrom(numpy_helper.from_array(np.array(-1.0, np.float32), "mask_min"))
    om, _ = compile_decoder(atc, tmp_path, "static", model=model, extra=("--tiling_schedule_optimize=1",))
    assert "IncreFlashAttention" not in {op.type for op in load_model(str(om)).ops.values()}


LLM_DATA = MODELS.parent / "tests" / "data" / "llm"


def ort_greedy(path, prompt: np.ndarray, new: int) -> np.ndarray:
    """onnxruntime's greedy loop over an optimum text-generation-with-past export (shapes from the session)."""
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    specs = {i.name: i for i in sess.get_inputs()}
    past = {n: np.zeros([1, s.shape[1], 0, s.shape[3]], np.float32) for n, s in specs.items()
            if n.startswith("past_key_values.")}
    ids, pos, out = prompt, 0, []
    while len(out) < new:
        s = ids.shape[1]
        feeds = {"input_ids": ids, "attention_mask": np.ones((1, pos + s), np.int64),
                 "position_ids": np.arange(pos, pos + s, dtype=np.int64)[None], **past}
        res = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, {k: feeds[k] for k in specs})))
        past = {n: res[n.replace("past_key_values", "present")] for n in past}
        pos += s
        out.append(int(np.argmax(res["logits"][0, -1])))
        ids = np.array([[out[-1]]], np.int64)
    return np.array([out], np.int64)


@pytest.mark.parametrize("name", ["llama", "gpt2"])
def test_optimum_cli_exports_decode_to_the_frameworks_tokens(name, atc, om_run, tmp_path):
    """Tiny LLaMA (grouped KV heads, rotary) and GPT-2 exported with `optimum-cli export onnx --task
    text-generation-with-past` (tools/real_models/optimum_decoders.py): compiled with a shape range whose past starts
    at 0, they decode to transformers' own greedy tokens, as onnxruntime's greedy loop does."""
    src = LLM_DATA / f"{name}.with_past.onnx"
    ref = np.load(LLM_DATA / f"{name}.with_past.npz")
    sess_inputs = ort.InferenceSession(str(src), providers=["CPUExecutionProvider"]).get_inputs()
    parts = []
    for i in sess_inputs:
        if i.name.startswith("past_key_values."):
            parts.append(f"{i.name}:[1,{i.shape[1]},0~32,{i.shape[3]}]")
        else:
            parts.append(f"{i.name}:[1,1~32]")
    code, out, err = atc(f"--model={src}", "--framework=5", f"--output={tmp_path / name}", *FP32,
                         f"--input_shape_range={';'.join(parts)}")
    assert code == 0, out + err
    prompt = prompt_file(tmp_path, ref["prompt"])
    new = ref["tokens"].shape[1]
    code, out, err = om_run("--model", str(tmp_path / f"{name}.om"), "--input", str(prompt), "--generate", str(new),
                            "--output", str(tmp_path / "o"))
    assert code == 0, out + err
    got = np.load(tmp_path / "o" / "tokens.npy")
    np.testing.assert_array_equal(got, ref["tokens"])
    np.testing.assert_array_equal(got, ort_greedy(src, ref["prompt"], new))
