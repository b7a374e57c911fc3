//! The walls of issue 31 (D28), one file per part, each test an attack
//! through the real binary that failed before its wall was built.

mod trust;
