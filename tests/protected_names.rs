//! Every protected name of the table, existing and missing, under every backend
//! that runs here: an existing one stays unchanged, a missing one cannot be
//! created, and a sibling in the same directory is writable all along.

#[path = "support/scratch.rs"]
mod scratch;

use std::path::Path;
use std::process::{Command, Output};

use scratch::Dir as Scratch;

use dcjail::protected::{entries, Kind, Scope};

/// Every protected name of the table relative to a writable root, and
/// git's in the root's `.git`.
fn names() -> Vec<String> {
    let mut v: Vec<String> = entries(Scope::Root).map(|e| e.path.to_string()).collect();
    v.extend(
        entries(Scope::GitDir)
            .filter(|e| e.path != "gitdir")
            .map(|e| format!(".git/{}", e.path)),
    );
    v
}

fn is_dir_name(n: &str) -> bool {
    entries(Scope::Root)
        .chain(entries(Scope::GitDir))
        .any(|e| e.kind == Kind::Dir && (n == e.path || n == format!(".git/{}", e.path)))
}

fn run(ws: &Path, backend: &str, script: &str) -> Output {
    Command::new(scratch::exe())
        .args([
            "--backend",
            backend,
            "--sandbox-mode",
            "workspace-write",
            "--workspace",
        ])
        .arg(ws)
        .args(["--", "sh", "-c", script])
        .current_dir(ws)
        .env_remove("DCJAIL_POLICY")
        .env_remove("TMPDIR")
        .output()
        .unwrap()
}

/// For a name: write into it (a file inside for a directory), replace it,
/// remove it, then write a sibling and say so.
fn attack(name: &str) -> String {
    let target = if is_dir_name(name) {
        format!("{name}/planted")
    } else {
        name.to_string()
    };
    format!(
        "mkdir -p \"$(dirname '{target}')\" 2>/dev/null; echo evil >> '{target}' 2>/dev/null; \
         rm -rf '{name}' 2>/dev/null; mkdir -p '{name}' 2>/dev/null; echo evil > '{target}' 2>/dev/null; \
         echo ok > \"$(dirname '{name}')/sibling-of-$(basename '{name}')\" && echo SIBLING-WRITTEN"
    )
}

#[test]
fn existing_and_missing_protected_names_stay_as_they_were_under_bwrap() {
    let mut failures = Vec::new();
    for name in names() {
        for existing in [true, false] {
            let s = Scratch::new(&format!("{}-{existing}", name.replace('/', "_")));
            let ws = s.0.join("ws");
            std::fs::create_dir_all(ws.join(".git")).unwrap();
            std::fs::create_dir_all(ws.join(".claude")).unwrap();
            std::fs::create_dir_all(ws.join(".git/objects/info")).unwrap();
            let p = ws.join(&name);
            if existing {
                if is_dir_name(&name) {
                    std::fs::create_dir_all(&p).unwrap();
                    std::fs::write(p.join("original"), "ORIGINAL").unwrap();
                } else {
                    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                    std::fs::write(&p, "ORIGINAL").unwrap();
                }
            }
            let o = run(&ws, "bwrap", &attack(&name));
            let out = String::from_utf8_lossy(&o.stdout);
            let what = format!("{name} ({})", if existing { "existing" } else { "missing" });
            if !out.contains("SIBLING-WRITTEN") {
                failures.push(format!(
                    "{what}: the sibling was not writable: {}",
                    String::from_utf8_lossy(&o.stderr)
                ));
                continue;
            }
            let ok = if existing {
                if is_dir_name(&name) {
                    std::fs::read_to_string(p.join("original")).ok().as_deref() == Some("ORIGINAL")
                        && !p.join("planted").exists()
                } else {
                    std::fs::read_to_string(&p).ok().as_deref() == Some("ORIGINAL")
                }
            } else {
                !p.exists()
            };
            if !ok {
                failures.push(format!("{what}: changed or created"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn landlock_refuses_a_workspace_with_protected_names() {
    let s = Scratch::new("landlock");
    let ws = s.0.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let o = run(&ws, "landlock", "echo RAN > ran");
    assert_eq!(
        o.status.code(),
        Some(122),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("protect_defaults"));
    assert!(!ws.join("ran").exists());
}
