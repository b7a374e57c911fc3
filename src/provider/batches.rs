//! A provider's own batch engine (design §11.8): OpenAI's Batch API (a
//! JSONL file uploaded through the Files API, `/v1/batches`, the output
//! file read back) and Anthropic's Message Batches
//! (`/v1/messages/batches`, its results file). The same requests `axe run`
//! sends go in, each under a `custom_id`; each answer comes back as the
//! wire's own response body, read by the wire's own parser. Which inputs,
//! the state kept between runs and the lines written are `crate::batch`'s.

use std::io::{BufRead, Read, Write};
use std::time::Duration;

use serde_json::{Value, json};

use super::client::client;
use super::wire::{join_v1, path_segment};
use super::{Provider, Response, Wire};
use crate::text::redact;

/// The longest one call to a batch endpoint may take: an upload of a file
/// of up to 200 MB, a download of the results.
const CALL_TIMEOUT: Duration = Duration::from_secs(600);

/// The largest answer to a call that is not the results file.
const MAX_ANSWER_BYTES: u64 = 1 << 20;

/// The largest results file read back (OpenAI's input is at most 200 MB,
/// Anthropic's 256 MB; answers may be larger than the requests).
const MAX_RESULTS_BYTES: u64 = 4 << 30;

/// What a batch is doing, as the provider counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Polled {
    /// Still working: requests done and failed so far, of `total`.
    Running(Counts),
    /// Ended: its results are at `results` (an output file's id, or a URL),
    /// its failures maybe in a second file (`errors`, OpenAI's). `early`
    /// says why when it ended before running every request (`expired`,
    /// `cancelled`): the requests not run have no line in its files.
    Ended {
        counts: Counts,
        results: Option<String>,
        errors: Option<String>,
        early: Option<&'static str>,
    },
    /// Failed, expired or cancelled as a whole: why.
    Failed(String),
}

/// A batch's counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub total: u64,
    pub succeeded: u64,
    pub failed: u64,
}

/// One line of a results file: the request it answers, and its answer
/// or why there is none.
#[derive(Debug)]
pub struct Item {
    pub custom_id: String,
    pub answer: Result<Response, String>,
}

impl Provider {
    /// Whether this provider's wire has a batch engine axe speaks.
    pub fn has_batches(&self) -> bool {
        matches!(self.wire, Wire::OpenAi | Wire::Anthropic)
    }

    /// The most requests and bytes one batch of this provider takes
    /// (OpenAI: 50,000 or 200 MB a file; Anthropic: 100,000 or 256 MB),
    /// with room to spare on the bytes.
    pub fn batch_limits(&self) -> (u64, u64) {
        #[cfg(debug_assertions)]
        if let Some(n) = std::env::var("AXE_DEBUG_BATCH_PART")
            .ok()
            .and_then(|v| v.parse().ok())
        {
            // A test hook, in debug builds only: parts of `n` requests.
            return (n, u64::MAX);
        }
        match self.wire {
            Wire::Anthropic => (100_000, 250_000_000),
            _ => (50_000, 195_000_000),
        }
    }

    /// One request of a batch, as the engine's input takes it: `body` is
    /// what `axe run` sends (`Provider::body`), never streamed.
    pub fn batch_request(&self, custom_id: &str, mut body: Value) -> Value {
        if let Some(o) = body.as_object_mut() {
            o.remove("stream");
            o.remove("stream_options");
        }
        match self.wire {
            Wire::Anthropic => json!({"custom_id": custom_id, "params": body}),
            _ => json!({
                "custom_id": custom_id,
                "method": "POST",
                "url": "/v1/chat/completions",
                "body": body,
            }),
        }
    }

    /// Sends the requests of `requests` (a file of [`batch_request`]
    /// lines, each ending in a newline, `len` bytes, at least one line) as
    /// one batch: its id.
    ///
    /// [`batch_request`]: Provider::batch_request
    pub fn batch_submit(&self, requests: std::fs::File, len: u64) -> Result<String, String> {
        let answer = match self.wire {
            Wire::Anthropic => {
                // `{"requests":[` and `]}` around the lines, each newline
                // a comma but the last: 15 bytes more, one less.
                let body = AnthropicBody::new(requests);
                let kind = ("application/json".to_string(), len + 14);
                let url = join_v1(&self.base_url, "messages/batches");
                self.call_json("POST", &url, Upload::Stream(Box::new(body), Some(kind)))?
            }
            _ => {
                let file = self.upload(requests, len)?;
                let url = join_v1(&self.base_url, "batches");
                let create = json!({
                    "input_file_id": file,
                    "endpoint": "/v1/chat/completions",
                    "completion_window": "24h",
                });
                self.call_json("POST", &url, Upload::Json(create))?
            }
        };
        text_field(&answer, "id")
    }

    /// What batch `id` is doing.
    pub fn batch_poll(&self, id: &str) -> Result<Polled, String> {
        let path = match self.wire {
            Wire::Anthropic => format!("messages/batches/{}", path_segment(id)),
            _ => format!("batches/{}", path_segment(id)),
        };
        let answer = self.call_json("GET", &join_v1(&self.base_url, &path), Upload::None)?;
        Ok(match self.wire {
            Wire::Anthropic => anthropic_polled(&answer),
            _ => openai_polled(&answer),
        })
    }

    /// The results file `at` names (an output file's id, or a URL),
    /// written to `into`.
    pub fn batch_results(&self, at: &str, into: &mut std::fs::File) -> Result<u64, String> {
        let url = match self.wire {
            Wire::Anthropic => at.to_string(),
            _ => join_v1(
                &self.base_url,
                &format!("files/{}/content", path_segment(at)),
            ),
        };
        let mut resp = self.call("GET", &url, Upload::None)?;
        let mut body = resp
            .body_mut()
            .with_config()
            .limit(MAX_RESULTS_BYTES)
            .reader();
        std::io::copy(&mut body, into).map_err(|e| format!("reading the results: {e}"))
    }

    /// One line of a results file.
    pub fn batch_item(&self, line: &str) -> Result<Item, String> {
        let v: Value =
            serde_json::from_str(line).map_err(|e| format!("a results line is not JSON: {e}"))?;
        let custom_id = text_field(&v, "custom_id")?;
        let answer = match self.wire {
            Wire::Anthropic => anthropic_answer(&v["result"]),
            _ => openai_answer(&v),
        }
        .and_then(|body| self.wire.format().parse(&body.to_string()));
        Ok(Item { custom_id, answer })
    }

    /// OpenAI's Files API: `requests` uploaded for a batch, its file id.
    fn upload(&self, requests: std::fs::File, len: u64) -> Result<String, String> {
        let boundary = format!("axe-{:016x}", fastrand::u64(..));
        let head = format!(
            "--{boundary}\r\ncontent-disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n\
             --{boundary}\r\ncontent-disposition: form-data; name=\"file\"; filename=\"requests.jsonl\"\r\n\
             content-type: application/jsonl\r\n\r\n"
        );
        let tail = format!("\r\n--{boundary}--\r\n");
        let total = head.len() as u64 + len + tail.len() as u64;
        let body = std::io::Cursor::new(head.into_bytes())
            .chain(requests.take(len))
            .chain(std::io::Cursor::new(tail.into_bytes()));
        let kind = format!("multipart/form-data; boundary={boundary}");
        let url = join_v1(&self.base_url, "files");
        let answer = self.call_json(
            "POST",
            &url,
            Upload::Stream(Box::new(body), Some((kind, total))),
        )?;
        text_field(&answer, "id")
    }

    /// A call whose answer is JSON.
    fn call_json(&self, method: &str, url: &str, upload: Upload) -> Result<Value, String> {
        let mut resp = self.call(method, url, upload)?;
        let bytes = resp
            .body_mut()
            .with_config()
            .limit(MAX_ANSWER_BYTES)
            .read_to_vec()
            .map_err(|e| self.say(format!("reading the answer of {url}: {e}")))?;
        serde_json::from_slice(&bytes).map_err(|e| self.say(format!("{url} answered no JSON: {e}")))
    }

    /// One call with the provider's headers; a status other than 2xx is
    /// the error, with the provider's own message.
    fn call(
        &self,
        method: &str,
        url: &str,
        upload: Upload,
    ) -> Result<ureq::http::Response<ureq::Body>, String> {
        let format = self.wire.format();
        let mut req = ureq::http::Request::builder().method(method).uri(url);
        for (name, value) in format.auth(self.api_key.as_deref()) {
            req = req.header(name, value);
        }
        for (name, value) in &self.headers {
            req = req.header(name.as_str(), value.as_str());
        }
        let agent = client(self.wire);
        let config = |r: ureq::http::request::Builder| {
            let req = r.body(()).map_err(|e| e.to_string())?;
            Ok::<_, String>(
                agent
                    .configure_request(req)
                    .timeout_global(Some(CALL_TIMEOUT))
                    .build(),
            )
        };
        let sent = match upload {
            Upload::None => agent.run(config(req)?),
            Upload::Json(v) => {
                let req = config(req.header("content-type", "application/json"))?;
                let (parts, ()) = req.into_parts();
                agent.run(ureq::http::Request::from_parts(parts, v.to_string()))
            }
            Upload::Stream(mut body, kind) => {
                let (kind, len) = kind.unwrap_or(("application/json".into(), 0));
                let mut req = req.header("content-type", kind);
                if len > 0 {
                    req = req.header("content-length", len.to_string());
                }
                let (parts, ()) = config(req)?.into_parts();
                let body = ureq::SendBody::from_reader(&mut body);
                agent.run(ureq::http::Request::from_parts(parts, body))
            }
        };
        let mut resp = sent.map_err(|e| self.say(format!("{method} {url}: {e}")))?;
        let status = resp.status().as_u16();
        if (200..300).contains(&status) {
            return Ok(resp);
        }
        let text = resp
            .body_mut()
            .with_config()
            .limit(MAX_ANSWER_BYTES)
            .read_to_string()
            .unwrap_or_default();
        let said = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| v["error"]["message"].as_str().map(str::to_string))
            .unwrap_or(text);
        Err(self.say(format!(
            "{method} {url}: status {status}: {}",
            crate::text::one_line(&said)
                .chars()
                .take(300)
                .collect::<String>()
        )))
    }

    /// An error's text, with the provider's name and no key.
    fn say(&self, text: String) -> String {
        redact::redact(&format!("{}: {text}", self.name))
    }
}

/// What a call sends.
enum Upload {
    None,
    Json(Value),
    /// A body read as it is sent, with its content type and length.
    Stream(Box<dyn Read + Send>, Option<(String, u64)>),
}

/// Anthropic's create body, `{"requests":[...]}`, made from a file of one
/// request per line as it is sent: a 100,000-request batch is never held.
struct AnthropicBody {
    lines: std::io::BufReader<std::fs::File>,
    out: Vec<u8>,
    at: usize,
    first: bool,
    ended: bool,
}

impl AnthropicBody {
    fn new(file: std::fs::File) -> AnthropicBody {
        AnthropicBody {
            lines: std::io::BufReader::with_capacity(64 * 1024, file),
            out: b"{\"requests\":[".to_vec(),
            at: 0,
            first: true,
            ended: false,
        }
    }
}

impl Read for AnthropicBody {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.out.len() {
            if self.ended {
                return Ok(0);
            }
            self.out.clear();
            self.at = 0;
            let mut line = Vec::new();
            if self.lines.read_until(b'\n', &mut line)? == 0 {
                self.out.extend_from_slice(b"]}");
                self.ended = true;
                continue;
            }
            let line = line.strip_suffix(b"\n").unwrap_or(&line);
            if line.is_empty() {
                continue;
            }
            if !self.first {
                self.out.push(b',');
            }
            self.first = false;
            self.out.write_all(line)?;
        }
        let n = buf.len().min(self.out.len() - self.at);
        buf[..n].copy_from_slice(&self.out[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

fn text_field(v: &Value, key: &str) -> Result<String, String> {
    v[key]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("the answer has no \"{key}\""))
}

fn count(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or(0)
}

/// OpenAI's batch object: `status` and `request_counts`.
fn openai_polled(v: &Value) -> Polled {
    let c = &v["request_counts"];
    let counts = Counts {
        total: count(c, "total"),
        succeeded: count(c, "completed"),
        failed: count(c, "failed"),
    };
    let file = |k: &str| v[k].as_str().map(str::to_string);
    match v["status"].as_str().unwrap_or("") {
        "completed" => Polled::Ended {
            counts,
            results: file("output_file_id"),
            errors: file("error_file_id"),
            early: None,
        },
        // An expired batch's finished requests are in its files still.
        s @ ("expired" | "cancelled") if file("output_file_id").is_some() => Polled::Ended {
            counts,
            results: file("output_file_id"),
            errors: file("error_file_id"),
            early: Some(if s == "expired" {
                "expired"
            } else {
                "was cancelled"
            }),
        },
        s @ ("failed" | "expired" | "cancelled") => {
            let why = v["errors"]["data"][0]["message"].as_str().unwrap_or(s);
            Polled::Failed(format!("the batch {s}: {why}"))
        }
        _ => Polled::Running(counts),
    }
}

/// Anthropic's message batch: `processing_status` and `request_counts`.
fn anthropic_polled(v: &Value) -> Polled {
    let c = &v["request_counts"];
    let failed = count(c, "errored") + count(c, "canceled") + count(c, "expired");
    let succeeded = count(c, "succeeded");
    let counts = Counts {
        total: count(c, "processing") + succeeded + failed,
        succeeded,
        failed,
    };
    match v["processing_status"].as_str().unwrap_or("") {
        "ended" => Polled::Ended {
            counts,
            results: v["results_url"].as_str().map(str::to_string),
            errors: None,
            // Each request not run has a line of its own (`expired`).
            early: None,
        },
        _ => Polled::Running(counts),
    }
}

/// An OpenAI output line's chat completion, or why there is none.
fn openai_answer(v: &Value) -> Result<Value, String> {
    let r = &v["response"];
    match r["status_code"].as_u64() {
        Some(200) => Ok(r["body"].clone()),
        Some(status) => Err(format!(
            "status {status}: {}",
            r["body"]["error"]["message"]
                .as_str()
                .unwrap_or("no message")
        )),
        None => Err(v["error"]["message"]
            .as_str()
            .unwrap_or("the batch gave no answer")
            .to_string()),
    }
}

/// An Anthropic result's message, or why there is none.
fn anthropic_answer(r: &Value) -> Result<Value, String> {
    match r["type"].as_str().unwrap_or("") {
        "succeeded" => Ok(r["message"].clone()),
        "errored" => Err(r["error"]["error"]["message"]
            .as_str()
            .unwrap_or("errored")
            .to_string()),
        "expired" => Err("the batch expired before this input ran".to_string()),
        other => Err(format!("the request was {other}")),
    }
}
