# `make test` is the project's one test command (README, .ci/run). It prepares what the
# tests need — a Python venv with ray[default] for the Ray tests — then runs every test.

VENV ?= .venv
RAY  := $(VENV)/bin/ray

.PHONY: test lint ray-venv bench

test: ray-venv
	NRL_RAY_BIN=$(abspath $(RAY)) cargo test --all-targets --no-fail-fast
	cargo test --doc

lint:
	cargo fmt --check
	cargo clippy --all-targets -- -D warnings

ray-venv: $(RAY)

$(RAY):
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check "ray[default]"

bench:
	cargo bench
