//! Amazon Bedrock through the binary (design §4.13): `bedrock/<modelId>`
//! on a fake speaking the Converse API's JSON, at `AXE_BEDROCK_BASE_URL`
//! with AWS's variables: a plain answer and its usage, a tool call's round
//! trip, a sub-agent, a ThrottlingException retried, the request's SigV4
//! signature recomputed here, the keys never shown, and missing keys.

use super::*;
use axe::provider::bedrock::sigv4::{AwsKeys, Unsigned, sign};
use serde_json::{Value, json};

const MODEL: &str = "anthropic.claude-sonnet-4-5-20250929-v1:0";
const ACCESS: &str = "AKIDTESTBEDROCK0001";
const SECRET: &str = "bedrock-secret-wJalrXUtnFEMI-0123456789";
const TOKEN: &str = "bedrock-session-token-IQoJb3JpZ2luX2VjE0123";

/// `axe <args>` with AWS's keys, region and the fake's URL.
fn run(home: &Home, server: &FakeServer, args: &[&str]) -> Output {
    home.axe()
        .env("AWS_ACCESS_KEY_ID", ACCESS)
        .env("AWS_SECRET_ACCESS_KEY", SECRET)
        .env("AWS_SESSION_TOKEN", TOKEN)
        .env("AWS_REGION", "eu-west-3")
        .env("AXE_BEDROCK_BASE_URL", &server.url)
        .args(args)
        .output()
        .unwrap()
}

fn agent(home: &Home, name: &str, extra: &str) {
    home.named_agent(name, &format!("bedrock/{MODEL}"), extra);
}

#[test]
fn a_plain_answer_is_read_from_converse_and_its_usage_counted() {
    let server = FakeServer::json(200, &bedrock_text("hello from bedrock", 12, 5));
    let home = Home::new();
    agent(
        &home,
        "a",
        "[params]\nmax_tokens = 300\ntemperature = 0.5\n",
    );
    let out = run(&home, &server, &["run", "a", "-p", "hi", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["content"], "hello from bedrock", "{v}");
    assert_eq!(
        (v["input_tokens"].clone(), v["output_tokens"].clone()),
        (json!(12), json!(5))
    );
    let req = server.only_request();
    assert_eq!(
        req.path,
        "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse"
    );
    let body = req.json();
    assert_eq!(body["system"], json!([{"text": "You are a."}]));
    assert_eq!(
        body["messages"][0],
        json!({"role": "user", "content": [{"text": "hi"}]})
    );
    assert_eq!(
        body["inferenceConfig"],
        json!({"maxTokens": 300, "temperature": 0.5})
    );
    assert!(
        body.get("model").is_none() && body.get("toolConfig").is_none(),
        "{body}"
    );
}

#[test]
fn the_request_is_signed_with_sigv4_as_recomputed_here() {
    let server = FakeServer::json(200, &bedrock_text("ok", 1, 1));
    let home = Home::new();
    agent(&home, "a", "");
    let out = run(&home, &server, &["run", "a", "-p", "hi"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let req = server.only_request();
    let h = |n: &str| {
        req.header(n)
            .unwrap_or_else(|| panic!("no {n}"))
            .to_string()
    };
    let (date, host) = (h("x-amz-date"), h("host"));
    assert_eq!(h("x-amz-security-token"), TOKEN);
    assert_eq!(date.len(), 16, "{date}");
    let keys = AwsKeys {
        access_key_id: ACCESS.into(),
        secret_access_key: SECRET.into(),
        session_token: Some(TOKEN.into()),
        region: "eu-west-3".into(),
    };
    let headers = [
        ("content-type", "application/json"),
        ("host", host.as_str()),
        ("x-amz-date", date.as_str()),
        ("x-amz-security-token", TOKEN),
    ];
    let unsigned = Unsigned {
        method: "POST",
        path: &req.path,
        query: "",
        headers: &headers,
        payload: req.body.as_bytes(),
    };
    let expected = sign(&keys, "bedrock", &unsigned, &date).authorization;
    assert_eq!(h("authorization"), expected);
    assert!(expected.contains(&format!(
        "Credential={ACCESS}/{}/eu-west-3/bedrock/aws4_request",
        &date[..8]
    )));
}

#[test]
fn a_tool_call_goes_round_as_tool_use_and_tool_result() {
    let server = FakeServer::start(vec![
        Reply::Json(
            200,
            bedrock_tool_use("read_file", json!({"path": "notes.txt"})),
        ),
        Reply::Json(200, bedrock_text("the notes say hi", 40, 6)),
    ]);
    let home = Home::new();
    let work = home.dir.path().join("w");
    fs::create_dir_all(&work).unwrap();
    fs::write(work.join("notes.txt"), "hi there\n").unwrap();
    agent(
        &home,
        "a",
        &format!(
            "tools = [\"read_file\"]\nworkdir = {:?}\n",
            work.to_str().unwrap()
        ),
    );
    let out = run(&home, &server, &["run", "a", "-p", "read", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["content"], "the notes say hi");
    assert_eq!(v["input_tokens"], 60, "{v}");
    let reqs = server.requests();
    let first = reqs[0].json();
    let spec = &first["toolConfig"]["tools"][0]["toolSpec"];
    assert_eq!(spec["name"], "read_file");
    assert_eq!(spec["inputSchema"]["json"]["type"], "object", "{first}");
    let second = reqs[1].json();
    let msgs = second["messages"].as_array().unwrap();
    assert_eq!(
        msgs[1]["content"][1],
        json!({"toolUse": {"toolUseId": "tooluse_1", "name": "read_file", "input": {"path": "notes.txt"}}})
    );
    let result = &msgs[2]["content"][0]["toolResult"];
    assert_eq!(
        (msgs[2]["role"].as_str(), result["toolUseId"].as_str()),
        (Some("user"), Some("tooluse_1"))
    );
    assert_eq!(result["status"], "success");
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("hi there"),
        "{result}"
    );
}

#[test]
fn a_sub_agent_runs_on_bedrock_too() {
    let server = FakeServer::start(vec![
        Reply::Json(
            200,
            bedrock_tool_use("call_agent", json!({"agent": "helper", "task": "say hi"})),
        ),
        Reply::Json(200, bedrock_text("helper says hi", 5, 3)),
        Reply::Json(200, bedrock_text("lead is done", 30, 4)),
    ]);
    let home = Home::new();
    agent(&home, "lead", "sub_agents = [\"helper\"]\n");
    agent(&home, "helper", "");
    let out = run(&home, &server, &["run", "lead", "-p", "go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "lead is done\n");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(reqs[1].json()["system"][0]["text"], "You are helper.");
    let back = reqs[2].json();
    let text = back["messages"][2]["content"][0]["toolResult"]["content"][0]["text"].clone();
    assert!(text.as_str().unwrap().contains("helper says hi"), "{back}");
}

#[test]
fn a_throttling_exception_is_retried_like_a_429() {
    let throttled = Reply::Raw {
        status: 429,
        content_type: "application/json".into(),
        body: r#"{"message":"Too many requests, please wait before trying again."}"#.into(),
        headers: vec![(
            "x-amzn-ErrorType".into(),
            "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/".into(),
        )],
    };
    let server = FakeServer::start(vec![
        throttled,
        Reply::Json(200, bedrock_text("after the wait", 1, 1)),
    ]);
    let home = Home::fast_retries();
    agent(&home, "a", "");
    let out = run(&home, &server, &["run", "a", "-p", "hi"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "after the wait\n");
    assert_eq!(server.requests().len(), 2);
    // A ValidationException is the request's fault: not retried, its
    // message said.
    let server = FakeServer::json(
        400,
        r#"{"message":"The provided model identifier is invalid."}"#,
    );
    let out = run(&home, &server, &["run", "a", "-p", "hi"]);
    assert_ne!(code(&out), 0);
    assert!(
        stderr(&out).contains("The provided model identifier is invalid"),
        "{}",
        stderr(&out)
    );
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn the_keys_are_never_shown_in_output_or_the_trace() {
    let server = FakeServer::json(
        403,
        &format!(r#"{{"message":"bad signature for {SECRET} and {TOKEN}"}}"#),
    );
    let home = Home::new();
    agent(&home, "a", "");
    let trace = home.dir.path().join("t.jsonl");
    let out = run(
        &home,
        &server,
        &[
            "run",
            "a",
            "-p",
            "hi",
            "-v",
            "--trace",
            trace.to_str().unwrap(),
        ],
    );
    assert_ne!(code(&out), 0);
    let seen = format!(
        "{}{}{}",
        stdout(&out),
        stderr(&out),
        fs::read_to_string(&trace).unwrap_or_default()
    );
    for secret in [SECRET, TOKEN] {
        assert!(!seen.contains(secret), "{seen}");
    }
    assert!(stderr(&out).contains("bad signature"), "{}", stderr(&out));
}

#[test]
fn missing_keys_or_region_are_a_clear_error_and_exit_3() {
    let home = Home::new();
    agent(&home, "a", "");
    let out = home.run(&["run", "a", "-p", "hi"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"),
        "{}",
        stderr(&out)
    );
    let out = home
        .axe()
        .env("AWS_ACCESS_KEY_ID", ACCESS)
        .env("AWS_SECRET_ACCESS_KEY", SECRET)
        .args(["run", "a", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(stderr(&out).contains("set AWS_REGION"), "{}", stderr(&out));
    assert!(!stderr(&out).contains(SECRET));
}

#[test]
fn an_output_schema_is_checked_by_axe_and_not_sent() {
    let server = FakeServer::start(vec![
        Reply::Json(200, bedrock_text("not json", 1, 1)),
        Reply::Json(200, bedrock_text("{\"n\":3}", 1, 1)),
    ]);
    let home = Home::new();
    agent(
        &home,
        "a",
        "[output]\nschema = { type = \"object\", properties = { n = { type = \"integer\" } }, required = [\"n\"] }\n",
    );
    let out = run(&home, &server, &["run", "a", "-p", "hi", "--verbose"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "{\"n\":3}\n");
    assert_eq!(server.requests().len(), 2, "one repair");
    assert!(
        stderr(&out).contains("[output] The output schema is not sent to bedrock"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_streamed_run_answered_whole_by_converse_stream_prints_it() {
    // Asked for a stream (`bedrock_stream.rs`), a server that answers as
    // `converse` does is read as `converse` (before, streamed runs went to
    // `converse`, asking for JSON).
    let server = FakeServer::json(200, &bedrock_text("all at once", 2, 3));
    let home = Home::new();
    agent(&home, "a", "");
    let out = run(&home, &server, &["run", "a", "-p", "hi", "--stream"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "all at once\n");
    let req = server.only_request();
    assert!(req.path.ends_with("/converse-stream"), "{}", req.path);
    assert_eq!(
        req.header("accept"),
        Some("application/vnd.amazon.eventstream")
    );
    assert!(req.json().get("stream").is_none());
}

#[test]
fn a_profile_in_the_shared_credentials_file_signs_when_the_variables_are_unset() {
    let server = FakeServer::json(200, &bedrock_text("from the profile", 1, 1));
    let home = Home::new();
    agent(&home, "a", "");
    let aws = home.dir.path().join(".aws");
    fs::create_dir_all(&aws).unwrap();
    fs::write(
        aws.join("credentials"),
        "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = default-secret-0123456789\n\n\
         # the team's\n[work]\naws_access_key_id = AKIDWORKPROFILE\naws_secret_access_key = work-secret-0123456789\n\
         aws_session_token = work-token-0123456789\n",
    )
    .unwrap();
    let out = home
        .axe()
        .env("AWS_PROFILE", "work")
        .env("AWS_REGION", "us-east-1")
        .env("AXE_BEDROCK_BASE_URL", &server.url)
        .args(["run", "a", "-p", "hi", "-v"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "from the profile\n");
    let req = server.only_request();
    let authz = req.header("authorization").unwrap();
    assert!(authz.contains("Credential=AKIDWORKPROFILE/"), "{authz}");
    assert_eq!(
        req.header("x-amz-security-token"),
        Some("work-token-0123456789")
    );
    assert!(!stderr(&out).contains("work-secret"));
}

#[test]
fn missing_keys_name_the_variables_unset_and_the_file_and_profile_read() {
    let home = Home::new();
    agent(&home, "a", "");
    let out = home
        .axe()
        .env("AWS_ACCESS_KEY_ID", ACCESS)
        .env("AWS_REGION", "us-east-1")
        .args(["run", "a", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let want = format!(
        "AWS_SECRET_ACCESS_KEY unset; {} (profile \"default\") could not be read",
        home.dir.path().join(".aws/credentials").display()
    );
    assert!(stderr(&out).contains(&want), "{}", stderr(&out));
    let file = home.dir.path().join("creds");
    fs::write(&file, "[work]\naws_access_key_id = AKIDWORKPROFILE\n").unwrap();
    let out = home
        .axe()
        .env("AWS_SHARED_CREDENTIALS_FILE", &file)
        .env("AWS_PROFILE", "work")
        .env("AWS_REGION", "us-east-1")
        .args(["run", "a", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let want = format!(
        "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY unset; {} (profile \"work\") has no \
         aws_secret_access_key",
        file.display()
    );
    assert!(stderr(&out).contains(&want), "{}", stderr(&out));
}

#[test]
fn a_fifo_as_the_credentials_file_is_no_hang_and_a_dot_is_no_model() {
    let home = Home::new();
    agent(&home, "a", "");
    let fifo = home.dir.path().join("credentials");
    mkfifo(&fifo);
    let b = run_within(
        home.axe()
            .env("AWS_SHARED_CREDENTIALS_FILE", &fifo)
            .env("AWS_REGION", "us-east-1")
            .args(["run", "a", "-p", "hi"]),
        std::time::Duration::from_secs(20),
    );
    assert!(!b.killed, "axe blocked opening a FIFO");
    assert_eq!(code(&b.output), 3, "{}", stderr(&b.output));
    assert!(
        stderr(&b.output).contains("set AWS_ACCESS_KEY_ID"),
        "{}",
        stderr(&b.output)
    );
    // `.` and `..` would be another segment of Converse's path.
    let server = FakeServer::json(200, &bedrock_text("hi", 1, 1));
    for model in [".", ".."] {
        home.named_agent("dot", &format!("bedrock/{model}"), "");
        let out = run(&home, &server, &["run", "dot", "-p", "hi"]);
        // As a model that is not provider/model: exit 1.
        assert_eq!(code(&out), 1, "{model}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("cannot be \".\" or \"..\""),
            "{model}: {}",
            stderr(&out)
        );
    }
    assert!(server.requests().is_empty());
}
