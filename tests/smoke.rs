mod common;
use common::*;

#[test]
fn run_prints_the_openai_answer() {
    let server = FakeServer::json(200, &openai_text("hello there", 12, 3));
    let home = Home::new();
    home.agent(
        "a",
        "name = \"a\"\nmodel = \"openai/gpt-4o\"\nsystem_prompt = \"Be brief.\"\n",
    );
    let out = home
        .axe()
        .args(["run", "a", "-p", "hi"])
        .env("OPENAI_API_KEY", "sk-test-123456")
        .env("AXE_OPENAI_BASE_URL", &server.url)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "hello there\n");
    let req = server.only_request();
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(req.header("authorization"), Some("Bearer sk-test-123456"));
}
