//! `agents_md = true` (design §2.7): the `AGENTS.md` files from the
//! repository's root (the first directory up from the workdir that holds
//! `.git`; outside a repository the workdir alone) down to the workdir,
//! read as context files ahead of the globbed ones, the root's first and
//! the workdir's last, each shown by its path relative to the workdir. A
//! repository is where agents write, so each is read beneath the root by
//! descriptor with no link followed and the context files' size cap
//! (design §8.7), as `files` reads the globbed ones.

use std::path::Path;

use super::{ContextFile, Skipped, why_unread};
use crate::sandbox::Opened;
use crate::sandbox::beneath::Follow;
use crate::sandbox::read::{self, Unreadable};

/// The file's name, in every directory walked.
pub const NAME: &str = "AGENTS.md";

/// The `AGENTS.md` files above and in `workdir`, in order, and those found
/// but not read (binary, too large, a link) with why. A directory without
/// one is passed over in silence.
pub fn collect(workdir: &Opened, max_file_bytes: u64) -> (Vec<ContextFile>, Vec<Skipped>) {
    let (mut files, mut skipped) = (Vec::new(), Vec::new());
    // Where the kernel finds the workdir, no link in it: the walk up is
    // by name, and a link would lead it into another tree.
    let Some(real) = workdir.real_path() else {
        return (files, skipped);
    };
    let root = real
        .ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(&real);
    let Ok(opened) = Opened::own(root) else {
        return (files, skipped);
    };
    let Ok(beneath) = opened.root(Follow::Nothing) else {
        return (files, skipped);
    };
    let mut dirs: Vec<&Path> = real.ancestors().take_while(|d| *d != root).collect();
    dirs.push(root);
    let depth = dirs.len() - 1;
    for (up, dir) in dirs.iter().enumerate().rev() {
        let rel = dir.strip_prefix(root).unwrap_or(Path::new(""));
        let name = rel.join(NAME);
        let Some(name) = name.to_str() else { continue };
        let shown = format!("{}{NAME}", "../".repeat(up.min(depth)));
        let reason = match read::text_in(&beneath, name, max_file_bytes) {
            Ok(Some(content)) => {
                files.push(ContextFile {
                    path: shown,
                    content,
                });
                continue;
            }
            Err(Unreadable::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Ok(None) => "binary".to_string(),
            Err(Unreadable::Io(e)) => format!("unreadable: {e}"),
            Err(e) => why_unread(&e),
        };
        skipped.push(Skipped {
            path: shown,
            reason,
        });
    }
    (files, skipped)
}
