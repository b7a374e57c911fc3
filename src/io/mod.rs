//! The process's own input and output: stdin read within the deadline
//! (`stdin`), the streamed answer on stdout (`stdout`), the one writer of
//! stderr (`stderr`), the bounded queue both are written through
//! (`queue`), and the signals that end a run the way a failure does
//! (`interrupt`). Below everything else: none of it knows a run, an agent
//! or the sandbox (whose sweep of leftover processes an ending signal runs
//! is handed to `interrupt`, not called by name).

pub(crate) mod interrupt;
pub(crate) mod queue;
pub mod stderr;
pub(crate) mod stdin;
pub(crate) mod stdout;
