//! A batch's inputs, read one at a time as workers ask for them (design
//! §11.1): the lines of `--each FILE` (`-`: stdin), plain text or JSON
//! Lines (told by the first line that is not blank), or the files
//! `--each-file GLOB` matches. What each input gives a run: its variables,
//! its user message, what its output line says about it, and the key that
//! `--resume` knows it by.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::shard::Shard;
use crate::error::Error;
use crate::resolve::template::{Template, Vars};
use crate::sandbox::beneath::{Anchored, Base, Root};
use crate::sandbox::read::Unreadable;

/// The most bytes of one input: a line, or a file (stdin's own limit).
pub const MAX_INPUT_BYTES: u64 = crate::io::stdin::MAX_BYTES;

/// One input, in the order read.
#[derive(Debug, Clone)]
pub struct Input {
    /// Its place in the batch (in its share, with `--shard`), from 0.
    pub seq: u64,
    /// Its line in the file, from 1; for `--each-file`, its place in the
    /// sorted list of files, from 1.
    pub line: u64,
    pub body: Body,
}

/// What an input is.
#[derive(Debug, Clone)]
pub enum Body {
    /// A line of a text file.
    Text(String),
    /// A line of a JSON Lines file: an object.
    Json(Map<String, Value>),
    /// A file `--each-file` matched: its path as the glob spells it
    /// (relative to the current directory), read beneath `root`.
    File { shown: String, root: Arc<Root> },
    /// A line that could not be taken: why (that input's failure, exit 2).
    Bad { text: String, why: String },
}

/// Where the inputs come from.
pub enum Source {
    Lines(Lines),
    /// The names `--each-file` matched, beneath the current directory.
    Files {
        root: Arc<Root>,
        names: std::vec::IntoIter<String>,
    },
}

/// The lines of `--each`, read as asked for.
pub struct Lines {
    reader: Box<dyn BufRead + Send>,
    /// Decided by the first line that is not blank.
    json: Option<bool>,
    line: u64,
}

/// The inputs of a source in a share (`--shard`), numbered.
pub struct Inputs {
    source: Source,
    shard: Option<Shard>,
    seq: u64,
    /// The files taken from `Source::Files`, in or out of the share.
    files: u64,
}

impl Lines {
    /// The lines of `path` (relative to the current directory `cwd`), or
    /// of stdin for `-`, and how many inputs a file holds (its lines that
    /// are not blank, for the progress line). A file is opened once, as a
    /// regular file, by name with no link followed (design §8.7): it may
    /// lie where an agent writes.
    pub fn open(
        path: &str,
        cwd: &Path,
        shard: Option<Shard>,
    ) -> Result<(Lines, Option<u64>), Error> {
        #[allow(clippy::disallowed_methods, reason = "`--each -` (design §11.1)")]
        let (reader, total): (Box<dyn BufRead + Send>, _) = if path == "-" {
            (Box::new(BufReader::new(std::io::stdin())), None)
        } else {
            let cannot = |e: &dyn std::fmt::Display| {
                Error::general(format!("cannot read --each {path}: {e}"))
            };
            let at = Anchored::new(Base::Cwd(cwd), path).map_err(|e| cannot(&e))?;
            let (root, rest) = at.parts();
            let (mut file, _) =
                crate::sandbox::read::open_in(root, rest).map_err(|e| cannot(&e))?;
            let total = match shard {
                None => count(&mut file),
                Some(shard) => count_kept(&file, shard),
            };
            file.seek(SeekFrom::Start(0)).map_err(|e| cannot(&e))?;
            (Box::new(BufReader::with_capacity(64 * 1024, file)), total)
        };
        let lines = Lines {
            reader,
            json: None,
            line: 0,
        };
        Ok((lines, total))
    }

    /// The next input that is not a blank line, with its line number.
    fn next_input(&mut self) -> Option<(u64, Body)> {
        loop {
            let text = match read_line(&mut self.reader, MAX_INPUT_BYTES) {
                Ok(Some(t)) => t,
                Ok(None) => return None,
                Err(why) => {
                    self.line += 1;
                    return Some((
                        self.line,
                        Body::Bad {
                            text: String::new(),
                            why,
                        },
                    ));
                }
            };
            self.line += 1;
            let text = text.strip_suffix('\r').unwrap_or(&text);
            if text.trim().is_empty() {
                continue;
            }
            let json = *self
                .json
                .get_or_insert_with(|| serde_json::from_str::<Map<String, Value>>(text).is_ok());
            let body = if !json {
                Body::Text(text.to_string())
            } else {
                match serde_json::from_str::<Map<String, Value>>(text) {
                    Ok(o) => Body::Json(o),
                    Err(e) => Body::Bad {
                        text: text.to_string(),
                        why: format!("line {} is not a JSON object: {e}", self.line),
                    },
                }
            };
            return Some((self.line, body));
        }
    }
}

impl Inputs {
    /// The inputs of `source`, only those of `shard` when there is one.
    pub fn new(source: Source, shard: Option<Shard>) -> Inputs {
        Inputs {
            source,
            shard,
            seq: 0,
            files: 0,
        }
    }
}

impl Iterator for Inputs {
    type Item = Input;

    fn next(&mut self) -> Option<Input> {
        loop {
            let (line, body) = match &mut self.source {
                Source::Lines(lines) => lines.next_input()?,
                Source::Files { root, names } => {
                    let shown = names.next()?;
                    self.files += 1;
                    let root = root.clone();
                    (self.files, Body::File { shown, root })
                }
            };
            let input = Input {
                seq: self.seq,
                line,
                body,
            };
            if self.shard.is_some_and(|s| !s.keeps(&input)) {
                continue;
            }
            self.seq += 1;
            return Some(input);
        }
    }
}

/// One line without its `\n`, read in pieces so that a line longer than
/// `cap` bytes is never held: it is read past and reported. None at the end.
fn read_line(r: &mut dyn BufRead, cap: u64) -> Result<Option<String>, String> {
    let mut line = Vec::new();
    let mut too_long = false;
    let mut any = false;
    loop {
        let buf = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("cannot read the inputs: {e}")),
        };
        if buf.is_empty() {
            break;
        }
        any = true;
        let (piece, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if !too_long {
            if (line.len() + piece.len()) as u64 > cap {
                too_long = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(piece);
            }
        }
        let used = done.unwrap_or(buf.len());
        r.consume(used);
        if done.is_some() {
            break;
        }
    }
    if !any {
        return Ok(None);
    }
    if too_long {
        return Err(format!("an input line is longer than {cap} bytes"));
    }
    Ok(Some(String::from_utf8_lossy(&line).into_owned()))
}

impl Input {
    /// The variables this input gives templates: `input` (the line, or the
    /// file's text), `line`, and a JSON object's fields (a string as it is,
    /// another value as its JSON text), or `path` for a file.
    pub fn vars<'a>(
        &self,
        global: &'a BTreeMap<String, String>,
        file_text: Option<&str>,
    ) -> Vars<'a> {
        let mut own = vec![("line".to_string(), self.line.to_string())];
        match &self.body {
            Body::Text(t) => own.push(("input".into(), t.clone())),
            Body::Json(o) => {
                for (k, v) in o {
                    own.push((k.clone(), value_text(v)));
                }
                own.push(("input".into(), Value::Object(o.clone()).to_string()));
            }
            Body::File { shown, .. } => {
                own.push(("path".into(), shown.clone()));
                own.push(("input".into(), file_text.unwrap_or_default().to_string()));
            }
            Body::Bad { .. } => {}
        }
        Vars {
            global: Some(global),
            own,
        }
    }

    /// The user message: `--prompt` filled, else the line, the file's
    /// text, or a JSON object's field `prompt_field`.
    pub fn message(
        &self,
        prompt: Option<&Template>,
        vars: &Vars,
        prompt_field: &str,
        file_text: Option<String>,
    ) -> Result<String, Error> {
        if let Some(t) = prompt {
            return t.fill(vars, "--prompt");
        }
        match &self.body {
            Body::Text(t) => Ok(t.clone()),
            Body::File { .. } => Ok(file_text.unwrap_or_default()),
            Body::Json(o) => o.get(prompt_field).map(value_text).ok_or_else(|| {
                Error::config(format!(
                    "line {} has no field {prompt_field:?} for the prompt (name one with \
                     --prompt-field, or give --prompt)",
                    self.line
                ))
            }),
            Body::Bad { why, .. } => Err(Error::config(why.clone())),
        }
    }

    /// The JSON object's `id`, as text.
    pub fn id(&self) -> Option<String> {
        match &self.body {
            Body::Json(o) => o.get("id").map(value_text),
            _ => None,
        }
    }

    /// What `--resume` knows this input by (design §11.4): its `id`, else
    /// its file's path, else its text (a JSON object's, as its JSON).
    pub fn key(&self) -> u64 {
        if let Some(id) = self.id() {
            return hash_key("id", &id);
        }
        match &self.body {
            Body::Text(t) => hash_key("input", t),
            Body::Json(o) => hash_key("input", &Value::Object(o.clone()).to_string()),
            Body::File { shown, .. } => hash_key("path", shown),
            Body::Bad { text, .. } => hash_key("input", text),
        }
    }
}

/// A key as the set of finished inputs holds it: 8 bytes, whatever the
/// input's size.
pub fn hash_key(kind: &str, text: &str) -> u64 {
    let mut h = DefaultHasher::new();
    kind.hash(&mut h);
    text.hash(&mut h);
    h.finish()
}

/// A string as it is; any other value as its JSON text.
fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A file `--each-file` matched, read when its turn comes: beneath `root`
/// with no link followed (an input before it may have swapped one in:
/// design §8.7), a regular file only (a FIFO a glob matched would block
/// the open for ever), at most [`MAX_INPUT_BYTES`].
pub fn read_file(root: &Root, shown: &str) -> Result<String, Error> {
    match crate::sandbox::read::bytes_in(root, shown, MAX_INPUT_BYTES) {
        Ok(bytes) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
        Err(Unreadable::TooLarge { .. }) => Err(Error::config(format!(
            "{shown} is larger than {MAX_INPUT_BYTES} bytes"
        ))),
        Err(e) => Err(Error::config(format!("cannot read {shown}: {e}"))),
    }
}

/// How many inputs of an open file are in `shard`: its lines read as
/// inputs through a second handle (the caller goes back to the start).
fn count_kept(file: &std::fs::File, shard: Shard) -> Option<u64> {
    let lines = Lines {
        reader: Box::new(BufReader::with_capacity(64 * 1024, file.try_clone().ok()?)),
        json: None,
        line: 0,
    };
    Some(Inputs::new(Source::Lines(lines), Some(shard)).count() as u64)
}

/// How many inputs an open file holds (its lines that are not blank), for
/// the progress line; None when it cannot be read. Reads it to its end.
fn count(file: &mut std::fs::File) -> Option<u64> {
    let mut r = BufReader::with_capacity(64 * 1024, file);
    let mut n = 0u64;
    let mut blank = true;
    loop {
        let buf = r.fill_buf().ok()?;
        if buf.is_empty() {
            break;
        }
        for &b in buf {
            match b {
                b'\n' => {
                    n += u64::from(!blank);
                    blank = true;
                }
                b' ' | b'\t' | b'\r' => {}
                _ => blank = false,
            }
        }
        let len = buf.len();
        r.consume(len);
    }
    Some(n + u64::from(!blank))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &'static str) -> Vec<Input> {
        let src = Lines {
            reader: Box::new(std::io::Cursor::new(text.as_bytes())),
            json: None,
            line: 0,
        };
        Inputs::new(Source::Lines(src), None).collect()
    }

    #[test]
    fn blank_lines_are_skipped_but_counted() {
        let got = lines("a\n\n  \nb\r\nc");
        let texts: Vec<_> = got
            .iter()
            .map(|i| match &i.body {
                Body::Text(t) => (i.seq, i.line, t.clone()),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            texts,
            [(0, 1, "a".into()), (1, 4, "b".into()), (2, 5, "c".into())]
        );
    }

    #[test]
    fn a_first_json_object_makes_every_line_json() {
        let got = lines("{\"id\":7,\"q\":\"x\"}\nnot json\n");
        assert!(matches!(got[0].body, Body::Json(_)));
        assert_eq!(got[0].id().as_deref(), Some("7"));
        assert!(matches!(&got[1].body, Body::Bad { why, .. } if why.starts_with("line 2 is not")));
    }

    #[test]
    fn a_line_over_the_cap_is_read_past() {
        let mut r = std::io::Cursor::new(b"0123456789\nok\n".to_vec());
        assert!(read_line(&mut r, 5).is_err());
        assert_eq!(read_line(&mut r, 5), Ok(Some("ok".into())));
        assert_eq!(read_line(&mut r, 5), Ok(None));
    }
}
