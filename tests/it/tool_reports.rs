//! What a run reports about its built-in tool calls, through the real
//! binary and a fake OpenAI server on loopback: `--json`'s
//! `tool_call_details` (top level and per agent), the `--- Tools ---`
//! section of `--dry-run`, the tools rows of `axe agents show`, and the
//! running calls in the live progress view (design §2.9, §7.4, §8).

use crate::common::*;
use crate::progress::under_pty;

use serde_json::{Value, json};

/// A directory for the agents to work in, with `notes.txt`.
fn workdir() -> TempDir {
    let w = TempDir::new("tool-reports-work");
    std::fs::write(w.path().join("notes.txt"), "first line\nsecond line\n").unwrap();
    w
}

/// The `--json` line of a run that exited 0.
fn json_of(out: &std::process::Output) -> Value {
    assert_eq!(code(out), 0, "{}", stderr(out));
    serde_json::from_str(&stdout(out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(out)))
}

/// The names, inputs, outputs, errors and turns of `details`, without the
/// durations (which vary), after checking each has one.
fn calls(details: &Value) -> Vec<Value> {
    let details = details.as_array().expect("tool_call_details is an array");
    details
        .iter()
        .map(|d| {
            assert!(d["duration_ms"].is_u64(), "{d}");
            let keys: Vec<&str> = d.as_object().unwrap().keys().map(String::as_str).collect();
            assert_eq!(
                keys,
                ["duration_ms", "input", "is_error", "name", "output", "turn"]
            );
            json!([d["name"], d["input"], d["output"], d["is_error"], d["turn"]])
        })
        .collect()
}

#[test]
fn json_lists_the_top_level_agents_tool_calls_with_their_results() {
    let home = Home::new();
    let work = workdir();
    home.named_agent(
        "lead",
        "openai/gpt-4o",
        &format!(
            "workdir = \"{}\"\ntools = [\"read_file\", \"list_directory\"]\n",
            work.path().display()
        ),
    );
    // Turn 1 reads a file and lists the workdir, turn 2 reads a missing
    // file, turn 3 answers.
    let server = FakeServer::route(|req| {
        let turn = req
            .messages()
            .iter()
            .filter(|m| m["role"] == "assistant")
            .count();
        let body = match turn {
            0 => openai_tool_calls(
                &[
                    ("c1", "read_file", json!({"path": "notes.txt", "limit": 1})),
                    ("c2", "list_directory", json!({})),
                ],
                10,
                5,
            ),
            1 => openai_tool_calls(&[("c3", "read_file", json!({"path": "gone.txt"}))], 10, 5),
            _ => openai_text("read it", 10, 5),
        };
        Reply::Json(200, body)
    });
    let out = home.run_on(
        &[(P::OpenAi, &server)],
        &["run", "lead", "--json", "-p", "go"],
    );
    let v = json_of(&out);
    assert_eq!(v["content"], "read it");
    // Every answered call counts, as before: three.
    assert_eq!(v["tool_calls"], 3, "{v}");
    let got = calls(&v["tool_call_details"]);
    assert_eq!(got.len(), 3, "{v}");
    assert_eq!(
        got[0],
        json!(["read_file", {"path": "notes.txt", "limit": "1"}, "1: first line\n[lines 1-1 shown; the file goes on: read on with offset 2]\n", false, 1]),
        "{v}"
    );
    assert_eq!(
        got[1],
        json!(["list_directory", {}, "notes.txt\n", false, 1])
    );
    assert_eq!(got[2][0], "read_file");
    assert_eq!(got[2][1], json!({"path": "gone.txt"}));
    assert_eq!(got[2][3], true, "a missing file is an error result: {v}");
    assert_eq!(got[2][4], 2);
    assert!(got[2][2].as_str().unwrap().starts_with("gone.txt: "), "{v}");
    // The only agent: its entry in `agents` holds the same calls.
    assert_eq!(v["agents"][0]["name"], "lead");
    assert_eq!(calls(&v["agents"][0]["tool_call_details"]), got);
}

#[test]
fn json_has_empty_tool_call_details_for_a_run_without_tools() {
    let home = Home::new();
    home.named_agent("plain", "openai/gpt-4o", "");
    let server = FakeServer::json(200, &openai_text("hi", 3, 1));
    let v = json_of(&home.run_on(&[(P::OpenAi, &server)], &["run", "plain", "--json"]));
    assert_eq!(v["tool_call_details"], json!([]), "{v}");
    assert_eq!(v["agents"][0]["tool_call_details"], json!([]), "{v}");
}

#[test]
fn json_gives_each_agent_the_tool_calls_of_all_its_runs() {
    let home = Home::new();
    let work = workdir();
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"reader\"]\n");
    home.named_agent(
        "reader",
        "openai/gpt-4o",
        &format!(
            "workdir = \"{}\"\ntools = [\"read_file\"]\n",
            work.path().display()
        ),
    );
    // lead calls reader twice; each run of reader reads one file, then
    // answers.
    let server = FakeServer::route(|req| {
        let body = match (req.who().as_str(), req.has_tool_results()) {
            ("lead", false) => openai_tool_calls(
                &[
                    ("a1", "call_agent", delegate("reader", "one")),
                    ("a2", "call_agent", delegate("reader", "two")),
                ],
                1,
                1,
            ),
            ("lead", true) => openai_text("both read", 1, 1),
            (_, false) => openai_tool_calls(
                &[("r1", "read_file", json!({"path": "notes.txt", "offset": 2}))],
                1,
                1,
            ),
            (_, true) => openai_text("read", 1, 1),
        };
        Reply::Json(200, body)
    });
    let v = json_of(&home.run_on(&[(P::OpenAi, &server)], &["run", "lead", "--json"]));
    assert_eq!(v["content"], "both read");
    // The top-level agent made no built-in call; its two call_agent calls
    // are counted in tool_calls, not detailed.
    assert_eq!(v["tool_calls"], 2);
    assert_eq!(v["tool_call_details"], json!([]), "{v}");
    let agents = v["agents"].as_array().unwrap();
    assert_eq!(agents[0]["name"], "lead");
    assert_eq!(agents[0]["tool_call_details"], json!([]), "{v}");
    assert_eq!(agents[1]["name"], "reader");
    assert_eq!(agents[1]["calls"], 2);
    let one =
        json!(["read_file", {"path": "notes.txt", "offset": "2"}, "2: second line\n", false, 1]);
    assert_eq!(
        calls(&agents[1]["tool_call_details"]),
        [one.clone(), one],
        "{v}"
    );
}

#[test]
fn json_cuts_a_long_result_to_4_kib_and_redacts_keys_in_it() {
    let home = Home::new();
    let work = workdir();
    // A key in a file the model reads; then 300 lines of text.
    let mut text = format!("token = {OPENAI_KEY}\n");
    for i in 0..300 {
        text.push_str(&format!(
            "line {i:03} of a file far longer than four kibibytes\n"
        ));
    }
    std::fs::write(work.path().join("big.txt"), &text).unwrap();
    home.named_agent(
        "lead",
        "openai/gpt-4o",
        &format!(
            "workdir = \"{}\"\ntools = [\"read_file\"]\n",
            work.path().display()
        ),
    );
    let server = FakeServer::route(|req| {
        let body = if req.has_tool_results() {
            openai_text("done", 1, 1)
        } else {
            openai_tool_calls(&[("c1", "read_file", json!({"path": "big.txt"}))], 1, 1)
        };
        Reply::Json(200, body)
    });
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead", "--json"]);
    assert!(!stdout(&out).contains(OPENAI_KEY), "{}", stdout(&out));
    let v = json_of(&out);
    let output = v["tool_call_details"][0]["output"].as_str().unwrap();
    assert!(
        output.starts_with("1: token = [redacted]\n2: line 000"),
        "{output}"
    );
    let (kept, marker) = output.rsplit_once('\n').unwrap();
    assert_eq!(kept.len(), 4096, "{output}");
    assert!(marker.starts_with("[cut: ") && marker.ends_with(" more bytes not shown]"));
    // The model was sent the whole result, not the report's cut.
    let sent = &server.requests()[1].tool_result_texts()[0];
    assert!(sent.contains("line 299 of a file"), "{sent}");
}

/// The `--- Tools ---` section of `axe run <agent> --dry-run`: from its
/// heading to the end of the report, or to the next section.
fn tools_section(home: &Home, agent: &str) -> String {
    let out = home.run(&["run", agent, "--dry-run"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let start = text
        .find("\n--- Tools ---\n")
        .unwrap_or_else(|| panic!("no tools section: {text}"));
    let rest = &text[start + 1..];
    let end = rest[1..].find("\n--- ").map_or(rest.len(), |i| i + 2);
    rest[..end].to_string()
}

/// The `Paths:` value for file tools, as this kernel resolves paths.
fn paths_how() -> &'static str {
    if axe::sandbox::Root::kernel_resolves() {
        "the kernel resolves each path (openat2)"
    } else {
        "no openat2: a walk that refuses symlinks"
    }
}

#[test]
fn dry_run_lists_the_tools_and_the_landlock_sandbox_commands_would_get() {
    // A dry run of an agent whose commands cannot be confined here is
    // refused as its run would be.
    if !landlock() {
        return;
    }
    let abi = axe::sandbox::landlock_abi();
    let home = Home::new();
    let work = workdir();
    let w = work.path().display();
    home.named_agent(
        "lead",
        "openai/gpt-4o",
        &format!(
            "workdir = \"{w}\"\ntools = [\"read_file\", \"run_command\", \"url_fetch\", \"read_file\"]\n\
             allowed_hosts = [\"docs.rs\", \"*.github.io\"]\n\
             [sandbox]\nread = [\"~/.cargo\", \"/srv/data\"]\nwrite = [\"out\"]\nenv = [\"CARGO_HOME\", \"PATH\"]\n"
        ),
    );
    let h = home.dir.path().display();
    let network = if abi >= 4 {
        "off".to_string()
    } else {
        format!("on (Landlock ABI {abi} cannot deny TCP)")
    };
    let expected = format!(
        "--- Tools ---\n\
         read_file, run_command, url_fetch\n\
         Paths:            read beneath the workdir; {how}\n\
         Sandbox:          Landlock ABI {abi}\n\
         Readable:         /usr, /bin, /sbin, /lib, /lib32, /lib64, /libx32, /etc, /opt, /proc, /sys, {h}/.cargo, /srv/data\n\
         Writable:         {w}, a private TMPDIR, {w}/out, /dev/null, /dev/zero, /dev/full, /dev/random, /dev/urandom\n\
         Read-only:        .git, axe, .claude, .codex beneath what is writable\n\
         Network:          {network}\n\
         Env:              PATH, HOME, USER, LOGNAME, LANG, LC_ALL, LC_CTYPE, TERM, TZ, CARGO_HOME, TMPDIR, SHELL\n\
         url_fetch hosts:  docs.rs, *.github.io\n\
         Private networks: no\n",
        how = paths_how()
    );
    assert_eq!(tools_section(&home, "lead"), expected);
}

#[test]
fn dry_run_says_when_the_sandbox_is_off_or_not_used() {
    let home = Home::new();
    // Run from the home, an agent with its sandbox off may write the
    // config directory's agents: the user's word keeps them read (design
    // §8.8).
    home.config(&format!(
        "trusted_agent_dirs = [\"{}\"]\n",
        home.config_dir().join("agents").display()
    ));
    home.named_agent(
        "loose",
        "openai/gpt-4o",
        "tools = [\"run_command\", \"write_file\"]\n[sandbox]\nmode = \"off\"\nnetwork = true\n",
    );
    assert_eq!(
        tools_section(&home, "loose"),
        format!(
            "--- Tools ---\n\
             run_command, write_file\n\
             Paths:            read and write beneath the workdir; {}\n\
             Sandbox:          off (mode = \"off\")\n\
             Readable:         whatever this user can read\n\
             Writable:         whatever this user can write\n\
             Network:          on\n\
             Env:              PATH, HOME, USER, LOGNAME, LANG, LC_ALL, LC_CTYPE, TERM, TZ, TMPDIR, SHELL\n",
            paths_how()
        )
    );
    home.named_agent(
        "fetcher",
        "openai/gpt-4o",
        "tools = [\"url_fetch\"]\n[sandbox]\nprivate_networks = true\n",
    );
    assert_eq!(
        tools_section(&home, "fetcher"),
        "--- Tools ---\n\
         url_fetch\n\
         Sandbox:          not used (no run_command)\n\
         url_fetch hosts:  any public host\n\
         Private networks: yes\n"
    );
}

#[test]
fn dry_run_has_no_tools_section_without_tools_and_puts_it_after_sub_agents() {
    let home = Home::new();
    home.named_agent("plain", "openai/gpt-4o", "sub_agents = [\"x\"]\n");
    let out = home.run(&["run", "plain", "--dry-run"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!stdout(&out).contains("--- Tools ---"), "{}", stdout(&out));
    home.named_agent(
        "lister",
        "openai/gpt-4o",
        "sub_agents = [\"x\"]\ntools = [\"list_directory\"]\n[output]\nschema = { type = \"object\" }\n",
    );
    let text = stdout(&home.run(&["run", "lister", "--dry-run"]));
    let sub = text.find("--- Sub-Agents ---").unwrap();
    let tools = text.find("--- Tools ---").unwrap();
    let schema = text.find("--- Output Schema ---").unwrap();
    assert!(sub < tools && tools < schema, "{text}");
}

#[test]
fn agents_show_lists_tools_and_the_sandbox_settings_the_file_sets() {
    let home = Home::new();
    home.agent(
        "busy",
        "name = \"busy\"\nmodel = \"openai/gpt-4o\"\n\
         tools = [\"read_file\", \"url_fetch\"]\nallowed_hosts = [\"docs.rs\"]\n\
         [sandbox]\nmode = \"off\"\nread = [\"~/.cargo\"]\nwrite = [\"/tmp/out\"]\n\
         network = true\nprivate_networks = true\nenv = [\"CARGO_HOME\"]\n",
    );
    let out = home.run(&["agents", "show", "busy"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let rows: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Tools:"))
        .take(8)
        .collect();
    assert_eq!(
        rows,
        [
            "Tools:            read_file, url_fetch",
            "Allowed Hosts:    docs.rs",
            "Sandbox:          off (commands run without Landlock)",
            "Sandbox Read:     ~/.cargo",
            "Sandbox Write:    /tmp/out",
            "Sandbox Network:  yes",
            "Private Networks: yes",
            "Sandbox Env:      CARGO_HOME",
        ],
        "{text}"
    );
    // Only what is set: tools alone add one row, and no sandbox row.
    home.agent(
        "reader",
        "name = \"reader\"\nmodel = \"openai/gpt-4o\"\ntools = [\"read_file\"]\n",
    );
    let text = stdout(&home.run(&["agents", "show", "reader"]));
    assert!(text.contains("\nTools:         read_file\n"), "{text}");
    assert!(
        !text.contains("Sandbox") && !text.contains("Allowed"),
        "{text}"
    );
    home.named_agent("plain", "openai/gpt-4o", "");
    let text = stdout(&home.run(&["agents", "show", "plain"]));
    assert!(!text.contains("Tools:"), "{text}");
}

#[test]
fn progress_shows_a_running_tool_call_under_its_agent() {
    let home = Home::new();
    // Run from the home, an agent with its sandbox off may write the
    // config directory's agents: the user's word keeps them read (design
    // §8.8).
    home.config(&format!(
        "trusted_agent_dirs = [\"{}\"]\n",
        home.config_dir().join("agents").display()
    ));
    // mode = "off": the view is the same under Landlock, and this runs on
    // kernels without it.
    home.named_agent(
        "lead",
        "openai/gpt-4o",
        "tools = [\"run_command\"]\n[sandbox]\nmode = \"off\"\n",
    );
    let server = FakeServer::route(|req| {
        let body = if req.has_tool_results() {
            openai_text("slept", 1, 1)
        } else {
            openai_tool_calls(
                &[("c1", "run_command", json!({"command": "sleep 1"}))],
                1,
                1,
            )
        };
        Reply::Json(200, body)
    });
    let Some(screen) = under_pty(&home, &server, &["run", "lead"], &[("NO_COLOR", "1")]) else {
        return;
    };
    // A frame: the agent, and under it the command it runs, with its time.
    let at = screen
        .find("lead  depth 0  turn 1")
        .unwrap_or_else(|| panic!("{screen:?}"));
    let below = &screen[at..];
    let tool = below
        .find("  · run_command command \"sleep 1\"  ")
        .unwrap_or_else(|| panic!("{screen:?}"));
    let secs = &below[tool + "  · run_command command \"sleep 1\"  ".len()..];
    let secs: String = secs
        .chars()
        .take_while(|c| *c != '\r' && *c != '\n')
        .collect();
    assert!(
        secs.ends_with('s') && secs[..secs.len() - 1].parse::<f64>().is_ok(),
        "{secs:?}"
    );
    // Erased before the answer, which comes last.
    let last_erase = screen.rfind("\x1b[J").unwrap();
    assert_eq!(screen[last_erase + 3..].trim_end(), "slept", "{screen:?}");
}

#[test]
fn json_lists_the_calls_of_one_response_in_the_order_the_model_made_them() {
    // The first call is slow (a page served after 400 ms), the second
    // fast: they end in the other order.
    let page = FakeServer::route(|_| {
        Reply::Delay(
            std::time::Duration::from_millis(400),
            Box::new(Reply::Raw {
                status: 200,
                content_type: "text/plain".into(),
                headers: vec![],
                body: "slow page".into(),
            }),
        )
    });
    let home = Home::new();
    let work = workdir();
    home.named_agent(
        "lead",
        "openai/gpt-4o",
        &format!(
            "workdir = \"{}\"\ntools = [\"url_fetch\", \"read_file\"]\n\
             allowed_hosts = [\"127.0.0.1\"]\n[sandbox]\nprivate_networks = true\n",
            work.path().display()
        ),
    );
    let url = format!("{}/page", page.url);
    let server = FakeServer::route(move |req| {
        if req.has_tool_results() {
            return Reply::Json(200, openai_text("done", 10, 5));
        }
        Reply::Json(
            200,
            openai_tool_calls(
                &[
                    ("c1", "url_fetch", json!({"url": url})),
                    ("c2", "read_file", json!({"path": "notes.txt"})),
                ],
                10,
                5,
            ),
        )
    });
    let out = home.run_on(
        &[(P::OpenAi, &server)],
        &["run", "lead", "--json", "-p", "go"],
    );
    let v = json_of(&out);
    let names: Vec<&str> = v["tool_call_details"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["url_fetch", "read_file"], "{v}");
}
