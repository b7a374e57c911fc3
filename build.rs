//! The link of the `axe` binary in release builds: stripped, and the code a
//! single run executes placed together at the start of the text, in the
//! order of `scripts/single_run.order` (issue 34; docs/contributing.md,
//! Performance, has the figures). The kernel
//! maps a program's code in blocks around each page it faults in; with that
//! code spread over the whole binary, a run that executes 600 KiB of it had
//! 3 MiB of text mapped, and counted in its memory.
//!
//! The order only where the linker is LLVM's (rustc's own `rust-lld`, the
//! default for x86_64 Linux with glibc since Rust 1.90): GNU ld, which the
//! musl target links with here, has no such option before binutils 2.43. A
//! symbol the file names that the build does not have is passed over, so a
//! stale file costs memory, never a build. The strip is the linker's
//! (`--strip-all`) rather than cargo's, whose setting would change every
//! symbol name (Cargo.toml); `AXE_KEEP_SYMBOLS=1` keeps them, for
//! `--profile sizes`.

fn main() {
    let order = "scripts/single_run.order";
    println!("cargo:rerun-if-changed={order}");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=AXE_KEEP_SYMBOLS");
    println!("cargo:rerun-if-env-changed=AXE_NO_LINK_ORDER");
    let env = |name: &str| std::env::var(name).unwrap_or_default();
    if env("PROFILE") != "release" {
        return;
    }
    if env("AXE_KEEP_SYMBOLS").is_empty() {
        println!("cargo:rustc-link-arg-bin=axe=-Wl,--strip-all");
    }
    // The static build's relative relocations packed (DT_RELR, which
    // musl's start-up code applies): a static-pie binary otherwise carries
    // one 24-byte entry for each of its ~8,000 pointers.
    if env("TARGET").ends_with("-linux-musl") {
        println!("cargo:rustc-link-arg-bin=axe=-Wl,-z,pack-relative-relocs");
    }
    let dir = env("CARGO_MANIFEST_DIR");
    // A linker the builder chose (`-C linker=`, `-fuse-ld=`) may not take
    // the order (GNU ld before 2.43): then, as with AXE_NO_LINK_ORDER=1, the
    // link is cargo's plain one and only a run's memory is larger.
    let flags = env("CARGO_ENCODED_RUSTFLAGS");
    let chosen = flags.contains("linker") || flags.contains("fuse-ld");
    let lld = env("TARGET") == "x86_64-unknown-linux-gnu" && !chosen;
    let wanted = env("AXE_NO_LINK_ORDER").is_empty();
    if lld && wanted && std::path::Path::new(&dir).join(order).is_file() {
        println!("cargo:rustc-link-arg-bin=axe=-Wl,--symbol-ordering-file={dir}/{order}");
        println!("cargo:rustc-link-arg-bin=axe=-Wl,--no-warn-symbol-ordering");
    }
}
