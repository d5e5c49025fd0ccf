# `make test` is the project's one test command (README, .ci/run). It prepares what the
# tests need — a Python venv with ray[default] (the real Ray head), omegaconf and hydra-core
# at NeMo-RL's versions (the oracles for recipe loading and Hydra arguments), jsonschema
# (an independent validator) and maturin (the wheel the install test builds), and the real
# control plane (testbed/: built from the Go module proxy, one per KubeRay version) — then
# runs every test with the testbeds up, and stops them, always.

VENV ?= .venv
RAY  := $(VENV)/bin/ray
PY   := $(VENV)/bin/python
# The integration tests mostly wait (on Ray jobs, child processes, the fake API server's
# watches), so more threads than cores overlap the waits: 314 s with 2 threads, 146 s
# with 6 on 2 cores. (An environment variable: the criterion benches, run once as tests,
# take no `--test-threads`.)
TEST_THREADS ?= 6
# NeMo-RL's lock: omegaconf 2.3.0 with hydra-core 1.3.2.
PY_DEPS := "ray[default]" omegaconf==2.3.0 hydra-core==1.3.2 jsonschema maturin
STAMP := $(VENV)/.nrl-deps-2

.PHONY: test lint venv ray-venv bench testbed testbed-up testbed-down

test: venv testbed
	RUST_TEST_THREADS=$(TEST_THREADS) NRL_RAY_BIN=$(abspath $(RAY)) NRL_PYTHON=$(abspath $(PY)) testbed/with cargo test --all-targets --no-fail-fast

# The real control plane: build it (tens of minutes the first time, then a no-op), start one
# per KubeRay version of testbed/versions.env (for `cargo test --test it real_cluster::`),
# stop them.
testbed:
	testbed/build

testbed-up: testbed
	@for v in $$(. testbed/versions.env && echo $$KUBERAY_VERSIONS); do testbed/up --kuberay $$v >/dev/null || exit 1; done

testbed-down:
	testbed/down --all

lint:
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings

venv: $(STAMP)
ray-venv: venv

$(STAMP):
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check $(PY_DEPS)
	touch $(STAMP)

bench:
	cargo bench
