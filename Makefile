# axe: build, test, try.
CARGO ?= cargo

.PHONY: all build test fmt lint unit example bench clean

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

## example: build, then show what the shipped example agents would send (no key needed)
example: build
	XDG_CONFIG_HOME=$(CURDIR)/examples ./target/release/axe run reviewer --dry-run \
		-p "Review the error handling." | head -40
	@echo "..."
	@echo
	XDG_CONFIG_HOME=$(CURDIR)/examples ./target/release/axe run lead --dry-run \
		-p "Is the error handling sound?"

clean:
	$(CARGO) clean
