//! The walls of issue 31, one file per part: each test makes an escape
//! attempt through the binary and checks that the kernel refused it.

mod net;
