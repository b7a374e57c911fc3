//! JSON numbers as exact decimals, for the schema check's numeric keywords
//! (design D22): `multipleOf`, the bounds, `integer`, and equality in
//! `enum`, `const` and `uniqueItems`.
//!
//! A number is taken as the decimal its JSON text says: an integer as
//! written, a fraction as the shortest decimal that reads back to the same
//! double (what serde_json prints, so `1234567.89` stays 1234567.89 and not
//! the binary fraction nearest to it). Everything after that is exact, so
//! `1234567.89` is a multiple of `0.01`, `1e308` one of `0.1`, and
//! `9007199254740993` not one of 2; `1` and `1.0` are the same number.

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};

use serde_json::Number;

/// `digits × 10^exp`, negative when `neg`. `digits` has no leading or
/// trailing zeros, so every number has one form; zero has no digits (and
/// is never negative).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Decimal {
    neg: bool,
    digits: Vec<u8>,
    exp: i64,
}

impl Decimal {
    /// The decimal a JSON number's text says.
    pub fn of(n: &Number) -> Decimal {
        parse(&n.to_string()).unwrap_or_else(Decimal::zero)
    }

    fn zero() -> Decimal {
        Decimal {
            neg: false,
            digits: Vec::new(),
            exp: 0,
        }
    }

    pub fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    pub fn is_negative(&self) -> bool {
        self.neg
    }

    /// Whether it has no fractional part (`1.0` and `1e308` do not).
    pub fn is_integer(&self) -> bool {
        self.exp >= 0 || self.is_zero()
    }

    /// A non-negative integer as a count, saturating; `None` otherwise.
    pub fn as_count(&self) -> Option<u64> {
        if self.neg || !self.is_integer() {
            return None;
        }
        let mut n: u64 = 0;
        for d in &self.digits {
            n = n.saturating_mul(10).saturating_add(u64::from(*d));
        }
        for _ in 0..self.exp.min(20) {
            n = n.saturating_mul(10);
        }
        Some(n)
    }

    /// Whether `self` is an integer multiple of `m` (`m` above zero).
    pub fn is_multiple_of(&self, m: &Decimal) -> bool {
        if self.is_zero() {
            return true;
        }
        let (Some(n), Some(d)) = (value(&self.digits), value(&m.digits)) else {
            return false;
        };
        if d == 0 {
            return false;
        }
        let shift = self.exp.saturating_sub(m.exp);
        if shift >= 0 {
            // n × 10^shift mod d, without forming 10^shift.
            let d = d as u128;
            let ten = pow_mod(10, shift.unsigned_abs(), d);
            (n as u128 % d) * ten % d == 0
        } else {
            // n must be divisible by d × 10^-shift.
            let mut divisor = d as u128;
            for _ in 0..shift.unsigned_abs() {
                match divisor.checked_mul(10) {
                    Some(v) if v <= n as u128 => divisor = v,
                    // Already larger than n: only zero would divide.
                    _ => return false,
                }
            }
            n as u128 % divisor == 0
        }
    }
}

impl Ord for Decimal {
    fn cmp(&self, other: &Decimal) -> Ordering {
        match (self.neg, other.neg) {
            (false, true) => return Ordering::Greater,
            (true, false) => return Ordering::Less,
            _ => {}
        }
        let magnitude = magnitude(self, other);
        if self.neg {
            magnitude.reverse()
        } else {
            magnitude
        }
    }
}

impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Decimal) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Hashes a JSON number so that numbers equal as decimals hash alike.
pub fn hash_number<H: Hasher>(n: &Number, state: &mut H) {
    Decimal::of(n).hash(state);
}

/// Compares absolute values.
fn magnitude(a: &Decimal, b: &Decimal) -> Ordering {
    match (a.is_zero(), b.is_zero()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Less,
        (false, true) => return Ordering::Greater,
        _ => {}
    }
    // The place of the leading digit decides, then the digits themselves.
    let top = |d: &Decimal| d.exp.saturating_add(d.digits.len() as i64);
    top(a).cmp(&top(b)).then_with(|| {
        let len = a.digits.len().max(b.digits.len());
        let digit = |d: &Decimal, i: usize| d.digits.get(i).copied().unwrap_or(0);
        (0..len)
            .map(|i| digit(a, i).cmp(&digit(b, i)))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    })
}

/// The digits as an integer, when they fit in 64 bits (they always do for
/// what serde_json holds: at most 20 digits for an integer, 17 for a double).
fn value(digits: &[u8]) -> Option<u64> {
    let mut n: u64 = 0;
    for d in digits {
        n = n.checked_mul(10)?.checked_add(u64::from(*d))?;
    }
    Some(n)
}

/// `base^exp mod m`, by squaring; `m` fits in 64 bits, so no product overflows.
fn pow_mod(base: u128, mut exp: u64, m: u128) -> u128 {
    let mut result = 1 % m;
    let mut b = base % m;
    while exp > 0 {
        if exp & 1 == 1 {
            result = result * b % m;
        }
        b = b * b % m;
        exp >>= 1;
    }
    result
}

/// Reads `-?digits(.digits)?([eE][+-]?digits)?` (serde_json's own output).
fn parse(text: &str) -> Option<Decimal> {
    let (neg, rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text),
    };
    let (mantissa, exp) = match rest.find(['e', 'E']) {
        Some(i) => (&rest[..i], rest[i + 1..].parse::<i64>().ok()?),
        None => (rest, 0),
    };
    let (whole, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let mut digits: Vec<u8> = Vec::with_capacity(whole.len() + frac.len());
    for c in whole.bytes().chain(frac.bytes()) {
        if !c.is_ascii_digit() {
            return None;
        }
        digits.push(c - b'0');
    }
    let mut exp = exp.checked_sub(i64::try_from(frac.len()).ok()?)?;
    let lead = digits.iter().take_while(|d| **d == 0).count();
    digits.drain(..lead);
    while digits.last() == Some(&0) {
        digits.pop();
        exp = exp.checked_add(1)?;
    }
    if digits.is_empty() {
        return Some(Decimal::zero());
    }
    Some(Decimal { neg, digits, exp })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn d(v: serde_json::Value) -> Decimal {
        match v {
            serde_json::Value::Number(n) => Decimal::of(&n),
            _ => panic!("not a number"),
        }
    }

    #[test]
    fn multiples_are_decided_on_the_decimal_written() {
        let cases = [
            (json!(1234567.89), json!(0.01), true),
            (json!(1e308), json!(0.1), true),
            (json!(9007199254740993u64), json!(2), false),
            (json!(9007199254740992u64), json!(2), true),
            (json!(1.5), json!(0.5), true),
            (json!(1.2), json!(0.5), false),
            (json!(0.0075), json!(0.0001), true),
            (json!(0.00751), json!(0.0001), false),
            (json!(-4), json!(2), true),
            (json!(0), json!(0.3), true),
            (json!(1e-300), json!(1e300), false),
            (json!(u64::MAX), json!(5), true),
            (json!(19.99), json!(0.01), true),
        ];
        for (n, m, want) in cases {
            assert_eq!(
                d(n.clone()).is_multiple_of(&d(m.clone())),
                want,
                "{n} / {m}"
            );
        }
    }

    #[test]
    fn numbers_compare_and_equal_by_value() {
        assert_eq!(d(json!(1)), d(json!(1.0)));
        assert_ne!(d(json!(9007199254740993u64)), d(json!(9007199254740992.0)));
        assert!(d(json!(-2)) < d(json!(-1.5)));
        assert!(d(json!(0.1)) < d(json!(0.11)));
        assert!(d(json!(100)) > d(json!(99.999)));
        assert!(d(json!(-0.0)) == d(json!(0)));
        assert!(d(json!(1e308)) > d(json!(u64::MAX)));
    }

    #[test]
    fn integers_and_counts() {
        assert!(d(json!(2.0)).is_integer());
        assert!(d(json!(1e308)).is_integer());
        assert!(!d(json!(2.5)).is_integer());
        assert_eq!(d(json!(2.0)).as_count(), Some(2));
        assert_eq!(d(json!(1e308)).as_count(), Some(u64::MAX));
        assert_eq!(d(json!(-1)).as_count(), None);
        assert_eq!(d(json!(1.5)).as_count(), None);
    }
}
