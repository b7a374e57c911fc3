//! Shaping text for output: one line with whitespace folded, long text cut
//! at a character boundary with a mark that says so; and secrets kept out
//! of all of it (`redact`).

pub mod base64;
pub mod hex;
pub mod redact;

/// `text` on one line: runs of whitespace (line ends included) as one
/// space, and control characters (an escape sequence's ESC, a bell, C1
/// codes) written out as `\u{1b}`, so that text from outside — a
/// provider's error, a model's answer, a log file — cannot move the cursor
/// or retitle the terminal it is printed on.
pub fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        for c in word.chars() {
            if c.is_control() {
                out.extend(c.escape_default());
            } else {
                out.push(c);
            }
        }
    }
    out
}

/// The first `max` characters of `text`, followed by `mark` when there
/// were more.
pub fn clip(text: &str, max: usize, mark: &str) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}{mark}", &text[..i]),
        None => text.to_string(),
    }
}

/// `text` cut to at most `max` bytes (at a character boundary, keeping the
/// start), with a marker saying how much was cut.
pub fn cap(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = text.len() - end;
    format!("{}\n[cut: {cut} more bytes not shown]", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_folds_whitespace_and_clip_cuts_at_a_character() {
        assert_eq!(one_line("  a\n\tb  c \n"), "a b c");
        assert_eq!(clip("héllo", 2, "…"), "hé…");
        assert_eq!(clip("hé", 2, "…"), "hé");
    }
}
