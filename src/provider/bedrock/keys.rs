//! Where Bedrock's keys and region come from: the AWS variables
//! (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`;
//! `AWS_REGION`, then `AWS_DEFAULT_REGION`, then config.toml's
//! `[providers.bedrock] region`), as the AWS tools and the Go original read
//! them (design §4.13).

use super::AwsKeys;

/// The keys from the environment, with `file_region` when no variable
/// names one; else the variables that are missing, as the missing-key
/// error names them. The secrets are registered for redaction.
pub fn from_env(file_region: Option<&str>) -> Result<AwsKeys, String> {
    let var = |name: &str| {
        std::env::var(name)
            .ok()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let (Some(access_key_id), Some(secret_access_key)) =
        (var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY"))
    else {
        return Err("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY".into());
    };
    let Some(region) = region(file_region) else {
        return Err("AWS_REGION (or AWS_DEFAULT_REGION, or [providers.bedrock] region)".into());
    };
    Ok(AwsKeys {
        access_key_id,
        secret_access_key,
        session_token: var("AWS_SESSION_TOKEN"),
        region,
    }
    .registered())
}

/// The region: `AWS_REGION`, `AWS_DEFAULT_REGION`, then `file_region`;
/// none when it could not be part of a host name.
pub fn region(file_region: Option<&str>) -> Option<String> {
    let var = |name: &str| std::env::var(name).ok();
    [
        var("AWS_REGION"),
        var("AWS_DEFAULT_REGION"),
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
