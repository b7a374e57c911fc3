//! An agent's attachments read (design §4.16): its file's `attach`
//! beneath the workdir, then `axe run -a` against the current directory,
//! each through the one reader of untrusted paths with no link followed
//! (design §8.7: an agent may have planted one in the workdir), bounded
//! per file and in all before a byte is read, its kind told by its
//! content, and refused when the agent's wire cannot carry that kind.

use std::path::Path;

use crate::error::Error;
use crate::provider::attachment::{KINDS, MAX_ATTACHMENT_BYTES, MAX_ATTACHMENTS_BYTES};
use crate::provider::{Attachment, ModelRef};
use crate::sandbox::Opened;
use crate::sandbox::beneath::{Anchored, Base, Follow, Root};
use crate::sandbox::read::{self, Unreadable};

/// The files of `in_workdir` (beneath `workdir`) and of `in_cwd` (against
/// `cwd`), in that order, read; any that cannot be is a config error
/// (exit 2), said in one line, before any request.
pub fn read_all(
    workdir: &Opened,
    in_workdir: &[String],
    cwd: &Path,
    in_cwd: &[String],
    model: &ModelRef,
) -> Result<Vec<Attachment>, Error> {
    if in_workdir.is_empty() && in_cwd.is_empty() {
        return Ok(Vec::new());
    }
    let mut out = Vec::with_capacity(in_workdir.len() + in_cwd.len());
    let mut total = 0u64;
    if !in_workdir.is_empty() {
        let root = workdir.root(Follow::Nothing).map_err(|e| {
            Error::config(format!(
                "cannot open workdir {}: {e}",
                workdir.path().display()
            ))
        })?;
        for name in in_workdir {
            out.push(one(&root, name, name, &mut total)?);
        }
    }
    for written in in_cwd {
        let at = Anchored::new(Base::Cwd(cwd), written)
            .map_err(|e| refused(written, &Unreadable::Io(e).to_string()))?;
        let (root, rest) = at.parts();
        out.push(one(root, rest, written, &mut total)?);
    }
    refused_by_wire(&out, model)?;
    Ok(out)
}

/// The first of `attachments` that `model`'s wire cannot carry, as the
/// error that refuses the run (`axe serve`'s image parts too).
pub fn refused_by_wire(attachments: &[Attachment], model: &ModelRef) -> Result<(), Error> {
    let format = model.wire.format();
    for a in attachments {
        if let Some(why) = format.refuses_attachment(a.kind) {
            return Err(refused(
                &a.name,
                &format!("{} cannot go to {model}: {why}", a.kind.described()),
            ));
        }
    }
    Ok(())
}

/// `name` beneath `root` (shown as `shown`), within what `total` leaves.
fn one(root: &Root, name: &str, shown: &str, total: &mut u64) -> Result<Attachment, Error> {
    let left = MAX_ATTACHMENTS_BYTES - *total;
    let bytes = match read::bytes_in(root, name, MAX_ATTACHMENT_BYTES.min(left)) {
        Ok(b) => b,
        Err(Unreadable::TooLarge { size, .. }) if size > MAX_ATTACHMENT_BYTES => {
            return Err(refused(
                shown,
                &format!(
                    "{size} bytes, over the {} MiB one file may be",
                    MAX_ATTACHMENT_BYTES >> 20
                ),
            ));
        }
        Err(Unreadable::TooLarge { size, .. }) => {
            return Err(refused(
                shown,
                &format!(
                    "{size} bytes, which would take the attachments over the {} MiB they may be in all",
                    MAX_ATTACHMENTS_BYTES >> 20
                ),
            ));
        }
        Err(e) => return Err(refused(shown, &e.to_string())),
    };
    *total += bytes.len() as u64;
    Attachment::new(shown, bytes)
        .ok_or_else(|| refused(shown, &format!("not a {KINDS} file (by its content)")))
}

fn refused(shown: &str, why: &str) -> Error {
    Error::config(format!(
        "cannot attach {}: {why}",
        crate::text::one_line(shown)
    ))
}
