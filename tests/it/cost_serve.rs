//! What a served run costs, through the real binary (design §7.8): `axe
//! serve`'s `x-axe-cost-usd` header and run log, a served request bounded
//! by its agent's `[budget] max_cost`, and `axe mcp serve`'s result
//! `_meta` and `--max-cost`.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::*;
use crate::serve::{Server, chat_body, post};

const PRICE: &str = "[prices.\"openai/m\"]\ninput = 1000\noutput = 1000\n";

#[test]
fn serve_says_the_cost_in_a_header_and_the_run_log() {
    let home = Home::new();
    home.config(PRICE);
    home.plain_agent("one", "openai/m");
    let fake = FakeServer::json(200, &openai_text("hi", 100, 50));
    let server = Server::start(&home, &fake, &[]);
    let r = post(
        &server.addr,
        "/v1/chat/completions",
        &chat_body("one", "q"),
        "",
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let head = r.head.to_ascii_lowercase();
    assert!(head.contains("\r\nx-axe-cost-usd: 0.15"), "{head}");
    assert!(
        server.wait_log("200", Duration::from_secs(10)),
        "{}",
        server.log()
    );
    let log = home.run_log();
    let rec = log.last().unwrap();
    assert!(
        (rec["cost_usd"].as_f64().unwrap() - 0.15).abs() < 1e-12,
        "{rec}"
    );
}

#[test]
fn a_served_request_is_bounded_by_its_agents_cost_budget() {
    let home = Home::new();
    home.config(PRICE);
    home.agent(
        "one",
        "name = \"one\"\nmodel = \"openai/m\"\ntools = [\"read_file\"]\n[budget]\nmax_cost = 0.1\n",
    );
    let fake = FakeServer::json(
        200,
        &openai_tool_calls(&[("c1", "read_file", json!({"path": "x"}))], 100, 50),
    );
    let server = Server::start(&home, &fake, &[]);
    let r = post(
        &server.addr,
        "/v1/chat/completions",
        &chat_body("one", "q"),
        "",
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(
        r.body
            .contains("cost budget exceeded (spent $0.1500 of $0.10)"),
        "{}",
        r.body
    );
    assert!(
        r.head.to_ascii_lowercase().contains("x-axe-cost-usd: 0.15"),
        "{}",
        r.head
    );
    assert_eq!(fake.requests().len(), 1);
}

/// One `tools/call` of `agent` on `axe mcp serve <args>` over stdio: its
/// result.
fn mcp_call(home: &Home, fake: &FakeServer, args: &[&str], agent: &str) -> Value {
    let mut child = home
        .axe_on(&[(P::OpenAi, fake)])
        .args(["mcp", "serve"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("axe mcp serve");
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params":
        {"protocolVersion": "2025-06-18", "capabilities": {},
         "clientInfo": {"name": "t", "version": "0"}}});
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": agent, "arguments": {"task": "q"}}});
    writeln!(stdin, "{init}").unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .unwrap();
    writeln!(stdin, "{call}").unwrap();
    stdin.flush().unwrap();
    let mut result = Value::Null;
    for line in lines.by_ref() {
        let v: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if v["id"] == 2 {
            result = v["result"].clone();
            break;
        }
    }
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    result
}

#[test]
fn mcp_serve_puts_the_cost_in_the_results_meta_and_bounds_a_call_by_max_cost() {
    let home = Home::new();
    home.config(PRICE);
    home.plain_agent("one", "openai/m");
    let fake = FakeServer::json(200, &openai_text("hi", 100, 50));
    let r = mcp_call(&home, &fake, &[], "one");
    assert_eq!(r["isError"], false, "{r}");
    let cost = &r["_meta"]["axe/usage"]["total_cost_usd"];
    assert!((cost.as_f64().unwrap() - 0.15).abs() < 1e-12, "{r}");
    // An agent with no price under --max-cost: refused, no request sent.
    home.plain_agent("free", "openai/no-such-model");
    let before = fake.requests().len();
    let r = mcp_call(&home, &fake, &["--max-cost", "1"], "free");
    assert_eq!(r["isError"], true, "{r}");
    assert!(r.to_string().contains("no price is known"), "{r}");
    assert_eq!(fake.requests().len(), before);
}
