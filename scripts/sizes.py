#!/usr/bin/env python3
"""make bench: the binary's size by crate, against the 6 MiB budget (D29).

Reads the symbol table of the release build kept with its symbols
(`cargo build --profile sizes`: the same code as `target/release/axe`, not
stripped) with `nm -S -C`, sums the code (text symbols) by the crate that
names each one, and prints a table, biggest first: each crate's bytes, the
rest of the file (read-only data, unwind tables, relocations, headers:
what is not a function), and the shipped binaries' sizes against the
budget. Like `cargo bloat --crates`, with nothing to install: code inlined
into another crate's function counts for that crate, and a generic
function counts for the crate that defines it (`Vec<axe::X>::push` is
std's), but for `drop_in_place<X>`, which counts for X's crate.

The static (musl) build is read the same way from its own build with
symbols (`AXE_KEEP_SYMBOLS=1 bash scripts/static.sh sizes`).

Usage: sizes.py SYMBOLS_BINARY [SHIPPED_BINARY...]
"""

import os
import re
import subprocess
import sys
import tempfile

BUDGET = 6 * 1024 * 1024
# Rust's own crates, shown as one.
STD = {"std", "core", "alloc", "panic_unwind", "panic_abort", "std_detect",
       "rustc_demangle", "adler2", "miniz_oxide", "gimli", "addr2line", "object",
       "compiler_builtins", "__rustc"}


def crate_of_path(path):
    """The crate a demangled path starts with, or None (a C symbol)."""
    path = path.strip()
    while path.startswith(("&", "*const ", "*mut ", "mut ", "dyn ")):
        path = path.split(" ", 1)[1] if path[0] != "&" else path[1:]
    if path.startswith("<"):
        return crate_of_impl(path)
    m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)::", path)
    return m.group(1) if m else None


def crate_of_impl(name):
    """`<A as B>::f`: A's crate, or B's where A is std's or no crate's."""
    depth, i = 0, 0
    for i, ch in enumerate(name):
        depth += ch == "<"
        depth -= ch == ">"
        if depth == 0:
            break
    inner = name[1:i]
    depth, split = 0, None
    for j, ch in enumerate(inner):
        depth += ch in "<(["
        depth -= ch in ">)]"
        if depth == 0 and inner.startswith(" as ", j):
            split = j
            break
    own = crate_of_path(inner[:split] if split is not None else inner)
    if split is None:
        return own
    trait = crate_of_path(inner[split + 4:])
    if own is None or own in STD:
        return trait or own
    return own


def crate_of(symbol):
    m = re.match(r"core::ptr::drop_in_place<(.*)>$", symbol)
    crate = crate_of_path(m.group(1)) or "std" if m else crate_of_path(symbol)
    if crate is None:
        # ring's C and assembly name themselves; the rest is libc's (the
        # static build) or the C runtime's.
        if symbol.startswith("ring_core_"):
            return "ring"
        return "[C: libc, the C runtime]"
    return "std" if crate in STD else crate


def unhashed(name):
    """A symbol without its crate's build hash, as build.rs's link wrapper
    matches the order file's names to the musl build's: legacy mangling's
    `17h<16 hex>E`, v0's crate disambiguators."""
    m = re.search(r"17h[0-9a-f]{16}E$", name)
    if m:
        return name[:m.start()]
    return re.sub(r"Cs[0-9A-Za-z]+_", "C", name)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    symbols, shipped = sys.argv[1], sys.argv[2:]
    out = subprocess.run(["nm", "-S", "--size-sort", "-C", symbols],
                         capture_output=True, text=True, check=True).stdout
    by_crate = {}
    for line in out.splitlines():
        parts = line.split(" ", 3)
        if len(parts) < 4 or parts[2] not in "tTwW":
            continue
        crate = crate_of(parts[3])
        by_crate[crate] = by_crate.get(crate, 0) + int(parts[1], 16)
    if not by_crate:
        sys.exit(f"sizes: {symbols} has no symbol table (stripped?)")
    code = sum(by_crate.values())
    with tempfile.TemporaryDirectory() as tmp:
        stripped = os.path.join(tmp, "stripped")
        subprocess.run(["objcopy", "--strip-all", symbols, stripped], check=True)
        total = os.path.getsize(stripped)
    print(f"\nbinary size by crate (code of {symbols}, `nm -S -C`; as shipped, stripped):\n")
    print(f"{'crate':<40} {'bytes':>12} {'share':>7}")
    rows = sorted(by_crate.items(), key=lambda kv: -kv[1])
    rows.append(("[not code: data, unwind tables, headers]", total - code))
    for crate, size in rows:
        print(f"{crate:<40} {size:>12,} {100 * size / total:>6.1f}%")
    print(f"{'total (stripped)':<40} {total:>12,} {'':>7}")
    print(f"{'budget (D29)':<40} {BUDGET:>12,} {'':>7}")
    order = os.path.join(os.path.dirname(os.path.abspath(__file__)), "single_run.order")
    if os.path.isfile(order):
        # A stale order (the code moved on) costs a single run memory, not
        # a build: say how much of it this build still has (build.rs).
        names = set(open(order).read().split())
        have = set(line.split()[-1] for line in subprocess.run(
            ["nm", "--defined-only", symbols], capture_output=True, text=True,
            check=True).stdout.splitlines())
        how = ""
        if "-linux-musl" in symbols:
            # Its names carry another hash: the link matches them without it.
            names, have = {unhashed(n) for n in names}, {unhashed(n) for n in have}
            how = ", matched without their hashes"
        print(f"scripts/single_run.order: {len(names & have)} of its {len(names)} "
              f"functions are in this build{how} (scripts/single_run_order.sh renews it)")
    for path in shipped:
        if not os.path.isfile(path):
            continue
        size = os.path.getsize(path)
        state = "met" if size <= BUDGET else "OVER BUDGET"
        print(f"{path}: {size:,} bytes, {size / 1048576:.2f} MiB of 6 MiB: {state}")


if __name__ == "__main__":
    main()
