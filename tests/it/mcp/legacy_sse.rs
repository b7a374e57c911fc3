//! The older HTTP+SSE transport, which the Go original's agent files name
//! (`transport = "sse"`, design §11.2), against server-everything serving
//! it: the endpoint taken from the stream, tools listed, calls answered on
//! the stream side by side, and an agent file written as the Go original's
//! are run through the binary.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::served;
use crate::common::*;
use axe::mcp::{Server, ServerFile};
use serde_json::json;

fn soon() -> Instant {
    Instant::now() + Duration::from_secs(30)
}

#[test]
fn an_sse_server_lists_its_tools_and_answers_calls_side_by_side() {
    let Some(sse) = served("sse", "/sse") else {
        return;
    };
    let config = ServerFile {
        name: "old".into(),
        url: Some(sse.url.clone()),
        transport: Some("sse".into()),
        ..ServerFile::default()
    }
    .validate("test")
    .unwrap();
    let log: axe::mcp::rpc::Log = Arc::new(|_: &axe::mcp::rpc::Note| {});
    let server = Arc::new(Server::start(&config, Path::new("."), log, soon()).expect("starts"));
    assert!(server.tools.iter().any(|t| t.name == "echo"));
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let server = server.clone();
            std::thread::spawn(move || {
                server.call("echo", json!({"message": format!("m{i}")}), soon())
            })
        })
        .collect();
    for (i, h) in handles.into_iter().enumerate() {
        let out = h.join().unwrap();
        assert!(!out.is_error, "{out:?}");
        assert_eq!(out.text, format!("Echo: m{i}"));
    }
    server.stop();
    let out = server.call("echo", json!({"message": "x"}), soon());
    assert!(out.is_error && out.text.contains("stopped"), "{out:?}");
}

#[test]
fn a_go_original_agent_file_with_an_sse_server_runs() {
    let Some(sse) = served("sse", "/sse") else {
        return;
    };
    let home = Home::new();
    // As the Go original's agent files declare a server: name, url,
    // transport, headers (its ${VAR} read from the environment).
    home.named_agent(
        "user",
        P::OpenAi.model(),
        &format!(
            "[[mcp_servers]]\nname = \"ev\"\nurl = \"{}\"\ntransport = \"sse\"\n\
             headers = {{ X-Client = \"${{CLIENT_NAME}}\" }}\n",
            sse.url
        ),
    );
    let first = P::OpenAi.tool_calls(&[("c1", "ev__echo", json!({"message": "over sse"}))]);
    let done = P::OpenAi.text("done");
    let model = FakeServer::route(move |req| {
        if req.has_tool_results() {
            Reply::Json(200, done.clone())
        } else {
            Reply::Json(200, first.clone())
        }
    });
    let out = home
        .axe_on(&[(P::OpenAi, &model)])
        .env("CLIENT_NAME", "axe-tests")
        .args(["run", "user", "-p", "go", "--timeout", "60"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "done\n");
    let results: Vec<String> = model
        .requests()
        .iter()
        .filter(|r| r.has_tool_results())
        .flat_map(|r| r.tool_result_texts())
        .collect();
    assert_eq!(results, ["Echo: over sse"]);
}
