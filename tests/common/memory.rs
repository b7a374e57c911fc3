//! Memory files for the memory and `axe gc` tests: entries written by hand
//! byte for byte as the Go original writes them, and where a home keeps an
//! agent's file.

use std::path::PathBuf;

use super::home::Home;

/// What comes before the entries in the system prompt (the Go original's).
pub const MEMORY_SECTION: &str = "\n\n---\n\n## Memory\n\n";

/// `n` entries as the Go original's tests make them: `## 2026-01-DDT00:00:00Z`,
/// `**Task:** task<i>`, `**Result:** result<i>`, a blank line.
pub fn go_entries(n: usize) -> String {
    go_entries_from(1, n)
}

/// Entries `first` to `last` of [`go_entries`] (days wrap after 28).
pub fn go_entries_from(first: usize, last: usize) -> String {
    (first..=last)
        .map(|i| {
            format!(
                "## 2026-{:02}-{:02}T00:00:00Z\n**Task:** task{i}\n**Result:** result{i}\n\n",
                1 + (i - 1) / 28 % 12,
                1 + (i - 1) % 28
            )
        })
        .collect()
}

/// The lines of `text` that begin an entry (`## ` and a date).
pub fn entry_headers(text: &str) -> usize {
    text.lines()
        .filter(|l| {
            l.strip_prefix("## ")
                .is_some_and(|r| r.len() >= 10 && r.as_bytes()[..4].iter().all(u8::is_ascii_digit))
        })
        .count()
}

impl Home {
    /// Where a run in this home keeps agent `name`'s memory by default:
    /// `$HOME/.local/share/axe/memory/<name>.md` (no `XDG_DATA_HOME`).
    pub fn memory_path(&self, name: &str) -> PathBuf {
        self.dir
            .path()
            .join(".local/share/axe/memory")
            .join(format!("{name}.md"))
    }

    /// Writes agent `name`'s memory file with `text`.
    pub fn memory(&self, name: &str, text: &str) -> PathBuf {
        let p = self.memory_path(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p
    }

    /// The text of agent `name`'s memory file ("" when there is none).
    pub fn memory_text(&self, name: &str) -> String {
        std::fs::read_to_string(self.memory_path(name)).unwrap_or_default()
    }
}
