//! The server's unit tests.

use super::field;

#[test]
fn a_log_field_is_one_word_with_its_controls_written_out() {
    assert_eq!(field("GET", 100), "GET");
    assert_eq!(field("", 100), "-");
    assert_eq!(
        field("X\naxe: warning\x1b[2J\u{85}\u{2028}", 100),
        "X\\naxe:\\u{20}warning\\u{1b}[2J\\u{85}\\u{2028}"
    );
    assert_eq!(field("abcdef", 3), "abc");
}
