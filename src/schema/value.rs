//! JSON values as the schema check compares them: equality with numbers
//! as exact decimals (`1` and `1.0` are the same), a hash that agrees with
//! it (so `uniqueItems` is linear), and JSON Schema's type names.

use std::collections::HashMap;
use std::collections::hash_map::{DefaultHasher, Entry};
use std::hash::{Hash, Hasher};

use serde_json::Value;

use super::number::{Decimal, hash_number};

/// The index of the first item equal to an earlier one, by hashing.
pub fn first_repeat(items: &[Value]) -> Option<usize> {
    let mut seen: HashMap<u64, Vec<usize>> = HashMap::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let mut h = DefaultHasher::new();
        hash_value(item, &mut h);
        match seen.entry(h.finish()) {
            Entry::Occupied(mut e) => {
                if e.get().iter().any(|&j| same(&items[j], item)) {
                    return Some(i);
                }
                e.get_mut().push(i);
            }
            Entry::Vacant(e) => {
                e.insert(vec![i]);
            }
        }
    }
    None
}

/// Hashes a value so that values [`same`] calls equal hash alike.
fn hash_value<H: Hasher>(v: &Value, h: &mut H) {
    match v {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => (1u8, b).hash(h),
        Value::Number(n) => {
            2u8.hash(h);
            hash_number(n, h);
        }
        Value::String(s) => (3u8, s).hash(h),
        Value::Array(a) => {
            (4u8, a.len()).hash(h);
            for x in a {
                hash_value(x, h);
            }
        }
        Value::Object(m) => {
            // serde_json's map keeps its keys sorted: the order is canonical.
            (5u8, m.len()).hash(h);
            for (k, x) in m {
                k.hash(h);
                hash_value(x, h);
            }
        }
    }
}

pub fn is_type(value: &Value, name: &str) -> bool {
    match name {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "number" => value.is_number(),
        "string" => value.is_string(),
        // 2020-12: a number with no fractional part is an integer (1.0 too).
        "integer" => matches!(value, Value::Number(n) if Decimal::of(n).is_integer()),
        _ => false,
    }
}

pub fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Object(_) => "object",
        Value::Array(_) => "array",
        Value::Number(_) => "number",
        Value::String(_) => "string",
    }
}

/// JSON equality, numbers compared as decimals (1 and 1.0 are the same).
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => Decimal::of(x) == Decimal::of(y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}
