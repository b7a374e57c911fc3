//! axe's own temporary files are never shown to a listing or a search
//! (design §8.2): the calls of one response run at once, and one call's
//! `write_file` or `edit_file` fills `.{file}.axe-{pid}-{n}` beside its
//! target while another lists the directory.

use serde_json::json;

use crate::common::*;

/// A temporary file of axe's (as a write in flight leaves it, or one a
/// killed axe left), beside user files that merely look like one.
const TEMP: &str = ".notes.txt.axe-4242-17";
const LOOK_ALIKES: [&str; 3] = [
    ".notes.txt.axe-draft",
    ".axe-4242-17",
    ".notes.txt.axe-01-2",
];

#[test]
fn a_listing_or_a_search_taken_while_a_write_is_in_flight_shows_no_temporary_file() {
    for p in PROVIDERS {
        let s = ToolsSetup::new(p, &["list_directory", "search_files"], "");
        for (dir, name) in [(".", TEMP), ("src", ".lib.rs.axe-7-3000000000")] {
            std::fs::write(s.work.join(dir).join(name), "half written SECRET-ish\n").unwrap();
        }
        for name in LOOK_ALIKES {
            std::fs::write(s.work.join(name), "the user's\n").unwrap();
        }
        let calls: Vec<Call> = vec![
            ("c1", "list_directory", json!({})),
            ("c2", "list_directory", json!({"path": "src"})),
            ("c3", "search_files", json!({"pattern": "half written"})),
        ];
        let (out, results, _) = s.run(p, &calls);
        assert_eq!(code(&out), 0, "{}: {}", p.name(), stderr(&out));
        assert_eq!(results.len(), 3, "{}: {results:?}", p.name());
        let mut want = LOOK_ALIKES.map(|n| format!("{n}\n"));
        want.sort();
        assert_eq!(
            results[0],
            format!("{}notes.txt\nsrc/\n", want.concat()),
            "{}",
            p.name()
        );
        assert_eq!(results[1], "lib.rs\n", "{}", p.name());
        assert!(results[2].starts_with("no match"), "{}", results[2]);
    }
}
