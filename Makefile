# axe: build, test, try.
CARGO ?= cargo

.PHONY: all build test fmt lint unit example clean

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
