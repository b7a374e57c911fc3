//! A run's spans (design §7.9): a three-level tree in both encodings,
//! a failed sub-agent, built-in and MCP tools, content only when asked.

use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use crate::tree_fake::three_levels;

const LIMIT: Duration = Duration::from_secs(60);

/// `lead` → `mid` → `leaf` run with spans exported to `rx` by `protocol`.
fn tree_run(protocol: &str, rx: &Receiver) -> (FakeServer, Vec<Value>) {
    let home = Home::new();
    let server = three_levels(&home);
    let out = run_bounded(
        home.axe_on(&[(P::OpenAi, &server)])
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &rx.url)
            .env("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
            .env(
                "OTEL_EXPORTER_OTLP_HEADERS",
                "authorization=Bearer%20otel-secret",
            )
            .env("OTEL_SERVICE_NAME", "axe-tests")
            .args(["run", "lead", "-p", "go"]),
        LIMIT,
    );
    assert_eq!(out.output.status.code(), Some(0), "{}", stderr(&out.output));
    // Every span is in when the process has exited (the flush waits).
    (server, rx.lines())
}

/// The tree's shape, names, parents and attributes.
fn check_tree(spans: &[Value], content_type: &str) {
    assert_eq!(spans.len(), 10, "3 agents, 5 requests, 2 calls: {spans:#?}");
    let lead = one(spans, "invoke_agent lead");
    let mid = one(spans, "invoke_agent mid");
    let leaf = one(spans, "invoke_agent leaf");
    let calls = named(spans, "execute_tool call_agent");
    assert_eq!(calls.len(), 2);
    assert_eq!(named(spans, "chat gpt-4o").len(), 5);
    let trace = lead["trace_id"].as_str().unwrap();
    for s in spans {
        assert_eq!(s["trace_id"], trace, "one trace: {s}");
        assert_eq!(s["content_type"], content_type);
        assert_eq!(s["path"], "/v1/traces");
        assert_eq!(s["auth"], "Bearer otel-secret");
        assert_eq!(s["resource"]["service.name"], "axe-tests");
        assert_eq!(s["scope"], "axe");
        assert!(s["end"].as_u64() >= s["start"].as_u64(), "{s}");
        assert_ne!(s["status"], ERROR, "{s}");
        assert_eq!(s["attrs"]["axe.run_id"], lead["attrs"]["axe.run_id"]);
    }
    assert_eq!(lead["parent"], "", "the root has no parent");
    // A sub-agent's span is under its caller's call_agent span, which is
    // under the caller's own.
    let mid_call = by_id(spans, mid["parent"].as_str().unwrap());
    assert_eq!(mid_call["name"], "execute_tool call_agent");
    assert_eq!(mid_call["parent"], lead["span_id"]);
    assert_eq!(mid_call["attrs"]["axe.agent_called"], "mid");
    assert_eq!(mid_call["attrs"]["gen_ai.tool.call.id"], "lead_0");
    let leaf_call = by_id(spans, leaf["parent"].as_str().unwrap());
    assert_eq!(leaf_call["parent"], mid["span_id"]);
    for chat in named(spans, "chat gpt-4o") {
        let owner = by_id(spans, chat["parent"].as_str().unwrap());
        assert!(
            owner["name"].as_str().unwrap().starts_with("invoke_agent "),
            "{chat}"
        );
        let a = &chat["attrs"];
        assert_eq!(a["gen_ai.operation.name"], "chat");
        assert_eq!(a["gen_ai.provider.name"], "openai");
        assert_eq!(a["gen_ai.request.model"], "gpt-4o");
        assert!(a["gen_ai.usage.input_tokens"].as_i64().unwrap() > 0, "{a}");
        assert!(a["gen_ai.usage.output_tokens"].as_i64().unwrap() > 0, "{a}");
        assert!(a["gen_ai.response.finish_reasons"].is_array(), "{a}");
        assert_eq!(chat["kind"], 3, "a client span");
    }
    let a = &leaf["attrs"];
    assert_eq!(a["gen_ai.operation.name"], "invoke_agent");
    assert_eq!(a["gen_ai.agent.name"], "leaf");
    assert_eq!(a["axe.agent.path"], "lead/mid#1/leaf#1");
    assert_eq!(a["axe.depth"], 2);
    // leaf's tokens: the fake bills 100n+1 in, 10n+1 out per response.
    assert_eq!(a["gen_ai.usage.input_tokens"], 401);
    assert_eq!(a["gen_ai.usage.output_tokens"], 41);
    assert_eq!(calls[0]["attrs"]["gen_ai.operation.name"], "execute_tool");
    assert_eq!(calls[0]["attrs"]["gen_ai.tool.name"], "call_agent");
}

#[test]
fn a_three_level_tree_is_one_trace_in_protobuf() {
    let Some(rx) = Receiver::start("ok") else {
        return;
    };
    let (_, spans) = tree_run("http/protobuf", &rx);
    check_tree(&spans, "application/x-protobuf");
}

#[test]
fn a_three_level_tree_is_one_trace_in_json() {
    let Some(rx) = Receiver::start("ok") else {
        return;
    };
    let (_, spans) = tree_run("http/json", &rx);
    check_tree(&spans, "application/json");
}

/// Each request to the provider carries the `traceparent` of its chat span.
#[test]
fn the_provider_receives_the_chat_spans_traceparent() {
    let Some(rx) = Receiver::start("ok") else {
        return;
    };
    let (server, spans) = tree_run("http/protobuf", &rx);
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    for r in &requests {
        let tp = r.header("traceparent").expect("a traceparent header");
        let parts: Vec<&str> = tp.split('-').collect();
        assert_eq!(parts.len(), 4, "{tp}");
        let chat = by_id(&spans, parts[2]);
        assert_eq!(chat["name"], "chat gpt-4o");
        assert_eq!(chat["trace_id"], parts[1]);
    }
}

/// Sub-agents called at once run on helper threads: each request still
/// carries its own chat span's `traceparent`, under the invoke_agent span
/// of the agent that sent it (the context travels in the request).
#[test]
fn sub_agents_on_helper_threads_send_their_own_chat_spans_traceparent() {
    let Some(rx) = Receiver::start("ok") else {
        return;
    };
    let home = Home::new();
    home.named_agent(
        "lead",
        "openai/gpt-4o",
        "sub_agents = [\"a\", \"b\", \"c\"]\n",
    );
    for name in ["a", "b", "c"] {
        home.named_agent(name, "openai/gpt-4o", "");
    }
    let server = crate::tree_fake::tree_server(
        crate::tree_fake::plan(&[("lead", &["a", "b", "c"])]),
        Duration::from_millis(100),
    );
    let out = run_bounded(
        home.axe_on(&[(P::OpenAi, &server)])
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &rx.url)
            .args(["run", "lead", "-p", "go"]),
        LIMIT,
    );
    assert_eq!(out.output.status.code(), Some(0), "{}", stderr(&out.output));
    let spans = rx.lines();
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    let mut chats = std::collections::BTreeSet::new();
    for r in &requests {
        let tp = r.header("traceparent").expect("a traceparent header");
        let parts: Vec<&str> = tp.split('-').collect();
        let chat = by_id(&spans, parts[2]);
        assert_eq!(chat["name"], "chat gpt-4o");
        let agent = by_id(&spans, chat["parent"].as_str().unwrap());
        assert_eq!(agent["name"], format!("invoke_agent {}", r.who()), "{tp}");
        chats.insert(parts[2].to_string());
    }
    assert_eq!(chats.len(), 5, "each request its own chat span");
}

/// A tool call that panics (a sub-agent's start, by the debug build's
/// hook) becomes its error result, and its span ends with ERROR status
/// all the same; the caller goes on.
#[test]
fn a_panicking_tool_call_ends_its_span_in_error() {
    let Some(rx) = Receiver::start("ok") else {
        return;
    };
    let home = Home::new();
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"boom\"]\n");
    home.named_agent("boom", "openai/gpt-4o", "");
    let server = crate::tree_fake::tree_server(
        crate::tree_fake::plan(&[("lead", &["boom"])]),
        Duration::ZERO,
    );
    let out = run_bounded(
        home.axe_on(&[(P::OpenAi, &server)])
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &rx.url)
            .env("AXE_DEBUG_PANIC_AGENT", "boom")
            .args(["run", "lead", "-p", "go"]),
        LIMIT,
    );
    assert_eq!(out.output.status.code(), Some(0), "{}", stderr(&out.output));
    assert!(stdout(&out.output).contains("internal error in axe"));
    let spans = rx.lines();
    let call = one(&spans, "execute_tool call_agent");
    assert_eq!(call["status"], ERROR, "{call}");
    assert_eq!(call["attrs"]["error.type"], "tool_error", "{call}");
    let lead = one(&spans, "invoke_agent lead");
    assert_eq!(call["parent"], lead["span_id"]);
    assert_ne!(lead["status"], ERROR, "the caller went on: {lead}");
}

/// A sub-agent whose request fails: its chat and invoke_agent spans end
/// in ERROR with axe's kind; its caller goes on.
#[test]
fn a_failed_sub_agent_has_an_error_status() {
    let Some(rx) = Receiver::start("ok") else {
        return;
    };
    let home = Home::fast_retries();
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"bad\"]\n");
    home.named_agent("bad", "openai/gpt-4o", "");
    let server = FakeServer::route(|req| {
        if req.who() == "bad" {
            return Reply::Json(401, r#"{"error":{"message":"no such key"}}"#.to_string());
        }
        if req.has_tool_results() {
            return Reply::Json(200, openai_text("lead is done", 5, 5));
        }
        Reply::Json(
            200,
            openai_tool_calls(&[("c1", "call_agent", delegate("bad", "go"))], 5, 5),
        )
    });
    let out = run_bounded(
        home.axe_on(&[(P::OpenAi, &server)])
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &rx.url)
            .args(["run", "lead", "-p", "go"]),
        LIMIT,
    );
    assert_eq!(out.output.status.code(), Some(0), "{}", stderr(&out.output));
    let spans = rx.lines();
    let bad = one(&spans, "invoke_agent bad");
    assert_eq!(bad["status"], ERROR, "{bad}");
    assert_eq!(bad["attrs"]["error.type"], "Auth", "{bad}");
    let chats = named(&spans, "chat gpt-4o");
    let failed: Vec<_> = chats
        .iter()
        .filter(|c| c["parent"] == bad["span_id"])
        .collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["status"], ERROR);
    assert_eq!(failed[0]["attrs"]["error.type"], "Auth");
    assert_ne!(one(&spans, "invoke_agent lead")["status"], ERROR);
}

/// A built-in tool's span, and an MCP tool's with the MCP conventions'.
#[test]
fn tool_and_mcp_calls_are_execute_tool_spans() {
    let Some(rx) = Receiver::start("ok") else {
        return;
    };
    let Some(time) = crate::mcp::time_server() else {
        return;
    };
    let home = Home::new();
    home.config(&format!(
        "[[mcp_servers]]\nname = \"time\"\ncommand = {:?}\n",
        time.display().to_string()
    ));
    let work = home.dir.path().display().to_string();
    home.named_agent(
        "user",
        "openai/gpt-4o",
        &format!("workdir = {work:?}\ntools = [\"list_directory\"]\nmcp_servers = [\"time\"]\n"),
    );
    let server = FakeServer::tool_loop(
        openai_tool_calls(
            &[
                ("c1", "list_directory", json!({})),
                ("c2", "time__get_current_time", json!({"timezone": "UTC"})),
            ],
            5,
            5,
        ),
        openai_text("done", 5, 5),
    );
    let out = run_bounded(
        home.axe_on(&[(P::OpenAi, &server)])
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &rx.url)
            .args(["run", "user", "-p", "go"]),
        LIMIT,
    );
    assert_eq!(out.output.status.code(), Some(0), "{}", stderr(&out.output));
    let spans = rx.lines();
    let agent = one(&spans, "invoke_agent user");
    let list = one(&spans, "execute_tool list_directory");
    assert_eq!(list["parent"], agent["span_id"]);
    assert_eq!(list["attrs"]["gen_ai.tool.call.id"], "c1");
    assert_eq!(list["attrs"]["gen_ai.tool.type"], "function");
    assert!(list["attrs"]["axe.tool.bytes"].as_i64().is_some(), "{list}");
    let mcp = one(&spans, "execute_tool time__get_current_time");
    assert_eq!(mcp["parent"], agent["span_id"]);
    let a = &mcp["attrs"];
    assert_eq!(a["mcp.method.name"], "tools/call", "{a}");
    assert_eq!(a["axe.mcp.server"], "time");
    assert_eq!(a["axe.mcp.tool"], "get_current_time");
    assert_eq!(a["gen_ai.tool.type"], "extension");
    assert_ne!(mcp["status"], ERROR, "{mcp}");
}

/// Prompts and answers are exported only when asked, and then with the
/// keys axe knows redacted.
#[test]
fn content_is_exported_only_when_asked_and_redacted() {
    for capture in [false, true] {
        let Some(rx) = Receiver::start("ok") else {
            return;
        };
        let home = Home::new();
        home.plain_agent("one", "openai/gpt-4o");
        let server = FakeServer::json(200, &openai_text("the answer", 5, 5));
        let prompt = format!("my key is {OPENAI_KEY}, keep it");
        let mut cmd = home.axe_on(&[(P::OpenAi, &server)]);
        cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", &rx.url)
            .args(["run", "one", "-p", &prompt]);
        if capture {
            cmd.env("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true");
        }
        let out = run_bounded(&mut cmd, LIMIT);
        assert_eq!(out.output.status.code(), Some(0), "{}", stderr(&out.output));
        let spans = rx.lines();
        let all = serde_json::to_string(&spans).unwrap();
        assert!(!all.contains(OPENAI_KEY), "a key in the spans: {all}");
        let chat = one(&spans, "chat gpt-4o");
        let input = chat["attrs"]["gen_ai.input.messages"].as_str();
        let output = chat["attrs"]["gen_ai.output.messages"].as_str();
        if capture {
            let input: Value = serde_json::from_str(input.unwrap()).unwrap();
            let text = input[0]["parts"][0]["content"].as_str().unwrap();
            assert!(
                text.starts_with("my key is ") && text.ends_with(", keep it"),
                "{text}"
            );
            assert!(output.unwrap().contains("the answer"));
        } else {
            assert!(input.is_none() && output.is_none(), "{chat}");
            assert!(
                !all.contains("the answer") && !all.contains("keep it"),
                "{all}"
            );
        }
    }
}

/// A run stopped by SIGTERM while a sub-agent waits on its provider: the
/// spans of every agent still running end in ERROR, `interrupted`, and
/// reach the collector (the ledger's list of runs going on ends them, on
/// places cloned from the runs' own).
#[test]
fn a_terminated_runs_spans_end_interrupted() {
    let Some(rx) = Receiver::start("ok") else {
        return;
    };
    let home = Home::new();
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"w\"]\n");
    home.named_agent("w", "openai/gpt-4o", "");
    let server = FakeServer::route(|req| {
        if req.who() == "w" {
            return Reply::Hang;
        }
        Reply::Json(
            200,
            openai_tool_calls(&[("c1", "call_agent", delegate("w", "go"))], 5, 5),
        )
    });
    let child = home
        .axe_on(&[(P::OpenAi, &server)])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &rx.url)
        .args(["run", "lead", "-p", "go"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    server.wait_for_requests(2);
    signal(&child, libc::SIGTERM);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(143), "{}", stderr(&out));
    let spans = rx.spans(4, LIMIT);
    for name in ["invoke_agent lead", "invoke_agent w"] {
        let run = one(&spans, name);
        assert_eq!(run["status"], ERROR, "{run}");
        assert_eq!(run["attrs"]["error.type"], "interrupted", "{run}");
    }
    let w = one(&spans, "invoke_agent w");
    let chat = named(&spans, "chat gpt-4o")
        .into_iter()
        .find(|c| c["parent"] == w["span_id"])
        .expect("w's chat span");
    assert_eq!(chat["status"], ERROR, "{chat}");
}
