"""Decoders with a KV cache exported as users export them: `optimum-cli export onnx --task
text-generation-with-past` of tiny Hugging Face models with random weights, and the tokens transformers' own
greedy `generate()` gives for a fixed prompt.

    python -m tools.real_models.optimum_decoders [NAME ...]      # dev venv: torch, transformers, optimum-onnx

writes tests/data/llm/<name>.with_past.onnx and <name>.with_past.npz (`prompt` int64 [1, P], `tokens` int64
[1, N]: the framework's greedy continuation). NAME: llama (grouped KV heads, rotary, RMSNorm), gpt2."""
from __future__ import annotations

import pathlib
import subprocess
import sys
import tempfile

import numpy as np

OUT = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "llm"
PROMPT = [5, 17, 42, 3, 99]
NEW_TOKENS = 8


def _llama():
    from transformers import LlamaConfig, LlamaForCausalLM
    return LlamaForCausalLM(LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64))


def _gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel
    # weights wider than the default 0.02: logits whose argmax no rounding flips
    return GPT2LMHeadModel(GPT2Config(vocab_size=128, n_embd=32, n_layer=2, n_head=4, n_positions=64,
                                      initializer_range=0.3))


MODELS = {"llama": _llama, "gpt2": _gpt2}


def make(name: str) -> None:
    import torch
    torch.manual_seed(0)
    model = MODELS[name]().eval()
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = pathlib.Path(tmp) / "hf", pathlib.Path(tmp) / "onnx"
        model.save_pretrained(src)
        subprocess.run([sys.executable, "-m", "optimum.commands.optimum_cli", "export", "onnx", "--model", str(src),
                        "--task", "text-generation-with-past", str(dst)], check=True)
        onnx_bytes = (dst / "model.onnx").read_bytes()
    with torch.no_grad():
        ids = torch.tensor([PROMPT])
        out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW_TOKENS, do_sample=False,
                             pad_token_id=0)
    tokens = out[:, len(PROMPT):].numpy().astype(np.int64)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{name}.with_past.onnx").write_bytes(onnx_bytes)
    np.savez(OUT / f"{name}.with_past.npz", prompt=np.array([PROMPT], np.int64), tokens=tokens)
    print(f"{name}: {len(onnx_bytes)} bytes, tokens {tokens[0].tolist()}")


def main(argv: list[str]) -> None:
    for name in argv or list(MODELS):
        make(name)


if __name__ == "__main__":
    main(sys.argv[1:])
