#!/usr/bin/env python3
"""Makes src/cost/table/, the prices built into axe (design §7.8), from
pydantic's genai-prices data on PyPI: the named providers' models only, each
with its match rules, its prices in force today (USD per million tokens, in
millionths), its one long-context tier if any, and its batch discount.

    python3 scripts/prices.py [--wheel FILE] src/cost/table

Without --wheel, pip downloads the pinned version below. The package's
data.py is read without its __init__ (which needs an HTTP client): only
types.py and pydantic are needed (`pip install pydantic`).
"""

import datetime
import glob
import os
import re
import subprocess
import sys
import tempfile
import types
import zipfile

VERSION = "0.2.3"

# genai-prices' provider id, and the names axe gives it (src/provider/presets.rs).
PROVIDERS = [
    ("openai", ["openai"]),
    ("anthropic", ["anthropic"]),
    ("google", ["google", "gemini"]),
    ("groq", ["groq"]),
    ("deepseek", ["deepseek"]),
    ("mistral", ["mistral"]),
    ("x-ai", ["xai"]),
    ("together", ["together"]),
    ("minimax", ["minimax"]),
    ("aws", ["bedrock"]),
]
FIELDS = ["input_mtok", "output_mtok", "cache_read_mtok", "cache_write_mtok"]
NONE = 0xFFFF_FFFF


def load(wheel):
    out = tempfile.mkdtemp()
    zipfile.ZipFile(wheel).extractall(out)
    pkg = types.ModuleType("genai_prices")
    pkg.__path__ = [os.path.join(out, "genai_prices")]
    sys.modules["genai_prices"] = pkg
    from genai_prices import data  # noqa: E402
    from genai_prices import types as t  # noqa: E402

    return data, t


def fetch():
    d = tempfile.mkdtemp()
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", d,
         f"genai-prices=={VERSION}"],
        check=True,
    )
    return glob.glob(os.path.join(d, "*.whl"))[0]


def rust_str(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def lit(s):
    """A literal of the table's text: none of its separators in it."""
    s = s.lower()
    if re.search(r'[\s,()"]', s) or not s.isascii():
        sys.exit(f"prices.py: a name the table cannot hold: {s!r}")
    return s


def regex(rx):
    """A regular expression of the data, as the few shapes axe matches."""
    if rx == "^(?!.*-[tT][tT][sS](?:$|-))":
        return "(!~-tts)"
    m = re.fullmatch(r"\^((?:[^\\\[\(]|\\\.)*)(\[-@\])?((?:\\d(?:\{\d+\})?|-)+)(\$?)", rx)
    if not m:
        sys.exit(f"prices.py: no translation for the regex {rx!r}: add one")
    text = m.group(1).replace("\\.", ".")
    kind = "@" if m.group(4) else "^"
    if m.group(2):
        return f"(|{kind}{lit(text + '-')},{kind}{lit(text + '@')})"
    return f"{kind}{lit(text)}"


def clause(c, t):
    """The clause in the table's notation: `=name`, `^prefix`, `$suffix`,
    `~part`, `@prefix` (then a date), `(|a,b)`, `(&a,b)`, `(!a)`."""
    if isinstance(c, t.ClauseEquals):
        return "=" + lit(c.equals)
    if isinstance(c, t.ClauseStartsWith):
        return "^" + lit(c.starts_with)
    if isinstance(c, t.ClauseEndsWith):
        return "$" + lit(c.ends_with)
    if isinstance(c, t.ClauseContains):
        return "~" + lit(c.contains)
    if isinstance(c, t.ClauseRegex):
        return regex(c.regex)
    if isinstance(c, t.ClauseOr):
        return "(|" + ",".join(clause(x, t) for x in c.or_) + ")"
    if isinstance(c, t.ClauseAnd):
        return "(&" + ",".join(clause(x, t) for x in c.and_) + ")"
    sys.exit(f"prices.py: unknown clause {c!r}")


def usd(micros):
    """Millionths of a USD as the shortest decimal: 2500000 -> 2.5."""
    whole, frac = divmod(micros, 1_000_000)
    frac = f"{frac:06d}".rstrip("0")
    return f"{whole}.{frac}" if frac else str(whole)


def micro(v):
    n = v * 1_000_000
    if n != int(n) or not 0 <= n < NONE:
        sys.exit(f"prices.py: a price axe cannot hold exactly: {v}")
    return int(n)


def in_force(model, t, today):
    """The prices in force today: the latest start date passed; a time of
    day's (DeepSeek's off-peak hours) is not taken, so cost is never lower
    than billed."""
    if not isinstance(model.prices, list):
        return model.prices
    best, since = None, None
    for cp in model.prices:
        c = cp.constraint
        if c is None and best is None:
            best = cp.prices
        elif isinstance(c, t.StartDateConstraint) and c.start_date <= today:
            if since is None or c.start_date >= since:
                best, since = cp.prices, c.start_date
    return best


def row(model, t, today):
    """The model's line: `id clause prices tier batch`, prices in USD per
    million tokens, exact to a millionth (`-`: none), the tier as
    `start:prices` (`-`: none), the batch discount in percent."""
    prices = in_force(model, t, today)
    if prices is None or getattr(prices, "input_mtok", None) is None:
        return None
    base, tier, start = [], [], 0
    for f in FIELDS:
        v = getattr(prices, f, None)
        if isinstance(v, t.TieredPrices):
            (only,) = v.tiers
            if start not in (0, only.start):
                sys.exit(f"prices.py: {model.id}: tiers at two starts")
            start = only.start
            base.append(micro(v.base))
            tier.append(micro(only.price))
        else:
            base.append(NONE if v is None else micro(v))
            tier.append(NONE if v is None else micro(v))
    show = lambda ps: ",".join("-" if p == NONE else usd(p) for p in ps)  # noqa: E731
    tiered = f"{start}:{show(tier)}" if start else "-"
    batch = 0
    for variant in model.price_variants or []:
        if variant.when == {"processing": "batch"}:
            b = variant.prices.input_mtok
            b = b.base if isinstance(b, t.TieredPrices) else b
            full = prices.input_mtok
            full = full.base if isinstance(full, t.TieredPrices) else full
            if b is not None and full:
                batch = round(100 - 100 * b / full)
    matches = clause(model.match, t)
    # The commonest clause, the id itself, is written `=` alone.
    if matches == "=" + lit(model.id):
        matches = "="
    return f"{lit(model.id)} {matches} {show(base)} {tiered} {batch}"


def main():
    args = sys.argv[1:]
    wheel = None
    if args[:1] == ["--wheel"]:
        wheel, args = args[1], args[2:]
    if len(args) != 1:
        sys.exit("usage: scripts/prices.py [--wheel FILE] src/cost/table")
    out = args[0]
    data, t = load(wheel or fetch())
    today = datetime.date.today()
    by_id = {p.id: p for p in data.providers}
    os.makedirs(out, exist_ok=True)
    mods = []
    for pid, names in PROVIDERS:
        p = by_id[pid]
        rows = [r for r in (row(m, t, today) for m in p.models) if r]
        mod = pid.replace("-", "_")
        mods.append((mod, names))
        with open(os.path.join(out, f"{mod}.rs"), "w") as f:
            f.write(f"""//! GENERATED by scripts/prices.py from genai-prices {VERSION} on {today}:
//! {p.name}'s {len(rows)} models (see mod.rs). Do not edit; run the script.

/// A model a line (see mod.rs).
pub static ROWS: &str = r"
""")
            for r in rows:
                f.write(r + "\n")
            f.write('";\n')
    with open(os.path.join(out, "mod.rs"), "w") as f:
        f.write(f"""//! GENERATED by scripts/prices.py from genai-prices {VERSION} (PyPI,
//! pydantic's maintained price data) on {today}: do not edit; run the
//! script again (`python3 scripts/prices.py src/cost/table`). The named
//! providers' models only, a file each, each model with its match rules in
//! the data's order (the first that matches is the model), a line each:
//! `id clause prices tier batch`. The clause is `=` (the id itself), `=name`, `^prefix`,
//! `$suffix`, `~part`, `@prefix` (then a date: digits and `-`), or
//! `(|a,b,...)`, `(&a,b,...)`, `(!a)`; the prices are those in force on
//! that day in USD per million tokens, at most six decimals (input, output, cache
//! read, cache write; `-` where the data has none); the tier is
//! `start:prices` from so many input tokens a request (`-`: none); the
//! batch discount is in percent (0: none known). Text, not Rust values, so
//! that the table holds no pointer the loader must relocate (about 110 KB
//! less in a PIE binary). Not formatted by rustfmt.

""")
        for mod, _ in mods:
            f.write(f"mod {mod};\n")
        f.write(f"""
/// What the table was made from, and when.
pub const SOURCE: &str = "genai-prices {VERSION}, {today}";

/// axe's provider names, and the models each is priced by.
pub static PROVIDERS: &[(&str, &str)] = &[
""")
        for mod, names in mods:
            for n in names:
                f.write(f"    ({rust_str(n)}, {mod}::ROWS),\n")
        f.write("];\n")


main()
