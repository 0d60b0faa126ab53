# Quick start: `make demo` (install + compile and run the samples) and `make test` (the whole suite).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
SOC ?= Ascend910B1

.PHONY: venv test demo bench fidelity golden proto clean fuzz conformance

$(VENV)/.stamp: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

venv: $(VENV)/.stamp

test: venv
	$(PY) -m pytest

demo: venv
	SOC=$(SOC) BIN=$(VENV)/bin bash tools/demo.sh

# issue 18's table (om-run / onnxruntime ratios, compile, threads, simulation rate, memory plans);
# `make bench BENCH_ARGS=--quick` runs two light models only, for iterating
BENCH_ARGS ?=
bench: venv
	$(PY) bench/bench.py
	$(PY) -m bench.fidelity
	$(PY) -m bench.speed_table $(BENCH_ARGS)

# issue 20: simulated time against the roofline and every published anchor; rewrites README.md's fidelity tables
fidelity: venv
	$(PY) -m bench.fidelity --readme

# issue 13: >= 10,000 mutated .om files, >= 1,000 malformed models, every bad flag; totals in out/fuzz.json
fuzz: venv
	mkdir -p out
	OPENBLAS_NUM_THREADS=1 $(PY) -m tools.fuzz --om 12000 --models 3000 --flags --seed 1 --json out/fuzz.json

# issue 14: every ONNX node case (atc-py + om-run next to onnxruntime) and the onnx package's data suites
conformance: venv
	$(PY) -m atc_py.conformance.node_cases --quiet
	$(PY) -m atc_py.conformance.node_cases --ort --quiet
	$(PY) -m atc_py.conformance.suites

golden: venv
	$(PY) -m pytest tests/test_golden.py --update-golden

proto: venv
	$(PY) tools/gen_proto.py

clean:
	rm -rf out .pytest_cache
