//! Prompt templates (design §11.3): `{{KEY}}` in the top-level agent's
//! `system_prompt`, its skill and `--prompt` is filled from `--var
//! KEY=VALUE` and a batch input's variables. A text is parsed once
//! ([`Template::parse`]) and filled per input; an unknown key is an error
//! that names it (exit 2), never an empty string. `{{{{` is a literal `{{`.
//! Anything else that opens with `{{` but is not a key and `}}` (`{{ .Go }}`,
//! `{{#each}}`) is left as written.

use std::collections::BTreeMap;

use crate::error::Error;
use crate::resolve::Resolved;

/// A text cut into literal pieces and keys.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Template {
    pieces: Vec<Piece>,
}

#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Text(String),
    Key(String),
}

/// The templates of a top-level agent: its `system_prompt` and its skill,
/// parsed once, filled per run.
#[derive(Debug, Clone)]
pub struct Prompts {
    base: Template,
    skill: Option<Template>,
    /// Neither has a key or a `{{{{`: the resolved agent is used as it is.
    plain: bool,
}

/// Variables: `--var`s, under those of one input (an input's own win).
#[derive(Debug, Clone, Default)]
pub struct Vars<'a> {
    /// `--var KEY=VALUE`, for every input.
    pub global: Option<&'a BTreeMap<String, String>>,
    /// The input's own, looked up first.
    pub own: Vec<(String, String)>,
}

impl Template {
    /// Cuts `text` into literal pieces and `{{KEY}}` keys: KEY is a letter
    /// or `_`, then letters, digits, `_`, `-` or `.`, with spaces allowed
    /// around it.
    pub fn parse(text: &str) -> Template {
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        while let Some(at) = rest.find("{{") {
            literal.push_str(&rest[..at]);
            let after = &rest[at + 2..];
            if let Some(tail) = after.strip_prefix("{{") {
                literal.push_str("{{");
                rest = tail;
            } else if let Some((key, tail)) = key_at(after) {
                if !literal.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut literal)));
                }
                pieces.push(Piece::Key(key.to_string()));
                rest = tail;
            } else {
                literal.push_str("{{");
                rest = after;
            }
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            pieces.push(Piece::Text(literal));
        }
        Template { pieces }
    }

    /// The keys, in order of first use.
    pub fn keys(&self) -> Vec<&str> {
        let mut keys: Vec<&str> = Vec::new();
        for p in &self.pieces {
            if let Piece::Key(k) = p
                && !keys.contains(&k.as_str())
            {
                keys.push(k);
            }
        }
        keys
    }

    /// The text with every key replaced by its value; the first key
    /// without one is the error, saying where it was (`where_`: `the
    /// system prompt`, `the skill`, `--prompt`).
    pub fn fill(&self, vars: &Vars, where_: &str) -> Result<String, Error> {
        let mut out = String::new();
        for p in &self.pieces {
            match p {
                Piece::Text(t) => out.push_str(t),
                Piece::Key(k) => match vars.get(k) {
                    Some(v) => out.push_str(v),
                    None => return Err(unknown(k, where_)),
                },
            }
        }
        Ok(out)
    }
}

impl Prompts {
    /// The templates of `r` (its file's `system_prompt`, the skill read).
    pub fn of(r: &Resolved) -> Prompts {
        let base = r.agent.config.system_prompt.as_deref().unwrap_or("");
        let skill = r.skill.as_deref();
        Prompts {
            base: Template::parse(base),
            skill: skill.map(Template::parse),
            plain: !base.contains("{{") && !skill.is_some_and(|s| s.contains("{{")),
        }
    }

    /// The keys of the system prompt, then of the skill, each once: what
    /// a caller must give (`axe mcp serve`'s tool arguments, design §9.7).
    pub fn keys(&self) -> Vec<&str> {
        let mut keys = self.base.keys();
        for k in self.skill.as_ref().map(Template::keys).unwrap_or_default() {
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        keys
    }

    /// `r` with the templates filled from `vars`; None when there is
    /// nothing to fill (`r` is used as it is).
    pub fn fill(&self, r: &Resolved, vars: &Vars) -> Result<Option<Resolved>, Error> {
        if self.plain {
            return Ok(None);
        }
        let base = self.base.fill(vars, "the system prompt")?;
        let skill = match &self.skill {
            Some(t) => Some(t.fill(vars, "the skill")?),
            None => None,
        };
        r.with_prompts(&base, skill).map(Some)
    }

    /// The first key of the system prompt, the skill or `prompt` that
    /// neither `global` nor the names every input gives (`given`) has:
    /// the error, before anything runs.
    pub fn check(
        &self,
        prompt: Option<&Template>,
        global: &BTreeMap<String, String>,
        given: &[&str],
    ) -> Result<(), Error> {
        let parts = [
            (Some(&self.base), "the system prompt"),
            (self.skill.as_ref(), "the skill"),
            (prompt, "--prompt"),
        ];
        for (t, where_) in parts {
            for key in t.map(Template::keys).unwrap_or_default() {
                if !global.contains_key(key) && !given.contains(&key) {
                    return Err(unknown(key, where_));
                }
            }
        }
        Ok(())
    }
}

impl Vars<'_> {
    /// The value of `key`: the input's own, else `--var`'s.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.own
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .or_else(|| self.global.and_then(|g| g.get(key)).map(String::as_str))
    }
}

/// The error for a key no variable gives (exit 2).
pub fn unknown(key: &str, where_: &str) -> Error {
    Error::config(format!(
        "unknown template variable {{{{{key}}}}} in {where_} (give it with --var {key}=VALUE, \
         or write {{{{{{{{ for a literal {{{{)"
    ))
}

/// `--var KEY=VALUE`s as a map; a later one wins. A KEY that could not be
/// used in `{{KEY}}`, or no `=`, is a usage error (exit 1).
pub fn parse_vars(given: &[String]) -> Result<BTreeMap<String, String>, Error> {
    let mut vars = BTreeMap::new();
    for v in given {
        let (key, value) = v
            .split_once('=')
            .ok_or_else(|| Error::general(format!("--var {v:?}: expected KEY=VALUE")))?;
        if !is_key(key) {
            return Err(Error::general(format!(
                "--var {v:?}: a key is a letter or '_', then letters, digits, '_', '-' or '.'"
            )));
        }
        vars.insert(key.to_string(), value.to_string());
    }
    Ok(vars)
}

/// A key and what follows its `}}`, when `s` (just after a `{{`) opens with
/// one.
fn key_at(s: &str) -> Option<(&str, &str)> {
    let close = s.find("}}")?;
    let key = s[..close].trim_matches(' ');
    is_key(key).then(|| (key, &s[close + 2..]))
}

fn is_key(k: &str) -> bool {
    let mut chars = k.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fill(text: &str, pairs: &[(&str, &str)]) -> Result<String, String> {
        let vars = Vars {
            global: None,
            own: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        Template::parse(text)
            .fill(&vars, "the system prompt")
            .map_err(|e| e.to_string())
    }

    #[test]
    fn keys_are_filled_and_values_are_not_read_again() {
        assert_eq!(
            fill(
                "Hi {{name}}, { {{ lang }} }",
                &[("name", "{{lang}}"), ("lang", "fr")]
            ),
            Ok("Hi {{lang}}, { fr }".into())
        );
    }

    #[test]
    fn four_braces_are_two_and_what_is_not_a_key_stays() {
        assert_eq!(fill("{{{{name}}", &[]), Ok("{{name}}".into()));
        assert_eq!(
            fill("{{ .Values.x }} {{#each}} {{}} {{a b}} {{x", &[]),
            Ok("{{ .Values.x }} {{#each}} {{}} {{a b}} {{x".into())
        );
    }

    #[test]
    fn an_unknown_key_is_named() {
        let e = fill("Hello {{who}}", &[]).unwrap_err();
        assert!(
            e.starts_with("unknown template variable {{who}} in the system prompt"),
            "{e}"
        );
    }

    #[test]
    fn the_inputs_own_win_over_var() {
        let global = BTreeMap::from([("a".to_string(), "global".to_string())]);
        let vars = Vars {
            global: Some(&global),
            own: vec![("a".into(), "own".into())],
        };
        assert_eq!(vars.get("a"), Some("own"));
        assert_eq!(
            Vars {
                global: Some(&global),
                own: vec![]
            }
            .get("a"),
            Some("global")
        );
    }

    #[test]
    fn var_flags_need_a_key_and_an_equals_sign() {
        assert!(parse_vars(&["a=b=c".into()]).unwrap()["a"] == "b=c");
        assert!(parse_vars(&["novalue".into()]).is_err());
        assert!(parse_vars(&["9x=1".into()]).is_err());
    }
}
