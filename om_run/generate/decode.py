"""`om-run --generate N`: greedy decoding with a KV-cache decoder on the simulated device, and what it costs per token.

The decoder is recognised by the names exporters give it (optimum's `text-generation-with-past`, onnxruntime-genai):
`input_ids`, optional `attention_mask` / `position_ids` / `cache_position`, `past_key_values.{i}.key|value` in and
`logits`, `present.{i}.key|value` out; a `genai_config.json` beside the .om (onnxruntime-genai's format) may name
them instead. Two cache layouts:
  * growing — the past's length dim is dynamic (--input_shape_range, 0 at prefill) and each present is one step
    longer: the prompt runs as one prefill step, then one token per step;
  * static — the past holds the cache's full length and the new keys/values are written at `cache_position`: every
    shape is static, the model takes one token per step, so the prompt runs token by token.
Each step feeds the last step's `present.*` back as `past_key_values.*` and advances positions and the mask; the
next token is the argmax of the last row of `logits`. The KV cache stays in device memory between steps, as an
LLM server keeps it (ATB, MindIE, onnxruntime-genai's buffer sharing): only the token ids, positions and mask are
copied to the device and only the logits back.

Metrics as MindIE / msModeling report them: TTFT (time to the first token: every step up to the one that gives
it), TPOT (median time per output token after the first), tokens/s (tokens over the whole generation's time).
"""
from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from statistics import median

import numpy as np

from atc_py.common.errors import AtcError

from ..load.model import describe, shape_fits

GENAI_CONFIG = "genai_config.json"
MAX_CONFIG_BYTES = 1 << 20
MAX_LAYERS = 4096


def _bad(reason: str) -> AtcError:
    return AtcError("E30002", reason=f"--generate: {reason}")


@dataclass(frozen=True)
class DecoderIO:
    """Which of the model's inputs and outputs play which part in a decode loop."""
    input_ids: str
    logits: str
    past: tuple[tuple[str, str], ...]        # per layer: (key, value) input names
    present: tuple[tuple[str, str], ...]     # per layer: (key, value) output names
    attention_mask: str | None = None
    position_ids: str | None = None
    cache_position: str | None = None


def _config_names(path: str) -> dict | None:
    """The decoder's input/output names from onnxruntime-genai's genai_config.json beside the .om (None: none)."""
    cfg = os.path.join(os.path.dirname(os.path.abspath(path)), GENAI_CONFIG)
    try:
        st = os.stat(cfg)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_CONFIG_BYTES:
        raise _bad(f"{cfg} is not a regular file of at most {MAX_CONFIG_BYTES} bytes")
    try:
        with open(cfg, "rb") as f:
            data = json.loads(f.read(MAX_CONFIG_BYTES))
        dec = data["model"]["decoder"]
        ins, outs = dec.get("inputs", {}), dec.get("outputs", {})
        names = {**{f"in.{k}": v for k, v in ins.items()}, **{f"out.{k}": v for k, v in outs.items()}}
    except (ValueError, KeyError, TypeError, AttributeError):
        raise _bad(f"{cfg} is not onnxruntime-genai's format (model.decoder.inputs / outputs)") from None
    if not all(isinstance(v, str) and len(v) < 256 for v in names.values()):
        raise _bad(f"{cfg}: every input/output name must be a string")
    return names


def _layer_names(pattern: str, names: set[str]) -> list[str]:
    """Names pattern % i for i = 0, 1, ... while the model has them (genai's `past_key_values.%d.key`)."""
    out = []
    for i in range(MAX_LAYERS):
        try:
            name = pattern % i
        except (TypeError, ValueError):
            raise _bad(f"name pattern {pattern!r} does not take a layer number") from None
        if name not in names:
            break
        out.append(name)
    return out


def decoder_io(model, om_path: str) -> DecoderIO:
    """The decode roles of `model`'s inputs and outputs (genai_config.json beside the .om, else optimum's names)."""
    ins = {io.name for io in model.inputs}
    outs = {io.name for io in model.outputs}
    cfg = _config_names(om_path) or {}

    def name(key: str, default: str, pool: set[str]) -> str | None:
        n = cfg.get(key, default)
        return n if n in pool else None
    pk, pv = cfg.get("in.past_key_names", "past_key_values.%d.key"), cfg.get("in.past_value_names",
                                                                                "past_key_values.%d.value")
    ok, ov = cfg.get("out.present_key_names", "present.%d.key"), cfg.get("out.present_value_names",
                                                                         "present.%d.value")
    past_k, past_v = _layer_names(pk, ins), _layer_names(pv, ins)
    pres_k, pres_v = _layer_names(ok, outs), _layer_names(ov, outs)
    ids, logits = name("in.input_ids", "input_ids", ins), name("out.logits", "logits", outs)
    missing = [what for what, v in (("an input_ids input", ids), ("a logits output", logits),
                                    ("past_key_values inputs", past_k), ("present outputs", pres_k)) if not v]
    if missing:
        raise _bad(f"the model is not a decoder with a KV cache: it has no {', no '.join(missing)} (inputs "
                   f"{sorted(ins)}, outputs {sorted(outs)}; name them in {GENAI_CONFIG} beside the .om)")
    if not (len(past_k) == len(past_v) == len(pres_k) == len(pres_v)):
        raise _bad(f"the KV cache is not one key and one value per layer in and out: {len(past_k)} past keys, "
                   f"{len(past_v)} past values, {len(pres_k)} present keys, {len(pres_v)} present values")
    return DecoderIO(ids, logits, tuple(zip(past_k, past_v)), tuple(zip(pres_k, pres_v)),
                     name("in.attention_mask", "attention_mask", ins), name("in.position_ids", "position_ids", ins),
                     name("in.cache_position", "cache_position", ins))


@dataclass
class Step:
    phase: str                 # "prefill" or "decode"
    tokens_in: int             # tokens this step feeds
    token: int | None          # the token it produced (None: a prompt step of a static cache)
    e2e_ns: int
    host_ns: int
    device_ns: int
    stats: object = None       # the step's LoopStats (profile output)


@dataclass
class Generation:
    layout: str
    prompt_tokens: int
    tokens: list[int] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    kv_cache_bytes: int = 0

    def summary(self) -> dict:
        """The figures MindIE / msModeling report, in microseconds; one `steps` entry per generated token (a static
        cache's prompt steps are counted into the first token's)."""
        per_token, pending = [], [0, 0, 0]
        for s in self.steps:
            pending = [pending[0] + s.e2e_ns, pending[1] + s.host_ns, pending[2] + s.device_ns]
            if s.token is not None:
                per_token.append((s.phase, s.token, *pending))
                pending = [0, 0, 0]
        total = sum(p[2] for p in per_token)
        later = [p[2] for p in per_token[1:]]
        return {"layout": self.layout, "prompt_tokens": self.prompt_tokens, "generated_tokens": len(self.tokens),
                "ttft_us": per_token[0][2] / 1e3 if per_token else 0.0,
                "tpot_us": median(later) / 1e3 if later else 0.0,
                "tokens_per_s": len(per_token) / (total / 1e9) if total else 0.0,
                "total_us": total / 1e3, "kv_cache_bytes": self.kv_cache_bytes, "executions": len(self.steps),
                "steps": [{"token": tok, "phase": phase, "e2e_us": e / 1e3, "host_us": h / 1e3, "device_us": d / 1e3}
                          for phase, tok, e, h, d in per_token]}


class Decoder:
    """A decode loop over one loaded model: the feeds of each step, from the prompt, the tokens so far and the cache."""

    def __init__(self, user_model, roles: DecoderIO):
        self.model, self.io = user_model, roles
        self.by_name = {io.name: io for io in user_model.inputs}
        self.out_index = {io.name: k for k, io in enumerate(user_model.outputs)}
        past = self.by_name[roles.past[0][0]]
        self.static = roles.cache_position is not None or past.desc.shape[-2] >= 0
        self.layout = "static" if self.static else "growing"
        self.max_cache = past.desc.shape[-2] if self.static else None
        ids_dims = self.by_name[roles.input_ids].desc.shape
        if len(ids_dims) != 2:
            raise _bad(f"input_ids is {describe(self.by_name[roles.input_ids])}; a decoder takes [batch, sequence]")
        if self.static and ids_dims[1] != 1:
            raise _bad(f"the static-cache model takes {ids_dims[1]} tokens a step (input_ids "
                       f"{describe(self.by_name[roles.input_ids])}); --generate feeds a static cache one token a step")

    def _dtype(self, name: str):
        return np.dtype(self.by_name[name].desc.dtype)

    def empty_cache(self) -> dict[str, np.ndarray]:
        cache = {}
        for pair in self.io.past:
            for name in pair:
                io = self.by_name[name]
                dims = list(io.desc.shape)
                if not self.static:
                    dims[-2] = 0
                if len(dims) != 4 or any(d < 0 for d in dims):
                    raise _bad(f"past input '{name}' is {describe(io)}: --generate needs [batch, heads, length, "
                               "head_dim] with only the length dynamic")
                cache[name] = np.zeros(dims, self._dtype(name))
        return cache

    def feeds(self, ids: list[int], pos: int, cache: dict[str, np.ndarray]) -> list[np.ndarray]:
        """The model's inputs, in order, for the tokens `ids` at positions pos, pos + 1, ..."""
        s = len(ids)
        f = dict(cache)
        f[self.io.input_ids] = np.array([ids], self._dtype(self.io.input_ids))
        if self.io.position_ids:
            f[self.io.position_ids] = np.arange(pos, pos + s)[None].astype(self._dtype(self.io.position_ids))
        if self.io.cache_position:
            f[self.io.cache_position] = np.arange(pos, pos + s).astype(self._dtype(self.io.cache_position))
        if self.io.attention_mask:
            width = self.max_cache if self.static else pos + s
            f[self.io.attention_mask] = (np.arange(width) < pos + s)[None].astype(self._dtype(self.io.attention_mask))
        missing = [io.name for io in self.model.inputs if io.name not in f]
        if missing:
            raise _bad(f"the decoder has inputs a decode loop cannot fill: {missing}")
        return [f[io.name] for io in self.model.inputs]

    def check_lengths(self, prompt: int, new: int) -> None:
        """Refuse up front a generation the model's shapes cannot hold (not at its tenth step)."""
        last = prompt + new - 1          # positions fed: the prompt and every generated token but the last
        if self.static:
            if prompt > self.max_cache:
                raise _bad(f"the prompt has {prompt} tokens, more than the static cache's {self.max_cache} positions")
            if last > self.max_cache:
                raise _bad(f"a prompt of {prompt} tokens and {new} new ones need {last} cache positions; the static "
                           f"cache has {self.max_cache}")
            return
        cache = self.empty_cache()
        first = self.feeds([0] * prompt, 0, cache)                        # the prefill step's shapes
        final = self.feeds([0], last - 1, {n: np.zeros(a.shape[:2] + (last - 1,) + a.shape[3:], a.dtype)
                                            for n, a in cache.items()})   # the last step's shapes
        for when, arrays in (("the prompt's step", first), ("the last step", final)):
            for io, arr in zip(self.model.inputs, arrays):
                if not shape_fits(io, arr.shape):
                    raise _bad(f"a prompt of {prompt} tokens and {new} new ones give '{io.name}' the shape "
                               f"{list(arr.shape)} at {when}; the model takes {describe(io)}")

    def next_token(self, outputs: list[np.ndarray]) -> int:
        logits = outputs[self.out_index[self.io.logits]]
        if logits.ndim < 2 or logits.shape[0] != 1 or logits.size == 0:
            raise _bad(f"logits {list(logits.shape)} are not [1, sequence, vocab]")
        row = logits.reshape(-1, logits.shape[-1])[-1]
        return int(np.argmax(row))

    def cache_from(self, outputs: list[np.ndarray]) -> dict[str, np.ndarray]:
        cache = {}
        for (pk, pv), (ok, ov) in zip(self.io.past, self.io.present):
            cache[pk], cache[pv] = outputs[self.out_index[ok]], outputs[self.out_index[ov]]
        return cache

    def resident(self) -> tuple[set[str], set[str]]:
        """Inputs and outputs that stay in device memory between steps (no copy): the KV cache."""
        return ({n for pair in self.io.past for n in pair}, {n for pair in self.io.present for n in pair})


def read_prompt(path: str | None, roles: DecoderIO, arrays_by_name) -> list[int]:
    """The prompt's token ids from --input (`input_ids` [1, P])."""
    if path is None:
        raise _bad("give the prompt with --input prompt.npz (input_ids [1, P])")
    ids = arrays_by_name.get(roles.input_ids)
    if ids is None:
        raise _bad(f"{path} holds no '{roles.input_ids}' (arrays: {sorted(arrays_by_name)})")
    if ids.ndim != 2 or ids.shape[0] != 1 or ids.shape[1] < 1 or ids.dtype.kind not in "iu":
        raise _bad(f"'{roles.input_ids}' must be integer [1, P] with P >= 1, got {ids.dtype}{list(ids.shape)}")
    return [int(v) for v in ids[0]]


def generate(decoder: Decoder, prompt: list[int], new_tokens: int, run_step) -> Generation:
    """Greedy generation of `new_tokens` tokens (the prefill's counts); run_step(arrays) -> (outputs, LoopStats)
    runs one execution of the model."""
    if new_tokens < 1:
        raise _bad(f"--generate {new_tokens}: give the number of new tokens, at least 1")
    decoder.check_lengths(len(prompt), new_tokens)
    gen = Generation(decoder.layout, len(prompt))
    cache = decoder.empty_cache()
    pos = 0
    pending = [prompt] if not decoder.static else [[t] for t in prompt]
    while len(gen.tokens) < new_tokens:
        ids = pending.pop(0) if pending else [gen.tokens[-1]]
        phase = "prefill" if not gen.tokens else "decode"
        outputs, stats = run_step(decoder.feeds(ids, pos, cache))
        pos += len(ids)
        cache = decoder.cache_from(outputs)
        token = None if pending else decoder.next_token(outputs)
        if token is not None:
            gen.tokens.append(token)
        gen.steps.append(Step(phase, len(ids), token, stats.e2e_ns, stats.host_ns, stats.device_ns, stats))
    gen.kv_cache_bytes = sum(a.nbytes for a in cache.values())
    return gen

