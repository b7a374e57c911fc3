//! Servers of the tests' own written in Python (hostile MCP servers, odd
//! event streams): started with their arguments, the port each prints as
//! its first line on stdout read back, killed and reaped when dropped.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// A `python3` server listening on a loopback port; killed on drop.
pub struct PyServer {
    child: Child,
    /// The port it printed.
    pub port: u16,
}

impl PyServer {
    /// Runs `python3 args...` and waits for the port on its first line.
    pub fn start<I, S>(args: I) -> PyServer
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut child = Command::new("python3")
            .args(args)
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().expect("the port");
        PyServer { child, port }
    }
}

impl Drop for PyServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
