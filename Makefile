# ssdlab — make demo: the main job on the default simulated drive; make test: every test;
# make bench: every benchmark, recorded in benches/records/ (BENCHMARKS.md's table is rendered from them).
# Each target installs what it needs (scripts/bootstrap.sh; run as root on Debian).

VENV := .venv
PY := $(VENV)/bin/python
SSDLAB := $(VENV)/bin/ssdlab
DEMO_OUT ?= results/demo

.PHONY: setup demo test test-rust test-python test-fuzz fuzz bench bench-compare clean

# Seconds each fuzz target runs in `make test` (fuzz/run.sh; `make fuzz FUZZ_S=600` for longer).
FUZZ_S ?= 15

setup:
	./scripts/bootstrap.sh

demo: setup
	$(SSDLAB) consistency --target sim:default --out $(DEMO_OUT) --force
	@echo "open $(DEMO_OUT)/report.html (interactive charts and tables; PNG/SVG plots and summary.json beside it)"

test: setup test-rust test-python test-fuzz

# Each Rust test gets a time limit: cargo-nextest kills one that runs past .config/nextest.toml's
# limit (nextest runs no doctests: cargo test runs those). Without nextest, cargo test runs
# under `timeout`, which limits the whole run to RUST_TEST_S seconds.
RUST_CRATES := -p ssdrng -p ssdsim -p ssdtrace -p ssdemu
RUST_TEST_S ?= 3600

test-rust:
	@if cargo nextest --version >/dev/null 2>&1; then \
		set -x; cargo nextest run --release $(RUST_CRATES) && timeout $(RUST_TEST_S) cargo test --release --doc $(RUST_CRATES); \
	else \
		set -x; timeout $(RUST_TEST_S) cargo test --release $(RUST_CRATES); \
	fi

# Processes the tests run on (pytest-xdist), whole files to a process. Tests marked realtime
# (real fio, loop devices, the emulated drive, a command stopped at a timed moment: their
# figures follow the wall clock) then run alone, one at a time. The slowest tests of each part
# are listed at its end, to keep the suite's time in view.
PYTEST_WORKERS ?= $(shell nproc)
PYTEST := $(PY) -m pytest -q -p no:cacheprovider --durations=15

test-python:
	@status=0; \
	set -x; \
	$(PYTEST) -n $(PYTEST_WORKERS) --dist loadfile -m "not realtime" tests || status=1; \
	$(PYTEST) -m realtime tests || status=1; \
	exit $$status

# Every fuzz target (trace readers, profile text, fio job files, fio logs, profiles) for
# FUZZ_S seconds each, after replaying the crashes found before (fuzz/regressions).
test-fuzz fuzz: setup
	./fuzz/run.sh $(FUZZ_S)

# Every benchmark; each appends a record to benches/records/ (figures, commit, machine, load)
# (MQSIM=DIR: a built MQSim checkout, for the equal-work comparison with it)
# and prints its ratios against the last record with the same parameters; BENCHMARKS.md's
# table of current figures is then rendered from the records.
bench: setup
	$(PY) benches/bench_cargo.py ssdsim steady_state
	$(PY) benches/bench_cargo.py ssdsim replay
	$(PY) benches/bench_cargo.py ssdtrace parse
	$(PY) benches/bench_consistency.py --drives 256G,1T,4T
	$(PY) benches/bench_randrw.py
	$(PY) benches/bench_trace.py
	$(PY) benches/bench_pts.py
	$(PY) benches/bench_fio_overhead.py
	$(PY) benches/bench_long_run.py
	$(PY) benches/bench_todays_drives.py
	$(PY) benches/bench_archetypes.py
	$(PY) benches/bench_profile_rows.py
	$(PY) benches/bench_fit_coverage.py
	$(PY) benches/bench_emulate.py
	$(PY) benches/bench_emu_differential.py
	$(PY) benches/bench_fdp_placement.py
	$(PY) benches/bench_fdp_placement.py --capacity 256GB
	$(PY) benches/bench_startup.py
	$(PY) benches/bench_mqsim_equal_work.py $(if $(MQSIM),--mqsim $(MQSIM))
	$(PY) benches/records.py render

# A quick subset (~10 min on 2 cores), each compared with its last record at the same
# parameters. For a paired comparison with another build: benches/ab.py REV -- BENCH ARGS.
bench-compare: setup
	$(PY) benches/bench_cargo.py ssdsim steady_state -- 32G 256G
	$(PY) benches/bench_randrw.py --runs 3 --ios 3000000 --warmup 1
	$(PY) benches/bench_consistency.py --runs 3 --duration 300
	$(PY) benches/bench_trace.py --runs 1
	$(PY) benches/bench_todays_drives.py --big-runs 1
	$(PY) benches/records.py render

clean:
	cargo clean
	rm -rf $(VENV) results
