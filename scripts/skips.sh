#!/usr/bin/env bash
# make test, after the tests: what they could not test on this machine,
# from the lines the tests appended to FILE (tests/common/skips.rs, and
# src/sandbox/tests.rs for the library's own): one line per reason, with
# how many times a test skipped for it.
#
# A skip is of one of two kinds:
#   cannot   what this machine cannot have: the kernel's Landlock, its
#            network rules, user namespaces, an architecture, running as
#            root. Listed; make test still passes.
#   missing  what make test installs itself (the MCP reference servers, the
#            openai client, the static build) or this machine should have
#            (python3, curl, util-linux). Listed, and make test FAILS,
#            unless AXE_TEST_ALLOW_SKIP=1 (a developer skipping them
#            knowingly).
# Usage: skips.sh FILE [WHO]   (WHO: what the lines start with, "make test")
set -euo pipefail
file=$1
who=${2:-make test}
if [ ! -s "$file" ]; then
    echo "$who: no test skipped on this machine"
    exit 0
fi
total=$(wc -l <"$file")
reasons=$(sort -u "$file" | wc -l)
echo "$who: $total tests skipped, for $reasons reasons (kind, tests, what was not tested: why):"
# Missing first, then the most frequent.
sort "$file" | uniq -c | sort -k2,2r -k1,1nr |
    awk -F'\t' '{ split($1, a, " "); printf "  %-7s %4d  %s\n", a[2], a[1], $2 }'
missing=$(grep -c '^missing' "$file" || true)
if [ "$missing" -gt 0 ]; then
    if [ "${AXE_TEST_ALLOW_SKIP:-}" = 1 ]; then
        echo "$who: $missing of them for what is missing: allowed by AXE_TEST_ALLOW_SKIP=1"
        exit 0
    fi
    echo "$who: FAILED: $missing tests skipped for what can be installed or this machine should have (marked missing, with how to get it);" >&2
    echo "  install it, or run AXE_TEST_ALLOW_SKIP=1 $who to skip those tests knowingly" >&2
    exit 1
fi
echo "$who: only what this machine cannot have was skipped (marked cannot)"
