//! What a run costs (design §7.8): a model's [`Price`] (config.toml's
//! `[prices."provider/model"]`, else the table built into the binary,
//! `table/`, made by `scripts/prices.py` from genai-prices), and the
//! [`Cost`] of a response's tokens at that price, summed in whole
//! picodollars so that sums are exact and a budget can hold them in an
//! atomic. A model with no price has no cost: `null`, never a guess.
//!
//! Size: issue 37's prices and cost (this module, its 518-model table as
//! text, the reports and budgets) add 116,248 bytes to the glibc release
//! binary (5,827,904 at 99af882, 5,944,152 with them), of which the table
//! is about 53 KB of read-only text; the same table as Rust values (a
//! relocated pointer per name) added 191,464 bytes.

#[rustfmt::skip]
mod table;

use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize, Serializer};

pub use table::SOURCE;

/// A model's price: USD per million tokens, held as millionths of a USD
/// (so a token's cost is a whole number of picodollars).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Price {
    /// Input, output, cache read, cache write. A cache rate the source does
    /// not give is the input's: never less than billed.
    pub rates: [u64; 4],
    /// From so many input tokens in one request, these rates instead (a
    /// long-context tier).
    pub tier: Option<(u64, [u64; 4])>,
    /// The batch engines' discount, in percent (0: none known).
    pub batch_discount: u8,
    /// Where it comes from: the table's model id, or `config.toml`.
    pub source: &'static str,
}

/// `[prices."provider/model"]` in config.toml: USD per million tokens.
#[derive(Debug, Clone, Copy, Deserialize)]
pub struct PriceSettings {
    pub input: f64,
    pub output: f64,
    pub cache_read: Option<f64>,
    pub cache_write: Option<f64>,
    /// The batch price's discount, a fraction (0.5: half price).
    pub batch_discount: Option<f64>,
}

impl PriceSettings {
    /// This table as a price; `key` names it in the error.
    pub fn price(&self, key: &str) -> Result<Price, String> {
        let micro = |name: &str, v: f64| {
            if v.is_finite() && (0.0..1e6).contains(&v) {
                // Exact to a millionth of a USD per million tokens.
                Ok((v * 1e6).round() as u64)
            } else {
                Err(format!(
                    "prices.\"{key}\".{name} must be a number of USD per million tokens from 0 to 999999"
                ))
            }
        };
        let input = micro("input", self.input)?;
        let rates = [
            input,
            micro("output", self.output)?,
            self.cache_read
                .map_or(Ok(input), |v| micro("cache_read", v))?,
            self.cache_write
                .map_or(Ok(input), |v| micro("cache_write", v))?,
        ];
        let batch = match self.batch_discount {
            None => 0,
            Some(d) if (0.0..=1.0).contains(&d) => (d * 100.0).round() as u8,
            Some(_) => {
                return Err(format!(
                    "prices.\"{key}\".batch_discount must be a fraction from 0 to 1"
                ));
            }
        };
        Ok(Price {
            rates,
            tier: None,
            batch_discount: batch,
            source: "config.toml",
        })
    }
}

/// The built-in price of `model` at the provider axe calls `provider`:
/// the first line of that provider's table whose clause matches (the
/// table's notation: `table/mod.rs`). A line the table cannot have made is
/// passed over.
pub fn builtin(provider: &str, model: &str) -> Option<Price> {
    // A tree's agents mostly share a model: each is looked up once.
    static SEEN: Mutex<Vec<(String, String, Option<Price>)>> = Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, _, p)) = seen.iter().find(|(p, m, _)| p == provider && m == model) {
        return *p;
    }
    let price = look_up(provider, model);
    if seen.len() < 64 {
        seen.push((provider.to_string(), model.to_string(), price));
    }
    price
}

/// [`builtin`]'s lookup in the table itself. A run whose model is not in
/// the table reads every line of its provider's, so each line is read once,
/// by bytes: its id, its clause as far as it decides, and its prices only
/// once it matched (at opt-level "z" the `char` patterns of `split` and
/// `find` made it a quarter of a single run's instructions).
fn look_up(provider: &str, model: &str) -> Option<Price> {
    let (_, rows) = table::PROVIDERS.iter().find(|(p, _)| *p == provider)?;
    let model = model.to_ascii_lowercase();
    rows.lines().find_map(|line| priced(line, &model))
}

/// `line`'s price when its clause matches `model` (lowercase).
fn priced(line: &'static str, model: &str) -> Option<Price> {
    let (id, rest) = cut(line, b' ')?;
    // `=` alone is the commonest clause: the model is the line's id. A
    // clause holds no space: the one after it ends it.
    let after = match rest.strip_prefix("= ") {
        Some(after) => (model == id).then_some(after)?,
        None => match clause_at(rest, model)? {
            (true, after) => after.strip_prefix(' ')?,
            (false, _) => return None,
        },
    };
    prices(after, id)
}

/// The prices that follow a line's clause (`after`), for the line `id`.
fn prices(after: &str, id: &'static str) -> Option<Price> {
    let mut f = after.split(' ');
    let base = rates(f.next()?)?;
    let tier = match f.next()? {
        "-" => None,
        t => {
            let (from, r) = t.split_once(':')?;
            Some((from.parse().ok()?, rates(r)?))
        }
    };
    Some(Price {
        rates: base,
        tier,
        batch_discount: f.next()?.parse().ok()?,
        source: id,
    })
}

/// `text` before the first `byte` (an ASCII one) and after it.
fn cut(text: &str, byte: u8) -> Option<(&str, &str)> {
    let at = text.bytes().position(|b| b == byte)?;
    Some((text.get(..at)?, text.get(at + 1..)?))
}

/// `a,b,c,d` in USD per million tokens (`2.5`), read as millionths of a
/// USD; a cache rate the data leaves out (`-`) is the input's: never less
/// than billed.
fn rates(text: &str) -> Option<[u64; 4]> {
    let mut out = [None; 4];
    let mut parts = text.split(',');
    for slot in &mut out {
        *slot = match parts.next()? {
            "-" => None,
            n => Some(micros(n)?),
        };
    }
    let input = out[0]?;
    Some(out.map(|r| r.unwrap_or(input)))
}

/// A decimal amount (`2.5`, `0.075`, `10`) in millionths, exactly: at most
/// six digits after the point.
fn micros(text: &str) -> Option<u64> {
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    if frac.len() > 6 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let scale = 10u64.pow(6 - u32::try_from(frac.len()).ok()?);
    let frac: u64 = if frac.is_empty() {
        0
    } else {
        frac.parse().ok()?
    };
    whole
        .parse::<u64>()
        .ok()?
        .checked_mul(1_000_000)?
        .checked_add(frac * scale)
}

/// Whether the clause at the start of `text` (up to a space at most)
/// matches `model`, and the text after it: `=name`, `^prefix`, `$suffix`,
/// `~part`, `@prefix` then a date (digits and `-`), `(|a,...)`, `(&a,...)`,
/// `(!a)`.
fn clause_at<'a>(text: &'a str, model: &str) -> Option<(bool, &'a str)> {
    let kind = *text.as_bytes().first()?;
    let rest = text.get(1..)?;
    if kind != b'(' {
        let end = rest
            .bytes()
            .position(|b| matches!(b, b',' | b')' | b' '))
            .unwrap_or(rest.len());
        let (lit, after) = rest.split_at(end);
        let yes = match kind {
            b'=' => model == lit,
            b'^' => model.starts_with(lit),
            b'$' => model.ends_with(lit),
            b'~' => contains(model, lit),
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
        let (yes, after) = clause_at(at, model)?;
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

/// Whether `part` is somewhere in `model`: a byte compare at each place
/// (both are short; `str::contains` sets up a searcher for every call).
fn contains(model: &str, part: &str) -> bool {
    part.is_empty()
        || model
            .as_bytes()
            .windows(part.len())
            .any(|w| w == part.as_bytes())
}

/// Tokens one response billed, as its cost is reckoned from.
#[derive(Debug, Clone, Copy, Default)]
pub struct Billed {
    /// All input tokens, the cache's among them.
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

/// What some responses cost, in picodollars; `unpriced` when one of them
/// had tokens and no price (then the sum is not the cost, and says `null`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cost {
    pub pico: u64,
    pub unpriced: bool,
}

impl Cost {
    /// What `billed` costs at `price` (none: unpriced, unless it billed
    /// nothing).
    pub fn of(price: Option<&Price>, billed: &Billed) -> Cost {
        let Some(price) = price else {
            let any = billed.input > 0 || billed.output > 0;
            return Cost {
                pico: 0,
                unpriced: any,
            };
        };
        let rates = match price.tier {
            Some((from, rates)) if billed.input >= from => rates,
            _ => price.rates,
        };
        let cached = billed.cache_read.saturating_add(billed.cache_write);
        let fresh = billed.input.saturating_sub(cached);
        let counts = [fresh, billed.output, billed.cache_read, billed.cache_write];
        let pico = counts
            .iter()
            .zip(rates)
            .fold(0u64, |sum, (n, r)| sum.saturating_add(n.saturating_mul(r)));
        Cost {
            pico,
            unpriced: false,
        }
    }

    /// What a provider said a response cost, in USD; unpriced when that is
    /// not an amount (negative, not finite, a million or more).
    pub fn reported(usd: f64) -> Cost {
        match usd {
            0.0 => Cost::default(),
            _ => pico(usd).map_or(
                Cost {
                    pico: 0,
                    unpriced: true,
                },
                |pico| Cost {
                    pico,
                    unpriced: false,
                },
            ),
        }
    }

    /// This cost at `price`'s batch discount: what a provider's batch
    /// engine bills for the same tokens (design §11.8).
    #[must_use]
    pub fn at_batch_price(self, price: Option<&Price>) -> Cost {
        let off = price.map_or(0, |p| u64::from(p.batch_discount.min(100)));
        Cost {
            pico: self.pico / 100 * (100 - off) + self.pico % 100 * (100 - off) / 100,
            ..self
        }
    }

    /// Both summed.
    #[must_use]
    pub fn plus(self, other: Cost) -> Cost {
        Cost {
            pico: self.pico.saturating_add(other.pico),
            unpriced: self.unpriced || other.unpriced,
        }
    }

    /// In USD, or `None` when it is not known.
    pub fn usd(&self) -> Option<f64> {
        (!self.unpriced).then(|| usd(self.pico))
    }

    /// `$0.012345` for the reports' columns, `-` when not known.
    pub fn column(&self) -> String {
        match self.usd() {
            Some(v) => format!("${v:.6}"),
            None => "-".to_string(),
        }
    }
}

impl Serialize for Cost {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.usd().serialize(s)
    }
}

/// Whether `key` (a `provider/model`) is seen here for the first time in
/// this process: its missing price is said once (design §7.8).
pub fn first_unpriced(key: &str) -> bool {
    static SAID: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let mut said = SAID.lock().unwrap_or_else(PoisonError::into_inner);
    if said.iter().any(|k| k == key) {
        return false;
    }
    said.push(key.to_string());
    true
}

/// Picodollars in USD.
pub fn usd(pico: u64) -> f64 {
    pico as f64 / 1e12
}

/// USD in picodollars (a budget's `max_cost`): a positive finite amount.
pub fn pico(usd: f64) -> Option<u64> {
    (usd.is_finite() && usd > 0.0 && usd < 1e6).then(|| (usd * 1e12).round() as u64)
}

#[cfg(test)]
mod tests;
