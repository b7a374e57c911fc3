//! One trace across processes (design §7.9): `TRACEPARENT` joined by
//! `axe run` (a malformed one ignored, said with `--verbose`), a served
//! request's `traceparent` joined by `axe serve`; and a collector that
//! hangs, fails or is absent costing at most the flush bound.

use std::time::{Duration, Instant};

use super::*;
use crate::serve::{Server, chat_body, post};

const PARENT_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const PARENT_SPAN: &str = "b7ad6b7169203331";

fn traceparent() -> String {
    format!("00-{PARENT_TRACE}-{PARENT_SPAN}-01")
}

fn one_agent(answer: &str) -> (Home, FakeServer) {
    let home = Home::new();
    home.plain_agent("one", "openai/gpt-4o");
    (home, FakeServer::json(200, &openai_text(answer, 5, 5)))
}

#[test]
fn a_run_joins_the_trace_in_traceparent() {
    let Some(rx) = Receiver::start("ok") else {
        return;
    };
    let (home, server) = one_agent("hi");
    let out = run_bounded(
        home.axe_on(&[(P::OpenAi, &server)])
            .env(
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                format!("{}/v1/traces", rx.url),
            )
            .env("TRACEPARENT", traceparent())
            .args(["run", "one", "-p", "go"]),
        Duration::from_secs(60),
    );
    assert_eq!(out.output.status.code(), Some(0), "{}", stderr(&out.output));
    let spans = rx.lines();
    let agent = one(&spans, "invoke_agent one");
    assert_eq!(agent["trace_id"], PARENT_TRACE);
    assert_eq!(agent["parent"], PARENT_SPAN);
    // The parent is another process's: flags say it is remote.
    assert_eq!(agent["flags"].as_u64().unwrap() & 0x300, 0x300, "{agent}");
    let chat = one(&spans, "chat gpt-4o");
    assert_eq!(chat["trace_id"], PARENT_TRACE);
    assert_eq!(chat["parent"], agent["span_id"]);
}

#[test]
fn a_malformed_traceparent_is_ignored_with_a_verbose_note() {
    let Some(rx) = Receiver::start("ok") else {
        return;
    };
    let (home, server) = one_agent("hi");
    let out = run_bounded(
        home.axe_on(&[(P::OpenAi, &server)])
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &rx.url)
            .env(
                "TRACEPARENT",
                format!("00-{}-{PARENT_SPAN}-01", PARENT_TRACE.to_uppercase()),
            )
            .args(["run", "one", "-p", "go", "--verbose"]),
        Duration::from_secs(60),
    );
    assert_eq!(out.output.status.code(), Some(0), "{}", stderr(&out.output));
    assert!(
        stderr(&out.output).contains("[telemetry] TRACEPARENT ignored: the trace id"),
        "{}",
        stderr(&out.output)
    );
    let spans = rx.lines();
    let agent = one(&spans, "invoke_agent one");
    assert_eq!(agent["parent"], "");
    assert_ne!(agent["trace_id"], PARENT_TRACE);
}

#[test]
fn a_served_request_joins_its_traceparent() {
    let Some(rx) = Receiver::start("ok") else {
        return;
    };
    let (home, fake) = one_agent("served");
    let mut cmd = home.axe_on(&[(P::OpenAi, &fake)]);
    cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", &rx.url);
    let server = Server::start_with(cmd, &[]);
    let header = format!("traceparent: {}\r\n", traceparent());
    let r = post(
        &server.addr,
        "/v1/chat/completions",
        &chat_body("one", "q"),
        &header,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    // A server's spans go in batches: within the linger (2 s) and a margin.
    let spans = rx.spans(2, Duration::from_secs(15));
    let agent = one(&spans, "invoke_agent one");
    assert_eq!(agent["trace_id"], PARENT_TRACE);
    assert_eq!(agent["parent"], PARENT_SPAN);
    let chat = one(&spans, "chat gpt-4o");
    assert_eq!(chat["parent"], agent["span_id"]);
}

/// The time from the run's start to its exit with export to `endpoint`,
/// and its stderr; the run must succeed.
fn timed_run(endpoint: &str) -> (Duration, String) {
    let (home, server) = one_agent("hi");
    let started = Instant::now();
    let out = run_bounded(
        home.axe_on(&[(P::OpenAi, &server)])
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
            .args(["run", "one", "-p", "go"]),
        Duration::from_secs(60),
    );
    let took = started.elapsed();
    assert_eq!(out.output.status.code(), Some(0), "{}", stderr(&out.output));
    assert_eq!(stdout(&out.output), "hi\n");
    (took, stderr(&out.output))
}

/// A collector that never answers, fails or is not there: the run's
/// answer and exit code are as without one, it exits within the flush
/// bound (1 s) after the answer, plus a generous margin for a loaded
/// machine, and says so once.
#[test]
fn a_collector_that_hangs_fails_or_is_absent_costs_at_most_the_bound() {
    let Some(hang) = Receiver::start("hang") else {
        return;
    };
    let Some(fail) = Receiver::start("fail") else {
        return;
    };
    for (what, url) in [
        ("hangs", hang.url.clone()),
        ("fails", fail.url.clone()),
        ("is absent", refused_url()),
    ] {
        let (took, stderr) = timed_run(&url);
        eprintln!("a collector that {what}: the run took {took:?}");
        assert!(
            took < Duration::from_millis(4000),
            "a collector that {what}: {took:?}"
        );
        if what != "hangs" {
            let warnings = stderr.matches("telemetry: cannot export spans").count();
            assert_eq!(warnings, 1, "a collector that {what}: {stderr}");
        }
    }
}

/// config.toml's `[telemetry]` says what the variables say; the
/// variables win.
#[test]
fn config_tomls_telemetry_table_exports_and_the_environment_wins() {
    let Some(rx) = Receiver::start("ok") else {
        return;
    };
    let (home, server) = one_agent("hi");
    home.config(&format!(
        "[telemetry]\nendpoint = {:?}\nprotocol = \"http/json\"\nservice_name = \"from-config\"\n\
         [telemetry.resource_attributes]\n\"deployment.environment\" = \"ci\"\n",
        rx.url
    ));
    let out = run_bounded(
        home.axe_on(&[(P::OpenAi, &server)])
            .args(["run", "one", "-p", "go"]),
        Duration::from_secs(60),
    );
    assert_eq!(out.output.status.code(), Some(0), "{}", stderr(&out.output));
    assert!(
        !stderr(&out.output).contains("unknown key"),
        "{}",
        stderr(&out.output)
    );
    let spans = rx.lines();
    let agent = one(&spans, "invoke_agent one");
    assert_eq!(agent["content_type"], "application/json");
    assert_eq!(agent["resource"]["service.name"], "from-config");
    assert_eq!(agent["resource"]["deployment.environment"], "ci");
    // OTEL_SDK_DISABLED wins over the file: nothing more is sent.
    let before = rx.lines().len();
    let out = run_bounded(
        home.axe_on(&[(P::OpenAi, &server)])
            .env("OTEL_SDK_DISABLED", "true")
            .args(["run", "one", "-p", "go"]),
        Duration::from_secs(60),
    );
    assert_eq!(out.output.status.code(), Some(0));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(rx.lines().len(), before);
}

/// A batch is one tree: each input's `invoke_agent` under the batch's
/// `invoke_workflow` span, itself under `TRACEPARENT`.
#[test]
fn a_batch_is_one_tree_under_its_workflow_span() {
    let Some(rx) = Receiver::start("ok") else {
        return;
    };
    let (home, server) = one_agent("hi");
    std::fs::write(home.dir.path().join("in.txt"), "a\nb\nc\n").unwrap();
    let out = run_bounded(
        home.axe_on(&[(P::OpenAi, &server)])
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &rx.url)
            .env("TRACEPARENT", traceparent())
            .args(["run", "one", "--each", "in.txt", "--jobs", "2"]),
        Duration::from_secs(60),
    );
    assert_eq!(out.output.status.code(), Some(0), "{}", stderr(&out.output));
    let spans = rx.lines();
    let batch = one(&spans, "invoke_workflow one");
    assert_eq!(batch["parent"], PARENT_SPAN);
    assert_eq!(batch["attrs"]["gen_ai.operation.name"], "invoke_workflow");
    let runs = named(&spans, "invoke_agent one");
    assert_eq!(runs.len(), 3);
    let mut ids: Vec<&Value> = runs.iter().map(|r| &r["attrs"]["axe.run_id"]).collect();
    ids.dedup();
    assert_eq!(ids.len(), 3, "a run id each");
    for r in runs {
        assert_eq!(r["parent"], batch["span_id"]);
        assert_eq!(r["trace_id"], PARENT_TRACE);
    }
}

/// `axe mcp serve` over HTTP: a call joins its request's `traceparent`.
#[test]
fn an_mcp_call_over_http_joins_its_traceparent() {
    let Some(rx) = Receiver::start("ok") else {
        return;
    };
    let home = Home::new();
    home.named_agent("helper", "openai/gpt-4o", "description = \"Says hello.\"\n");
    let fake = FakeServer::json(200, &openai_text("Hello.", 1, 1));
    let mut cmd = home.axe_on(&[(P::OpenAi, &fake)]);
    cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", &rx.url).arg("mcp");
    let server = Server::start_with(cmd, &[]);
    let meta = r#""_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}"#;
    let call = format!(
        r#"{{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {{"name": "helper", "arguments": {{"task": "Hi."}}, {meta}}}}}"#
    );
    let headers = format!(
        "mcp-protocol-version: 2026-07-28\r\nmcp-method: tools/call\r\nmcp-name: helper\r\ntraceparent: {}\r\n",
        traceparent()
    );
    let r = post(&server.addr, "/mcp", &call, &headers);
    assert_eq!(r.status, 200, "{}", r.body);
    let spans = rx.spans(2, Duration::from_secs(15));
    let agent = one(&spans, "invoke_agent helper");
    assert_eq!(agent["trace_id"], PARENT_TRACE);
    assert_eq!(agent["parent"], PARENT_SPAN);
    assert_eq!(one(&spans, "chat gpt-4o")["parent"], agent["span_id"]);
}
