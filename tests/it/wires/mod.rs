//! The wire details the vendors' types expect (issue 40): what a call's
//! tools show the model of axe's own temporary files (`temp_files.rs`).
//! What each wire is told of `parallel` is in delegation/fan_out.rs.

mod temp_files;
