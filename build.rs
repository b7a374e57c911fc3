//! The link of the `axe` binary in release builds: stripped, and the code a
//! single run executes placed together at the start of the text, in the
//! order of `scripts/single_run.order` (issue 34; docs/contributing.md,
//! Performance, has the figures). The kernel
//! maps a program's code in blocks around each page it faults in; with that
//! code spread over the whole binary, a run that executes 600 KiB of it had
//! 3 MiB of text mapped, and counted in its memory.
//!
//! The order needs LLVM's linker: rustc's own `rust-lld` is the default for
//! x86_64 Linux with glibc since Rust 1.90, and the static (musl) build is
//! linked with it here too (GNU ld, the musl target's default, has no such
//! option before binutils 2.43). Both links reach it through a small script
//! of ours that first matches the file's names to this build's, whose
//! hashes change with the target, the dependencies and the profile
//! ([`order_wrapper`]). A symbol the file names that the build does not
//! have is passed over, so a stale file costs memory, never a build. The strip is the
//! linker's (`--strip-all`) rather than cargo's, whose setting would change
//! every symbol name (Cargo.toml); `AXE_KEEP_SYMBOLS=1` keeps them, for
//! `--profile sizes`.

use std::path::PathBuf;

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
    let target = env("TARGET");
    let lld = match target.as_str() {
        // rustc links with its own lld here, but gives gcc its `-B` first,
        // so that ours is reached only by a name it has no file for (gcc
        // 12's `-fuse-ld=mold`); with an older gcc the file's names are
        // matched as they are written.
        "x86_64-unknown-linux-gnu" => {
            if !chosen && gcc_at_least_12() {
                wrapped_lld("mold");
            }
            true
        }
        t if t.ends_with("-linux-musl") && !chosen => wrapped_lld("lld"),
        _ => false,
    };
    let wanted = env("AXE_NO_LINK_ORDER").is_empty();
    if lld && !chosen && wanted && std::path::Path::new(&dir).join(order).is_file() {
        println!("cargo:rustc-link-arg-bin=axe=-Wl,--symbol-ordering-file={dir}/{order}");
        println!("cargo:rustc-link-arg-bin=axe=-Wl,--no-warn-symbol-ordering");
    }
}

/// Links with the toolchain's lld through [`order_wrapper`], written as
/// `ld.<name>` for gcc's `-fuse-ld=<name>`; false (the default linker
/// links, without the order) where the toolchain has no lld.
fn wrapped_lld(name: &str) -> bool {
    let Some(real) = lld_wrapper() else {
        return false;
    };
    let dir = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_default()).join("lld");
    let path = dir.join(format!("ld.{name}"));
    if let Err(e) = std::fs::create_dir_all(&dir).and_then(|()| order_wrapper(&path, &real)) {
        println!("cargo:warning=the link order's wrapper: {e}");
        return false;
    }
    println!("cargo:rustc-link-arg-bin=axe=-B{}", dir.display());
    println!("cargo:rustc-link-arg-bin=axe=-fuse-ld={name}");
    true
}

/// Whether the C compiler that links (`cc`) is gcc 12 or later, which
/// knows `-fuse-ld=mold`.
fn gcc_at_least_12() -> bool {
    let out = std::process::Command::new("cc")
        .arg("-dumpfullversion")
        .output();
    let version = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
    let major = version
        .unwrap_or_default()
        .split('.')
        .next()
        .map(str::trim)
        .map(str::to_string);
    major
        .and_then(|m| m.parse::<u32>().ok())
        .is_some_and(|m| m >= 12)
}

/// The toolchain's `gcc-ld/ld.lld`, which runs the `rust-lld` beside it
/// (rustup's `rustc` component ships both for a Linux host), or None where
/// this toolchain has none.
fn lld_wrapper() -> Option<PathBuf> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = std::process::Command::new(rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()?;
    let sysroot = String::from_utf8(out.stdout).ok()?;
    let host = std::env::var("HOST").ok()?;
    let dir = PathBuf::from(sysroot.trim())
        .join("lib/rustlib")
        .join(host)
        .join("bin/gcc-ld");
    let real = dir.join("ld.lld");
    real.is_file().then_some(real)
}

/// Writes `path`, which the link runs as its linker: it names the order
/// file's functions by the names this build gave them, then runs `real`. A
/// function's symbol carries a hash of its crate's build, which cargo makes
/// anew for another target, dependency or profile, so that the file as
/// written names none of axe's own functions after such a change; with the
/// hash taken off (`17h<16 hex>E` of the legacy mangling, a crate's `Cs..._`
/// of v0) each of its names is matched to those the link's objects define
/// (`nm`). Without `nm`, the file is passed as it is.
fn order_wrapper(path: &std::path::Path, real: &std::path::Path) -> std::io::Result<()> {
    let script = format!(
        r#"#!/bin/sh
# Written by axe's build.rs: the link order for this build's symbol names.
real='{real}'
order=
for a; do case $a in --symbol-ordering-file=*) order=${{a#*=}} ;; esac; done
if [ -z "$order" ] || ! command -v nm >/dev/null 2>&1; then exec "$real" "$@"; fi
tmp=$(mktemp) || exec "$real" "$@"
for a; do case $a in *.o) nm --defined-only "$a" 2>/dev/null ;; esac; done >"$tmp.nm"
if [ ! -s "$tmp.nm" ]; then rm -f "$tmp" "$tmp.nm"; exec "$real" "$@"; fi
awk '
function key(s) {{
    if (match(s, /17h[0-9a-f]+E$/) && RLENGTH == 20) return substr(s, 1, RSTART - 1)
    gsub(/Cs[0-9A-Za-z]+_/, "C", s)
    return s
}}
NR == FNR {{ if (NF == 3) {{ have[$3] = 1; k = key($3); names[k] = names[k] " " $3 }}; next }}
{{
    # A name as written where the build has it, else every one with its
    # key: all the instantiations of a generic function share one (placing
    # them all measured better than placing none: 3.23 against 4.04 MiB).
    k = key($1)
    if ($1 in have || !(k in names)) n = split($1, found, " ")
    else n = split(names[k], found, " ")
    for (i = 1; i <= n; i++) if (!seen[found[i]]++) print found[i]
}}' "$tmp.nm" "$order" >"$tmp"
rm -f "$tmp.nm"
for a; do
    shift
    case $a in --symbol-ordering-file=*) a=--symbol-ordering-file=$tmp ;; esac
    set -- "$@" "$a"
done
"$real" "$@"
status=$?
rm -f "$tmp"
exit $status
"#,
        real = real.display()
    );
    std::fs::write(path, script)?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
}
