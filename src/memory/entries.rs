//! A memory file's text, in the Go original's format (design §10.1): where
//! its entries begin, the last few of them, and one new entry as it is
//! appended. Everything here works on bytes, so that a file that is not
//! valid UTF-8 is cut and kept byte for byte.

use std::time::SystemTime;

/// The most characters of an answer an entry keeps; a longer one is cut
/// and ends with `...` (the Go original's rule).
pub const RESULT_MAX_CHARS: usize = 1000;

/// Where each entry of `text` begins: the offsets of its header lines, in
/// order.
pub fn starts(text: &[u8]) -> Vec<usize> {
    let mut found = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let end = text[at..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(text.len(), |i| at + i + 1);
        if is_header(&text[at..end]) {
            found.push(at);
        }
        at = end;
    }
    found
}

/// Whether `line` opens an entry: `## ` and a date, `## 2026-02-27...`.
/// A `## Summary` line inside an answer is part of its entry, not a new
/// one (the Go original counts any `## ` line; files it wrote read the
/// same here, their headers being timestamps).
pub fn is_header(line: &[u8]) -> bool {
    let Some(rest) = line.strip_prefix(b"## ") else {
        return false;
    };
    let shape = b"dddd-dd-dd";
    rest.len() >= shape.len()
        && shape.iter().zip(rest).all(|(want, got)| match want {
            b'd' => got.is_ascii_digit(),
            other => other == got,
        })
}

/// Where the last `n` entries of `text` begin (0: all of `text`, anything
/// before the first entry included, as the Go original loads it), and how
/// many entries that is. With no entry at all and `n` > 0, nothing.
pub fn last(text: &[u8], n: u64) -> (usize, usize) {
    let starts = starts(text);
    if n == 0 {
        return (0, starts.len());
    }
    let n = usize::try_from(n).unwrap_or(usize::MAX).min(starts.len());
    match starts.len().checked_sub(n).and_then(|i| starts.get(i)) {
        Some(&at) => (at, n),
        None => (text.len(), 0),
    }
}

/// One entry as appended: `## <UTC timestamp>`, `**Task:** <task on one
/// line>`, `**Result:** <answer, cut at 1000 characters>`, a blank line.
/// An empty task or answer is `(none)`. An answer's line that would read as
/// a header is indented by a space, so that it never starts an entry.
pub fn format(at: SystemTime, task: &str, result: &str) -> String {
    let task = if task.trim().is_empty() {
        "(none)".to_string()
    } else {
        task.replace(['\n', '\r'], " ")
    };
    let result = if result.is_empty() {
        "(none)".to_string()
    } else {
        crate::text::clip(result, RESULT_MAX_CHARS, "...")
    };
    // The first line follows `**Result:** `; the others start lines.
    let result: Vec<String> = result
        .split('\n')
        .enumerate()
        .map(|(i, line)| {
            if i > 0 && is_header(line.as_bytes()) {
                format!(" {line}")
            } else {
                line.to_string()
            }
        })
        .collect();
    format!(
        "## {}\n**Task:** {task}\n**Result:** {}\n\n",
        humantime::format_rfc3339_seconds(at),
        result.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    /// 2026-02-28T15:04:05Z, the Go original's test time.
    fn at() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_772_291_045)
    }

    #[test]
    fn an_entry_is_written_byte_for_byte_as_the_go_original_writes_it() {
        assert_eq!(
            format(at(), "do the thing", "it worked"),
            "## 2026-02-28T15:04:05Z\n**Task:** do the thing\n**Result:** it worked\n\n"
        );
        let e = format(at(), "", "");
        assert!(e.contains("**Task:** (none)\n**Result:** (none)\n"), "{e}");
        let e = format(at(), "line1\nline2\nline3", "a\nb");
        assert!(e.contains("**Task:** line1 line2 line3\n**Result:** a\nb\n\n"));
    }

    #[test]
    fn an_answer_is_cut_at_1000_characters_with_dots() {
        let exact = "x".repeat(1000);
        assert!(format(at(), "t", &exact).ends_with(&format!("{exact}\n\n")));
        let long = "é".repeat(1001);
        let e = format(at(), "t", &long);
        assert!(e.ends_with(&format!("{}...\n\n", "é".repeat(1000))), "{e}");
    }

    #[test]
    fn a_line_of_an_answer_never_starts_an_entry() {
        let e = format(at(), "t", "## 2026-01-01 a\n## 2026-01-02 b\n## Summary");
        assert_eq!(starts(e.as_bytes()), [0]);
        assert!(e.contains("**Result:** ## 2026-01-01 a\n ## 2026-01-02 b\n## Summary\n"));
    }

    #[test]
    fn entries_begin_at_timestamp_headers_only() {
        let text = b"preamble\n\n## 2026-01-01T00:00:00Z\n**Task:** t1\n**Result:** ## Notes\n\n## 2026-01-02T00:00:00Z\n**Task:** t2\n**Result:** r2\n\n";
        assert_eq!(starts(text).len(), 2);
        let (at, n) = last(text, 1);
        assert_eq!(n, 1);
        assert!(text[at..].starts_with(b"## 2026-01-02"));
        assert_eq!(last(text, 0), (0, 2));
        assert_eq!(last(text, 10).1, 2);
        assert!(text[last(text, 10).0..].starts_with(b"## 2026-01-01"));
        assert_eq!(last(b"no entries\n", 3), (11, 0));
        assert_eq!(last(b"", 3), (0, 0));
        assert!(!is_header(b"## 20"));
        assert!(is_header(b"## 2026-01-01\r\n"));
    }
}
