# axe: build, test, try.
CARGO ?= cargo

.PHONY: all build test fmt lint unit example demo e2e bench fuzz clean

all: build

## build: the release binary, target/release/axe
build:
	$(CARGO) build --release

## test: formatting, lints and every test (what CI runs)
test: fmt lint unit

fmt:
	$(CARGO) fmt --all -- --check

lint:
	$(CARGO) clippy --all-targets -- -D warnings

unit:
	$(CARGO) test

## bench: delegation latency, per-run cost, memory, connections, binary size
## (prints a table and target/bench/results.json; not part of `make test`)
bench:
	$(CARGO) bench --bench delegation

## fuzz: every fuzzer in tests/fuzz.rs (response bodies, TOML files, retry
## hints, whole HTTP responses) with FUZZ_EXECS executions each (default a
## million), release build; AXE_FUZZ_SEED=n explores elsewhere. Several
## minutes; not part of `make test`
FUZZ_EXECS ?= 1000000
fuzz:
	AXE_FUZZ_EXECS=$(FUZZ_EXECS) $(CARGO) test --release --test fuzz -- --nocapture --test-threads=1

## example: build, then show what the shipped example agents would send (no key needed)
example: build
	XDG_CONFIG_HOME=$(CURDIR)/examples ./target/release/axe run reviewer --dry-run \
		-p "Review the error handling." | head -40
	@echo "..."
	@echo
	XDG_CONFIG_HOME=$(CURDIR)/examples ./target/release/axe run lead --dry-run \
		-p "Is the error handling sound?"

## demo: a real model end to end, no key needed: installs a local llama.cpp
## server and a 135M model into .demo/ (several minutes the first time, then
## reused), runs examples/demo's lead, which delegates to two sub-agents
demo:
	bash scripts/demo.sh

## e2e: the opt-in end-to-end tests (tests/e2e.rs) against llama-cpp-python's
## server, llama.cpp's llama-server and aimock, all in .demo/ (not in `make test`)
e2e:
	bash scripts/e2e.sh

clean:
	$(CARGO) clean
