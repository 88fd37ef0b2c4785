//! The policy file, the plan card and dcjail's own binary are never writable
//! from inside, even when they sit in the workspace (SPEC §5, issue 5).

#[path = "support/scratch.rs"]
mod scratch;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use scratch::Dir as Scratch;

fn run(dcjail: &Path, ws: &Path, backend: &str, script: &str) -> Output {
    Command::new(dcjail)
        .args(["--policy", "call.toml", "--backend", backend, "--"])
        .args(["sh", "-c", script])
        .current_dir(ws)
        .env_remove("DCJAIL_POLICY")
        .output()
        .unwrap()
}

fn setup(s: &Scratch) -> (PathBuf, PathBuf) {
    let ws = s.0.join("ws");
    std::fs::create_dir_all(ws.join("bin")).unwrap();
    let policy = "[permission]\noutcome = \"allow\"\napproval = \"granted\"\n\
                  [plan]\ncard = \"card.jsonl\"\n\
                  [sandbox]\nmode = \"workspace-write\"\n";
    std::fs::write(ws.join("call.toml"), policy).unwrap();
    std::fs::write(ws.join("card.jsonl"), "").unwrap();
    // dcjail itself, run from inside the workspace.
    let exe = ws.join("bin/dcjail");
    std::fs::copy(env!("CARGO_BIN_EXE_dcjail"), &exe).unwrap();
    (ws, exe)
}

const ATTACK: &str = "echo 'mode = \"bypassPermissions\"' >> call.toml; echo forged >> card.jsonl; \
                      echo x >> bin/dcjail; cp /bin/true bin/dcjail; rm -f call.toml; mv card.jsonl moved; \
                      echo ok > sibling.txt; echo RAN";

#[test]
fn policy_plan_card_and_own_binary_stay_unwritable_under_bwrap() {
    let s = Scratch::new("bwrap");
    let (ws, exe) = setup(&s);
    let policy_before = std::fs::read(ws.join("call.toml")).unwrap();
    let exe_before = std::fs::read(&exe).unwrap();
    let o = run(&exe, &ws, "bwrap", ATTACK);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("RAN"),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // A sibling in the same directory is writable: the workspace is writable.
    assert!(ws.join("sibling.txt").exists());
    assert_eq!(std::fs::read(ws.join("call.toml")).unwrap(), policy_before);
    assert_eq!(std::fs::read(ws.join("card.jsonl")).unwrap(), b"");
    assert!(!ws.join("moved").exists());
    assert_eq!(std::fs::read(&exe).unwrap(), exe_before);
}

#[test]
fn landlock_refuses_rather_than_leave_them_writable() {
    let s = Scratch::new("landlock");
    let (ws, exe) = setup(&s);
    let o = run(&exe, &ws, "landlock", ATTACK);
    assert_eq!(
        o.status.code(),
        Some(122),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!String::from_utf8_lossy(&o.stdout).contains("RAN"));
    assert!(!ws.join("sibling.txt").exists());
}
