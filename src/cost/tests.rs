//! The price table read and a cost reckoned (design §7.8).

use super::*;

#[test]
fn the_table_prices_dated_and_aliased_names() {
    let p = builtin("anthropic", "claude-sonnet-4-5-20250929").unwrap();
    assert_eq!(p.rates, [3_000_000, 15_000_000, 300_000, 3_750_000]);
    assert_eq!(p.batch_discount, 50);
    let p = builtin("openai", "GPT-4o-mini").unwrap();
    // No cache-write price in the data: the input's.
    assert_eq!(p.rates, [150_000, 600_000, 75_000, 150_000]);
    assert_eq!(
        builtin("gemini", "gemini-2.5-flash"),
        builtin("google", "gemini-2.5-flash")
    );
    assert!(builtin("openai", "no-such-model").is_none());
    assert!(builtin("ollama", "llama3").is_none());
}

#[test]
fn a_cost_counts_cache_tokens_at_their_rates_and_a_tier_past_its_start() {
    let p = Price {
        rates: [3_000_000, 15_000_000, 300_000, 3_750_000],
        tier: Some((200_000, [6_000_000, 22_500_000, 600_000, 7_500_000])),
        batch_discount: 0,
        source: "t",
    };
    let billed = Billed {
        input: 1_000,
        output: 100,
        cache_read: 400,
        cache_write: 100,
    };
    // 500 fresh * 3 + 100 * 15 + 400 * 0.3 + 100 * 3.75, in USD per million.
    let c = Cost::of(Some(&p), &billed);
    assert_eq!(
        c.pico,
        500 * 3_000_000 + 100 * 15_000_000 + 400 * 300_000 + 100 * 3_750_000
    );
    assert_eq!(c.usd(), Some(0.003495));
    let long = Billed {
        input: 200_000,
        ..Billed::default()
    };
    assert_eq!(Cost::of(Some(&p), &long).pico, 200_000 * 6_000_000);
}

#[test]
fn no_price_is_no_cost_and_stays_unknown_in_a_sum() {
    let c = Cost::of(
        None,
        &Billed {
            input: 1,
            ..Billed::default()
        },
    );
    assert_eq!(c.usd(), None);
    assert_eq!(Cost::default().plus(c).column(), "-");
    assert_eq!(Cost::of(None, &Billed::default()).usd(), Some(0.0));
}

#[test]
fn config_prices_are_checked() {
    let s = PriceSettings {
        input: 1.25,
        output: 10.0,
        cache_read: None,
        cache_write: Some(0.5),
        batch_discount: Some(0.5),
    };
    let p = s.price("x/y").unwrap();
    assert_eq!(p.rates, [1_250_000, 10_000_000, 1_250_000, 500_000]);
    assert_eq!(p.batch_discount, 50);
    let bad = PriceSettings { input: -1.0, ..s };
    assert!(
        bad.price("x/y")
            .unwrap_err()
            .contains("prices.\"x/y\".input")
    );
}

#[test]
fn every_line_of_the_table_reads_whole() {
    for (provider, rows) in table::PROVIDERS {
        for line in rows.lines().filter(|l| !l.is_empty()) {
            let f: Vec<&str> = line.split(' ').collect();
            assert_eq!(f.len(), 5, "{provider}: {line}");
            assert!(
                matches!(clause_at(f[1], "x"), Some((_, ""))),
                "{provider}: {line}"
            );
            assert!(rates(f[2]).is_some(), "{provider}: {line}");
            assert!(f[3] == "-" || f[3].split_once(':').is_some(), "{line}");
            assert!(f[4].parse::<u8>().is_ok(), "{line}");
        }
    }
    // A dated name, a long-context tier, a negation (Gemini's "not a TTS model").
    let opus = builtin("anthropic", "claude-opus-5-20260101").unwrap();
    assert_eq!(opus.source, "claude-opus-5");
    assert!(
        builtin("anthropic", "claude-opus-5-2026010x").is_none_or(|p| p.source != "claude-opus-5")
    );
    assert_eq!(
        clause_at("(&~gemini,(!~-tts))", "gemini-2.5-pro"),
        Some((true, ""))
    );
    assert_eq!(
        clause_at("(&~gemini,(!~-tts))", "gemini-2.5-pro-tts"),
        Some((false, ""))
    );
}

#[test]
fn a_decimal_price_is_read_exactly_in_millionths() {
    assert_eq!(micros("2.5"), Some(2_500_000));
    assert_eq!(micros("10"), Some(10_000_000));
    assert_eq!(micros("0.075"), Some(75_000));
    assert_eq!(micros("0.000001"), Some(1));
    for bad in ["0.0000001", "1.-5", "x", "", "1e3"] {
        assert_eq!(micros(bad), None, "{bad}");
    }
}

/// The lookup as it was before its scan was made byte-level: the results
/// must not change.
fn look_up_as_before(provider: &str, model: &str) -> Option<Price> {
    let (_, rows) = table::PROVIDERS.iter().find(|(p, _)| *p == provider)?;
    let model = model.to_ascii_lowercase();
    rows.lines().find_map(|line| {
        let mut f = line.splitn(3, ' ');
        let (id, clause) = (f.next()?, f.next()?);
        let matched = match clause {
            "=" => model == id,
            _ => matches!(clause_as_before(clause, &model), Some((true, ""))),
        };
        if !matched {
            return None;
        }
        prices(f.next()?, id)
    })
}

fn clause_as_before<'a>(text: &'a str, model: &str) -> Option<(bool, &'a str)> {
    let kind = *text.as_bytes().first()?;
    let rest = text.get(1..)?;
    if kind != b'(' {
        let end = rest.find([',', ')']).unwrap_or(rest.len());
        let (lit, after) = rest.split_at(end);
        let yes = match kind {
            b'=' => model == lit,
            b'^' => model.starts_with(lit),
            b'$' => model.ends_with(lit),
            b'~' => model.contains(lit),
            b'@' => model.strip_prefix(lit).is_some_and(|date| {
                !date.is_empty() && date.bytes().all(|b| b.is_ascii_digit() || b == b'-')
            }),
            _ => return None,
        };
        return Some((yes, after));
    }
    let op = *rest.as_bytes().first()?;
    let mut at = rest.get(1..)?;
    let mut all = op != b'|';
    loop {
        let (yes, after) = clause_as_before(at, model)?;
        all = match op {
            b'|' => all || yes,
            b'&' => all && yes,
            b'!' => !yes,
            _ => return None,
        };
        match after.as_bytes().first()? {
            b',' => at = after.get(1..)?,
            b')' => return Some((all, after.get(1..)?)),
            _ => return None,
        }
    }
}

#[test]
fn the_byte_level_scan_finds_what_the_old_one_found() {
    // Every id of every provider's table, and names near them: dated,
    // cut short, lengthened, upper case, a part of one, unknown, non-ASCII.
    let mut models: Vec<String> = vec![
        String::new(),
        "gpt-5o-fake".into(),
        "ünïcode-gpt-4o".into(),
        "gpt-4o-ü".into(),
        "x".into(),
    ];
    for (_, rows) in table::PROVIDERS {
        for id in rows.lines().filter_map(|l| l.split(' ').next()) {
            models.push(id.to_string());
            models.push(format!("{id}-2025-01-01"));
            models.push(format!("{id}20250101"));
            models.push(format!("x-{id}"));
            models.push(format!("{id}-tts"));
            models.push(id.to_ascii_uppercase());
            models.push(id.chars().take(id.chars().count() / 2).collect());
        }
    }
    let mut priced = 0;
    for (provider, _) in table::PROVIDERS {
        for model in &models {
            let now = look_up(provider, model);
            assert_eq!(
                now,
                look_up_as_before(provider, model),
                "{provider}/{model}"
            );
            priced += usize::from(now.is_some());
        }
    }
    assert!(priced > 1000, "{priced}");
    // Clauses past the table's: a part at either end, empty, none.
    for (clause, model) in [
        ("~4o", "gpt-4o"),
        ("~gpt", "gpt-4o"),
        ("~", "a"),
        ("~abc", "ab"),
        ("(|~x,(&^g,$o))", "gpt-4o"),
        ("(!=a", "a"),
        ("?a", "a"),
        ("", "a"),
    ] {
        assert_eq!(
            clause_at(clause, model),
            clause_as_before(clause, model),
            "{clause} {model}"
        );
    }
}
