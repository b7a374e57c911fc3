//! `url_fetch`'s walls (design §8.4): where a fetch may connect is judged
//! on the address it connects to, so neither a proxy from the environment
//! nor an IPv4 address written inside an IPv6 one, nor a scheme in capitals,
//! gets around it.

use serde_json::json;

use crate::common::*;

fn port(server: &FakeServer) -> String {
    server.url.rsplit(':').next().unwrap().to_string()
}

#[test]
fn a_proxy_in_the_environment_is_not_used_so_allowed_hosts_still_decides() {
    let proxy = FakeServer::route(|_| Reply::Json(200, "{\"via\":\"proxy\"}".to_string()));
    let target = FakeServer::route(|_| Reply::Json(200, "{\"direct\":true}".to_string()));
    let proxy_url = format!("http://127.0.0.1:{}", port(&proxy));
    let extra = "allowed_hosts = [\"127.0.0.1\"]\n[sandbox]\nprivate_networks = true\n";
    let s = ToolsSetup::new(P::OpenAi, &["url_fetch"], extra);
    let calls: Vec<Call> = vec![
        (
            "c1",
            "url_fetch",
            json!({"url": "http://metadata.example/latest/meta-data/"}),
        ),
        (
            "c2",
            "url_fetch",
            json!({"url": format!("{}/page", target.url)}),
        ),
    ];
    // The provider's own requests still honour the proxy settings; its
    // fake is on 127.0.0.1, which NO_PROXY sends direct.
    let env = [
        ("HTTP_PROXY", proxy_url.as_str()),
        ("HTTPS_PROXY", proxy_url.as_str()),
        ("ALL_PROXY", proxy_url.as_str()),
        ("NO_PROXY", "127.0.0.1"),
    ];
    let (out, results, _, _) = s.run_with(P::OpenAi, &calls, &env);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        results[0].contains("metadata.example is not in this agent's allowed_hosts"),
        "{}",
        results[0]
    );
    assert!(results[1].contains("\"direct\":true"), "{}", results[1]);
    assert!(
        proxy.requests().is_empty(),
        "the proxy was asked: {:?}",
        proxy
            .requests()
            .iter()
            .map(|r| r.path.clone())
            .collect::<Vec<_>>()
    );
    assert_eq!(target.requests().len(), 1);
}

#[test]
fn ipv4_addresses_written_inside_ipv6_ones_are_judged_as_ipv4() {
    let server = FakeServer::route(|_| Reply::Json(200, "{\"ok\":true}".to_string()));
    let p = port(&server);
    let s = ToolsSetup::new(P::OpenAi, &["url_fetch"], "");
    let hosts = [
        "[::127.0.0.1]",
        "[::ffff:0:127.0.0.1]",
        "[64:ff9b::127.0.0.1]",
        "[64:ff9b::a9fe:a9fe]",
        "[2002:7f00:1::1]",
        "[2001:0:4136:e378:8000:63bf:80ff:fffe]",
        "[::ffff:169.254.169.254]",
    ];
    let calls: Vec<Call> = hosts
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let id: &'static str = Box::leak(format!("c{i}").into_boxed_str());
            (id, "url_fetch", json!({"url": format!("http://{h}:{p}/")}))
        })
        .collect();
    let (out, results, _) = s.run(P::OpenAi, &calls);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    for (host, r) in hosts.iter().zip(&results) {
        assert!(r.contains("a private or local address"), "{host}: {r}");
    }
    assert!(server.requests().is_empty());
}

#[test]
fn a_scheme_in_capitals_is_the_same_scheme() {
    let target = FakeServer::route(|_| Reply::Json(200, "{\"fetched\":1}".to_string()));
    let extra = "[sandbox]\nprivate_networks = true\n";
    let s = ToolsSetup::new(P::OpenAi, &["url_fetch"], extra);
    let url = target.url.replacen("http://", "HTTP://", 1);
    let calls: Vec<Call> = vec![
        ("c1", "url_fetch", json!({"url": format!("{url}/x")})),
        ("c2", "url_fetch", json!({"url": "FILE:///etc/passwd"})),
    ];
    let (out, results, _) = s.run(P::OpenAi, &calls);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(results[0].contains("\"fetched\":1"), "{}", results[0]);
    assert!(results[1].contains("only http and https"), "{}", results[1]);
}
