//! Reading TOML documents: parse errors on one line with their position, and
//! a warning for every key that serde did not use, at any depth (a typo such
//! as `sub_agent` must not pass silently), with a "did you mean" drawn from
//! the fields of the struct that table is read into.

use serde::de::{self, DeserializeOwned, Deserializer, Visitor};

/// Parses `text` into `T`. The error is one line: the parser's message and
/// the line and column where it happened. Every key serde ignored becomes a
/// warning, `unknown key "params.temprature" (did you mean
/// "params.temperature"?)`, the suggestion taken from `known(table)`, the
/// fields of the table the key was in (`""` for the top level).
pub fn parse<T: DeserializeOwned>(
    text: &str,
    known: &dyn Fn(&str) -> &'static [&'static str],
) -> Result<(T, Vec<String>), String> {
    let doc = toml::Deserializer::parse(text).map_err(|e| one_line_error(text, &e))?;
    let mut ignored = Vec::new();
    let value: T = serde_ignored::deserialize(doc, |path| ignored.push(path.to_string()))
        .map_err(|e| one_line_error(text, &e))?;
    let warnings = ignored
        .into_iter()
        .map(|path| {
            // A table read through a hand-written `Deserialize` (a value
            // that is a name or a table) shows as a `?` segment.
            let path = path.replace(".?.", ".");
            let (table, key) = path.rsplit_once('.').unwrap_or(("", &path));
            let prefix = if table.is_empty() {
                String::new()
            } else {
                format!("{table}.")
            };
            match nearest(key, known(table)) {
                Some(near) => {
                    format!("unknown key \"{path}\" (did you mean \"{prefix}{near}\"?)")
                }
                None => format!("unknown key \"{path}\""),
            }
        })
        .collect();
    Ok((value, warnings))
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

    fn known(table: &str) -> &'static [&'static str] {
        match table {
            "" => fields::<Doc>(),
            "params" => fields::<Params>(),
            _ => &[],
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
}
