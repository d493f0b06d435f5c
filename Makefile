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
# The exact pins of pyproject.toml (runtime and dev), read by the venv's own Python.
PINS = $$($(BIN)/python -c 'import tomllib; p = tomllib.load(open("pyproject.toml", "rb"))["project"]; \
	print(" ".join(p["dependencies"] + p["optional-dependencies"]["dev"]))')

.PHONY: run test bench lint setup clean

## run: set up, then simulate the flagship example (the reference dumbbell)
run: setup
	$(BIN)/bufferlab run scenarios/dumbbell.toml

## test: set up, then run the Rust and the Python test suites
test: setup
	cargo test --release --workspace
	$(BIN)/python -m pytest

## bench: engine throughput on the reference dumbbell, the scale ladder (minutes), sweep throughput per executor (benchmarks/)
bench: setup
	$(BIN)/python benchmarks/bench_engine.py
	$(BIN)/python benchmarks/bench_scale.py
	$(BIN)/python benchmarks/bench_sweep.py

## lint: rustfmt, clippy (warnings are errors), Python byte-compilation
lint: setup
	cargo fmt --all --check
	cargo clippy --release --workspace --all-targets -- -D warnings
	$(BIN)/python -m compileall -q python tests

setup: $(VENV)/.deps $(EXTENSION)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.deps: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check $(PINS)
	touch $@

# maturin builds the engine and its binding (release profile) and installs the package in
# editable mode: Python sources are used in place, only Rust changes need this step again.
$(EXTENSION): $(VENV)/.deps $(RUST_SOURCES) pyproject.toml
	$(BIN)/maturin develop --release
	touch $@

clean:
	rm -rf $(VENV) $(EXTENSION)
