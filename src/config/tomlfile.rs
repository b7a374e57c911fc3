//! Reading TOML documents: parse errors on one line with their position, and
//! a warning for every key that no struct reads, at any depth (a typo such
//! as `sub_agent` must not pass silently), with a "did you mean" drawn from
//! the fields of the struct that table is read into.
//!
//! The unknown keys are found by walking the parsed document against the
//! caller's map of which table is read into which struct, not by wrapping
//! serde's deserializer (serde_ignored did, and its copy of every struct's
//! reading code cost ~185 KB of the binary, issue 34).

use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use toml::de::{DeTable, DeValue};

/// The fields of the struct the table at a path (its keys, an array's
/// index as a number) is read into, or None for a table that is not a
/// struct's (a map such as `headers`, a schema): its keys are not checked.
pub type Known<'a> = &'a dyn Fn(&[&str]) -> Option<&'static [&'static str]>;

/// Parses `text` into `T`. The error is one line: the parser's message and
/// the line and column where it happened. Every key in a struct's table
/// that is not one of its fields (`known(path)`) becomes a warning,
/// `unknown key "params.temprature" (did you mean "params.temperature"?)`,
/// in the order of the paths.
pub fn parse<T: DeserializeOwned>(text: &str, known: Known) -> Result<(T, Vec<String>), String> {
    let doc = DeTable::parse(text).map_err(|e| one_line_error(text, &e))?;
    let mut warnings = Vec::new();
    unknown_keys(doc.get_ref(), &mut Vec::new(), known, &mut warnings);
    let value =
        T::deserialize(toml::Deserializer::from(doc)).map_err(|e| one_line_error(text, &e))?;
    Ok((value, warnings))
}

/// Warns, into `out`, of each key of `table` (at `path`) and below that
/// its struct does not have.
fn unknown_keys(table: &DeTable, path: &mut Vec<String>, known: Known, out: &mut Vec<String>) {
    let segments: Vec<&str> = path.iter().map(String::as_str).collect();
    let fields = known(&segments);
    for (key, value) in table {
        let key: &str = key.get_ref();
        if let Some(fields) = fields.filter(|f| !f.contains(&key)) {
            out.push(warning(path, key, fields));
            continue;
        }
        path.push(key.to_string());
        unknown_below(value.get_ref(), path, known, out);
        path.pop();
    }
}

/// [`unknown_keys`] for a value: a table's keys, an array's tables (the
/// index a segment of the path).
fn unknown_below(value: &DeValue, path: &mut Vec<String>, known: Known, out: &mut Vec<String>) {
    match value {
        DeValue::Table(table) => unknown_keys(table, path, known, out),
        DeValue::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push(i.to_string());
                unknown_below(item.get_ref(), path, known, out);
                path.pop();
            }
        }
        _ => {}
    }
}

/// `unknown key "a.b" (did you mean "a.c"?)`.
fn warning(path: &[String], key: &str, fields: &[&str]) -> String {
    let prefix: String = path.iter().map(|p| format!("{p}.")).collect();
    match nearest(key, fields) {
        Some(near) => format!("unknown key \"{prefix}{key}\" (did you mean \"{prefix}{near}\"?)"),
        None => format!("unknown key \"{prefix}{key}\""),
    }
}

/// The field names of the struct `T` deserializes into, as serde's derive
/// lists them (empty for anything that is not a struct). This is how the
/// "did you mean" candidates stay in step with the structs.
pub fn fields<T: DeserializeOwned>() -> &'static [&'static str] {
    match T::deserialize(FieldNames) {
        Err(Found(fields)) => fields,
        Ok(_) => &[],
    }
}

/// A deserializer that only asks which fields a struct has.
struct FieldNames;

/// What [`FieldNames`] stops with: the struct's fields.
#[derive(Debug)]
struct Found(&'static [&'static str]);

impl std::fmt::Display for Found {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("field names")
    }
}

impl std::error::Error for Found {}

impl de::Error for Found {
    fn custom<M: std::fmt::Display>(_: M) -> Found {
        Found(&[])
    }
}

impl<'de> Deserializer<'de> for FieldNames {
    type Error = Found;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Found> {
        Err(Found(&[]))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Found> {
        Err(Found(fields))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

fn one_line_error(text: &str, e: &toml::de::Error) -> String {
    let msg = e.message().trim().trim_end_matches('.').to_string();
    match e.span() {
        Some(span) => {
            // The parser's offsets are trusted no further than the text.
            let before = text.get(..span.start).unwrap_or(text);
            let line = before.matches('\n').count() + 1;
            let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            format!("{msg} at line {line}, column {col}")
        }
        None => msg,
    }
}

/// The known key closest to `key` by edit distance, if it is close enough to
/// be a typo.
fn nearest<'a>(key: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (strsim::levenshtein(key, k), *k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 4))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code, reason = "only the keys are tested")]
    struct Doc {
        name: Option<String>,
        #[serde(default)]
        sub_agents: Vec<String>,
        #[serde(default)]
        params: Params,
    }

    #[derive(serde::Deserialize, Default, Debug)]
    #[allow(dead_code, reason = "only the keys are tested")]
    struct Params {
        temperature: Option<f64>,
    }

    fn known(table: &[&str]) -> Option<&'static [&'static str]> {
        match table {
            [] => Some(fields::<Doc>()),
            ["params"] => Some(fields::<Params>()),
            _ => None,
        }
    }

    #[test]
    fn parse_error_is_one_line_with_position() {
        let err = parse::<Doc>("name = \"a\"\nname = \n", &known).unwrap_err();
        assert!(!err.contains('\n'), "{err}");
        assert!(err.contains("line 2"), "{err}");
    }

    #[test]
    fn unknown_keys_at_every_depth_suggest_the_near_one() {
        let (_, w) = parse::<Doc>(
            "sub_agent = []\nzzz = 1\n[params]\ntemprature = 1\n[other]\nx = 1\n",
            &known,
        )
        .unwrap();
        assert_eq!(
            w,
            [
                "unknown key \"other\"",
                "unknown key \"params.temprature\" (did you mean \"params.temperature\"?)",
                "unknown key \"sub_agent\" (did you mean \"sub_agents\"?)",
                "unknown key \"zzz\"",
            ]
        );
        assert_eq!(fields::<Params>(), ["temperature"]);
    }

    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code, reason = "only the keys are tested")]
    struct Servers {
        #[serde(default)]
        servers: Vec<Server>,
    }

    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code, reason = "only the keys are tested")]
    struct Server {
        args: Option<Vec<String>>,
        #[serde(default)]
        env: std::collections::BTreeMap<String, String>,
    }

    #[test]
    fn arrays_of_tables_are_walked_and_maps_are_not_checked() {
        let known = |table: &[&str]| match table {
            [] => Some(fields::<Servers>()),
            ["servers", _] => Some(fields::<Server>()),
            _ => None,
        };
        let text = "[[servers]]\nargs = []\n[servers.env]\nANY = \"x\"\n\
                    [[servers]]\nagrs = []\n";
        let (_, w) = parse::<Servers>(text, &known).unwrap();
        assert_eq!(
            w,
            ["unknown key \"servers.1.agrs\" (did you mean \"servers.1.args\"?)"]
        );
    }
}
