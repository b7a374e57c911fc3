//! The part of JSON Schema (draft 2020-12) that axe checks answers against
//! (design D22): a schema is first read whole ([`lint`]), so a keyword outside
//! the subset is refused up front instead of silently not checked; then an
//! answer is checked ([`errors`]) and every failure named with its place.
//!
//! Why our own: the well-kept 2020-12 validators cost 1.1 to 2.8 MB of
//! binary (measured), and axe stays under 4 MiB. The subset is what the
//! providers' own structured-output modes accept, plus combinators;
//! `pattern` uses the regex engine globset already brings.

use serde_json::{Map, Value};

/// Keywords that only annotate: accepted, never checked (draft 2020-12
/// makes `format` an annotation unless a vocabulary asks otherwise).
const ANNOTATIONS: &[&str] = &[
    "$schema",
    "$id",
    "$comment",
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "format",
    "contentEncoding",
    "contentMediaType",
];

/// Keywords whose value is one schema.
const ONE_SCHEMA: &[&str] = &[
    "additionalProperties",
    "propertyNames",
    "items",
    "contains",
    "not",
    "if",
    "then",
    "else",
];

/// Keywords whose value is a non-empty array of schemas.
const SCHEMA_LISTS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];

/// Keywords whose value is an object of schemas.
const SCHEMA_MAPS: &[&str] = &["properties", "$defs", "definitions"];

/// Keywords whose value is a count.
const COUNTS: &[&str] = &[
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "minContains",
    "maxContains",
];

/// Keywords whose value is a number.
const BOUNDS: &[&str] = &[
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
];

/// The JSON types `type` may name.
const TYPES: &[&str] = &[
    "null", "boolean", "object", "array", "number", "string", "integer",
];

/// How deep `$ref`s and nested schemas may go while checking: a schema
/// that refers to itself without consuming the answer stops here.
const MAX_DEPTH: usize = 64;

/// Checks that `schema` is a schema axe can check answers against: every
/// keyword known and well-formed, every `$ref` local and resolvable. The
/// error names the place in the schema (`/properties/a`) and the problem.
pub fn lint(schema: &Value) -> Result<(), String> {
    lint_at(schema, schema, "")
}

fn lint_at(root: &Value, schema: &Value, at: &str) -> Result<(), String> {
    let map = match schema {
        Value::Bool(_) => return Ok(()),
        Value::Object(map) => map,
        _ => return Err(format!("{}: a schema is an object or a boolean", place(at))),
    };
    for (key, value) in map {
        let here = format!("{at}/{}", escape(key));
        let bad = |what: &str| Err(format!("{}: {what}", place(&here)));
        match key.as_str() {
            k if ANNOTATIONS.contains(&k) => {}
            "type" => {
                let names: Vec<&Value> = match value {
                    Value::Array(list) if !list.is_empty() => list.iter().collect(),
                    Value::String(_) => vec![value],
                    _ => return bad("must be a type name or a non-empty list of them"),
                };
                for n in names {
                    if !n.as_str().is_some_and(|n| TYPES.contains(&n)) {
                        return bad(&format!("unknown type {n}"));
                    }
                }
            }
            "enum" => {
                if !value.is_array() {
                    return bad("must be an array");
                }
            }
            "const" => {}
            "pattern" => {
                let Some(p) = value.as_str() else {
                    return bad("must be a string");
                };
                if let Err(e) = regex(p) {
                    return bad(&format!("not a pattern axe can use: {e}"));
                }
            }
            "required" => {
                if !value
                    .as_array()
                    .is_some_and(|l| l.iter().all(Value::is_string))
                {
                    return bad("must be an array of property names");
                }
            }
            "uniqueItems" => {
                if !value.is_boolean() {
                    return bad("must be true or false");
                }
            }
            k if COUNTS.contains(&k) => {
                if value.as_u64().is_none() {
                    return bad("must be a non-negative integer");
                }
            }
            k if BOUNDS.contains(&k) => {
                let positive = k != "multipleOf" || value.as_f64().is_some_and(|n| n > 0.0);
                if !value.is_number() || !positive {
                    return bad("must be a number (multipleOf: above 0)");
                }
            }
            "$ref" => {
                let target = value.as_str().and_then(|r| r.strip_prefix('#'));
                match target {
                    Some(pointer) if root.pointer(pointer).is_some() => {}
                    _ => {
                        return bad(
                            "only a reference inside this schema (\"#/$defs/name\") is supported",
                        );
                    }
                }
            }
            k if ONE_SCHEMA.contains(&k) => lint_at(root, value, &here)?,
            k if SCHEMA_LISTS.contains(&k) => match value.as_array() {
                Some(list) if !list.is_empty() => {
                    for (i, s) in list.iter().enumerate() {
                        lint_at(root, s, &format!("{here}/{i}"))?;
                    }
                }
                _ => return bad("must be a non-empty array of schemas"),
            },
            k if SCHEMA_MAPS.contains(&k) => match value.as_object() {
                Some(m) => {
                    for (name, s) in m {
                        lint_at(root, s, &format!("{here}/{}", escape(name)))?;
                    }
                }
                None => return bad("must be an object of schemas"),
            },
            other => {
                return Err(format!(
                    "{}: keyword \"{other}\" is not one axe checks",
                    place(&here)
                ));
            }
        }
    }
    Ok(())
}

/// Every way `value` fails `schema` (a schema [`lint`] accepted), each as
/// `at <place in the answer>: <what>`; empty when it matches.
pub fn errors(root: &Value, value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    check(root, root, value, "", 0, &mut out);
    out
}

fn check(
    root: &Value,
    schema: &Value,
    value: &Value,
    at: &str,
    depth: usize,
    out: &mut Vec<String>,
) {
    let map = match schema {
        Value::Bool(true) => return,
        Value::Bool(false) => return push(out, at, "no value is allowed here".into()),
        Value::Object(map) => map,
        _ => return,
    };
    if depth > MAX_DEPTH {
        return push(out, at, "the schema nests too deep (a $ref loop?)".into());
    }
    let deeper = depth + 1;
    if let Some(target) = map.get("$ref").and_then(Value::as_str) {
        if let Some(s) = target.strip_prefix('#').and_then(|p| root.pointer(p)) {
            check(root, s, value, at, deeper, out);
        }
    }
    let mut fail = |what: String| push(out, at, what);
    if let Some(t) = map.get("type") {
        let names: Vec<&str> = match t {
            Value::Array(l) => l.iter().filter_map(Value::as_str).collect(),
            _ => t.as_str().into_iter().collect(),
        };
        if !names.iter().any(|n| is_type(value, n)) {
            return fail(format!(
                "expected {}, got {}",
                names.join(" or "),
                type_of(value)
            ));
        }
    }
    if let Some(allowed) = map.get("enum").and_then(Value::as_array) {
        if !allowed.iter().any(|a| same(a, value)) {
            let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
            fail(format!("{value} is not one of {}", list.join(", ")));
        }
    }
    if let Some(c) = map.get("const") {
        if !same(c, value) {
            fail(format!("must be {c}"));
        }
    }
    match value {
        Value::String(s) => {
            let n = s.chars().count() as u64;
            count_bounds(map, "minLength", "maxLength", n, "characters", &mut fail);
            if let Some(p) = map.get("pattern").and_then(Value::as_str)
                && regex(p).is_ok_and(|re| !re.is_match(s.as_bytes()))
            {
                fail(format!("{value} does not match the pattern {p:?}"));
            }
        }
        Value::Number(_) => {
            let n = value.as_f64().unwrap_or(0.0);
            let bound = |k: &str| map.get(k).and_then(Value::as_f64);
            if bound("minimum").is_some_and(|m| n < m) {
                fail(format!("{value} is less than {}", map["minimum"]));
            }
            if bound("maximum").is_some_and(|m| n > m) {
                fail(format!("{value} is more than {}", map["maximum"]));
            }
            if bound("exclusiveMinimum").is_some_and(|m| n <= m) {
                fail(format!(
                    "{value} is not more than {}",
                    map["exclusiveMinimum"]
                ));
            }
            if bound("exclusiveMaximum").is_some_and(|m| n >= m) {
                fail(format!(
                    "{value} is not less than {}",
                    map["exclusiveMaximum"]
                ));
            }
            if let Some(m) = bound("multipleOf") {
                let q = n / m;
                if !q.is_finite() || (q - q.round()).abs() > 1e-9 {
                    fail(format!(
                        "{value} is not a multiple of {}",
                        map["multipleOf"]
                    ));
                }
            }
        }
        Value::Array(items) => {
            let n = items.len() as u64;
            count_bounds(map, "minItems", "maxItems", n, "items", &mut fail);
            if map.get("uniqueItems") == Some(&Value::Bool(true)) {
                for (i, a) in items.iter().enumerate() {
                    if items[..i].iter().any(|b| same(a, b)) {
                        fail(format!("item {i} repeats an earlier one"));
                        break;
                    }
                }
            }
        }
        Value::Object(fields) => {
            let n = fields.len() as u64;
            count_bounds(
                map,
                "minProperties",
                "maxProperties",
                n,
                "properties",
                &mut fail,
            );
            for name in map
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(name) = name.as_str().filter(|n| !fields.contains_key(*n)) {
                    fail(format!("missing property \"{name}\""));
                }
            }
        }
        _ => {}
    }
    match value {
        Value::Array(items) => check_items(root, map, items, at, deeper, out),
        Value::Object(fields) => check_fields(root, map, fields, at, deeper, out),
        _ => {}
    }
    check_combinators(root, map, value, at, deeper, out);
}

/// A schema's `pattern`, found anywhere in the text as JSON Schema says.
/// Classes are ASCII (`\d` is 0-9, as in ECMAScript), which is what the
/// regex engine already in the build offers without Unicode tables.
fn regex(pattern: &str) -> Result<regex_automata::meta::Regex, String> {
    let syntax = regex_automata::util::syntax::Config::new()
        .unicode(false)
        .utf8(false);
    regex_automata::meta::Regex::builder()
        .syntax(syntax)
        .build(pattern)
        .map_err(|e| crate::text::one_line(&e.to_string()))
}

/// `prefixItems`, `items` and `contains` over an array.
fn check_items(
    root: &Value,
    map: &Map<String, Value>,
    items: &[Value],
    at: &str,
    depth: usize,
    out: &mut Vec<String>,
) {
    let prefix = map.get("prefixItems").and_then(Value::as_array);
    let skip = prefix.map_or(0, Vec::len);
    for (i, item) in items.iter().enumerate() {
        let here = format!("{at}/{i}");
        match prefix.and_then(|p| p.get(i)) {
            Some(s) => check(root, s, item, &here, depth, out),
            None if i >= skip => {
                if let Some(s) = map.get("items") {
                    check(root, s, item, &here, depth, out);
                }
            }
            None => {}
        }
    }
    if let Some(s) = map.get("contains") {
        let matching = items.iter().filter(|v| passes(root, s, v, depth)).count() as u64;
        let min = map.get("minContains").and_then(Value::as_u64).unwrap_or(1);
        let max = map.get("maxContains").and_then(Value::as_u64);
        if matching < min || max.is_some_and(|m| matching > m) {
            let wanted = max.map_or(" or more".to_string(), |m| format!(" to {m}"));
            push(
                out,
                at,
                format!("{matching} items match \"contains\", wanted {min}{wanted}"),
            );
        }
    }
}

/// `properties`, `additionalProperties` and `propertyNames` over an object.
fn check_fields(
    root: &Value,
    map: &Map<String, Value>,
    fields: &Map<String, Value>,
    at: &str,
    depth: usize,
    out: &mut Vec<String>,
) {
    let properties = map.get("properties").and_then(Value::as_object);
    for (name, v) in fields {
        let here = format!("{at}/{}", escape(name));
        match properties.and_then(|p| p.get(name)) {
            Some(s) => check(root, s, v, &here, depth, out),
            None => match map.get("additionalProperties") {
                Some(Value::Bool(false)) => {
                    push(out, at, format!("property \"{name}\" is not allowed"));
                }
                Some(s) => check(root, s, v, &here, depth, out),
                None => {}
            },
        }
        if let Some(s) = map.get("propertyNames") {
            check(root, s, &Value::String(name.clone()), &here, depth, out);
        }
    }
}

/// `allOf`, `anyOf`, `oneOf`, `not` and `if`/`then`/`else`.
fn check_combinators(
    root: &Value,
    map: &Map<String, Value>,
    value: &Value,
    at: &str,
    depth: usize,
    out: &mut Vec<String>,
) {
    let list = |k: &str| map.get(k).and_then(Value::as_array);
    for s in list("allOf").into_iter().flatten() {
        check(root, s, value, at, depth, out);
    }
    if let Some(options) = list("anyOf")
        && !options.iter().any(|s| passes(root, s, value, depth))
    {
        let n = options.len();
        push(out, at, format!("matches none of the {n} schemas of anyOf"));
    }
    if let Some(options) = list("oneOf") {
        let n = options
            .iter()
            .filter(|s| passes(root, s, value, depth))
            .count();
        if n != 1 {
            push(
                out,
                at,
                format!("matches {n} of the schemas of oneOf, not exactly one"),
            );
        }
    }
    if let Some(s) = map.get("not")
        && passes(root, s, value, depth)
    {
        push(out, at, "matches the schema of \"not\"".into());
    }
    if let Some(s) = map.get("if") {
        let branch = if passes(root, s, value, depth) {
            map.get("then")
        } else {
            map.get("else")
        };
        if let Some(b) = branch {
            check(root, b, value, at, depth, out);
        }
    }
}

fn passes(root: &Value, schema: &Value, value: &Value, depth: usize) -> bool {
    let mut found = Vec::new();
    check(root, schema, value, "", depth, &mut found);
    found.is_empty()
}

fn count_bounds(
    map: &Map<String, Value>,
    min: &str,
    max: &str,
    n: u64,
    what: &str,
    fail: &mut impl FnMut(String),
) {
    if let Some(m) = map.get(min).and_then(Value::as_u64).filter(|m| n < *m) {
        fail(format!("{n} {what}, fewer than {m}"));
    }
    if let Some(m) = map.get(max).and_then(Value::as_u64).filter(|m| n > *m) {
        fail(format!("{n} {what}, more than {m}"));
    }
}

fn is_type(value: &Value, name: &str) -> bool {
    match name {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "number" => value.is_number(),
        "string" => value.is_string(),
        // 2020-12: a number with no fractional part is an integer (1.0 too).
        "integer" => {
            value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Object(_) => "object",
        Value::Array(_) => "array",
        Value::Number(_) => "number",
        Value::String(_) => "string",
    }
}

/// JSON equality, numbers compared by value (1 and 1.0 are the same).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// A property name as a JSON Pointer token.
fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// One problem with the answer, at `at`.
fn push(out: &mut Vec<String>, at: &str, what: String) {
    out.push(format!("at {}: {what}", place(at)));
}

/// `/` for the whole document.
fn place(at: &str) -> &str {
    if at.is_empty() { "/" } else { at }
}
