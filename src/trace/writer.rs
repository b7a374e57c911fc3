//! Where `--trace` lines go (design §7.2), each written whole. A regular
//! file is appended to on the caller's thread (through stdout's or
//! stderr's own descriptor when it is their file), and a write cut short is
//! cut back. A pipe, a terminal or another character device (`--trace
//! /dev/stdout | jq`, `--trace >(jq ...)`, `--trace /dev/stderr`) is
//! written through a [`Queue`] of its own, as stderr is, so that a reader
//! that stalls never holds the run. A directory, a socket or a block device
//! is refused, and so is a FIFO that no process opens for reading within a
//! short wait. A regular file may lie where an agent writes: it is opened
//! by name with no link followed (design §8.7), except under `/dev` and
//! `/proc`, whose links (`/dev/stdout`) lead to axe's own descriptors.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::io::queue::{Dest, Piece, Queue};
use crate::sandbox::beneath::{Anchored, Base};

/// The longest opening a FIFO waits for a process to open it for reading
/// (a reader started just before axe, `cat fifo & axe run ...`).
pub const READER_PATIENCE: Duration = Duration::from_secs(2);

/// An open trace.
pub struct Trace {
    sink: Sink,
    /// Set after a write to a file failed: tracing stops, the run goes on.
    broken: AtomicBool,
    /// The trace goes to a terminal.
    terminal: bool,
}

enum Sink {
    File(Mutex<TraceFile>),
    /// A pipe or character device, written by the queue's thread. The
    /// queue lives as long as the process, as its thread does.
    Stream(&'static Queue),
}

struct TraceFile {
    file: File,
    /// The file ended in part of a line (a run killed mid-write, another
    /// program): this run's first line starts on a line of its own.
    needs_newline: bool,
}

impl std::fmt::Debug for Trace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.sink {
            Sink::File(_) => "file",
            Sink::Stream(_) => "stream",
        };
        f.debug_struct("Trace").field("sink", &kind).finish()
    }
}

impl Trace {
    /// Opens `path`: a regular file is appended to (created 0600 when
    /// missing), a pipe or character device written to; for a FIFO with
    /// no reader, a reader is waited for at most `patience`. Nothing here
    /// blocks, whatever appears at `path` meanwhile.
    pub fn open(path: &Path, patience: Duration) -> io::Result<Trace> {
        let mut terminal = false;
        let sink = match std::fs::metadata(path) {
            Ok(m) if m.is_file() => open_file(path)?,
            Ok(m) => match refused(&m) {
                Some(what) => return Err(io::Error::other(what)),
                None => open_stream(path, patience, &mut terminal)?,
            },
            Err(e) if e.kind() == io::ErrorKind::NotFound => open_file(path)?,
            Err(e) => return Err(e),
        };
        Ok(Trace {
            sink,
            broken: AtomicBool::new(false),
            terminal,
        })
    }

    /// Whether the trace goes to a terminal (where the live progress view
    /// would draw over its lines).
    pub fn on_terminal(&self) -> bool {
        self.terminal
    }

    /// Whether lines still go anywhere (no write has failed).
    pub fn working(&self) -> bool {
        match self.sink {
            Sink::File(_) => !self.broken.load(Ordering::Relaxed),
            Sink::Stream(queue) => !queue.failed(),
        }
    }

    /// Writes `line` (ending in a newline) whole, or not at all: to a file
    /// at once, to a stream through its queue (dropped, and counted, when
    /// the queue is full). A failed write stops the trace with one warning.
    pub fn write(&self, mut line: String) {
        let file = match &self.sink {
            Sink::Stream(queue) => return queue.push(Piece::Lines(line), true),
            Sink::File(file) => file,
        };
        if self.broken.load(Ordering::Relaxed) {
            return;
        }
        let mut file = file.lock().unwrap_or_else(PoisonError::into_inner);
        if file.needs_newline {
            line.insert(0, '\n');
        }
        if let Err(e) = write_whole(&mut file.file, line.as_bytes()) {
            self.broken.store(true, Ordering::Relaxed);
            crate::io::stderr::warn(&format!("cannot write the trace ({e}); tracing stopped"));
        } else {
            file.needs_newline = false;
        }
    }

    /// Waits until every line queued for a stream is written, or until the
    /// stream has taken nothing for a second (then says the rest is lost).
    /// A file's lines are written already.
    pub fn flush(&self) {
        if let Sink::Stream(queue) = self.sink
            && !queue.flush(crate::io::stderr::PATIENCE)
            && !queue.failed()
        {
            crate::io::stderr::warn(
                "the trace was not being read; its last lines were not written",
            );
        }
    }
}

/// Why a file of this type is no place for a trace; None for a pipe or a
/// character device.
#[cfg(unix)]
fn refused(meta: &Metadata) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_fifo() || t.is_char_device() {
        None
    } else if t.is_dir() {
        Some("is a directory")
    } else if t.is_socket() {
        Some("is a socket")
    } else if t.is_block_device() {
        Some("is a block device")
    } else {
        Some("not a regular file, a pipe or a character device")
    }
}

#[cfg(not(unix))]
fn refused(_: &Metadata) -> Option<&'static str> {
    Some("not a regular file")
}

/// A regular file, opened to append (created 0600), never blocking in
/// open whatever appeared at `path` meanwhile.
fn open_file(path: &Path) -> io::Result<Sink> {
    let file = if path.starts_with("/dev") || path.starts_with("/proc") {
        let mut o = OpenOptions::new();
        o.read(true).append(true).create(true);
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600).custom_flags(libc::O_NONBLOCK);
        o.open(path)?
    } else {
        let written = path.to_string_lossy();
        let at = Anchored::new(Base::Cwd(Path::new(".")), &written)?;
        let (dir, name) = at.parent(false)?;
        crate::sandbox::write::open_append(&dir, &name, 0o600)?
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::other("changed while it was being opened"));
    }
    let needs_newline = match meta.len().checked_sub(1) {
        Some(last) => last_byte(&file, last)? != b'\n',
        None => false,
    };
    // `--trace /dev/stdout > run.log`: written through stdout's own
    // descriptor, the trace shares its offset with the answer, which would
    // otherwise be written over the trace's first lines.
    let file = std_stream_of(&meta).unwrap_or(file);
    Ok(Sink::File(Mutex::new(TraceFile {
        file,
        needs_newline,
    })))
}

/// A descriptor of stdout or stderr (in that order) when it is the file
/// `meta` describes.
#[cfg(unix)]
#[allow(clippy::disallowed_methods, reason = "compares descriptors only")]
fn std_stream_of(meta: &Metadata) -> Option<File> {
    use std::os::fd::AsFd;
    use std::os::unix::fs::MetadataExt;
    let (out, err) = (io::stdout(), io::stderr());
    [out.as_fd(), err.as_fd()].into_iter().find_map(|fd| {
        let file = File::from(fd.try_clone_to_owned().ok()?);
        let m = file.metadata().ok()?;
        (m.dev() == meta.dev() && m.ino() == meta.ino()).then_some(file)
    })
}

#[cfg(not(unix))]
fn std_stream_of(_: &Metadata) -> Option<File> {
    None
}

/// A pipe or character device, opened to write, with its queue;
/// `terminal` is set when it is one.
#[cfg(unix)]
fn open_stream(path: &Path, patience: Duration, terminal: &mut bool) -> io::Result<Sink> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let mut o = OpenOptions::new();
    // Write-only: a FIFO opened to read too would be its own reader.
    // O_NOCTTY: a terminal never becomes the controlling one.
    o.write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    let started = Instant::now();
    let file = loop {
        match o.open(path) {
            Ok(file) => break file,
            // A FIFO nobody has open for reading (yet).
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                let left = patience.saturating_sub(started.elapsed());
                if left.is_zero() {
                    return Err(io::Error::other(format!(
                        "no process is reading the FIFO (waited {:.1}s)",
                        patience.as_secs_f64()
                    )));
                }
                std::thread::sleep(left.min(Duration::from_millis(20)));
            }
            Err(e) => return Err(e),
        }
    };
    let t = file.metadata()?.file_type();
    if !(t.is_fifo() || t.is_char_device()) {
        return Err(io::Error::other("changed while it was being opened"));
    }
    // Writes may block from now on: they are made on the queue's thread,
    // and a full pipe waits for its reader instead of failing.
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor this function owns, reading and
    // setting its status flags.
    let cleared = unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) == 0
    };
    if !cleared {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: isatty only asks about a descriptor this function owns.
    *terminal = unsafe { libc::isatty(fd) } == 1;
    let queue = Box::leak(Box::new(Queue::new(
        Dest::Trace(file, crate::io::stderr::warn),
        "axe-trace",
    )));
    Ok(Sink::Stream(queue))
}

#[cfg(not(unix))]
fn open_stream(_: &Path, _: Duration, _: &mut bool) -> io::Result<Sink> {
    Err(io::Error::other("not a regular file"))
}

/// Appends `line` to `file` whole or not at all: a write cut short (a full
/// disk) is undone by cutting the file back to where it was, so the trace
/// never ends in half a line (and stdout's offset, when the file is
/// stdout's, goes back with it).
fn write_whole(file: &mut File, line: &[u8]) -> io::Result<()> {
    use std::io::{Seek, SeekFrom};
    let before = file.metadata()?.len();
    file.write_all(line).inspect_err(|_| {
        let _ = file.set_len(before);
        let _ = file.seek(SeekFrom::Start(before));
    })
}

/// The byte at `offset` of `file`.
fn last_byte(file: &File, offset: u64) -> io::Result<u8> {
    let mut byte = [0u8; 1];
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.read_exact_at(&mut byte, offset)?;
    }
    #[cfg(not(unix))]
    let _ = (file, offset);
    Ok(byte[0])
}
