//! The image parts a client sends `axe serve` (design §12.2, §4.16): a
//! chat message's `image_url` part (and, through the Responses endpoint,
//! an `input_image` made into one) carries a `data:` URL, whose bytes
//! become an attachment of the run's first message. A remote URL is
//! refused, not fetched: the server would otherwise reach any address a
//! client names. Each image is bounded as a file of `axe run -a` is, the
//! whole request by `--max-body` before any of this.

use serde_json::Value;

use super::reply::ApiError;
use crate::provider::Attachment;
use crate::provider::attachment::{MAX_ATTACHMENT_BYTES, MAX_ATTACHMENTS_BYTES};

/// An `image_url` part's image, added to `images`.
pub fn take(part: &Value, images: &mut Vec<Attachment>) -> Result<(), ApiError> {
    // `image_url` is an object with a `url` (OpenAI's type); a bare string
    // is taken too (what some clients send).
    let url = match part.get("image_url") {
        Some(Value::String(u)) => u.as_str(),
        Some(o) => o.get("url").and_then(Value::as_str).unwrap_or(""),
        None => "",
    };
    let Some(rest) = url.strip_prefix("data:") else {
        return Err(invalid(if url.is_empty() {
            "an image part needs its `image_url.url`".to_string()
        } else {
            "axe serve takes an image as a data: URL (data:image/png;base64,...) and \
             fetches no URL a client names"
                .to_string()
        }));
    };
    let Some((_, b64)) = rest.split_once(";base64,") else {
        return Err(invalid("an image's data: URL must be base64".to_string()));
    };
    // The body's size bounds the decoding; the bounds below are the
    // images' own.
    let Some(bytes) = crate::text::base64::decode(b64) else {
        return Err(invalid(
            "an image's data: URL is not valid base64".to_string(),
        ));
    };
    let so_far: usize = images.iter().map(|a| a.bytes.len()).sum();
    if bytes.len() as u64 > MAX_ATTACHMENT_BYTES {
        return Err(invalid(format!(
            "an image may be at most {} MiB",
            MAX_ATTACHMENT_BYTES >> 20
        )));
    }
    if (so_far + bytes.len()) as u64 > MAX_ATTACHMENTS_BYTES {
        return Err(invalid(format!(
            "a request's images may be at most {} MiB in all",
            MAX_ATTACHMENTS_BYTES >> 20
        )));
    }
    let name = format!("image-{}", images.len() + 1);
    match Attachment::new(name, bytes) {
        Some(a) if a.kind.is_image() => {
            images.push(a);
            Ok(())
        }
        _ => Err(invalid(
            "an image part must hold a PNG, JPEG, GIF or WebP image".to_string(),
        )),
    }
}

fn invalid(message: String) -> ApiError {
    ApiError::invalid(message, "messages")
}
