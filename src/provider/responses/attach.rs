//! A first message's attachments as the Responses API's input content
//! (design §4.16), kept apart from the rest of the wire: the words as
//! `input_text`, an image as `input_image` with a `data:` URL, a PDF as
//! `input_file` (`filename`, `file_data`), a text file as `input_text`
//! (every server that speaks the API takes text; not all take files).

use serde_json::{Value, json};

use crate::provider::{Attachment, AttachmentKind};

/// The content of a user message with `attachments`: the words first.
pub(super) fn items(content: &str, attachments: &[Attachment]) -> Vec<Value> {
    let mut items = vec![json!({"type": "input_text", "text": content})];
    items.extend(attachments.iter().map(|a| match a.kind {
        AttachmentKind::Pdf => json!({"type": "input_file",
            "filename": a.file_name(), "file_data": a.data_url()}),
        AttachmentKind::Text => json!({"type": "input_text", "text": a.as_text_part()}),
        _ => json!({"type": "input_image", "image_url": a.data_url(), "detail": "auto"}),
    }));
    items
}
