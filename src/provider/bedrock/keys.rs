//! Where Bedrock's keys and region come from: the AWS variables
//! (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`), else
//! the shared credentials file (`AWS_SHARED_CREDENTIALS_FILE`, else
//! `~/.aws/credentials`; the profile `AWS_PROFILE`, else `default`);
//! `AWS_REGION`, then `AWS_DEFAULT_REGION`, then `AXE_BEDROCK_REGION` (the
//! Go original's 1.8 docs), then config.toml's
//! `[providers.bedrock] region`; as the AWS tools and the Go original read
//! them (design §4.13).

use super::AwsKeys;

/// How a file axe did not write is read: its path, at most so many bytes.
pub type ReadFile<'a> = &'a dyn Fn(&std::path::Path, u64) -> Result<Vec<u8>, String>;

/// The keys from the environment, with `file_region` when no variable
/// names one; else what to set, as the missing-key error says it: the
/// variables and the file axe read, and what it found missing in each.
/// The secrets are registered for redaction. The shared credentials file
/// is read by `read` (the caller's reader for files axe did not write, at
/// most so many bytes: a FIFO there must not block the run, design §8.7).
pub fn from_env(file_region: Option<&str>, read: ReadFile<'_>) -> Result<AwsKeys, String> {
    let var = |name: &str| {
        std::env::var(name)
            .ok()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let keys = match (var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY")) {
        (Some(id), Some(secret)) => Ok((id, secret, var("AWS_SESSION_TOKEN"))),
        (id, secret) => from_file(&var, read).map_err(|file| {
            let unset: Vec<&str> = [
                ("AWS_ACCESS_KEY_ID", &id),
                ("AWS_SECRET_ACCESS_KEY", &secret),
            ]
            .into_iter()
            .filter(|(_, v)| v.is_none())
            .map(|(n, _)| n)
            .collect();
            format!(
                "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile's keys in the shared \
                 credentials file: {} unset; {file}",
                unset.join(" and ")
            )
        }),
    };
    let (access_key_id, secret_access_key, session_token) = keys?;
    let Some(region) = region(file_region) else {
        return Err(
            "AWS_REGION (or AWS_DEFAULT_REGION, AXE_BEDROCK_REGION, or [providers.bedrock] region)"
                .into(),
        );
    };
    Ok(AwsKeys {
        access_key_id,
        secret_access_key,
        session_token,
        region,
    }
    .registered())
}

/// Registers AWS's secrets in the environment for redaction, whatever
/// provider the run uses (the file is read only for a Bedrock run).
pub fn register_env_secrets() {
    for name in ["AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"] {
        if let Some(v) = std::env::var(name).ok().filter(|v| !v.trim().is_empty()) {
            crate::text::redact::register(v.trim());
        }
    }
}

/// A file larger than this is not a credentials file.
const MAX_FILE: u64 = 1 << 20;

/// The profile's keys in the shared credentials file, when it has both;
/// else what the file (which one, which profile) lacked.
fn from_file(
    var: &dyn Fn(&str) -> Option<String>,
    read: ReadFile<'_>,
) -> Result<(String, String, Option<String>), String> {
    let path = match var("AWS_SHARED_CREDENTIALS_FILE") {
        Some(p) => std::path::PathBuf::from(p),
        None => match var("HOME") {
            Some(home) => std::path::PathBuf::from(home).join(".aws/credentials"),
            None => {
                return Err("no credentials file (neither \
                    AWS_SHARED_CREDENTIALS_FILE nor HOME is set)"
                    .into());
            }
        },
    };
    let profile = var("AWS_PROFILE").unwrap_or_else(|| "default".into());
    let at = format!("{} (profile \"{profile}\")", path.display());
    let bytes = read(&path, MAX_FILE).map_err(|e| format!("{at} could not be read: {e}"))?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let keys = profile_keys(&text, &profile);
    let get = |k: &str| {
        keys.iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.to_string())
    };
    match (get("aws_access_key_id"), get("aws_secret_access_key")) {
        (Some(id), Some(secret)) => Ok((id, secret, get("aws_session_token"))),
        (None, None) => Err(format!(
            "{at} has no aws_access_key_id and aws_secret_access_key"
        )),
        (None, _) => Err(format!("{at} has no aws_access_key_id")),
        (_, None) => Err(format!("{at} has no aws_secret_access_key")),
    }
}

/// The `key = value` lines of `[profile]` in an INI text, non-empty values
/// only; `#` and `;` lines are comments.
fn profile_keys<'a>(text: &'a str, profile: &str) -> Vec<(&'a str, &'a str)> {
    let mut inside = false;
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            inside = name.trim() == profile;
        } else if inside
            && !line.starts_with(['#', ';'])
            && let Some((k, v)) = line.split_once('=')
            && !v.trim().is_empty()
        {
            out.push((k.trim(), v.trim()));
        }
    }
    out
}

/// The region: `AWS_REGION`, `AWS_DEFAULT_REGION`, `AXE_BEDROCK_REGION`,
/// then `file_region`;
/// none when it could not be part of a host name.
pub fn region(file_region: Option<&str>) -> Option<String> {
    let var = |name: &str| std::env::var(name).ok();
    [
        var("AWS_REGION"),
        var("AWS_DEFAULT_REGION"),
        var("AXE_BEDROCK_REGION"),
        file_region.map(str::to_string),
    ]
    .into_iter()
    .flatten()
    .map(|r| r.trim().to_string())
    .find(|r| !r.is_empty())
    .filter(|r| r.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
}

/// The Bedrock runtime endpoint of `region`.
pub fn base_url(region: &str) -> String {
    format!("https://bedrock-runtime.{region}.amazonaws.com")
}
