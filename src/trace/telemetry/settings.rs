//! Where spans go and what they carry: config.toml's `[telemetry]` (read
//! into [`TelemetrySettings`] here, as `[run_log]` is in `run_log`) and the
//! standard `OTEL_*` environment variables, which win over it (design
//! §7.9). No endpoint, or `OTEL_SDK_DISABLED=true`: nothing is exported.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use super::otlp::{AttrValue, Resource};

/// `[telemetry]`: every key optional; nothing is exported without an
/// endpoint.
#[derive(Debug, Default, Clone, Deserialize)]
pub struct TelemetrySettings {
    /// The collector's base URL, `/v1/traces` appended
    /// (`OTEL_EXPORTER_OTLP_ENDPOINT`).
    pub endpoint: Option<String>,
    /// The whole URL spans are posted to, used as it is
    /// (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`).
    pub traces_endpoint: Option<String>,
    /// `http/protobuf` (the default) or `http/json`
    /// (`OTEL_EXPORTER_OTLP_PROTOCOL`).
    pub protocol: Option<String>,
    /// Headers sent with each export (`OTEL_EXPORTER_OTLP_HEADERS`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// `service.name` (`OTEL_SERVICE_NAME`); `axe` when unset.
    pub service_name: Option<String>,
    /// More resource attributes (`OTEL_RESOURCE_ATTRIBUTES`).
    #[serde(default)]
    pub resource_attributes: BTreeMap<String, String>,
    /// Nothing exported, whatever else says (`OTEL_SDK_DISABLED`).
    #[serde(default)]
    pub disabled: bool,
    /// Prompts, answers and tool arguments and results exported, redacted
    /// (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`).
    #[serde(default)]
    pub capture_content: bool,
}

/// Export settled: the URL spans are posted to, how, and what they carry.
#[derive(Debug, Clone)]
pub struct Settings {
    pub url: String,
    /// `http/json` rather than `http/protobuf`.
    pub json: bool,
    pub headers: Vec<(String, String)>,
    pub resource: Resource,
    /// Prompts, answers, tool arguments and results exported (redacted).
    pub capture: bool,
    /// How long one export may take.
    pub timeout: Duration,
}

/// The settings from `file` and the environment as `env` reads it: `None`
/// when nothing is to be exported; an error for a protocol axe does not
/// speak (`grpc`).
pub fn settle(
    file: &TelemetrySettings,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Settings>, String> {
    let var = |name: &str| {
        env(name)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let disabled =
        var("OTEL_SDK_DISABLED").map_or(file.disabled, |v| v.eq_ignore_ascii_case("true"));
    let url = match (
        var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
        var("OTEL_EXPORTER_OTLP_ENDPOINT"),
    ) {
        (Some(traces), _) => Some(traces),
        (None, Some(base)) => Some(signal_url(&base)),
        (None, None) => file
            .traces_endpoint
            .clone()
            .or_else(|| file.endpoint.as_deref().map(signal_url)),
    };
    let Some(url) = url.filter(|_| !disabled) else {
        return Ok(None);
    };
    let protocol = var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        .or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"))
        .or_else(|| file.protocol.clone())
        .unwrap_or_else(|| "http/protobuf".to_string());
    let json = match protocol.as_str() {
        "http/protobuf" => false,
        "http/json" => true,
        other => {
            return Err(format!(
                "telemetry: protocol {other:?} is not spoken (http/protobuf or http/json): nothing is exported"
            ));
        }
    };
    let mut headers: Vec<(String, String)> = file.headers.clone().into_iter().collect();
    for name in [
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    ] {
        for (k, v) in var(name).as_deref().map(pairs).unwrap_or_default() {
            headers.retain(|(hk, _)| !hk.eq_ignore_ascii_case(&k));
            headers.push((k, v));
        }
    }
    for (_, v) in &headers {
        crate::text::redact::register(v);
    }
    let capture = var("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
        .map_or(file.capture_content, |v| v.eq_ignore_ascii_case("true"));
    let timeout = var("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
        .or_else(|| var("OTEL_EXPORTER_OTLP_TIMEOUT"))
        .and_then(|ms| ms.parse::<u64>().ok())
        .map_or(Duration::from_secs(10), Duration::from_millis);
    Ok(Some(Settings {
        url,
        json,
        headers,
        resource: resource(file, &var),
        capture,
        timeout,
    }))
}

/// The process's `OTEL_*` variables, read in one pass over the environment
/// (a dozen `std::env::var` look-ups were a dozen scans of it, about 7 k
/// instructions a run, design §7.9). A name or value that is not UTF-8 is
/// left out, as `std::env::var` leaves it; of a name set twice, the first.
#[cfg(unix)]
pub fn otel_vars() -> Vec<(String, String)> {
    unsafe extern "C" {
        static environ: *const *const std::ffi::c_char;
    }
    let mut found = Vec::new();
    // SAFETY: `environ` is the C library's array of NUL-terminated strings,
    // ended by a null pointer. Nothing writes it meanwhile: axe sets no
    // environment variable while it runs (only tests call `set_var`). The
    // prefix is compared byte by byte up to its first difference, which a
    // shorter string's NUL is, so no string is read past its end.
    unsafe {
        let mut at = environ;
        while !at.is_null() && !(*at).is_null() {
            let p = (*at).cast::<u8>();
            if (0..5).all(|i| *p.add(i) == b"OTEL_"[i]) {
                let entry = std::ffi::CStr::from_ptr(*at).to_bytes();
                if let Some((k, v)) = std::str::from_utf8(entry)
                    .ok()
                    .and_then(|e| e.split_once('='))
                {
                    found.push((k.to_string(), v.to_string()));
                }
            }
            at = at.add(1);
        }
    }
    found
}

#[cfg(not(unix))]
pub fn otel_vars() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| k.starts_with("OTEL_"))
        .collect()
}

/// The traces URL under a base endpoint: `<base>/v1/traces`.
fn signal_url(base: &str) -> String {
    format!("{}/v1/traces", base.trim_end_matches('/'))
}

/// The resource: `service.name` (`OTEL_SERVICE_NAME`, else the resource
/// attributes', else config.toml's, else `axe`), the SDK's own, and the
/// rest of `OTEL_RESOURCE_ATTRIBUTES` over config.toml's.
fn resource(file: &TelemetrySettings, var: &dyn Fn(&str) -> Option<String>) -> Resource {
    let mut attrs: Vec<(String, String)> = file.resource_attributes.clone().into_iter().collect();
    for (k, v) in var("OTEL_RESOURCE_ATTRIBUTES")
        .as_deref()
        .map(pairs)
        .unwrap_or_default()
    {
        attrs.retain(|(ak, _)| *ak != k);
        attrs.push((k, v));
    }
    let named = attrs
        .iter()
        .find(|(k, _)| k == "service.name")
        .map(|(_, v)| v.clone());
    let service = var("OTEL_SERVICE_NAME")
        .or(named)
        .or_else(|| file.service_name.clone())
        .unwrap_or_else(|| "axe".to_string());
    attrs.retain(|(k, _)| k != "service.name");
    let mut all = vec![
        ("service.name".to_string(), AttrValue::Str(service.into())),
        (
            "service.version".to_string(),
            AttrValue::Str(env!("CARGO_PKG_VERSION").into()),
        ),
        (
            "telemetry.sdk.name".to_string(),
            AttrValue::Str("axe".into()),
        ),
        (
            "telemetry.sdk.language".to_string(),
            AttrValue::Str("rust".into()),
        ),
    ];
    all.extend(
        attrs
            .into_iter()
            .map(|(k, v)| (k, AttrValue::Str(v.into()))),
    );
    Resource { attrs: all }
}

/// `k1=v1,k2=v2` (the W3C baggage form the `OTEL_*` lists use), each part
/// trimmed and percent-decoded; a part without `=` is skipped.
fn pairs(text: &str) -> Vec<(String, String)> {
    text.split(',')
        .filter_map(|part| part.split_once('='))
        .map(|(k, v)| (decode(k.trim()), decode(v.trim())))
        .filter(|(k, _)| !k.is_empty())
        .collect()
}

/// `%XX` decoded; a `%` not followed by two hex digits is kept.
fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = (b[i] == b'%')
            .then(|| s.get(i + 1..i + 3))
            .flatten()
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match hex {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settle_with(vars: &[(&str, &str)]) -> Result<Option<Settings>, String> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        settle(&TelemetrySettings::default(), &move |name: &str| {
            vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn the_environment_settles_where_and_how() {
        assert!(settle_with(&[]).unwrap().is_none());
        let s = settle_with(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/")])
            .unwrap()
            .unwrap();
        assert_eq!(s.url, "http://c:4318/v1/traces");
        assert!(!s.json);
        let s = settle_with(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t/x"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "a=1, b=x%20y"),
            ("OTEL_RESOURCE_ATTRIBUTES", "service.name=svc,env=ci"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(s.url, "http://t/x");
        assert!(s.json);
        assert_eq!(
            s.headers,
            [("a".into(), "1".into()), ("b".into(), "x y".into())]
        );
        assert_eq!(s.resource.attrs[0].1, AttrValue::Str("svc".into()));
        let off = settle_with(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"),
            ("OTEL_SDK_DISABLED", "true"),
        ]);
        assert!(off.unwrap().is_none());
        let grpc = settle_with(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ]);
        assert!(grpc.is_err());
    }
}
