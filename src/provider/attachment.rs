//! A user turn's attachments (images, PDFs, plain text: `axe run -a`, an
//! agent file's `attach`, `axe serve`'s image parts): the type every wire
//! sends in its own form, its kind told by its content (magic bytes, never
//! the name), and the bounds on their size (design §4.16). Their base64 is
//! `text::base64`'s.

use std::sync::Arc;

use crate::text::base64;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The largest file one attachment may be (the bytes, before base64):
/// OpenAI's limit on an image (20 MB); Anthropic's and Bedrock's are
/// lower and theirs to say (design §4.16).
pub const MAX_ATTACHMENT_BYTES: u64 = 20 << 20;

/// The most all of a run's attachments may be together: Anthropic's and
/// OpenAI's whole-request limit for files (32 MB), before base64.
pub const MAX_ATTACHMENTS_BYTES: u64 = 32 << 20;

/// What an attachment is, by its content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Png,
    Jpeg,
    Gif,
    Webp,
    Pdf,
    /// UTF-8 text with no NUL byte.
    Text,
}

impl Kind {
    /// Its media type, as every wire names it.
    pub fn media_type(self) -> &'static str {
        match self {
            Kind::Png => "image/png",
            Kind::Jpeg => "image/jpeg",
            Kind::Gif => "image/gif",
            Kind::Webp => "image/webp",
            Kind::Pdf => "application/pdf",
            Kind::Text => "text/plain",
        }
    }

    pub fn is_image(self) -> bool {
        matches!(self, Kind::Png | Kind::Jpeg | Kind::Gif | Kind::Webp)
    }

    /// What a refusal calls it: `a PDF`, `an image (image/png)`.
    pub fn described(self) -> String {
        match self {
            Kind::Pdf => "a PDF".into(),
            Kind::Text => "a plain text file".into(),
            k => format!("an image ({})", k.media_type()),
        }
    }

    /// The kind `bytes` are, by their first bytes; text is UTF-8 with no
    /// NUL. None for anything else (an empty file too).
    pub fn sniff(bytes: &[u8]) -> Option<Kind> {
        let kind = if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
            Kind::Png
        } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
            Kind::Jpeg
        } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
            Kind::Gif
        } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
            Kind::Webp
        } else if bytes.starts_with(b"%PDF-") {
            Kind::Pdf
        } else if !bytes.is_empty() && !bytes.contains(&0) && std::str::from_utf8(bytes).is_ok() {
            Kind::Text
        } else {
            return None;
        };
        Some(kind)
    }
}

/// What a refusal says of a file of no kind axe sends.
pub const KINDS: &str = "PNG, JPEG, GIF, WebP, PDF or plain text (UTF-8)";

/// One attachment: its name, its kind and its bytes (shared, never
/// copied: a request is cloned for each turn and retry).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    /// The path as written (`-a`, `attach`), or `image-N` for a part `axe
    /// serve` was sent.
    pub name: String,
    pub kind: Kind,
    /// Stored as base64 text when serialized.
    #[serde(serialize_with = "to_base64", deserialize_with = "from_base64")]
    pub bytes: Arc<[u8]>,
}

impl Attachment {
    /// `bytes` as an attachment named `name`, when they are of a kind axe
    /// sends.
    pub fn new(name: impl Into<String>, bytes: Vec<u8>) -> Option<Attachment> {
        let kind = Kind::sniff(&bytes)?;
        Some(Attachment {
            name: name.into(),
            kind,
            bytes: bytes.into(),
        })
    }

    /// The last part of its name: the file name a wire is told.
    pub fn file_name(&self) -> &str {
        self.name.rsplit('/').next().unwrap_or(&self.name)
    }

    /// Its bytes in standard base64.
    pub fn base64(&self) -> String {
        base64::encode(&self.bytes)
    }

    /// A `data:` URL of it (OpenAI's image and file parts).
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.kind.media_type(), self.base64())
    }

    /// Its text, for a text attachment a wire sends as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }

    /// A text attachment as a text part: its name, then its text.
    pub fn as_text_part(&self) -> String {
        format!("{}:\n\n{}", self.file_name(), self.text())
    }
}

fn to_base64<S: Serializer>(bytes: &Arc<[u8]>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&base64::encode(bytes))
}

fn from_base64<'de, D: Deserializer<'de>>(d: D) -> Result<Arc<[u8]>, D::Error> {
    let text = String::deserialize(d)?;
    base64::decode(&text)
        .map(Arc::from)
        .ok_or_else(|| serde::de::Error::custom("not base64"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kind_is_told_by_the_content() {
        assert_eq!(Kind::sniff(b"\x89PNG\r\n\x1a\n...."), Some(Kind::Png));
        assert_eq!(Kind::sniff(b"\xff\xd8\xff\xe0"), Some(Kind::Jpeg));
        assert_eq!(Kind::sniff(b"GIF89a.."), Some(Kind::Gif));
        assert_eq!(Kind::sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some(Kind::Webp));
        assert_eq!(Kind::sniff(b"%PDF-1.7"), Some(Kind::Pdf));
        assert_eq!(Kind::sniff("héllo\n".as_bytes()), Some(Kind::Text));
        assert_eq!(Kind::sniff(b"a\0b"), None);
        assert_eq!(Kind::sniff(b"\xc3\x28"), None);
        assert_eq!(Kind::sniff(b""), None);
    }

    #[test]
    fn an_attachment_serializes_its_bytes_as_base64() {
        let a = Attachment::new("d/a.txt", b"hi".to_vec()).unwrap();
        let v = serde_json::to_value(&a).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"name": "d/a.txt", "kind": "text", "bytes": "aGk="})
        );
        assert_eq!(serde_json::from_value::<Attachment>(v).unwrap(), a);
        assert_eq!(a.file_name(), "a.txt");
    }
}
