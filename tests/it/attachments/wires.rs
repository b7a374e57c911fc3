//! Each kind of attachment on each wire, the first message's body checked
//! whole against the vendor's documented form: Anthropic's `image` and
//! `document` blocks, Chat Completions' `image_url` and `file` parts,
//! Ollama's `images` (and its refusal of a PDF), Bedrock Converse's
//! `image` and `document` blocks, the Responses API's `input_image` and
//! `input_file` items.

use super::*;

const ALL: &str = "look";

fn sent_first_user(home: &Home, server: &FakeServer, p: P) -> Value {
    let args = six(home);
    let mut all = vec!["run", "a", "-p", ALL, "--no-prompt-cache"];
    all.extend(args.iter().map(String::as_str));
    let out = home.run_on(&[(p, server)], &all);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let body = server.only_request().json();
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .cloned()
        .unwrap()
}

fn data_url(media: &str, b64: &str) -> String {
    format!("data:{media};base64,{b64}")
}

#[test]
fn anthropic_gets_image_and_document_blocks_then_the_words() {
    let server = FakeServer::json(200, &P::Anthropic.text("seen"));
    let home = Home::new();
    home.plain_agent("a", P::Anthropic.model());
    let image = |media: &str, data: &str| json!({"type": "image", "source": {"type": "base64", "media_type": media, "data": data}});
    assert_eq!(
        sent_first_user(&home, &server, P::Anthropic),
        json!({"role": "user", "content": [
            image("image/png", PNG_B64),
            image("image/jpeg", JPEG_B64),
            image("image/gif", GIF_B64),
            image("image/webp", WEBP_B64),
            {"type": "document", "title": "e.pdf", "source":
                {"type": "base64", "media_type": "application/pdf", "data": PDF_B64}},
            {"type": "document", "title": "notes.png", "source":
                {"type": "text", "media_type": "text/plain", "data": TEXT}},
            {"type": "text", "text": ALL},
        ]})
    );
}

#[test]
fn anthropic_marks_the_words_for_the_prompt_cache() {
    let server = FakeServer::json(200, &P::Anthropic.text("seen"));
    let home = Home::new();
    home.plain_agent("a", P::Anthropic.model());
    std::fs::write(home.dir.path().join("a.png"), PNG).unwrap();
    let out = home.run_on(
        &[(P::Anthropic, &server)],
        &["run", "a", "-p", ALL, "-a", "a.png"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let content = &server.only_request().json()["messages"][0]["content"];
    assert_eq!(
        content[1]["cache_control"],
        json!({"type": "ephemeral"}),
        "{content}"
    );
    assert!(content[0].get("cache_control").is_none(), "{content}");
}

#[test]
fn openai_chat_gets_the_words_then_image_url_and_file_parts() {
    let server = FakeServer::json(200, &P::OpenAi.text("seen"));
    let home = Home::new();
    home.plain_agent("a", P::OpenAi.model());
    let image = |media: &str, data: &str| json!({"type": "image_url", "image_url": {"url": data_url(media, data)}});
    assert_eq!(
        sent_first_user(&home, &server, P::OpenAi),
        json!({"role": "user", "content": [
            {"type": "text", "text": ALL},
            image("image/png", PNG_B64),
            image("image/jpeg", JPEG_B64),
            image("image/gif", GIF_B64),
            image("image/webp", WEBP_B64),
            {"type": "file", "file": {"filename": "e.pdf",
                "file_data": data_url("application/pdf", PDF_B64)}},
            {"type": "text", "text": format!("notes.png:\n\n{TEXT}")},
        ]})
    );
}

#[test]
fn ollama_gets_images_and_a_text_files_text() {
    let server = FakeServer::json(200, &P::Ollama.text("seen"));
    let home = Home::new();
    home.plain_agent("a", P::Ollama.model());
    for (name, bytes) in [
        ("a.png", PNG),
        ("b.jpg", JPEG),
        ("notes.txt", TEXT.as_bytes()),
    ] {
        std::fs::write(home.dir.path().join(name), bytes).unwrap();
    }
    let out = home.run_on(
        &[(P::Ollama, &server)],
        &[
            "run",
            "a",
            "-p",
            ALL,
            "-a",
            "a.png",
            "-a",
            "b.jpg",
            "-a",
            "notes.txt",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        server.only_request().json()["messages"][0],
        json!({"role": "user", "content": format!("{ALL}\n\nnotes.txt:\n\n{TEXT}"),
            "images": [PNG_B64, JPEG_B64]})
    );
}

#[test]
fn ollama_refuses_a_pdf_with_exit_2_before_any_request() {
    let server = FakeServer::json(200, &P::Ollama.text("no"));
    let home = Home::new();
    home.plain_agent("a", P::Ollama.model());
    std::fs::write(home.dir.path().join("e.pdf"), PDF).unwrap();
    let out = home.run_on(
        &[(P::Ollama, &server)],
        &["run", "a", "-p", ALL, "-a", "e.pdf"],
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(
            "cannot attach e.pdf: a PDF cannot go to ollama/llama3.1: Ollama's chat takes images"
        ),
        "{err}"
    );
    assert!(server.requests().is_empty());
}

#[test]
fn bedrock_gets_image_and_document_blocks_then_the_words() {
    let server = FakeServer::json(200, &bedrock_text("seen", 3, 1));
    let home = Home::new();
    home.plain_agent("a", "bedrock/anthropic.claude-sonnet-4-5-20250929-v1:0");
    let args = six(&home);
    // Two documents of one name after Converse's rules: told apart.
    std::fs::write(home.dir.path().join("e_pdf"), PDF).unwrap();
    let out = home
        .axe()
        .env("AWS_ACCESS_KEY_ID", "AKIDTESTBEDROCK0001")
        .env("AWS_SECRET_ACCESS_KEY", "bedrock-secret")
        .env("AWS_REGION", "eu-west-3")
        .env("AXE_BEDROCK_BASE_URL", &server.url)
        .args(["run", "a", "-p", ALL])
        .args(&args)
        .args(["-a", "e_pdf"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let image =
        |format: &str, data: &str| json!({"image": {"format": format, "source": {"bytes": data}}});
    let doc = |format: &str, name: &str, data: &str| json!({"document": {"format": format, "name": name, "source": {"bytes": data}}});
    let text_b64 = "bGluZSBvbmUKbGluZSB0d28K";
    assert_eq!(
        server.only_request().json()["messages"][0],
        json!({"role": "user", "content": [
            image("png", PNG_B64),
            image("jpeg", JPEG_B64),
            image("gif", GIF_B64),
            image("webp", WEBP_B64),
            doc("pdf", "e-pdf", PDF_B64),
            doc("txt", "notes-png", text_b64),
            doc("pdf", "e-pdf (2)", PDF_B64),
            {"text": ALL},
        ]})
    );
}

#[test]
fn the_responses_api_gets_input_text_then_input_image_and_input_file() {
    let server = FakeServer::json(200, &responses_text("seen", 3, 1));
    let home = Home::new();
    home.plain_agent("a", "opencode/gpt-5");
    let args = six(&home);
    let out = home
        .axe()
        .env("OPENCODE_API_KEY", "zen-test-key-0123456789abcdef")
        .env("AXE_OPENCODE_BASE_URL", format!("{}/zen", server.url))
        .args(["run", "a", "-p", ALL])
        .args(&args)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let req = server.only_request();
    assert_eq!(req.path, "/zen/v1/responses");
    let image = |media: &str, data: &str| json!({"type": "input_image", "image_url": data_url(media, data), "detail": "auto"});
    assert_eq!(
        req.json()["input"],
        json!([{"role": "user", "content": [
            {"type": "input_text", "text": ALL},
            image("image/png", PNG_B64),
            image("image/jpeg", JPEG_B64),
            image("image/gif", GIF_B64),
            image("image/webp", WEBP_B64),
            {"type": "input_file", "filename": "e.pdf",
                "file_data": data_url("application/pdf", PDF_B64)},
            {"type": "input_text", "text": format!("notes.png:\n\n{TEXT}")},
        ]}])
    );
}
