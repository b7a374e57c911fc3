//! Reading TOML documents: parse errors on one line with their position, and
//! warnings that name unknown keys (a typo such as `sub_agent` must not pass
//! silently).

use serde::de::DeserializeOwned;

/// Parses `text` into `T` and into a plain table (for [`unknown_keys`]). The
/// error is one line: the parser's message and the line and column where it
/// happened, for syntax and type errors alike.
pub fn parse<T: DeserializeOwned>(text: &str) -> Result<(T, toml::Table), String> {
    let value: T = toml::from_str(text).map_err(|e| describe(text, &e))?;
    let table = text
        .parse::<toml::Table>()
        .map_err(|e| describe(text, &e))?;
    Ok((value, table))
}

/// Pushes one warning for each key of `table` not in `known`, naming it with
/// `prefix` (e.g. `params.`) and suggesting the nearest known key.
pub fn unknown_keys(table: &toml::Table, prefix: &str, known: &[&str], out: &mut Vec<String>) {
    for key in table.keys() {
        if known.contains(&key.as_str()) {
            continue;
        }
        let mut w = format!("unknown key \"{prefix}{key}\"");
        if let Some(near) = nearest(key, known) {
            w.push_str(&format!(" (did you mean \"{prefix}{near}\"?)"));
        }
        out.push(w);
    }
}

fn describe(text: &str, e: &toml::de::Error) -> String {
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
        .map(|k| (edit_distance(key, k), *k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 4))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_error_is_one_line_with_position() {
        let err = parse::<toml::Table>("name = \"a\"\nmodel = \n").unwrap_err();
        assert!(!err.contains('\n'), "{err}");
        assert!(err.contains("line 2"), "{err}");
    }

    #[test]
    fn unknown_key_suggests_the_near_one() {
        let (t, _) = parse::<toml::Table>("sub_agent = []\nzzz = 1\n").unwrap();
        let mut w = Vec::new();
        unknown_keys(&t, "", &["sub_agents", "name"], &mut w);
        assert_eq!(w.len(), 2);
        assert!(
            w.iter()
                .any(|m| m.contains("\"sub_agent\"") && m.contains("\"sub_agents\""))
        );
        assert!(w.iter().any(|m| m == "unknown key \"zzz\""));
    }
}
