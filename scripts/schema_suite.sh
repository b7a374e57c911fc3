#!/usr/bin/env bash
# make schema-suite: the official JSON Schema Test Suite (draft 2020-12, and
# its optional tests) run through axe's output-schema check. The suite comes
# inside the source distribution of Python's jsonschema package on PyPI
# (pinned), unpacked into target/schema-suite/; nothing else is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
version=4.26.0
dir=target/schema-suite
suite="$dir/jsonschema-$version/json/tests/draft2020-12"
if [ ! -d "$suite" ]; then
    mkdir -p "$dir"
    python3 -m pip download --quiet --no-deps --no-binary :all: \
        "jsonschema==$version" -d "$dir"
    tar -xzf "$dir/jsonschema-$version.tar.gz" -C "$dir"
fi
for d in "$suite" "$suite/optional"; do
    AXE_SCHEMA_SUITE="$PWD/$d" cargo test --quiet --lib schema::tests::suite -- \
        --ignored --nocapture 2>&1 | grep -E "schema suite|wrong:|panicked" || true
done
