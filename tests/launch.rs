//! The launch path's shortcuts keep their promises: dcjail's own entry point
//! (no Rust runtime start-up) keeps a closed standard fd closed for the
//! command without letting a file of its own take the number, passes argv
//! byte-exact, and the child started with shared memory
//! (CLONE_VM | CLONE_VFORK) takes the sandbox layer with it, leaving the
//! supervisor unconfined and able to finish its work after the command.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

#[path = "support/scratch.rs"]
mod scratch;

use scratch::exe as bin;
/// Scratch space under the checkout's target/, not the system's /tmp.
use scratch::Dir as Tmp;

fn run(dir: &Path, args: &[&OsStr], close: &'static [i32]) -> Output {
    let mut c = Command::new(bin());
    c.args(args)
        .current_dir(dir)
        .env_remove("DCJAIL_POLICY")
        .stdin(Stdio::null());
    // SAFETY: only close(2) between fork and exec.
    unsafe {
        c.pre_exec(move || {
            for fd in close {
                libc::close(*fd);
            }
            Ok(())
        });
    }
    c.output().unwrap()
}

fn os(v: &[&'static str]) -> Vec<&'static OsStr> {
    v.iter().map(|s| OsStr::new(*s)).collect()
}

fn backends() -> Vec<Vec<&'static str>> {
    let mut v = vec![vec!["--no-sandbox"], vec!["--backend", "landlock"]];
    if Path::new("/usr/bin/bwrap").exists() {
        v.push(vec!["--backend", "bwrap"]);
    }
    v
}

#[test]
fn a_closed_stdin_stays_closed_for_the_command_not_a_file_dcjail_opened() {
    let t = Tmp::new("fds");
    for b in backends() {
        let mut args = os(&b);
        // The command reports what its fd 0 is on stdout: nothing at all.
        args.extend(os(&[
            "--",
            "sh",
            "-c",
            "readlink /proc/self/fd/0 2>/dev/null || echo closed",
        ]));
        let o = run(&t.0, &args, &[0]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{b:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(
            out.trim(),
            "closed",
            "{b:?}: fd 0 of the command is {out:?}"
        );
    }
}

#[test]
fn a_closed_stdout_stays_closed_for_the_command() {
    let t = Tmp::new("fd1");
    for b in backends() {
        let mut args = os(&b);
        // No shell: a shell's own redirection would move fd 1 around.
        args.extend(os(&[
            "--",
            "python3",
            "-c",
            "import os, sys\ntry:\n    sys.stderr.write(os.readlink('/proc/self/fd/1'))\nexcept OSError:\n    sys.stderr.write('closed')",
        ]));
        let o = run(&t.0, &args, &[1]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{b:?}: {err}");
        assert_eq!(
            err.trim(),
            "closed",
            "{b:?}: fd 1 of the command is {err:?}"
        );
    }
}

#[test]
fn argv_reaches_the_command_byte_exact_through_dcjails_entry_point() {
    let t = Tmp::new("argv");
    let odd: &[&[u8]] = &[b"", b"a b", b"\xff\xfe", b"line\nbreak", b"-x", b"--"];
    for b in backends() {
        let mut args = os(&b);
        args.extend(os(&[
            "--",
            "sh",
            "-c",
            "for a in \"$@\"; do printf '%s\\0' \"$a\"; done",
            "sh",
        ]));
        args.extend(odd.iter().map(|a| OsStr::from_bytes(a)));
        let o = run(&t.0, &args, &[]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{b:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let got: Vec<&[u8]> = o.stdout.split(|c| *c == 0).collect();
        assert_eq!(&got[..got.len() - 1], odd, "{b:?}");
    }
}

#[test]
fn the_layer_confines_the_command_only_the_supervisor_writes_the_report_after_it() {
    let t = Tmp::new("report");
    let report = t.0.join("report.json");
    let marker = t.0.join("marker");
    // Read-only sandbox: the command cannot write in the directory where the
    // supervisor writes the report once the command has exited.
    for b in [
        &["--backend", "landlock"][..],
        &["--backend", "landlock", "--timeout", "30"],
    ] {
        let _ = std::fs::remove_file(&report);
        let mut args = os(b);
        let rep = report.as_os_str();
        args.push(OsStr::new("--report"));
        args.push(rep);
        let touch = format!("touch {}", marker.display());
        let touch: &'static str = Box::leak(touch.into_boxed_str());
        args.extend(os(&["--", "sh", "-c", touch]));
        let o = run(&t.0, &args, &[]);
        assert_ne!(o.status.code(), Some(0), "{b:?}: the write was allowed");
        assert!(
            !marker.exists(),
            "{b:?}: the command wrote outside the sandbox"
        );
        let text = std::fs::read_to_string(&report).unwrap_or_default();
        assert!(
            text.contains("exit_status"),
            "{b:?}: the supervisor could not write its report (the layer leaked into it?): {text:?} {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}
