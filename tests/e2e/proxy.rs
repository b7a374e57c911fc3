//! The recording proxy: a loopback server that forwards each request axe sends to the real server and keeps both sides.

use super::*;

/// One request axe sent and the upstream server's real answer.
#[derive(Debug, Clone)]
pub(crate) struct Exchange {
    pub(crate) request: Recorded,
    pub(crate) status: u16,
    pub(crate) response: String,
    pub(crate) millis: u128,
}

impl Exchange {
    pub(crate) fn response_json(&self) -> Value {
        serde_json::from_str(&self.response).unwrap_or_else(|e| {
            panic!(
                "{} answered {} with a body that is not JSON ({e}): {}",
                self.request.path, self.status, self.response
            )
        })
    }
}

/// A loopback server that forwards every request to `upstream` and records
/// both sides. Requests are forwarded as they come, several at once when
/// axe sends several, so the proxy also sees how many were in flight.
pub(crate) struct Proxy {
    pub(crate) server: FakeServer,
    pub(crate) log: Arc<Mutex<Vec<Exchange>>>,
}

impl Proxy {
    pub(crate) fn start(upstream: &str) -> Proxy {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(600)))
            .build()
            .into();
        let upstream = upstream.to_string();
        let log = Arc::new(Mutex::new(Vec::new()));
        let record = log.clone();
        let server = FakeServer::route(move |req| {
            let started = std::time::Instant::now();
            let mut out = agent.post(format!("{upstream}{}", req.path));
            for (k, v) in &req.headers {
                if matches!(
                    k.as_str(),
                    "content-type" | "authorization" | "x-api-key" | "anthropic-version"
                ) {
                    out = out.header(k.as_str(), v.as_str());
                }
            }
            let (status, content_type, body) = match out.send(req.body.as_bytes()) {
                Ok(mut resp) => (
                    resp.status().as_u16(),
                    resp.headers()
                        .get("content-type")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("application/json")
                        .to_string(),
                    resp.body_mut()
                        .with_config()
                        .limit(64 << 20)
                        .read_to_string()
                        .unwrap_or_else(|e| format!("(proxy: body unreadable: {e})")),
                ),
                Err(e) => (
                    502,
                    "application/json".to_string(),
                    json!({"error": {"message": format!("proxy: upstream failed: {e}")}})
                        .to_string(),
                ),
            };
            record.lock().unwrap().push(Exchange {
                request: req.clone(),
                status,
                response: body.clone(),
                millis: started.elapsed().as_millis(),
            });
            // A streamed answer goes on as the server's own type (whole:
            // the proxy reads it to its end first).
            Reply::Raw {
                status,
                content_type,
                body,
                headers: Vec::new(),
            }
        });
        Proxy { server, log }
    }

    pub(crate) fn url(&self) -> &str {
        &self.server.url
    }

    pub(crate) fn exchanges(&self) -> Vec<Exchange> {
        self.log.lock().unwrap().clone()
    }
}
