//! An MCP server's server-sent events are read as a provider's are (design
//! §4.11, §9.2): by the one decoder, whose lines end in CR, LF or CRLF.
//! Through the binary, against `fixtures/mcp/line_ends_server.py` over
//! streamable HTTP and the older SSE transport, each line end in turn: the
//! server starts, lists its tool, answers its call (after a log and a ping
//! of its own), and the result reaches the model.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;

use crate::common::*;

fn served(end: &str) -> PyServer {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp/line_ends_server.py");
    PyServer::start([script.as_os_str(), end.as_ref()])
}

#[test]
fn an_mcp_server_ending_its_event_lines_with_cr_lf_or_crlf_works_on_both_http_transports() {
    if !python3("MCP event lines (a server of our own)") {
        return;
    }
    for end in ["cr", "lf", "crlf"] {
        let mcp = served(end);
        for (transport, table) in [
            (
                "streamable HTTP",
                format!("url = \"http://127.0.0.1:{}/mcp\"\n", mcp.port),
            ),
            (
                "sse",
                format!(
                    "url = \"http://127.0.0.1:{}/sse\"\ntransport = \"sse\"\n",
                    mcp.port
                ),
            ),
        ] {
            let home = Home::new();
            home.config(&format!("[[mcp_servers]]\nname = \"e\"\n{table}"));
            home.named_agent("user", P::OpenAi.model(), "mcp_servers = [\"e\"]\n");
            let first = P::OpenAi.tool_calls(&[("c1", "e__echo", json!({"text": "hi"}))]);
            let model = FakeServer::tool_loop(first, P::OpenAi.text("done"));
            let b = home.run_bounded(
                &[(P::OpenAi, &model)],
                &["run", "user", "-p", "go", "--timeout", "10"],
                Duration::from_secs(20),
            );
            let what = format!("{end} over {transport}");
            assert_eq!(code(&b.output), 0, "{what}: {}", stderr(&b.output));
            assert_eq!(stdout(&b.output), "done\n", "{what}");
            let results = model
                .requests()
                .iter()
                .find(|r| r.has_tool_results())
                .map(|r| r.tool_result_texts())
                .unwrap_or_default();
            assert_eq!(results, ["echo: hi"], "{what}");
        }
    }
}
