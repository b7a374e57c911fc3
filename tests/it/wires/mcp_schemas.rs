//! An MCP server's input schemas on each wire (design §4.3): OpenAI and
//! Anthropic get them as the server wrote them (their types take any JSON
//! Schema); Ollama gets what its tool type models, with what else
//! describes an argument written in its description, annotations dropped.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::common::*;

/// The parameters of each tool `p`'s request offered, by name.
fn offered(p: P) -> Vec<(String, Value)> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp/schemas_server.py");
    let home = Home::new();
    home.config(&format!(
        "[[mcp_servers]]\nname = \"schemas\"\ncommand = \"python3\"\nargs = [{:?}]\n",
        script.display().to_string()
    ));
    home.named_agent("lead", p.model(), "mcp_servers = [\"schemas\"]\n");
    let server = FakeServer::json(200, &p.text("fine"));
    let b = home.run_bounded(&[(p, &server)], &["run", "lead", "-p", "go"], HUNG);
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    let body = server.only_request().json();
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| match p {
            P::Anthropic => (t["name"].to_string(), t["input_schema"].clone()),
            _ => (
                t["function"]["name"].to_string(),
                t["function"]["parameters"].clone(),
            ),
        })
        .collect()
}

#[test]
fn an_mcp_input_schema_goes_to_ollama_in_the_shape_its_tool_type_takes() {
    if !python3("an MCP server's schemas on each wire") {
        return;
    }
    let tools = offered(P::Ollama);
    assert_eq!(tools.len(), 2, "{tools:?}");
    // Before, as the server wrote it: `$schema`, `additionalProperties`,
    // `title`, `minimum`, `anyOf`, ... which Ollama's type does not model.
    assert_eq!(
        tools[0].1,
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look up (JSON Schema: {\"minLength\":1})"},
                "limit": {"type": "integer", "description": "JSON Schema: {\"default\":10,\"maximum\":50,\"minimum\":1}"},
                "kind": {"type": "string", "enum": ["word", "phrase"]},
            },
            "required": ["query"],
        })
    );
    assert_eq!(
        tools[1].1,
        json!({
            "type": "object",
            "properties": {
                "url": {"type": "string", "description": "JSON Schema: {\"format\":\"uri\"}"},
                "max_length": {"type": ["integer", "null"], "description": "JSON Schema: {\"default\":null}"},
                "headers": {"type": "object", "description": "JSON Schema: {\"additionalProperties\":{\"type\":\"string\"},\"properties\":{\"accept\":{\"type\":\"string\"}}}"},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["url"],
        })
    );
    // The other wires' types take any JSON Schema: sent as written.
    for p in [P::OpenAi, P::Anthropic] {
        let tools = offered(p);
        assert_eq!(
            tools[0].1["$schema"],
            "http://json-schema.org/draft-07/schema#"
        );
        assert_eq!(tools[0].1["additionalProperties"], false);
        assert_eq!(tools[1].1["properties"]["url"]["title"], "Url");
    }
}
