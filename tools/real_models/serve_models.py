"""Tiny Hugging Face decoders saved as a server loads them (config.json + model.safetensors, random weights), with
the greedy tokens transformers' own `generate()` gives for a batch of prompts of different lengths: the numerics
check of `om-run serve --load-format auto`.

    python -m tools.real_models.serve_models [NAME ...]      # dev venv: torch, transformers

writes tests/data/serve/<name>/{config.json, model.safetensors, expected.json} with expected.json holding
{"prompts": [[ids...], ...], "tokens": [[greedy ids...], ...]} (each prompt generated alone, no padding).
NAME: llama (grouped KV heads), qwen2 (q/k/v bias), qwen3 (q/k norm, explicit head_dim)."""
from __future__ import annotations

import json
import pathlib
import sys

OUT = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "serve"
PROMPTS = [[5, 17, 42, 3, 99, 7, 61, 12, 80, 33, 2], [9, 120, 14], [77, 4, 56, 23, 101, 8, 19],
           [31, 64, 2, 90, 45, 11, 70, 6, 27, 115, 52, 38, 99, 1, 84, 16, 43, 60, 29]]
NEW_TOKENS = 12
COMMON = dict(vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, max_position_embeddings=128, torch_dtype="float32")


def _llama():
    from transformers import LlamaConfig, LlamaForCausalLM
    return LlamaForCausalLM(LlamaConfig(**COMMON, initializer_range=0.2))


def _qwen2():
    from transformers import Qwen2Config, Qwen2ForCausalLM
    return Qwen2ForCausalLM(Qwen2Config(**COMMON, initializer_range=0.2))


def _qwen3():
    from transformers import Qwen3Config, Qwen3ForCausalLM
    return Qwen3ForCausalLM(Qwen3Config(**{**COMMON, "head_dim": 32}, initializer_range=0.2))


MODELS = {"llama": _llama, "qwen2": _qwen2, "qwen3": _qwen3}


def make(name: str) -> None:
    import torch
    torch.manual_seed(0)
    model = MODELS[name]().eval()
    if name == "qwen2":     # transformers initialises biases to zero: give q/k/v real ones
        with torch.no_grad():
            for layer in model.model.layers:
                for proj in (layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj):
                    proj.bias.normal_(0, 0.2)
    out = OUT / name
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    tokens = []
    with torch.no_grad():
        for p in PROMPTS:
            ids = torch.tensor([p])
            gen = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW_TOKENS,
                                 do_sample=False, pad_token_id=0, eos_token_id=None)
            tokens.append([int(t) for t in gen[0, len(p):]])
    (out / "expected.json").write_text(json.dumps({"prompts": PROMPTS, "tokens": tokens}) + "\n")
    for extra in ("generation_config.json",):
        (out / extra).unlink(missing_ok=True)
    print(f"wrote {out}: {tokens}")


def main(argv: list[str]) -> None:
    for name in argv or sorted(MODELS):
        make(name)


if __name__ == "__main__":
    main(sys.argv[1:])
