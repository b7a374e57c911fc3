//! Attachments (issue 39, design §4.16) through the binary: each kind on
//! each wire, its body checked (`wires.rs`); the kinds told by content,
//! the refusals (exit 2, before any request), the size bounds, a link
//! planted in the workdir, `--dry-run`'s listing and a sub-agent that
//! does not see its caller's files (here); `axe serve`'s image parts
//! (`serve.rs`).

mod serve;
mod wires;

use crate::common::*;
use serde_json::{Value, json};

/// The six kinds, each as small a file as its magic bytes allow, with its
/// base64 (written out here, not computed by axe's own encoder).
pub const PNG: &[u8] = b"\x89PNG\r\n\x1a\nIHDR";
pub const PNG_B64: &str = "iVBORw0KGgpJSERS";
pub const JPEG: &[u8] = b"\xff\xd8\xff\xe0JFIF";
pub const JPEG_B64: &str = "/9j/4EpGSUY=";
pub const GIF: &[u8] = b"GIF89a\x01\x00";
pub const GIF_B64: &str = "R0lGODlhAQA=";
pub const WEBP: &[u8] = b"RIFF\x0c\x00\x00\x00WEBPVP8 ";
pub const WEBP_B64: &str = "UklGRgwAAABXRUJQVlA4IA==";
pub const PDF: &[u8] = b"%PDF-1.4\n%%EOF\n";
pub const PDF_B64: &str = "JVBERi0xLjQKJSVFT0YK";
pub const TEXT: &str = "line one\nline two\n";

/// Writes the six files into `home`'s directory (the runs' current
/// directory), the text one named `.png` (its content decides), and
/// gives the `-a` arguments for them.
pub fn six(home: &Home) -> Vec<String> {
    let files: [(&str, &[u8]); 6] = [
        ("a.png", PNG),
        ("b.jpg", JPEG),
        ("c.gif", GIF),
        ("d.webp", WEBP),
        ("e.pdf", PDF),
        ("notes.png", TEXT.as_bytes()),
    ];
    let mut args = Vec::new();
    for (name, bytes) in files {
        std::fs::write(home.dir.path().join(name), bytes).unwrap();
        args.push("-a".to_string());
        args.push(name.to_string());
    }
    args
}

/// `axe run a -p look <extra>` on `p`'s fake.
fn run(home: &Home, server: &FakeServer, p: P, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["run", "a", "-p", "look"];
    args.extend_from_slice(extra);
    home.run_on(&[(p, server)], &args)
}

#[test]
fn dry_run_lists_each_attachment_by_name_type_and_size() {
    let home = Home::new();
    home.plain_agent("a", "openai/gpt-4o");
    let args = six(&home);
    let mut all = vec!["run", "a", "--dry-run"];
    all.extend(args.iter().map(String::as_str));
    let out = home.run(&all);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let s = stdout(&out);
    let listing = "--- Attachments (6) ---\n\
                   a.png  image/png  12 bytes\n\
                   b.jpg  image/jpeg  8 bytes\n\
                   c.gif  image/gif  8 bytes\n\
                   d.webp  image/webp  16 bytes\n\
                   e.pdf  application/pdf  15 bytes\n\
                   notes.png  text/plain  18 bytes\n";
    assert!(s.contains(listing), "{s}");
}

#[test]
fn a_file_of_no_kind_axe_sends_is_refused_with_exit_2_before_any_request() {
    let server = FakeServer::json(200, &P::OpenAi.text("no"));
    let home = Home::new();
    home.plain_agent("a", "openai/gpt-4o");
    std::fs::write(home.dir.path().join("x.png"), b"PK\x03\x04\0\0zip").unwrap();
    let out = run(&home, &server, P::OpenAi, &["-a", "x.png"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("cannot attach x.png: not a PNG, JPEG, GIF, WebP, PDF or plain text"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(server.requests().is_empty());
}

#[test]
fn a_missing_attachment_is_exit_2() {
    let server = FakeServer::json(200, &P::OpenAi.text("no"));
    let home = Home::new();
    home.plain_agent("a", "openai/gpt-4o");
    let out = run(&home, &server, P::OpenAi, &["-a", "gone.png"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cannot attach gone.png"),
        "{}",
        stderr(&out)
    );
    assert!(server.requests().is_empty());
}

#[test]
fn a_file_over_20_mib_is_refused_unread() {
    let server = FakeServer::json(200, &P::OpenAi.text("no"));
    let home = Home::new();
    home.plain_agent("a", "openai/gpt-4o");
    let big = std::fs::File::create(home.dir.path().join("big.png")).unwrap();
    big.set_len((20 << 20) + 1).unwrap();
    let out = run(&home, &server, P::OpenAi, &["-a", "big.png"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out)
            .contains("cannot attach big.png: 20971521 bytes, over the 20 MiB one file may be"),
        "{}",
        stderr(&out)
    );
    assert!(server.requests().is_empty());
}

#[test]
fn attachments_over_32_mib_in_all_are_refused() {
    let server = FakeServer::json(200, &P::OpenAi.text("no"));
    let home = Home::new();
    home.plain_agent("a", "openai/gpt-4o");
    for name in ["one.png", "two.png"] {
        let path = home.dir.path().join(name);
        std::fs::write(&path, PNG).unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(17 << 20)
            .unwrap();
    }
    let out = run(
        &home,
        &server,
        P::OpenAi,
        &["-a", "one.png", "-a", "two.png"],
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cannot attach two.png: 17825792 bytes, which would take the attachments over the 32 MiB"),
        "{}",
        stderr(&out)
    );
    assert!(server.requests().is_empty());
}

#[test]
fn a_link_planted_in_the_workdir_is_not_followed() {
    let server = FakeServer::json(200, &P::OpenAi.text("no"));
    let home = Home::new();
    let secret = home.dir.path().join("secret.txt");
    std::fs::write(&secret, "the secret").unwrap();
    let work = home.dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    std::os::unix::fs::symlink(&secret, work.join("shot.png")).unwrap();
    home.named_agent(
        "a",
        "openai/gpt-4o",
        "workdir = \"work\"\nattach = [\"shot.png\"]\n",
    );
    let out = run(&home, &server, P::OpenAi, &[]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("cannot attach shot.png") && err.contains("symbolic link"),
        "{err}"
    );
    assert!(server.requests().is_empty());
    // The same through `-a`, below the current directory.
    let out = run(&home, &server, P::OpenAi, &["-a", "work/shot.png"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("symbolic link"), "{}", stderr(&out));
    assert!(server.requests().is_empty());
}

#[test]
fn the_agent_files_attach_is_read_beneath_its_workdir_and_sent_first() {
    let server = FakeServer::json(200, &P::OpenAi.text("seen"));
    let home = Home::new();
    let work = home.dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    std::fs::write(work.join("shot.png"), PNG).unwrap();
    std::fs::write(home.dir.path().join("e.pdf"), PDF).unwrap();
    home.named_agent(
        "a",
        "openai/gpt-4o",
        "workdir = \"work\"\nattach = [\"shot.png\"]\n",
    );
    let out = run(&home, &server, P::OpenAi, &["-a", "e.pdf"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let content = &server.only_request().messages()[1]["content"];
    assert_eq!(
        content[1]["image_url"]["url"],
        format!("data:image/png;base64,{PNG_B64}")
    );
    assert_eq!(content[2]["file"]["filename"], "e.pdf");
}

#[test]
fn a_sub_agent_does_not_see_its_callers_attachments() {
    let server = FakeServer::route(|req| {
        let body = match (req.who().as_str(), req.has_tool_results()) {
            ("a", false) => openai_tool_calls(
                &[("c1", "call_agent", delegate("leaf", "describe it"))],
                5,
                3,
            ),
            ("a", true) => openai_text("done", 5, 2),
            _ => openai_text("leaf saw words only", 3, 2),
        };
        Reply::Json(200, body)
    });
    let home = Home::new();
    home.named_agent("a", "openai/gpt-4o", "sub_agents = [\"leaf\"]\n");
    home.named_agent("leaf", "openai/gpt-4o", "");
    std::fs::write(home.dir.path().join("a.png"), PNG).unwrap();
    let out = run(&home, &server, P::OpenAi, &["-a", "a.png"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let reqs = server.requests();
    let leaf = reqs.iter().find(|r| r.who() == "leaf").expect("leaf ran");
    assert_eq!(
        leaf.messages()[1],
        json!({"role": "user", "content": "Task: describe it"})
    );
    let first = reqs.iter().find(|r| r.who() == "a").unwrap();
    let content: &Value = &first.messages()[1]["content"];
    assert_eq!(content[1]["type"], "image_url", "{content}");
}
