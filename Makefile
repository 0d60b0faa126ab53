# Quick start: `make demo` (install + compile and run the samples) and `make test` (the whole suite).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
SOC ?= Ascend910B1
SAMPLES := $(basename $(notdir $(wildcard models/*.onnx)))

.PHONY: venv test demo bench golden proto clean

$(VENV)/.stamp: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

venv: $(VENV)/.stamp

test: venv
	$(PY) -m pytest

demo: venv
	@mkdir -p out
	@for m in $(SAMPLES); do \
	  echo "== $$m: atc-py --model models/$$m.onnx --framework=5 --output=out/$$m --soc_version=$(SOC)"; \
	  $(VENV)/bin/atc-py --model models/$$m.onnx --framework=5 --output=out/$$m --soc_version=$(SOC) || exit 1; \
	  echo "== $$m: om-run out/$$m.om"; \
	  $(VENV)/bin/om-run out/$$m.om || exit 1; \
	done

bench: venv
	$(PY) bench/bench.py

golden: venv
	$(PY) -m pytest tests/test_golden.py --update-golden

proto: venv
	$(PY) tools/gen_proto.py

clean:
	rm -rf out .pytest_cache
