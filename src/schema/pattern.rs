//! A schema's `pattern` (and `patternProperties`' keys) compiled with
//! ECMAScript's meaning of the classes, on the regex engine the build
//! already has (design §6.9).

use regex_automata::meta::Regex;

/// A schema's `pattern`, found anywhere in the text as JSON Schema says,
/// with ECMAScript's meaning of the classes (JSON Schema names ECMA-262):
/// `\d` and `\w` are ASCII, `\s` is ECMAScript's list of spaces, `\b`
/// an ASCII word boundary, and `.` or a negated class matches one whole
/// character. The regex engine already in the build has no Unicode tables,
/// so the classes are spelled out (see [`ecmascript`]).
pub fn regex(pattern: &str) -> Result<Regex, String> {
    let syntax = regex_automata::util::syntax::Config::new()
        .unicode(true)
        .utf8(true);
    Regex::builder()
        .syntax(syntax)
        .build(&ecmascript(pattern))
        .map_err(|e| {
            format!(
                "not a pattern axe can use: {}",
                crate::text::one_line(&e.to_string())
            )
        })
}

/// ECMAScript's white space and line terminators, for `\s`.
const SPACES: &str = "\\t\\n\\x0B\\x0C\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}";

/// `pattern` with its Perl classes written out as ECMAScript means them.
/// A class inside brackets becomes a nested class, which the engine unites.
fn ecmascript(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(next) = chars.next() else {
                    out.push(c);
                    break;
                };
                match next {
                    'd' => out.push_str("[0-9]"),
                    'D' => out.push_str("[^0-9]"),
                    'w' => out.push_str("[0-9A-Za-z_]"),
                    'W' => out.push_str("[^0-9A-Za-z_]"),
                    's' => out.push_str(&format!("[{SPACES}]")),
                    'S' => out.push_str(&format!("[^{SPACES}]")),
                    'b' if !in_class => out.push_str("(?-u:\\b)"),
                    'B' if !in_class => out.push_str("(?-u:\\B)"),
                    _ => {
                        out.push(c);
                        out.push(next);
                    }
                }
            }
            '[' if !in_class => {
                in_class = true;
                out.push(c);
                // A `]` first in a class is a literal in ECMAScript too.
            }
            ']' if in_class => {
                in_class = false;
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}
