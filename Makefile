# Everything a newcomer needs: `make demo` and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint bench schemas fixtures goldens sweep fuzz clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip 'setuptools>=77'  # (77: setup.py build_ext, as make fuzz-native runs it, reads the SPDX license)
	$(BIN)/python -m pip install -q -e '.[test]'
	@# bytecode now: where PYTHONDONTWRITEBYTECODE is set, every ract call would compile its modules again
	$(BIN)/python -m compileall -q ract_cli >/dev/null
	touch $(STAMP)

COMPLETED   := fixtures/runs/120d7eae7ee0c9c181816e553722e2fe/events.jsonl
TAMPERED    := fixtures/runs/8686994841309902af40ce3e190711e7/events.jsonl
INTERRUPTED := fixtures/runs/9ae2021ae4d2af95ab864b9bac116475/events.jsonl
# demo: the replay workspace and the repaired copy go to a temporary directory made by the recipe
# itself (and removed when it ends), never at parse time; `make demo DEMO_OUT=dir` keeps them in dir.
# One shell for the whole recipe; `|| true` marks the steps whose non-zero exit is the point.
demo: $(STAMP)
	@set -e; run() { echo "$$*"; "$$@"; }; \
	out="$(DEMO_OUT)"; \
	if [ -z "$$out" ]; then out=$$(mktemp -d); trap 'rm -rf "$$out"' EXIT; else mkdir -p "$$out"; fi; \
	echo "== verify the bundled completed run (exit 0) =="; \
	run $(BIN)/ract trace verify $(COMPLETED); \
	echo; echo "== verify the tampered run (exit 1 is the point) =="; \
	run $(BIN)/ract trace verify $(TAMPERED) || true; \
	echo; echo "== verify every bundled run at once, as JSON (exit code: the lowest non-zero) =="; \
	{ $(BIN)/ract trace verify fixtures/runs --format json 2>/dev/null || true; } | head -c 600; echo " ..."; \
	echo; echo "== grep: every process.reaped across the runs =="; \
	run $(BIN)/ract trace grep --kind process.reaped --format table fixtures/runs || true; \
	echo; echo "== project: the run report of the completed run (markdown) =="; \
	$(BIN)/ract trace project $(COMPLETED) --format markdown | head -30; \
	echo; echo "== replay the interrupted run up to its 20th event =="; \
	run $(BIN)/ract trace replay $(INTERRUPTED) --until 20 --workspace "$$out" || true; \
	echo; echo "== repair a copy of the interrupted run, then verify it =="; \
	run mkdir -p "$$out/9ae2021ae4d2af95ab864b9bac116475"; \
	run $(BIN)/ract trace repair $(INTERRUPTED) -o "$$out/9ae2021ae4d2af95ab864b9bac116475/events.jsonl"; \
	run $(BIN)/ract trace verify "$$out/9ae2021ae4d2af95ab864b9bac116475/events.jsonl"

# The whole suite with the default core (native when built), then the differential and SPEC checks again
# with the pure-Python core (SPEC §11: both cores give the same verdicts).
PYTHON_CORE_TESTS := tests/spec tests/test_parallel.py tests/test_fast_path.py tests/test_json_corpus.py tests/test_bitflip.py \
	tests/test_reader.py tests/test_verify_cli.py tests/test_native_core.py

test: $(STAMP)
	@start=$$(date +%s); \
	echo "make test: the whole suite, then the SPEC and differential checks with RACT_CORE=python" \
	  "(about 14-18 minutes on 2 cores)"; \
	$(BIN)/python -m pytest && \
	RACT_CORE=python $(BIN)/python -m pytest -q -p no:cacheprovider $(PYTHON_CORE_TESTS); \
	status=$$?; echo "make test: $$(( $$(date +%s) - start )) s (exit $$status)"; exit $$status

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

# The native core under AddressSanitizer and UBSan (issue 14): a sanitized build in a temporary
# directory (the build in the tree is left alone); against it, tests/test_native_core.py, then the
# mutation fuzzer with the differential oracle (scripts/fuzz_native.py) for FUZZ_SECONDS, 60 unless
# given (make fuzz-native FUZZ_SECONDS=600). Then the same under ThreadSanitizer, for 20 s, built with
# SHARE_SPINS=0 (no spinning: each wait for the other thread sleeps, or stages its chunk again) and
# RACT_SHA_EVP (SHA-256 through EVP, the core's fallback where OpenSSL lacks SHA256_*: tested here).
# Reproducers land in tests/data/native-fuzz/crashes/, which tests/test_native_core.py replays.
NATIVE_FUZZ_SECONDS = $(if $(filter file,$(origin FUZZ_SECONDS)),60,$(FUZZ_SECONDS))
SAN_FLAGS           := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g -O1

.PHONY: fuzz-native
fuzz-native: $(STAMP)
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	echo "== sanitized build of ract_cli._core in $$tmp ==" && \
	CC=gcc CFLAGS="$(SAN_FLAGS) -Werror" LDFLAGS="$(SAN_FLAGS)" $(BIN)/python setup.py -q build_ext \
		--build-lib "$$tmp/lib" --build-temp "$$tmp/temp" && \
	core=$$(ls "$$tmp"/lib/ract_cli/_core*.so 2>/dev/null) && test -n "$$core" || \
		{ echo "fuzz-native: the sanitized build failed (setup.py treats the extension as optional)"; exit 2; }; \
	LD_PRELOAD="$$(gcc -print-file-name=libasan.so)" PYTHONMALLOC=malloc \
	ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 \
		$(BIN)/python scripts/fuzz_native.py --tests --seconds $(NATIVE_FUZZ_SECONDS) --core "$$core" && \
	echo "== ThreadSanitizer build (check_block's helper thread): the tests and 20 s of fuzzing ==" && \
	CC=gcc CFLAGS="-fsanitize=thread -g -O1 -Werror -DSHARE_SPINS=0 -DRACT_SHA_EVP" LDFLAGS="-fsanitize=thread" $(BIN)/python setup.py -q build_ext \
		--build-lib "$$tmp/tsan" --build-temp "$$tmp/tsan-temp" && \
	core=$$(ls "$$tmp"/tsan/ract_cli/_core*.so 2>/dev/null) && test -n "$$core" || \
		{ echo "fuzz-native: the ThreadSanitizer build failed"; exit 2; }; \
	LD_PRELOAD="$$(gcc -print-file-name=libtsan.so)" TSAN_OPTIONS="halt_on_error=1 report_signal_unsafe=0" \
		$(BIN)/python scripts/fuzz_native.py --tests --seconds 20 --core "$$core"

# Spark reads an export as it is (issue 16, docs/fleet.md): pyspark in local mode reads the three tables of an
# export of fixtures/runs and answers the Spark SQL recipes of docs/fleet.md as `ract trace sql` answers the
# DuckDB ones. Not part of `make test`: needs Java 17+, and pyspark (installed into the venv if missing, ~490 MB).
.PHONY: spark-check
spark-check: $(STAMP)
	@$(BIN)/python -c "import pyspark" 2>/dev/null || $(BIN)/python -m pip install -q pyspark
	$(BIN)/python scripts/spark_check.py
