//! Compiles the embedded second stage (`stub/main.rs`) for the bwrap
//! backend: a static, libc-free binary that dcjail carries inside itself
//! (`include_bytes!`) and runs from a sealed memfd. It is built with fixed
//! flags, whatever the profile: it has no std, so it must be panic=abort,
//! and it must not pick up flags meant for dcjail (a sanitizer, say).
//! Where it cannot run (not Linux, or an architecture the stub has no
//! system call table for) an empty file is written and dcjail re-executes
//! itself as the second stage instead.
use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=stub/main.rs");
    // The stub includes these files of dcjail's own (one source for both).
    for f in ["stub_format", "sys", "stage2", "denial_wire"] {
        println!("cargo:rerun-if-changed=src/inside/{f}.rs");
    }
    println!("cargo:rerun-if-changed=src/inside/broker");
    println!("cargo:rerun-if-changed=build.rs");
    // `dcjail_stub` is set only where the stub is compiled: the files it
    // shares with dcjail gate dcjail's half of a format with it (the stub
    // writes denial records and reads programs, dcjail the other way round).
    println!("cargo::rustc-check-cfg=cfg(dcjail_stub)");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default()).join("stage2-stub");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    if os != "linux" || !matches!(arch.as_str(), "x86_64" | "aarch64") {
        if let Err(e) = std::fs::write(&out, b"") {
            fail(&format!("cannot write {}: {e}", out.display()));
        }
        return;
    }
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let target = std::env::var("TARGET").unwrap_or_default();
    let mut cmd = Command::new(rustc);
    cmd.args([
        "--edition",
        "2021",
        "--crate-type",
        "bin",
        "--crate-name",
        "dcjail_stage2",
        "--target",
        &target,
        "-C",
        "opt-level=s",
        "-C",
        "panic=abort",
        "-C",
        "relocation-model=static",
        "-C",
        "target-feature=+crt-static",
        "-C",
        "link-arg=-nostartfiles",
        "-C",
        "link-arg=-nostdlib",
        "-C",
        "strip=symbols",
        "-C",
        "debuginfo=0",
        "-D",
        "warnings",
        "--cfg",
        "dcjail_stub",
        "-o",
    ])
    .arg(&out)
    .arg("stub/main.rs");
    // On musl, rustc links its own C start files by default; the stub
    // brings its own `_start` and needs none of them.
    if std::env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("musl") {
        cmd.args(["-C", "link-self-contained=no"]);
    }
    // A linker configured for this target (cross builds) links the stub too.
    if let Some(linker) = std::env::var_os("RUSTC_LINKER") {
        cmd.arg("-C").arg({
            let mut a = std::ffi::OsString::from("linker=");
            a.push(linker);
            a
        });
    }
    // rustc's temporaries go next to the output, not into the source tree.
    if let Some(dir) = out.parent() {
        cmd.current_dir(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
        cmd.env("TMPDIR", dir);
    }
    match cmd.status() {
        Ok(s) if s.success() => {}
        Ok(s) => fail(&format!("compiling stub/main.rs failed ({s})")),
        Err(e) => fail(&format!("cannot run rustc for stub/main.rs: {e}")),
    }
}

fn fail(msg: &str) -> ! {
    eprintln!("dcjail build: {msg}");
    std::process::exit(1)
}
