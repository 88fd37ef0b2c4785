//! The protected table (`dcjail::protected::TABLE`), entry by entry, held
//! by attacks: with the workspace at a home directory (so the root, home
//! and git-dir entries all lie inside a writable root), every entry,
//! existing and missing, cannot be written, created, renamed over, hard
//! linked, replaced by a symlink, have its mode or times changed, or be
//! reached by renaming the directory it sits in — under bwrap, as root and
//! as uid 65534. Each attack first runs with `--no-sandbox`, where it must
//! change every entry, so the test can fail. With the workspace at the home
//! directory the home is held read-only by class, so this checks the class
//! rule on every listed name at once. Landlock refuses, naming a protected
//! path. And the man page prints the same table as the code.

#[path = "support/scratch.rs"]
mod scratch;

use dcjail::protected::{Kind, Scope, TABLE};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The dcjail the tests run: `scratch::exe` keeps it runnable wherever the
/// checkout lives (landlock refuses a dcjail inside a writable root).
use scratch::exe as bin;

/// A directory on PATH inside the workspace: the "PATH directories" row.
const PATH_DIR: &str = "tools/bin";

/// Every entry the test can place under one home directory: root and home
/// entries relative to it, git-dir entries in its `.git`, and a PATH
/// directory.
fn entries() -> Vec<(String, Kind)> {
    let mut v: Vec<(String, Kind)> = TABLE
        .iter()
        .filter(|e| matches!(e.scope, Scope::Root | Scope::Home))
        .map(|e| (e.path.to_string(), e.kind))
        .collect();
    v.extend(
        TABLE
            .iter()
            .filter(|e| e.scope == Scope::GitDir)
            .map(|e| (format!(".git/{}", e.path), e.kind)),
    );
    v.push((PATH_DIR.to_string(), Kind::Dir));
    v
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Attack {
    Write,
    RenameOver,
    HardLink,
    Symlink,
    Chmod,
    RenameParent,
}

const ATTACKS: &[Attack] = &[
    Attack::Write,
    Attack::RenameOver,
    Attack::HardLink,
    Attack::Symlink,
    Attack::Chmod,
    Attack::RenameParent,
];

impl Attack {
    fn applies(self, existing: bool, rel: &str) -> bool {
        match self {
            Attack::Chmod => existing,
            Attack::RenameParent => rel.contains('/'),
            _ => true,
        }
    }

    /// Shell lines attacking `$P` (kind `$K`); `$T` is a writable scratch
    /// directory in the workspace. Every step may fail.
    fn script(self) -> &'static str {
        match self {
            Attack::Write => {
                r#"if [ "$K" = dir ]; then mkdir -p "$P"; printf evil > "$P/planted"; else printf evil >> "$P"; fi"#
            }
            Attack::RenameOver => {
                r#"if [ "$K" = dir ]; then mkdir -p "$T/d"; printf evil > "$T/d/planted"; mv "$P" "$T/old"; mv -T "$T/d" "$P"; else printf evil > "$T/n"; mv -f "$T/n" "$P"; fi"#
            }
            Attack::HardLink => {
                r#"printf evil > "$T/n"; if [ "$K" = dir ]; then mkdir -p "$P"; ln "$T/n" "$P/planted"; else ln -f "$T/n" "$P" || { ln "$P" "$T/alias" && printf evil >> "$T/alias"; }; fi"#
            }
            Attack::Symlink => r#"printf evil > "$T/n"; rm -rf "$P"; ln -sfn "$T/n" "$P""#,
            Attack::Chmod => r#"chmod 0777 "$P"; touch -m -d 2001-02-03 "$P""#,
            // Written per directory by `script`.
            Attack::RenameParent => "",
        }
    }
}

/// What an entry looked like before the run.
#[derive(Debug, PartialEq)]
struct State {
    kind: &'static str,
    content: Vec<u8>,
    mode: u32,
    mtime: i64,
    nlink: u64,
    parent_ino: u64,
}

/// The time the chmod attack sets.
const ATTACK_MTIME: i64 = 981_158_400;

/// Unchanged but for a directory's mtime, which setting up the sandbox may
/// move (it is not the attacker's unless it is the attacker's date).
fn same(before: &Option<State>, now: &Option<State>) -> bool {
    match (before, now) {
        (None, None) => true,
        (Some(b), Some(n)) => {
            b.kind == n.kind
                && b.content == n.content
                && b.mode == n.mode
                && b.nlink == n.nlink
                && b.parent_ino == n.parent_ino
                && (n.mtime == b.mtime || (b.kind == "dir" && n.mtime != ATTACK_MTIME))
        }
        _ => false,
    }
}

fn state(home: &Path, rel: &str) -> Option<State> {
    let p = home.join(rel);
    let parent_ino = std::fs::symlink_metadata(p.parent().unwrap())
        .map(|m| m.ino())
        .unwrap_or(0);
    let m = std::fs::symlink_metadata(&p).ok()?;
    let (kind, content) = if m.file_type().is_symlink() {
        ("symlink", Vec::new())
    } else if m.is_dir() {
        let mut names: Vec<String> = std::fs::read_dir(&p)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let mut c = names.join(",").into_bytes();
        c.extend(std::fs::read(p.join("original")).unwrap_or_default());
        ("dir", c)
    } else {
        ("file", std::fs::read(&p).unwrap_or_default())
    };
    Some(State {
        kind,
        content,
        mode: m.permissions().mode(),
        mtime: m.mtime(),
        nlink: if m.is_dir() { 0 } else { m.nlink() },
        parent_ino,
    })
}

/// A fresh home directory holding every entry (`existing`) or only the
/// directories they sit in, with a git dir.
fn make_home(tag: &str, existing: bool, nobody: bool) -> PathBuf {
    let home = scratch::fresh(&format!("table-{tag}-{}", std::process::id()));
    for d in [".git/objects/info", ".git/refs", ".attack"] {
        std::fs::create_dir_all(home.join(d)).unwrap();
    }
    std::fs::write(home.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    for (rel, kind) in entries() {
        let p = home.join(&rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        if !existing {
            continue;
        }
        match kind {
            Kind::Dir => {
                std::fs::create_dir_all(&p).unwrap();
                std::fs::write(p.join("original"), format!("ORIGINAL {rel}")).unwrap();
            }
            Kind::File => std::fs::write(&p, format!("ORIGINAL {rel}\n")).unwrap(),
        }
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    if nobody {
        let ok = Command::new("chown")
            .args(["-R", "65534:65534"])
            .arg(&home)
            .status()
            .unwrap()
            .success();
        assert!(ok);
    }
    home
}

/// One script attacking every entry the same way.
fn script(home: &Path, attack: Attack, existing: bool) -> String {
    let mut s = format!("T='{}'\n", home.join(".attack").display());
    if attack == Attack::RenameParent {
        // One rename per directory, its content copied back into the
        // replacement, then every entry of it planted there: entries
        // sharing a directory must not undo each other.
        let mut by_dir: Vec<(PathBuf, Vec<(String, Kind)>)> = Vec::new();
        for (rel, kind) in entries().into_iter().filter(|(r, _)| r.contains('/')) {
            let d = home.join(&rel).parent().unwrap().to_path_buf();
            match by_dir.iter_mut().find(|(x, _)| *x == d) {
                Some((_, v)) => v.push((rel, kind)),
                None => by_dir.push((d, vec![(rel, kind)])),
            }
        }
        for (i, (d, list)) in by_dir.iter().enumerate() {
            let mut plant = String::new();
            for (rel, kind) in list {
                let p = home.join(rel);
                if *kind == Kind::Dir {
                    plant.push_str(&format!(
                        "mkdir -p '{0}'; printf evil > '{0}/planted'; ",
                        p.display()
                    ));
                } else {
                    plant.push_str(&format!("printf evil > '{}'; ", p.display()));
                }
            }
            s.push_str(&format!(
                "(mv '{d}' \"$T/moved-{i}\" && mkdir -p '{d}' && cp -a \"$T/moved-{i}/.\" '{d}/' && {{ {plant}}}) >/dev/null 2>&1\n",
                d = d.display()
            ));
        }
        s.push_str("echo ok > \"$T/sibling\" && echo ATTACK-RAN\n");
        return s;
    }
    for (rel, kind) in entries() {
        if !attack.applies(existing, &rel) {
            continue;
        }
        let k = if kind == Kind::Dir { "dir" } else { "file" };
        s.push_str(&format!(
            "(P='{}'; K={k}; rm -rf \"$T\"/*; {}) >/dev/null 2>&1\n",
            home.join(&rel).display(),
            attack.script()
        ));
    }
    s.push_str("echo ok > \"$T/sibling\" && echo ATTACK-RAN\n");
    s
}

fn dcjail(home: &Path, nobody: bool, args: &[&str], script: &str) -> Output {
    let mut c = scratch::user_command(nobody, bin());
    let path = format!(
        "{}:/usr/local/bin:/usr/bin:/bin",
        home.join(PATH_DIR).display()
    );
    c.args(args)
        .args(["--", "sh", "-c", script])
        .current_dir(home)
        .env("HOME", home)
        .env("PATH", path)
        .env_remove("DCJAIL_POLICY")
        .env_remove("TMPDIR")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("GIT_CONFIG_GLOBAL")
        .stdin(Stdio::null());
    c.output().unwrap()
}

const JAILED: &[&str] = &["--backend", "bwrap", "--sandbox-mode", "workspace-write"];

#[test]
fn every_entry_existing_or_missing_withstands_every_attack_under_bwrap() {
    let mut failures = Vec::new();
    for &nobody in scratch::users() {
        let who = if nobody { "uid 65534" } else { "caller" };
        for existing in [true, false] {
            let what = if existing { "existing" } else { "missing" };
            for &attack in ATTACKS {
                let tag = format!("{}-{what}-{attack:?}", u8::from(nobody));
                for sandboxed in [false, true] {
                    let home = make_home(&format!("{tag}-{sandboxed}"), existing, nobody);
                    let before: Vec<(String, Option<State>)> = entries()
                        .into_iter()
                        .map(|(rel, _)| {
                            let st = state(&home, &rel);
                            (rel, st)
                        })
                        .collect();
                    // The home directory is held by class: the attack's
                    // own scratch directory is named to be written.
                    let attack_dir = home.join(".attack").display().to_string();
                    let mut jailed: Vec<&str> = JAILED.to_vec();
                    jailed.extend(["--allow-write", &attack_dir]);
                    let args: &[&str] = if sandboxed {
                        &jailed
                    } else {
                        &["--no-sandbox"]
                    };
                    let o = dcjail(&home, nobody, args, &script(&home, attack, existing));
                    let ran = String::from_utf8_lossy(&o.stdout).contains("ATTACK-RAN");
                    if !ran || o.status.code() != Some(0) {
                        failures.push(format!(
                            "{who}, {what}, {attack:?}, sandboxed={sandboxed}: the command did not run: {:?} {}",
                            o.status.code(),
                            String::from_utf8_lossy(&o.stderr)
                        ));
                        scratch::remove(&home);
                        continue;
                    }
                    for (rel, st) in &before {
                        if !attack.applies(existing, rel) {
                            continue;
                        }
                        let now = state(&home, rel);
                        let same = same(st, &now);
                        if sandboxed && !same {
                            failures.push(format!(
                                "{who}, {what} {rel}: {attack:?} got through: {st:?} -> {now:?}"
                            ));
                        }
                        if !sandboxed && same {
                            failures.push(format!(
                                "{who}, {what} {rel}: {attack:?} did nothing even without the sandbox: the case cannot fail"
                            ));
                        }
                    }
                    scratch::remove(&home);
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn landlock_refuses_naming_the_protected_path_and_bwrap() {
    for existing in [true, false] {
        let home = make_home(&format!("ll-{existing}"), existing, false);
        let o = dcjail(
            &home,
            false,
            &["--backend", "landlock", "--sandbox-mode", "workspace-write"],
            "echo RAN > ran",
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(122), "{err}");
        assert!(err.starts_with("dcjail: sandbox-unavailable: "), "{err}");
        // The home directory's own entries are held by class (landlock
        // simply does not grant it); what it refuses is a protected path
        // in another writable root (/tmp's start-up files).
        assert!(
            err.contains("landlock cannot keep the protected path `"),
            "{err}"
        );
        assert!(err.contains("--backend bwrap can"), "{err}");
        assert!(err.contains("protect_defaults = false"), "{err}");
        assert!(!home.join("ran").exists());
        scratch::remove(&home);
    }
}

#[test]
fn the_man_page_prints_the_code_table() {
    // The rows are written from TABLE (`cargo run --example man_tables`):
    // the page holds exactly what that writes, between its marks, and the
    // marks are in PROTECTED PATHS.
    let man =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/man/dcjail.1")).unwrap();
    let section = man
        .find(".SH PROTECTED PATHS\n")
        .expect("man page has a PROTECTED PATHS section");
    let b = man
        .find(dcjail::protected::MAN_BEGIN)
        .expect("the rows' first mark");
    let e = man
        .find(dcjail::protected::MAN_END)
        .expect("the rows' last mark");
    let next = man[section + 1..]
        .find("\n.SH ")
        .map_or(man.len(), |i| i + section + 1);
    assert!(
        section < b && b < e && e < next,
        "the marks are in PROTECTED PATHS"
    );
    assert!(
        man[b + dcjail::protected::MAN_BEGIN.len()..e] == dcjail::protected::man_rows(),
        "man/dcjail.1 does not hold the rows of src/protected.rs: run `cargo run --example man_tables`"
    );
}

#[test]
fn every_row_says_what_runs_it_and_why() {
    for e in TABLE {
        assert!(!e.runs_it.trim().is_empty(), "{}", e.path);
        assert!(e.why.len() > 10, "{}: say why", e.path);
        assert!(!e.path.contains("SPEC"), "{}", e.path);
    }
}
