"""Helpers of the om-sweep tests: sweep files over the samples, running the command in-process."""
from __future__ import annotations

import json
import os
import pathlib
import traceback
from html.parser import HTMLParser

import yaml
from click.testing import CliRunner

from om_sweep.cli import main
from om_sweep.job import WALL_CLOCK_FIELDS
from om_sweep.table import read_results

from . import MODELS, PLUGIN, ROOT  # noqa: F401  (the sweep tests take them from here)


def sample_models() -> list[dict]:
    """Every sample (ONNX + TF), with its inputs and plugin: models/*.onnx and models/tf_lenet.pb."""
    entries = []
    for path in sorted(MODELS.glob("*.onnx")) + [MODELS / "tf_lenet.pb"]:
        entry = {"path": str(path)}
        inputs = MODELS / f"{path.stem}.inputs.npz"
        if inputs.exists():
            entry["inputs"] = str(inputs)
        if path.stem == "custom_op":
            entry["flags"] = {"op_plugin": str(PLUGIN)}
        entries.append(entry)
    return entries


def write_sweep(folder: pathlib.Path, doc: dict, name: str = "sweep.yaml") -> pathlib.Path:
    path = folder / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def om_sweep(*argv: str):
    """(exit code, stdout, stderr) of `om-sweep ARGV` run in-process (OM_SWEEP_DEBUG=1: print a crash)."""
    res = CliRunner().invoke(main, [str(a) for a in argv])
    if os.environ.get("OM_SWEEP_DEBUG") and res.exc_info and not isinstance(res.exception, SystemExit):
        traceback.print_exception(*res.exc_info)
    return res.exit_code, res.stdout, res.stderr


def table(out_dir: pathlib.Path, drop_wall_clock: bool = True) -> list[dict]:
    rows, _ = read_results(out_dir / "results.parquet")
    if drop_wall_clock:
        rows = [{k: v for k, v in r.items() if k not in WALL_CLOCK_FIELDS} for r in rows]
    return rows


class Elements(HTMLParser):
    """Every start tag with its attributes and the text inside it (enough to check a page's structure)."""

    def __init__(self, text: str):
        super().__init__()
        self.tags: list[tuple[str, dict, list]] = []
        self.open: list[list] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        entry = (tag, dict(attrs), [])
        self.tags.append(entry)
        if tag not in ("meta", "br"):
            self.open.append(entry[2])

    def handle_endtag(self, tag):
        if self.open and tag not in ("meta", "br"):
            self.open.pop()

    def handle_data(self, data):
        for texts in self.open:
            texts.append(data)

    def find(self, tag, cls=None):
        return [(a, "".join(t)) for tg, a, t in self.tags
                if tg == tag and (cls is None or cls in (a.get("class") or "").split())]


TINY_DECODER = {"architectures": ["Qwen2ForCausalLM"], "hidden_size": 64, "num_attention_heads": 4,
                "num_key_value_heads": 2, "intermediate_size": 128, "num_hidden_layers": 2, "vocab_size": 256,
                "max_position_embeddings": 256, "torch_dtype": "bfloat16"}
# with max_num_seqs 8: a table of seconds; 2 % of the device's memory still holds 9160 KV blocks, and vLLM's block
# pool of all 64 GiB (1.8 million blocks of this model) would take a second a job to set up
TINY_LIMITS = {"max_model_len": 256, "max_num_batched_tokens": 256, "gpu_memory_utilization": 0.02}


def tiny_decoder(folder: pathlib.Path) -> pathlib.Path:
    """A Hugging Face folder of a 2-layer Qwen2-shaped decoder (config.json only: dummy weights)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(TINY_DECODER))
    return folder
