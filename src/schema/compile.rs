//! An output schema read whole and turned into the nodes the check walks
//! (`nodes`, design D22): every keyword known and well-formed (a keyword
//! outside the subset is refused up front, never silently not checked),
//! patterns compiled once, every `$ref` resolved to a schema that passed
//! these checks, and a schema whose references loop without reaching into
//! the answer refused, so that checking an answer always ends.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::number::Decimal;
use super::pattern::regex;
// The files that walk the nodes name them from here, where they are built.
pub use super::nodes::{Bound, Compiled, Id, Node, Rules, TYPES};

/// Keywords that only annotate: accepted, never checked (draft 2020-12
/// makes `format` and the content keywords annotations unless a vocabulary
/// asks otherwise).
const ANNOTATIONS: &[&str] = &[
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
    "contentSchema",
];

/// The meta-schemas a `$schema` may name: the drafts whose keywords mean, in
/// the subset, what 2020-12 says. Another one may give them other meanings
/// (or none), so it is refused rather than guessed at.
const META_SCHEMAS: &[&str] = &[
    "https://json-schema.org/draft/2020-12/schema",
    "https://json-schema.org/draft/2019-09/schema",
    "http://json-schema.org/draft-07/schema",
];

/// A problem with a schema, with its place: `/properties/a: what`.
struct Placed(String);

/// A problem found while reading one keyword: with the keyword's own
/// place still to be added, or found deeper and placed already.
enum Fault {
    Here(String),
    Deeper(Placed),
}

impl From<String> for Fault {
    fn from(what: String) -> Fault {
        Fault::Here(what)
    }
}

impl From<&str> for Fault {
    fn from(what: &str) -> Fault {
        Fault::Here(what.to_string())
    }
}

impl From<Placed> for Fault {
    fn from(p: Placed) -> Fault {
        Fault::Deeper(p)
    }
}

/// Reads `schema` whole. The error names the place in the schema
/// (`/properties/a`) and the problem.
pub fn compile(schema: &Value) -> Result<Compiled, String> {
    let mut b = Builder {
        root_id: schema
            .get("$id")
            .and_then(Value::as_str)
            .map(str::to_string),
        ..Builder::default()
    };
    b.schema(schema, "").map_err(|Placed(e)| e)?;
    b.resolve_refs()?;
    let compiled = Compiled {
        nodes: b.nodes,
        places: b.places,
        shared: b.shared,
    };
    super::chains::check(&compiled)?;
    Ok(compiled)
}

#[derive(Default)]
struct Builder {
    nodes: Vec<Node>,
    places: Vec<String>,
    shared: Vec<bool>,
    by_place: HashMap<String, Id>,
    anchors: HashMap<String, Id>,
    /// `$ref`s met, resolved once every schema has a node.
    refs: Vec<(Id, String)>,
    root_id: Option<String>,
}

impl Builder {
    fn schema(&mut self, schema: &Value, at: &str) -> Result<Id, Placed> {
        let id = self.nodes.len();
        self.nodes.push(Node::Always(true));
        self.places.push(at.to_string());
        self.shared.push(false);
        self.by_place.insert(at.to_string(), id);
        let map = match schema {
            Value::Bool(b) => {
                self.nodes[id] = Node::Always(*b);
                return Ok(id);
            }
            Value::Object(map) => map,
            _ => {
                let what = format!("{}: a schema is an object or a boolean", place(at));
                return Err(Placed(what));
            }
        };
        let mut rules = Rules::default();
        for (key, value) in map {
            let here = format!("{at}/{}", escape(key));
            self.keyword(&mut rules, id, key, value, &here, map)
                .map_err(|fault| match fault {
                    Fault::Here(what) => Placed(format!("{}: {what}", place(&here))),
                    Fault::Deeper(placed) => placed,
                })?;
        }
        self.nodes[id] = Node::Rules(Box::new(rules));
        Ok(id)
    }

    /// Reads one keyword of the schema object `map` (node `id`) into `r`.
    fn keyword(
        &mut self,
        r: &mut Rules,
        id: Id,
        key: &str,
        value: &Value,
        here: &str,
        map: &Map<String, Value>,
    ) -> Result<(), Fault> {
        match key {
            k if ANNOTATIONS.contains(&k) => Ok(()),
            _ if self.core(id, key, value)? => Ok(()),
            _ if assertion(r, key, value)? => Ok(()),
            _ => self.applicator(r, key, value, here, map),
        }
    }

    /// The keywords about the schema itself: its dialect, its `$id`, its
    /// anchors and its `$ref`, kept to resolve once every node is built;
    /// false for any other keyword.
    fn core(&mut self, id: Id, key: &str, value: &Value) -> Result<bool, Fault> {
        match key {
            "$schema" => {
                let uri = value.as_str().ok_or("must be a string")?;
                let uri = uri.strip_suffix('#').unwrap_or(uri);
                if !META_SCHEMAS.contains(&uri) {
                    return Err(format!(
                        "{} is not a meta-schema axe knows (2020-12, 2019-09 or draft-07)",
                        super::quote::text(uri)
                    )
                    .into());
                }
            }
            "$id" if id == 0 => {}
            "$id" => return Err("an embedded schema ($id below the root) is not supported".into()),
            "$anchor" | "$dynamicAnchor" => {
                let name = value.as_str().ok_or("must be a string")?;
                self.anchors.insert(name.to_string(), id);
            }
            "$ref" => {
                let target = value.as_str().ok_or("must be a string")?;
                self.refs.push((id, target.to_string()));
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The keywords that apply schemas of their own to parts of the value
    /// (items, properties, `if`/`then`/`else`, the lists), and `$defs`,
    /// whose schemas are read for `$ref`s to reach; any other keyword is
    /// refused.
    fn applicator(
        &mut self,
        r: &mut Rules,
        key: &str,
        value: &Value,
        here: &str,
        map: &Map<String, Value>,
    ) -> Result<(), Fault> {
        match key {
            "items" if value.is_array() => {
                return Err(
                    "must be a schema (a list of schemas is prefixItems in 2020-12)".into(),
                );
            }
            "items" => r.items = Some(self.schema(value, here)?),
            "contains" => r.contains = Some(self.schema(value, here)?),
            "additionalProperties" => r.additional_properties = Some(self.schema(value, here)?),
            "propertyNames" => r.property_names = Some(self.schema(value, here)?),
            "not" => r.not = Some(self.schema(value, here)?),
            "if" => {
                let cond = self.schema(value, here)?;
                r.if_then_else = Some((cond, None, None));
                // `then` and `else` are read with `if`, whatever their order.
                for (k, slot) in [("then", 1), ("else", 2)] {
                    if let Some(s) = map.get(k) {
                        let parent = here.strip_suffix("/if").unwrap_or(here);
                        let node = self.schema(s, &format!("{parent}/{k}"))?;
                        if let Some(ite) = r.if_then_else.as_mut() {
                            if slot == 1 {
                                ite.1 = Some(node);
                            } else {
                                ite.2 = Some(node);
                            }
                        }
                    }
                }
            }
            // Without `if` they do nothing, but are still schemas.
            "then" | "else" if !map.contains_key("if") => {
                self.schema(value, here)?;
            }
            "then" | "else" => {}
            "allOf" => r.all_of = self.list(value, here)?,
            "anyOf" => r.any_of = self.list(value, here)?,
            "oneOf" => r.one_of = self.list(value, here)?,
            "prefixItems" => r.prefix_items = self.list(value, here)?,
            "properties" => r.properties = self.map(value, here)?.into_iter().collect(),
            "$defs" | "definitions" => {
                self.map(value, here)?;
            }
            "dependentSchemas" => r.dependent_schemas = self.map(value, here)?,
            "patternProperties" => {
                for (p, node) in self.map(value, here)? {
                    let re = regex(&p).map_err(|e| format!("{}: {e}", escape(&p)))?;
                    r.pattern_properties.push((p, re, node));
                }
            }
            "dependentRequired" => {
                let m = value.as_object().ok_or("must be an object of name lists")?;
                for (name, list) in m {
                    r.dependent_required.push((name.clone(), names(list)?));
                }
            }
            other => return Err(format!("keyword \"{other}\" is not one axe checks").into()),
        }
        Ok(())
    }

    fn list(&mut self, value: &Value, here: &str) -> Result<Vec<Id>, Fault> {
        match value.as_array() {
            Some(list) if !list.is_empty() => list
                .iter()
                .enumerate()
                .map(|(i, s)| Ok(self.schema(s, &format!("{here}/{i}"))?))
                .collect(),
            _ => Err("must be a non-empty array of schemas".into()),
        }
    }

    fn map(&mut self, value: &Value, here: &str) -> Result<Vec<(String, Id)>, Fault> {
        let m = value.as_object().ok_or("must be an object of schemas")?;
        m.iter()
            .map(|(name, s)| {
                Ok((
                    name.clone(),
                    self.schema(s, &format!("{here}/{}", escape(name)))?,
                ))
            })
            .collect()
    }

    /// Points every `$ref` at its node: a JSON Pointer (`#/$defs/a`,
    /// percent-encoded as a URI fragment) or an anchor (`#name`), into this
    /// document; and only at a place that is a schema this builder read.
    fn resolve_refs(&mut self) -> Result<(), String> {
        for (id, target) in std::mem::take(&mut self.refs) {
            let fragment = match (target.split_once('#'), &self.root_id) {
                (Some(("", f)), _) => Some(f),
                (Some((base, f)), Some(root)) if base == root => Some(f),
                _ => None,
            };
            let node = fragment.and_then(|f| {
                let f = percent_decode(f);
                if f.is_empty() || f.starts_with('/') {
                    self.by_place.get(&f).copied()
                } else {
                    self.anchors.get(&f).copied()
                }
            });
            let Some(node) = node else {
                return Err(format!(
                    "{}/$ref: {target:?} is not a schema in this document: only a reference \
                     inside this schema (\"#/$defs/name\") is supported",
                    self.places[id]
                ));
            };
            self.shared[node] = true;
            if let Node::Rules(r) = &mut self.nodes[id] {
                r.reference = Some(node);
            }
        }
        Ok(())
    }
}

/// The keywords that check the value itself (type, enum, const, pattern,
/// required, the counts and the numeric bounds), read into `r`; false for
/// any other keyword.
fn assertion(r: &mut Rules, key: &str, value: &Value) -> Result<bool, Fault> {
    match key {
        "type" => r.types = Some(types(value)?),
        "enum" => r.enumeration = Some(value.as_array().ok_or("must be an array")?.clone()),
        "const" => r.constant = Some(value.clone()),
        "pattern" => {
            let p = value.as_str().ok_or("must be a string")?;
            r.pattern = Some((p.to_string(), regex(p)?));
        }
        "required" => r.required = names(value)?,
        "uniqueItems" => r.unique_items = value.as_bool().ok_or("must be true or false")?,
        "minLength" => r.min_length = Some(count(value)?),
        "maxLength" => r.max_length = Some(count(value)?),
        "minItems" => r.min_items = Some(count(value)?),
        "maxItems" => r.max_items = Some(count(value)?),
        "minProperties" => r.min_properties = Some(count(value)?),
        "maxProperties" => r.max_properties = Some(count(value)?),
        "minContains" => r.min_contains = Some(count(value)?),
        "maxContains" => r.max_contains = Some(count(value)?),
        "minimum" => r.minimum = Some(bound(value)?),
        "maximum" => r.maximum = Some(bound(value)?),
        "exclusiveMinimum" => r.exclusive_minimum = Some(bound(value)?),
        "exclusiveMaximum" => r.exclusive_maximum = Some(bound(value)?),
        "multipleOf" => {
            let b = bound(value)?;
            if b.value.is_zero() || b.value.is_negative() {
                return Err("must be a number above 0".into());
            }
            r.multiple_of = Some(b);
        }
        _ => return Ok(false),
    }
    Ok(true)
}

fn types(value: &Value) -> Result<Vec<usize>, String> {
    let names: Vec<&Value> = match value {
        Value::Array(list) if !list.is_empty() => list.iter().collect(),
        Value::String(_) => vec![value],
        _ => return Err("must be a type name or a non-empty list of them".into()),
    };
    names
        .into_iter()
        .map(|n| {
            n.as_str()
                .and_then(|n| TYPES.iter().position(|t| *t == n))
                .ok_or_else(|| format!("unknown type {n}"))
        })
        .collect()
}

fn names(value: &Value) -> Result<Vec<String>, String> {
    value
        .as_array()
        .and_then(|l| l.iter().map(|n| n.as_str().map(str::to_string)).collect())
        .ok_or_else(|| "must be an array of property names".into())
}

/// A count: a non-negative integer, `2.0` included (2020-12 allows it).
fn count(value: &Value) -> Result<u64, String> {
    match value {
        Value::Number(n) => Decimal::of(n).as_count(),
        _ => None,
    }
    .ok_or_else(|| "must be a non-negative integer".into())
}

fn bound(value: &Value) -> Result<Bound, String> {
    match value {
        Value::Number(n) => Ok(Bound {
            value: Decimal::of(n),
            text: value.to_string(),
        }),
        _ => Err("must be a number".into()),
    }
}

/// A URI fragment with its `%XX` escapes decoded (an invalid one is kept).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A property name as a JSON Pointer token.
pub fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// `/` for the whole document.
pub fn place(at: &str) -> &str {
    if at.is_empty() { "/" } else { at }
}
