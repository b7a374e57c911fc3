//! A schema as the check walks it (design D22): nodes in one list, each
//! `true`, `false` or a schema object's keywords read, with their places in
//! the schema. `compile` builds them; `check` walks them.

use std::collections::HashMap;

use regex_automata::meta::Regex;
use serde_json::Value;

use super::number::Decimal;

/// A node's index in [`Compiled::nodes`]; the root is 0.
pub type Id = usize;

/// The JSON types `type` may name.
pub const TYPES: &[&str] = &[
    "null", "boolean", "object", "array", "number", "string", "integer",
];

/// A schema ready to check answers against.
#[derive(Debug)]
pub struct Compiled {
    pub nodes: Vec<Node>,
    /// Where each node is in the schema, as a JSON Pointer.
    pub places: Vec<String>,
    /// Nodes some `$ref` points at: the only nodes the check can reach
    /// twice for one place in the answer, so their results are remembered.
    pub shared: Vec<bool>,
}

#[derive(Debug)]
pub enum Node {
    /// `true` or `false` as a schema.
    Always(bool),
    Rules(Box<Rules>),
}

/// One schema object's keywords, read.
#[derive(Debug, Default)]
pub struct Rules {
    /// Indexes into [`TYPES`], in the order written; `None`: no `type`.
    pub types: Option<Vec<usize>>,
    pub enumeration: Option<Vec<Value>>,
    pub constant: Option<Value>,
    pub min_length: Option<u64>,
    pub max_length: Option<u64>,
    pub pattern: Option<(String, Regex)>,
    pub minimum: Option<Bound>,
    pub maximum: Option<Bound>,
    pub exclusive_minimum: Option<Bound>,
    pub exclusive_maximum: Option<Bound>,
    pub multiple_of: Option<Bound>,
    pub min_items: Option<u64>,
    pub max_items: Option<u64>,
    pub unique_items: bool,
    pub prefix_items: Vec<Id>,
    pub items: Option<Id>,
    pub contains: Option<Id>,
    pub min_contains: Option<u64>,
    pub max_contains: Option<u64>,
    pub min_properties: Option<u64>,
    pub max_properties: Option<u64>,
    pub required: Vec<String>,
    pub properties: HashMap<String, Id>,
    pub pattern_properties: Vec<(String, Regex, Id)>,
    pub additional_properties: Option<Id>,
    pub property_names: Option<Id>,
    pub dependent_required: Vec<(String, Vec<String>)>,
    pub dependent_schemas: Vec<(String, Id)>,
    pub all_of: Vec<Id>,
    pub any_of: Vec<Id>,
    pub one_of: Vec<Id>,
    pub not: Option<Id>,
    pub if_then_else: Option<(Id, Option<Id>, Option<Id>)>,
    pub reference: Option<Id>,
}

/// A numeric keyword: its exact value, and its JSON text for messages.
#[derive(Debug)]
pub struct Bound {
    pub value: Decimal,
    pub text: String,
}

impl Rules {
    /// The schemas that apply to the same place in the answer as this one.
    pub fn in_place(&self) -> impl Iterator<Item = Id> + '_ {
        let ite = self.if_then_else.iter().flat_map(|(i, t, e)| {
            std::iter::once(*i)
                .chain(t.iter().copied())
                .chain(e.iter().copied())
        });
        self.reference
            .iter()
            .copied()
            .chain(self.all_of.iter().copied())
            .chain(self.any_of.iter().copied())
            .chain(self.one_of.iter().copied())
            .chain(self.not.iter().copied())
            .chain(self.dependent_schemas.iter().map(|(_, s)| *s))
            .chain(ite)
    }
}
