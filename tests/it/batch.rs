//! One agent over many inputs (`--each`, `--each-file`; design ch. 11),
//! through the binary against the fake providers: lines in input order or
//! as they end, `--jobs` held at the server, failures kept on their line,
//! the shared token budget, resume after Ctrl-C, JSON Lines and files as
//! inputs, templates and their errors, `--dry-run`, on all three wires.

use crate::common::*;

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

/// The lines of a batch's output, each parsed.
fn lines(text: &str) -> Vec<Value> {
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "whole lines only: {text:?}"
    );
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// A server on `p` answering each request `echo: <user message>`, after
/// `delay(message)`.
fn echo(p: P, delay: impl Fn(&str) -> Duration + Send + Sync + 'static) -> FakeServer {
    FakeServer::route(move |r| {
        let said = r.first_user_text();
        let reply = Reply::Json(200, p.text(&format!("echo: {said}")));
        match delay(&said) {
            d if d.is_zero() => reply,
            d => Reply::Delay(d, Box::new(reply)),
        }
    })
}

/// A home with agent `bot` on `p`, `extra` appended, and `inputs` written
/// to `in.txt`.
fn home_with(p: P, extra: &str, inputs: &str) -> Home {
    let home = Home::new();
    home.named_agent("bot", p.model(), extra);
    std::fs::write(home.dir.path().join("in.txt"), inputs).unwrap();
    home
}

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("item {i}\n")).collect()
}

/// Waits until `path` holds at least `n` lines.
fn wait_for_lines(path: &Path, n: usize) {
    let until = std::time::Instant::now() + HUNG;
    while std::time::Instant::now() < until {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.lines().count() >= n {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("fewer than {n} lines in {}", path.display());
}

#[test]
fn lines_come_in_input_order_whatever_order_the_answers_end_in() {
    let p = P::OpenAi;
    // The first inputs take longest: they end last.
    let server = echo(p, |said| {
        let n: u64 = said.trim_start_matches("item ").parse().unwrap_or(0);
        Duration::from_millis(240u64.saturating_sub(n * 30))
    });
    let home = home_with(p, "", &numbered(8));
    let b = home.run_bounded(
        &[(p, &server)],
        &["run", "bot", "--each", "in.txt", "--jobs", "4"],
        HUNG,
    );
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    let got = lines(&stdout(&b.output));
    assert_eq!(got.len(), 8);
    for (i, l) in got.iter().enumerate() {
        assert_eq!(l["line"], i as u64 + 1, "{l}");
        assert_eq!(l["input"], format!("item {}", i + 1));
        assert_eq!(l["ok"], true);
        assert_eq!(l["exit"], 0);
        assert_eq!(l["content"], format!("echo: item {}", i + 1));
        assert_eq!(l["input_tokens"], 5);
        assert_eq!(l["output_tokens"], 2);
        assert!(l["run_id"].as_str().is_some_and(|id| id.len() == 16), "{l}");
    }
    // Each input ran once.
    assert_eq!(server.requests().len(), 8);
    // The run log has one record for the batch.
    let log = home.run_log();
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(log[0]["exit"], 0);
    assert_eq!(log[0]["input_tokens"], 40);
}

#[test]
fn unordered_lines_come_as_their_inputs_end() {
    let p = P::Anthropic;
    // Item 1 is answered 400 ms after the last of the others has come (at
    // most 10 s for them), not 400 ms after its own start, which four runs
    // one after another could take on a loaded machine.
    let others = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let server = echo(p, move |said| {
        use std::sync::atomic::Ordering::SeqCst;
        if said != "item 1" {
            others.fetch_add(1, SeqCst);
            return Duration::ZERO;
        }
        let until = std::time::Instant::now() + Duration::from_secs(10);
        while others.load(SeqCst) < 4 && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        Duration::from_millis(400)
    });
    let home = home_with(p, "", &numbered(5));
    let args = [
        "run",
        "bot",
        "--each",
        "in.txt",
        "--jobs",
        "2",
        "--unordered",
    ];
    let b = home.run_bounded(&[(p, &server)], &args, HUNG);
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    let got = lines(&stdout(&b.output));
    let order: Vec<u64> = got.iter().map(|l| l["line"].as_u64().unwrap()).collect();
    assert_eq!(order.len(), 5);
    assert_eq!(
        *order.last().unwrap(),
        1,
        "the slow first input ends last: {order:?}"
    );
}

#[test]
fn jobs_is_how_many_requests_are_in_flight_at_once() {
    let p = P::Ollama;
    // The first three requests are held until all three are in (at most
    // 10 s): three at once is then seen however slowly the batch's threads
    // start, and a batch that ran fewer would show its peak all the same.
    let gate = std::sync::Arc::new(Gate::new(3));
    let server = echo(p, move |_| {
        gate.arrive(Duration::from_secs(10));
        Duration::from_millis(80)
    });
    let home = home_with(p, "", &numbered(12));
    let args = ["run", "bot", "--each", "in.txt", "--jobs", "3"];
    let b = home.run_bounded(&[(p, &server)], &args, HUNG);
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    assert_eq!(lines(&stdout(&b.output)).len(), 12);
    assert_eq!(server.max_in_flight(), 3);
}

#[test]
fn a_failing_input_keeps_to_its_line_and_sets_the_exit_code() {
    let p = P::OpenAi;
    let server = FakeServer::route(move |r| {
        if r.first_user_text() == "item 2" {
            Reply::Json(
                400,
                r#"{"error":{"message":"no such thing","type":"invalid_request_error"}}"#.into(),
            )
        } else if r.first_user_text() == "item 4" {
            Reply::Json(
                401,
                r#"{"error":{"message":"bad key","type":"invalid_request_error"}}"#.into(),
            )
        } else {
            Reply::Json(200, p.text("fine"))
        }
    });
    let home = home_with(p, "", &numbered(5));
    let b = home.run_bounded(&[(p, &server)], &["run", "bot", "--each", "in.txt"], HUNG);
    let got = lines(&stdout(&b.output));
    let oks: Vec<bool> = got.iter().map(|l| l["ok"].as_bool().unwrap()).collect();
    assert_eq!(oks, [true, false, true, false, true]);
    assert_eq!(got[1]["exit"], 1, "{}", got[1]);
    assert!(
        got[1]["error"].as_str().unwrap().contains("no such thing"),
        "{}",
        got[1]
    );
    assert_eq!(got[3]["exit"], 3, "{}", got[3]);
    assert_eq!(got[3]["skipped"], false);
    assert!(got[3]["run_id"].is_string());
    // The largest exit code of the inputs that failed.
    assert_eq!(code(&b.output), 3);
    assert_eq!(
        stderr(&b.output),
        "axe: 2 of 5 inputs did not succeed (their lines say why)\n"
    );
}

#[test]
fn a_shared_token_budget_skips_the_inputs_that_would_pass_it() {
    let p = P::Anthropic;
    // Every answer bills 5 + 2 = 7 tokens.
    let server = echo(p, |_| Duration::from_millis(20));
    let home = home_with(p, "", &numbered(10));
    let args = [
        "run",
        "bot",
        "--each",
        "in.txt",
        "--jobs",
        "4",
        "--max-tokens",
        "30",
    ];
    let b = home.run_bounded(&[(p, &server)], &args, HUNG);
    let got = lines(&stdout(&b.output));
    assert_eq!(got.len(), 10);
    let ok = got.iter().filter(|l| l["ok"] == true).count();
    let skipped: Vec<&Value> = got.iter().filter(|l| l["skipped"] == true).collect();
    // The first alone (7), then three at once (7 + 3 * 7 = 28 <= 30).
    assert_eq!(ok, 4, "{got:?}");
    assert_eq!(skipped.len(), 6);
    assert_eq!(skipped[0]["exit"], 4);
    assert!(
        skipped[0]["error"]
            .as_str()
            .unwrap()
            .contains("token budget"),
        "{}",
        skipped[0]
    );
    assert_eq!(server.requests().len(), 4);
    let spent: u64 = got
        .iter()
        .filter_map(|l| {
            l["total_input_tokens"]
                .as_u64()
                .zip(l["total_output_tokens"].as_u64())
        })
        .map(|(i, o)| i + o)
        .sum();
    assert!(spent <= 30, "spent {spent}");
    assert_eq!(code(&b.output), 4);
}

#[test]
fn a_batch_stopped_by_ctrl_c_resumes_without_doing_an_input_twice() {
    let p = P::OpenAi;
    let server = echo(p, |_| Duration::from_millis(30));
    let home = home_with(p, "", &numbered(40));
    let out = home.dir.path().join("out.jsonl");
    let args = [
        "run",
        "bot",
        "--each",
        "in.txt",
        "--jobs",
        "2",
        "--resume",
        "out.jsonl",
    ];
    let child = home
        .axe_on(&[(p, &server)])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_lines(&out, 10);
    signal(&child, libc::SIGINT);
    let first = child.wait_with_output().unwrap();
    assert_eq!(code(&first), 130, "{}", stderr(&first));
    assert!(
        stderr(&first).contains("run the same command with --resume out.jsonl"),
        "{}",
        stderr(&first)
    );
    let before = lines(&std::fs::read_to_string(&out).unwrap());
    assert!(before.len() >= 10 && before.len() < 40, "{}", before.len());

    let b = home.run_bounded(&[(p, &server)], &args, HUNG);
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    assert_eq!(stdout(&b.output), "");
    let all = lines(&std::fs::read_to_string(&out).unwrap());
    let mut seen: Vec<u64> = all.iter().map(|l| l["line"].as_u64().unwrap()).collect();
    assert!(all.iter().all(|l| l["ok"] == true));
    seen.sort();
    assert_eq!(
        seen,
        (1..=40).collect::<Vec<u64>>(),
        "each input once, none lost"
    );
}

#[test]
fn json_lines_fill_the_templates_and_name_the_prompt() {
    let p = P::Ollama;
    let server = echo(p, |_| Duration::ZERO);
    let home = home_with(
        p,
        "",
        "{\"id\":\"T-1\",\"kind\":\"bug\",\"text\":\"it crashes\"}\n\n{\"id\":2,\"kind\":\"wish\",\"text\":\"dark mode\"}\n",
    );
    home.agent(
        "bot",
        &format!(
            "name = \"bot\"\nmodel = \"{}\"\nsystem_prompt = \"You sort {{{{kind}}}} tickets for {{{{team}}}}; {{{{{{{{literal}}}}.\"\n",
            p.model()
        ),
    );
    let args = [
        "run",
        "bot",
        "--each",
        "in.txt",
        "--var",
        "team=core",
        "--prompt-field",
        "text",
        "--jobs",
        "1",
    ];
    let b = home.run_bounded(&[(p, &server)], &args, HUNG);
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    let got = lines(&stdout(&b.output));
    assert_eq!(got[0]["id"], "T-1");
    assert_eq!(got[0]["input"]["kind"], "bug");
    assert_eq!(got[1]["id"], 2);
    assert_eq!(got[1]["line"], 3);
    let sent = server.requests();
    assert_eq!(
        sent[0].system_prompt(),
        "You sort bug tickets for core; {{literal}}."
    );
    assert_eq!(sent[0].first_user_text(), "it crashes");
    assert_eq!(
        sent[1].system_prompt(),
        "You sort wish tickets for core; {{literal}}."
    );
    assert_eq!(sent[1].first_user_text(), "dark mode");
}

#[test]
fn each_file_runs_once_per_matching_file() {
    let p = P::Anthropic;
    let server = echo(p, |_| Duration::ZERO);
    let home = home_with(p, "", "");
    let docs = home.dir.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(docs.join("a.txt"), "alpha").unwrap();
    std::fs::write(docs.join("b.txt"), "beta").unwrap();
    std::fs::write(docs.join("c.md"), "gamma").unwrap();
    let args = [
        "run",
        "bot",
        "--each-file",
        "docs/*.txt",
        "-p",
        "Summarise {{path}}: {{input}}",
    ];
    let b = home.run_bounded(&[(p, &server)], &args, HUNG);
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    let got = lines(&stdout(&b.output));
    let paths: Vec<&str> = got.iter().map(|l| l["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["docs/a.txt", "docs/b.txt"]);
    assert_eq!(got[1]["content"], "echo: Summarise docs/b.txt: beta");
    let mut said: Vec<String> = server
        .requests()
        .iter()
        .map(Recorded::first_user_text)
        .collect();
    said.sort();
    assert_eq!(
        said,
        ["Summarise docs/a.txt: alpha", "Summarise docs/b.txt: beta"]
    );
}

#[test]
fn each_file_leaves_out_a_fifo_its_glob_matches() {
    // A FIFO with no writer would block an open for ever: it is not an
    // input (only regular files are), and nothing waits on it.
    let p = P::Anthropic;
    let server = echo(p, |_| Duration::ZERO);
    let home = home_with(p, "", "");
    let docs = home.dir.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(docs.join("a.txt"), "alpha").unwrap();
    mkfifo(&docs.join("b.txt"));
    let args = ["run", "bot", "--each-file", "docs/*.txt", "-p", "{{input}}"];
    let b = home.run_bounded(&[(p, &server)], &args, HUNG);
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    let got = lines(&stdout(&b.output));
    assert_eq!(got.len(), 1, "{}", stdout(&b.output));
    assert_eq!(got[0]["content"], "echo: alpha");
}

#[test]
fn a_shaped_agent_gives_each_line_its_output() {
    let p = P::OpenAi;
    let server = FakeServer::route(move |r| {
        let word = r.first_user_text();
        Reply::Json(
            200,
            p.text(&format!("{{\"label\":\"{word}\",\"n\":{}}}", word.len())),
        )
    });
    let home = home_with(
        p,
        "[output]\nschema = { type = \"object\", properties = { label = { type = \"string\" }, n = { type = \"integer\" } }, required = [\"label\", \"n\"] }\n",
        "red\ngreen\nblue\n",
    );
    let b = home.run_bounded(&[(p, &server)], &["run", "bot", "--each", "in.txt"], HUNG);
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    let got = lines(&stdout(&b.output));
    let outputs: Vec<&Value> = got.iter().map(|l| &l["output"]).collect();
    assert_eq!(outputs[0], &serde_json::json!({"label": "red", "n": 3}));
    assert_eq!(outputs[2], &serde_json::json!({"label": "blue", "n": 4}));
    // Each request asked for the schema.
    assert!(
        server
            .requests()
            .iter()
            .all(|r| r.json()["response_format"]["type"] == "json_schema")
    );
}

#[test]
fn an_unknown_variable_is_exit_2_naming_it_before_anything_is_sent() {
    let p = P::OpenAi;
    let server = echo(p, |_| Duration::ZERO);
    let home = home_with(p, "", "one\ntwo\n");
    home.agent(
        "bot",
        &format!(
            "name = \"bot\"\nmodel = \"{}\"\nsystem_prompt = \"For {{{{team}}}}.\"\n",
            p.model()
        ),
    );
    for args in [
        &["run", "bot", "--each", "in.txt"][..],
        &["run", "bot", "--var", "other=1", "-p", "hi"][..],
        &[
            "run",
            "bot",
            "--each",
            "in.txt",
            "--var",
            "team=x",
            "-p",
            "{{ nope }}",
        ][..],
    ] {
        let out = home.run_on(&[(p, &server)], args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.starts_with("axe: unknown template variable {{"),
            "{err}"
        );
        assert!(
            err.contains("{{team}} in the system prompt") || err.contains("{{nope}} in --prompt"),
            "{err}"
        );
        assert_eq!(stdout(&out), "");
    }
    assert!(server.requests().is_empty());
}

#[test]
fn without_var_a_single_runs_braces_are_plain_text() {
    // A prompt or skill written before there were templates (a skill
    // quoting Mustache) runs as it did.
    let p = P::Anthropic;
    let server = echo(p, |_| Duration::ZERO);
    let home = home_with(p, "", "");
    home.agent(
        "bot",
        &format!(
            "name = \"bot\"\nmodel = \"{}\"\nsystem_prompt = \"For {{{{team}}}}.\"\n",
            p.model()
        ),
    );
    let out = home.run_on(&[(p, &server)], &["run", "bot", "-p", "hello {{team}}"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "echo: hello {{team}}\n");
    assert_eq!(server.only_request().system_prompt(), "For {{team}}.");
}

#[test]
fn a_var_fills_a_single_run_too() {
    let p = P::Anthropic;
    let server = echo(p, |_| Duration::ZERO);
    let home = home_with(p, "", "");
    home.agent(
        "bot",
        &format!(
            "name = \"bot\"\nmodel = \"{}\"\nsystem_prompt = \"For {{{{team}}}}.\"\n",
            p.model()
        ),
    );
    let out = home.run_on(
        &[(p, &server)],
        &["run", "bot", "--var", "team=core", "-p", "hello {{team}}"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "echo: hello core\n");
    assert_eq!(server.only_request().system_prompt(), "For core.");
}

#[test]
fn dry_run_shows_what_the_first_input_would_send() {
    let home = home_with(P::OpenAi, "", "first line\nsecond line\n");
    home.agent(
        "bot",
        "name = \"bot\"\nmodel = \"openai/gpt-4o\"\nsystem_prompt = \"Line {{line}} of the batch.\"\n",
    );
    let out = home.run(&["run", "bot", "--each", "in.txt", "--dry-run"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("--- System Prompt ---\nLine 1 of the batch.\n"),
        "{text}"
    );
    assert!(text.contains("--- Stdin ---\nfirst line\n"), "{text}");
    assert!(!text.contains("second line"), "{text}");
}

#[test]
fn batch_flags_without_inputs_are_a_usage_error() {
    let home = home_with(P::OpenAi, "", "");
    for (args, says) in [
        (
            &["run", "bot", "--jobs", "2"][..],
            "need --each or --each-file",
        ),
        (
            &["run", "bot", "--each", "in.txt", "--jobs", "0"][..],
            "--jobs 0",
        ),
        (
            &["run", "bot", "--each", "a", "--each-file", "b"][..],
            "cannot be given together",
        ),
        (
            &["run", "bot", "--var", "novalue"][..],
            "expected KEY=VALUE",
        ),
    ] {
        let out = home.run(args);
        assert_eq!(code(&out), 1, "{args:?}");
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
}
