#!/usr/bin/env bash
# make static: a fully static axe (musl libc, no dynamic loader, no shared
# libraries) at target/<arch>-unknown-linux-musl/release/axe, for servers
# and containers built FROM scratch. Installs what a fresh machine lacks:
# rustup's musl target, and Debian's musl-tools (ring, under ureq's TLS,
# compiles a little C and needs musl-gcc for it). An argument names another
# cargo profile (`sizes`, with AXE_KEEP_SYMBOLS=1: make bench's size by
# crate, scripts/sizes.py); the binary is then under target/<arch>-unknown-
# linux-musl/<profile>/.
set -euo pipefail
cd "$(dirname "$0")/.."

arch=$(uname -m)
target="$arch-unknown-linux-musl"

if ! rustup target list --installed 2>/dev/null | grep -x "$target" >/dev/null; then
    echo "static: adding rustup target $target" >&2
    rustup target add "$target"
fi

if ! command -v musl-gcc >/dev/null 2>&1; then
    echo "static: installing musl-tools (for musl-gcc)" >&2
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq musl-tools
fi

# cc-rs reads the C compiler for a target from CC_<target with underscores>.
cc_var="CC_${target//-/_}"
export "$cc_var=musl-gcc"
profile=${1:-release}
cargo build --profile "$profile" --target "$target"

bin="target/$target/$profile/axe"
size=$(stat -c %s "$bin")
echo "static: $bin ($size bytes)"
