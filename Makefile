# Quick start: `make demo` (install + compile and run the samples) and `make test` (the whole suite).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
SOC ?= Ascend910B1

# Python writes its bytecode caches (an environment with PYTHONDONTWRITEBYTECODE set would make every subprocess
# the tests start compile numpy, onnx and our packages from source again: ~1.3 s a process on this machine)
unexport PYTHONDONTWRITEBYTECODE

.PHONY: venv lint test demo docs bench fidelity golden proto clean fuzz conformance llm-scale llm-decode serving-fidelity

# uv (from the package index, into the venv) installs the test extra's ~55 packages in parallel: ~20 s against pip's
# ~50 s on this machine; if uv cannot be had, pip does the same install
$(VENV)/.stamp: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	($(PY) -m pip install -q uv && $(PY) -m uv pip install -q --compile-bytecode --python $(PY) -e '.[test]') || \
		($(PY) -m pip install -q --upgrade pip && $(PY) -m pip install -q -e '.[test]')
	touch $@

venv: $(VENV)/.stamp

# the suite on every core (pytest-xdist; worksteal: an idle worker takes queued tests from a busy one, so the
# subprocess- and wait-heavy tests do not leave a core idle at the end); PYTEST_ARGS=... adds flags, e.g. PYTEST_ARGS='-n 0' runs it in one process
PYTEST_ARGS ?=
test: venv lint
	$(PY) -m pytest -n auto --dist worksteal $(PYTEST_ARGS)

# ruff with the rules in pyproject.toml (what the code's noqa marks assume)
lint: venv
	$(PY) -m ruff check .

demo: venv
	SOC=$(SOC) BIN=$(VENV)/bin bash tools/demo.sh

# the documentation site: regenerates docs/reference/ from the code (tools/gen_docs.py), then builds site/;
# any MkDocs warning fails the build
$(VENV)/.docs-stamp: $(VENV)/.stamp
	$(PY) -m pip install -q -e '.[docs]'
	touch $@

docs: $(VENV)/.docs-stamp
	$(PY) tools/gen_docs.py
	$(PY) -m mkdocs build --strict

# compile and run speed next to onnxruntime, the simulator's rate, memory plans, fidelity, fusion, and last the
# speed table (om-run / onnxruntime ratios, compile, threads, simulation rate, memory plans): docs/benchmarks.md;
# then the device formats' host cost (bench/format_overhead.py), --threads 2 vs 1 on ResNet-50 and ShuffleNet and the
# first execution vs the later ones (bench/threads_scaling.py), om-run's host heap against glibc's default
# (bench/host_heap.py);
# `make bench BENCH_ARGS=--quick` runs two light models only, for iterating
BENCH_ARGS ?=
bench: venv
	$(PY) bench/bench.py
	$(PY) -m bench.fidelity
	$(PY) -m bench.speed_table $(BENCH_ARGS)
	$(PY) -m bench.format_overhead
	$(PY) -m bench.threads_scaling $(BENCH_ARGS)
	$(PY) -m bench.host_heap
	$(PY) -m bench.llm_scale $(LLM_SCALE_ARGS)
	$(PY) -m bench.llm_decode

# converting an LLM-shaped model bigger than memory allows: atc-py's wall time and peak RSS next to `cp` of its
# data file (bench/llm_scale.py; 3 GB of weights by default, LLM_SCALE_ARGS="--preset 7b" for 13.5 GB)
LLM_SCALE_ARGS ?=
llm-scale: venv
	$(PY) -m bench.llm_scale $(LLM_SCALE_ARGS)

# TTFT / TPOT / tokens/s of a small decoder: KV-cache layouts x SoCs x tiling sink x ATB host caches (README table)
llm-decode: venv
	$(PY) -m bench.llm_decode --markdown

# simulated time against the roofline and every published anchor; rewrites the tables of docs/fidelity.md
fidelity: venv
	$(PY) -m bench.fidelity --docs

# LLM serving against published Ascend figures: vllm-ascend v0.7.3's Qwen2.5-7B run and LLaMA2-7B's
# weight-streaming floor on 310P3 / 910B1 (bench/serving_fidelity.py); rewrites the table of docs/serving-fidelity.md
serving-fidelity: venv
	$(PY) -m bench.serving_fidelity --docs

# the fuzz campaign: >= 10,000 mutated .om files, >= 1,000 malformed models, every bad flag, the om-sweep cases; totals in out/fuzz.json
fuzz: venv
	mkdir -p out
	OPENBLAS_NUM_THREADS=1 $(PY) -m tools.fuzz --om 12000 --models 3000 --flags --sweep --seed 1 --json out/fuzz.json

# conformance: every ONNX node case (atc-py + om-run next to onnxruntime) and the onnx package's data suites
conformance: venv
	$(PY) -m atc_conformance.node_cases --quiet
	$(PY) -m atc_conformance.node_cases --ort --quiet
	$(PY) -m atc_conformance.suites

golden: venv
	$(PY) -m pytest tests/atc_py/om/test_golden.py tests/atc_py/options/test_gears.py::test_golden_mode6_of_a_gear_model --update-golden

proto: venv
	$(PY) tools/gen_proto.py

clean:
	rm -rf out .pytest_cache site
