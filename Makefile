# Everything a newcomer needs: `make demo` and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint bench schemas fixtures goldens sweep fuzz clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

COMPLETED   := fixtures/runs/120d7eae7ee0c9c181816e553722e2fe/events.jsonl
TAMPERED    := fixtures/runs/8686994841309902af40ce3e190711e7/events.jsonl
INTERRUPTED := fixtures/runs/9ae2021ae4d2af95ab864b9bac116475/events.jsonl
DEMO_OUT    := $(shell mktemp -d 2>/dev/null || echo /tmp/ract-demo)

demo: $(STAMP)
	@echo "== verify the bundled completed run (exit 0) =="
	$(BIN)/ract trace verify $(COMPLETED)
	@echo; echo "== verify the tampered run (exit 1 is the point) =="
	-$(BIN)/ract trace verify $(TAMPERED)
	@echo; echo "== verify every bundled run at once, as JSON (exit code: the lowest non-zero) =="
	-$(BIN)/ract trace verify fixtures/runs --format json 2>/dev/null | head -c 600; echo " ..."
	@echo; echo "== grep: every process.reaped across the runs =="
	-$(BIN)/ract trace grep --kind process.reaped --format table fixtures/runs
	@echo; echo "== project: the run report of the completed run (markdown) =="
	$(BIN)/ract trace project $(COMPLETED) --format markdown | head -30
	@echo; echo "== replay the interrupted run up to its 20th event =="
	-$(BIN)/ract trace replay $(INTERRUPTED) --until 20 --workspace $(DEMO_OUT)
	@echo; echo "== repair a copy of the interrupted run, then verify it =="
	mkdir -p $(DEMO_OUT)/9ae2021ae4d2af95ab864b9bac116475
	$(BIN)/ract trace repair $(INTERRUPTED) -o $(DEMO_OUT)/9ae2021ae4d2af95ab864b9bac116475/events.jsonl
	$(BIN)/ract trace verify $(DEMO_OUT)/9ae2021ae4d2af95ab864b9bac116475/events.jsonl

test: $(STAMP)
	$(BIN)/python -m pytest

# The lint and type gate (.ci/run runs it before the tests): ruff's rules and format, mypy --strict.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python bench/bench.py

schemas: $(STAMP)
	$(BIN)/python -m ract_cli.format.schema_export docs/schemas

fixtures: $(STAMP)
	$(BIN)/python scripts/gen_fixtures.py fixtures
	$(BIN)/python scripts/gen_journal_fixtures.py fixtures

goldens: $(STAMP)
	for s in scripts/gen_goldens_*.py; do $(BIN)/python $$s || exit 1; done

# Hardening (issue 9, docs/security.md): the long versions of what `make test` samples.
FUZZ_SECONDS ?= 300

sweep: $(STAMP)
	RACT_LONG=1 $(BIN)/python -m pytest -q -s -p no:cacheprovider tests/test_bitflip.py tests/test_crash_safety.py

fuzz: $(STAMP)
	RACT_LONG=1 HYPOTHESIS_PROFILE=fuzz $(BIN)/python -m pytest -q -s -p no:cacheprovider tests/test_fuzz.py \
		tests/test_json_corpus.py tests/test_terminal_safety.py tests/test_concurrent.py tests/test_paths.py
	$(BIN)/python scripts/fuzz.py --seconds $(FUZZ_SECONDS)

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info

