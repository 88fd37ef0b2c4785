//! Nothing dcjail started is left when it exits: a caller that waits for
//! its process group to empty, or counts what is left, sees nothing — the
//! sandbox's own processes (bwrap and the init of its pid namespace)
//! included, not only what the command started. Each case first shows, with
//! the same check run on a command without dcjail, that the check does see
//! a process left behind.

#[path = "support/scratch.rs"]
mod scratch;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

/// Whether any process, zombies included, is still in process group `pgid`.
fn group_alive(pgid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::kill(-pgid, 0) == 0 }
}

/// Runs `cmd` as the leader of a new process group, waits for it, and
/// returns (exit code, its stdout, whether its group still had a member
/// right after).
fn run_in_group(cmd: &mut Command) -> (Option<i32>, String, bool) {
    cmd.process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();
    let pgid = child.id() as i32;
    let out = child.wait_with_output().unwrap();
    let left = group_alive(pgid);
    if left {
        // Kill whatever the case left so that no test leaves it running.
        // SAFETY: a process group this test made.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
    }
    assert!(
        out.status.code().is_some(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        left,
    )
}

fn backends() -> Vec<&'static str> {
    let mut v = vec!["landlock"];
    if Path::new("/usr/bin/bwrap").exists() {
        v.push("bwrap");
    }
    v
}

fn dcjail(backend: &str, dir: &Path, script: &str) -> Command {
    let mut c = Command::new(scratch::exe());
    c.args(["--backend", backend, "--", "sh", "-c", script])
        .current_dir(dir)
        .env_remove("DCJAIL_POLICY");
    c
}

#[test]
fn the_check_sees_a_process_left_in_the_group_without_dcjail() {
    let dir = scratch::base();
    let (code, out, left) = run_in_group(
        Command::new("sh")
            .args(["-c", "sleep 30 >/dev/null 2>&1 & echo started; exit 0"])
            .current_dir(&dir),
    );
    assert_eq!((code, out.as_str()), (Some(0), "started\n"));
    assert!(
        left,
        "a background sleep outlived its shell: the check must see it"
    );
}

#[test]
fn nothing_is_left_in_the_callers_process_group_when_dcjail_exits() {
    let dir = scratch::base();
    for b in backends() {
        // Twenty runs: what outlived dcjail used to be there almost every
        // time, for a second or two.
        for i in 0..20 {
            let (code, _, left) = run_in_group(&mut dcjail(b, &dir, "exit 3"));
            assert_eq!(code, Some(3), "{b} run {i}");
            assert!(!left, "{b} run {i}: a process of dcjail's outlived it");
        }
    }
}

#[test]
fn what_the_command_left_running_is_gone_when_dcjail_exits() {
    let dir = scratch::base();
    for b in backends() {
        for i in 0..5 {
            let (code, out, left) = run_in_group(&mut dcjail(
                b,
                &dir,
                "sleep 30 >/dev/null 2>&1 & (sleep 30 >/dev/null 2>&1 &) ; echo started; exit 0",
            ));
            assert_eq!((code, out.as_str()), (Some(0), "started\n"), "{b} run {i}");
            assert!(
                !left,
                "{b} run {i}: the command's background process outlived dcjail"
            );
        }
    }
}
