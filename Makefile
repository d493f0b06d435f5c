# bufferlab: `make run` and `make test` set everything up on a fresh machine (virtualenv, pinned
# Python packages, the Rust engine built by maturin) and then do their job. Setup steps leave
# stamp files in .venv/, so a second `make` only rebuilds what changed.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := run

PYTHON ?= python3
VENV := .venv
BIN := $(abspath $(VENV))/bin
export VIRTUAL_ENV := $(abspath $(VENV))
export PATH := $(BIN):$(PATH)
# The same interpreter for maturin's and cargo's PyO3 builds, so they reuse each other's crates
# instead of rebuilding pyo3 whenever the other one ran.
export PYO3_PYTHON := $(BIN)/python

EXTENSION := python/bufferlab/_core.abi3.so
RUST_SOURCES := Cargo.toml $(wildcard Cargo.lock) $(shell find crates -name '*.rs' -o -name 'Cargo.toml')
# The compatible ranges of pyproject.toml (runtime and dev), quoted for the shell; `make lock`
# resolves them, requirements.lock pins the result and is what setup installs.
RANGES = $$($(BIN)/python -c 'import shlex, tomllib; p = tomllib.load(open("pyproject.toml", "rb"))["project"]; \
	print(" ".join(map(shlex.quote, p["dependencies"] + p["optional-dependencies"]["dev"])))')

.PHONY: run test test-slow fuzz bench bench-ns3 lint docs lock setup clean

## run: set up, then simulate the flagship example (the reference dumbbell)
run: setup
	$(BIN)/bufferlab run scenarios/dumbbell.toml

## test: set up, then run the Rust and the Python test suites (all but the minutes-long ones: make test-slow)
test: setup
	cargo test --profile release-test --workspace
	$(BIN)/python -m pytest -m "not very_slow"

## test-slow: the suites of minutes that `make test` leaves out (marked very_slow): the wheel built,
## installed into a fresh virtualenv without Rust, and its quickstart run
test-slow: setup
	$(BIN)/python -m pytest -m very_slow

## fuzz: the spec and command fuzzers with ten times the examples of `make test`, on fresh random seeds
fuzz: setup
	BUFFERLAB_FUZZ_EXAMPLES=10 $(BIN)/python -m pytest tests/cli/test_fuzz.py tests/cli/test_fuzz_commands.py -q

## bench: engine throughput on the reference dumbbell, the scale ladder (minutes), sweep throughput per executor,
## each reproduction's quick variant against its listed time
## (benchmarks/); where `make bench-ns3` has compiled ns-3's dumbbell, ns-3 is measured beside them
bench: setup
	$(BIN)/python benchmarks/bench_engine.py $(if $(wildcard $(NS3_BINARY)),--ns3-binary $(NS3_BINARY))
	$(BIN)/python benchmarks/bench_scale.py $(if $(wildcard $(NS3_BINARY)),--ns3-binary $(NS3_BINARY))
	$(BIN)/python benchmarks/bench_sweep.py
	$(BIN)/python benchmarks/bench_reproduce.py

## bench-ns3: bufferlab side by side with ns-3 3.44 (optional; needs `pip install ns3` in NS3_VENV,
## never needed by `make test`): compiles benchmarks/ns3/dumbbell.cc against the wheel's headers and
## libraries, then runs benchmarks/bench_ns3.py (BENCH_NS3_ARGS, e.g. --cases 10x100M --seconds 5)
NS3_VENV ?= .venv-ns3
# The wheel's C++ tree (include/ns3, lib64); found by path: importing ns3 would need its cppyy.
NS3_ROOT = $$($(NS3_VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"] + "/ns3")' 2>/dev/null || true)
NS3_BINARY := benchmarks/ns3/build/dumbbell
NS3_MODULES := core network internet point-to-point applications traffic-control
BENCH_NS3_ARGS ?=
bench-ns3: setup
	@root=$(NS3_ROOT); if [ -z "$$root" ] || [ ! -d "$$root/include/ns3" ]; then \
	  echo "bench-ns3: ns-3 is not installed. It is optional and never needed by make test. Install the"; \
	  echo "  PyPI release build (headers and libraries, without its cppyy Python bindings) into its own venv:"; \
	  echo "    python3 -m venv $(NS3_VENV) && $(NS3_VENV)/bin/pip install --no-deps ns3==3.44.post0"; \
	  echo "  then run make bench-ns3 again (NS3_VENV=... to use another venv)."; exit 1; fi; \
	mkdir -p $(dir $(NS3_BINARY)); \
	if [ ! -x $(NS3_BINARY) ] || [ benchmarks/ns3/dumbbell.cc -nt $(NS3_BINARY) ]; then \
	  echo "compiling $(NS3_BINARY) against $$root"; \
	  g++ -std=c++20 -O2 -DNS3_BUILD_PROFILE_RELEASE -DNS3_LOG_ENABLE -DNS3_ASSERT_ENABLE \
	    -I"$$root/include" benchmarks/ns3/dumbbell.cc -o $(NS3_BINARY) \
	    -L"$$root/lib64" -Wl,-rpath,"$$root/lib64" $(foreach m,$(NS3_MODULES),-lns3.44-$(m)); \
	fi
	$(BIN)/python benchmarks/bench_ns3.py --ns3-binary $(NS3_BINARY) $(BENCH_NS3_ARGS)

## lint: rustfmt, clippy (warnings are errors), ruff, mypy (strict, on the package and the benchmarks), import-linter
## (the package's layers import only downward: [tool.importlinter] in pyproject.toml), Python byte-compilation
lint: setup
	cargo fmt --all --check
	cargo clippy --release --workspace --all-targets -- -D warnings
	$(BIN)/ruff check python tests benchmarks
	$(BIN)/mypy
	PYTHONPATH=python $(BIN)/lint-imports
	$(BIN)/python -m compileall -q python tests

## docs: the documentation site (mkdocs.yml, docs/) into site/; its reference pages are written from the code
## at build time (docs/hooks/), and --strict fails the build on a broken link or a page missing from the nav
docs: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

## lock: re-resolve pyproject's ranges to their newest versions and pin them in requirements.lock
lock: | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade $(RANGES)
	$(BIN)/python -m pip freeze --exclude-editable > requirements.lock

## wheel: a wheel of the package with the compiled engine in dist/ (WHEEL_DIR=... elsewhere), which
## `pip install` installs without a Rust toolchain (abi3: one wheel for every CPython >= 3.11). Built
## after setup with the same cargo profile, target directory and flags as setup's extension, so
## cargo finds every crate up to date and only maturin's packaging runs: the profile-guided engine
## where setup built one (target/pgo/merged.profdata), else the plain release build.
.PHONY: wheel
WHEEL_DIR ?= dist
PGO_PROFILE := target/pgo/merged.profdata
wheel: setup
	@if [ "$(PGO)" != 0 ] && [ -f $(PGO_PROFILE) ]; then \
	  echo "wheel: the profile-guided engine (as setup built it, in target/pgo/optimized)"; \
	  export BUFFERLAB_PGO_FLAG=-Cprofile-use=$(abspath $(PGO_PROFILE)) RUSTC_WORKSPACE_WRAPPER=$(abspath tools/pgo-rustc) \
	    CARGO_TARGET_DIR=$(abspath target/pgo/optimized); \
	else \
	  echo "wheel: the plain release engine (as setup built it, in target/)"; \
	fi; \
	$(BIN)/maturin build --release --interpreter $(BIN)/python --out $(WHEEL_DIR)

setup: $(VENV)/.deps $(EXTENSION)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.deps: requirements.lock | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.lock
	touch $@

# maturin builds the engine and its binding (release profile) and installs the package in
# editable mode: Python sources are used in place, only Rust changes need this step again.
# tools/pgo-build makes it a profile-guided build (an instrumented build, a training run on the
# goldens and the reference dumbbell, the optimised build: docs/development/speed.md, "A
# profile-guided build"); PGO=0 builds plainly (one build, for iterating on the engine), as does a machine
# without an llvm-profdata of rustc's LLVM version. $(VENV)/.pgo holds the last PGO setting, so
# that switching it rebuilds.
export PGO ?= 1
$(EXTENSION): $(VENV)/.deps $(VENV)/.pgo $(RUST_SOURCES) pyproject.toml tools/pgo-build tools/pgo-rustc tools/pgo_train.py
	tools/pgo-build
	touch $@

# Rewritten only when the setting changed: an unchanged file leaves the extension up to date.
$(VENV)/.pgo: FORCE | $(BIN)/python
	@[ "$$(cat $@ 2>/dev/null)" = "PGO=$(PGO)" ] || echo "PGO=$(PGO)" > $@

FORCE:

clean:
	rm -rf $(VENV) $(EXTENSION)
