//! The broker never does more than the caller could: under bwrap with
//! protected paths the broker makes names for the command (so that a
//! missing protected name stays uncreatable), and a program that restricts
//! itself — its own landlock domain, its own seccomp filter, a nested
//! dcjail — must be refused by it exactly as the kernel refuses it without
//! dcjail. Each attack runs once without a sandbox (what the kernel says),
//! once unrestricted under dcjail (the control: the names are made, so the
//! check can see them), and restricted under dcjail (nothing made), as root
//! and as uid 65534. Real work beside it: what the program's own domain
//! allows still works, and after a restricted program ran, the rest of the
//! command still makes names through the broker.
#![cfg(target_os = "linux")]

#[path = "support/scratch.rs"]
mod scratch;

use std::os::unix::fs::chown;
use std::path::{Path, PathBuf};
use std::process::Output;

use scratch::text;

const PY: &str = "/usr/bin/python3";

fn fixture(name: &str) -> String {
    format!(
        "{}/tests/fixtures/selflock/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// A workspace `ws` with `ok/` (what the program's own domain allows) and
/// a `seed` file in each, owned by the user who runs the command.
fn workspace(tag: &str, nobody: bool) -> PathBuf {
    let ws = scratch::fresh(&format!("deputy-{tag}-{}", u8::from(nobody)));
    std::fs::create_dir(ws.join("ok")).unwrap();
    std::fs::write(ws.join("seed"), "seed").unwrap();
    std::fs::write(ws.join("ok/seed"), "seed").unwrap();
    if nobody {
        for p in [
            ws.clone(),
            ws.join("ok"),
            ws.join("seed"),
            ws.join("ok/seed"),
        ] {
            chown(&p, Some(65534), Some(65534)).unwrap();
        }
    }
    ws
}

/// The names in `dir` that start with `made-`, sorted.
fn made(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("made-") || n.starts_with("nested-"))
        .collect();
    v.sort();
    v
}

fn dcjail_args<'a>(mode: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    backend_args("bwrap", mode, extra)
}

/// The landlock backend refuses protected paths in workspace-write (it has
/// no broker that makes names): it runs with `--no-protect-defaults`.
fn backend_args<'a>(backend: &'a str, mode: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![scratch::exe(), "--backend", backend, "--sandbox-mode", mode];
    if backend == "landlock" {
        v.push("--no-protect-defaults");
    }
    v.extend_from_slice(extra);
    v.push("--");
    v
}

fn lines(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn a_self_landlocked_program_is_refused_by_the_broker_as_by_the_kernel() {
    let prog = fixture("selflock.py");
    for &nobody in scratch::users() {
        // Without dcjail: what the kernel answers the restricted program.
        let ws = workspace("bare", nobody);
        let (w, ok) = (ws.to_string_lossy(), ws.join("ok"));
        let ok = ok.to_string_lossy();
        let bare = scratch::run_as(&ws, nobody, &[PY, &prog, &w, &ok]);
        assert!(bare.status.success(), "{}", text(&bare));
        assert!(lines(&bare).contains("made-file EACCES"), "{}", text(&bare));
        let bare_lines = lines(&bare).replace(&*w, "WS");

        // Control under dcjail: unrestricted, every try makes its name.
        let ws = workspace("control", nobody);
        let w = ws.to_string_lossy().into_owned();
        let mut argv = dcjail_args("workspace-write", &[]);
        argv.extend([PY, &prog, "--no-restrict", &w]);
        let o = scratch::run_as(&ws, nobody, &argv);
        assert!(
            o.status.success() && lines(&o).ends_with("RAN\n"),
            "{}",
            text(&o)
        );
        assert_eq!(made(&ws).len(), 7, "control: {:?} {}", made(&ws), text(&o));

        // Restricted under dcjail: exactly the kernel's answers, nothing
        // made where the program forbade itself, everything where it did not.
        // `report`: denials recorded (as whenever stderr is a terminal).
        for (be, report) in [
            ("bwrap", false),
            ("auto", false),
            ("landlock", false),
            ("bwrap", true),
        ] {
            let ws = workspace(&format!("attack-{be}-{}", u8::from(report)), nobody);
            let w = ws.to_string_lossy().into_owned();
            let ok = format!("{w}/ok");
            let rep = format!("{}/report.json", ws.display());
            let extra: Vec<&str> = if report {
                vec!["--report", &rep]
            } else {
                vec![]
            };
            let mut argv = backend_args(be, "workspace-write", &extra);
            argv.extend([PY, &prog, &w, &ok]);
            let o = scratch::run_as(&ws, nobody, &argv);
            let t = text(&o);
            assert!(
                o.status.success() && lines(&o).ends_with("RAN\n"),
                "{be}: {t}"
            );
            assert_eq!(lines(&o).replace(&w, "WS"), bare_lines, "{be}: {t}");
            assert_eq!(made(&ws), Vec::<String>::new(), "{be}: {t}");
            assert_eq!(made(&ws.join("ok")).len(), 7, "{be}: {t}");
        }
    }
}

#[test]
fn a_nested_dcjail_with_the_default_policy_makes_nothing() {
    let script = "echo inner-ran; touch nested-file; mkdir nested-dir; ln -s x nested-link; \
                  mkfifo nested-fifo; echo hi > /dev/null && echo devnull-ok; \
                  { echo via-stdout > /dev/stdout; } | cat";
    for &nobody in scratch::users() {
        // Control: the same script without the inner dcjail makes them all.
        let ws = workspace("nested-control", nobody);
        let mut argv = dcjail_args("workspace-write", &[]);
        argv.extend(["/bin/sh", "-c", script]);
        let o = scratch::run_as(&ws, nobody, &argv);
        assert!(o.status.success(), "{}", text(&o));
        assert_eq!(made(&ws).len(), 4, "{:?} {}", made(&ws), text(&o));

        // The inner dcjail: read-only by its embedded default policy. (The
        // pipe /dev/stdout reopens is made inside: a pipe of another user
        // cannot be reopened, with or without dcjail.)
        let ws = workspace("nested", nobody);
        let mut argv = dcjail_args("workspace-write", &[]);
        argv.extend(["env", "-u", "DCJAIL_POLICY", scratch::exe(), "--"]);
        argv.extend(["/bin/sh", "-c", script]);
        let o = scratch::run_as(&ws, nobody, &argv);
        let out = lines(&o);
        for want in ["inner-ran", "devnull-ok", "via-stdout"] {
            assert!(out.contains(want), "{want}: {}", text(&o));
        }
        assert_eq!(made(&ws), Vec::<String>::new(), "{}", text(&o));
    }
}

#[test]
fn a_program_with_its_own_seccomp_filter_keeps_its_refusal() {
    let prog = fixture("selfseccomp.py");
    for &nobody in scratch::users() {
        let ws = workspace("seccomp", nobody);
        let w = ws.to_string_lossy().into_owned();
        let bare = scratch::run_as(&ws, nobody, &[PY, &prog, &w]);
        assert!(
            lines(&bare).contains("made-by-filtered EPERM"),
            "{}",
            text(&bare)
        );
        let mut argv = dcjail_args("workspace-write", &[]);
        argv.extend([PY, &prog, &w]);
        let o = scratch::run_as(&ws, nobody, &argv);
        assert_eq!(lines(&o), lines(&bare), "{}", text(&o));
        assert!(!ws.join("made-by-filtered").exists(), "{}", text(&o));
    }
}

#[test]
fn the_rest_of_the_command_still_makes_names_after_a_restricted_program() {
    let prog = fixture("selflock.py");
    for &nobody in scratch::users() {
        let ws = workspace("after", nobody);
        let w = ws.to_string_lossy().into_owned();
        // A restricted program, then its unrestricted parent and a sibling
        // that starts later: they are not held to its domain.
        let script = format!(
            "{PY} {prog} {w} >/dev/null; echo parent > made-after; \
             {PY} {prog} --no-restrict {w}/ok >/dev/null; echo RAN"
        );
        let mut argv = dcjail_args("workspace-write", &[]);
        argv.extend(["/bin/sh", "-c", &script]);
        let o = scratch::run_as(&ws, nobody, &argv);
        assert!(lines(&o).contains("RAN"), "{}", text(&o));
        assert_eq!(made(&ws), vec!["made-after".to_string()], "{}", text(&o));
        assert_eq!(made(&ws.join("ok")).len(), 7, "{}", text(&o));
    }
}

#[test]
fn other_modes_hold_a_self_landlocked_program_as_the_kernel_does() {
    let prog = fixture("selflock.py");
    for &nobody in scratch::users() {
        for mode in ["read-only", "danger-full-access"] {
            let ws = workspace(mode, nobody);
            let w = ws.to_string_lossy().into_owned();
            let ok = format!("{w}/ok");
            let mut argv = dcjail_args(mode, &[]);
            argv.extend([PY, &prog, &w, &ok]);
            let o = scratch::run_as(&ws, nobody, &argv);
            assert!(lines(&o).ends_with("RAN\n"), "{mode}: {}", text(&o));
            assert_eq!(made(&ws), Vec::<String>::new(), "{mode}: {}", text(&o));
            let inside = made(&ws.join("ok")).len();
            let want = if mode == "read-only" { 0 } else { 7 };
            assert_eq!(inside, want, "{mode}: {}", text(&o));
        }
    }
}

#[test]
fn domains_stack_to_the_kernels_limit_and_the_deepest_still_works() {
    let prog = fixture("selflock.py");
    for &nobody in scratch::users() {
        let ws = workspace("stack", nobody);
        let w = ws.to_string_lossy().into_owned();
        // Without dcjail 16 domains stack; under dcjail its own layer is
        // one of the 16, so the 16th the program asks for fails as the
        // kernel's limit says, and what the 15 allow is still made.
        let bare = scratch::run_as(&ws, nobody, &[PY, &prog, "--stack", "17", &w]);
        assert!(
            lines(&bare).starts_with("stacked 16 E2BIG\n"),
            "{}",
            text(&bare)
        );
        scratch::remove(&ws);
        let ws = workspace("stack", nobody);
        let mut argv = dcjail_args("workspace-write", &[]);
        argv.extend([PY, &prog, "--stack", "17", &w]);
        let o = scratch::run_as(&ws, nobody, &argv);
        // Two of the kernel's 16 layers are dcjail's: the broker's scope and
        // the command's layer.
        assert!(lines(&o).starts_with("stacked 14 E2BIG\n"), "{}", text(&o));
        assert!(lines(&o).ends_with("RAN\n"), "{}", text(&o));
        assert_eq!(made(&ws).len(), 7, "{}", text(&o));
    }
}
