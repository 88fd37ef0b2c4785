//! Where tests make their scratch space. A test's assertion only holds where
//! it is not undone by the policy itself: the escape and attack tests keep
//! "outside" folders that must stay unwritable, so their base must not lie
//! under `/tmp` or `$TMPDIR` (both writable roots in workspace-write), and
//! the tests that switch to uid 65534 need every ancestor of the base to be
//! enterable by that user (a mode-0700 home is not). The checkout's own
//! `target/tmp` is used when it qualifies; otherwise a directory of this
//! uid's under `/var/tmp`.
#![allow(dead_code)]

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The base directory for every scratch tree of this test binary.
pub fn base() -> PathBuf {
    static BASE: OnceLock<PathBuf> = OnceLock::new();
    BASE.get_or_init(choose).clone()
}

fn choose() -> PathBuf {
    let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let _ = std::fs::create_dir_all(&target);
    if let Ok(t) = std::fs::canonicalize(&target) {
        if usable(&t) {
            return t;
        }
    }
    // SAFETY: getuid never fails.
    let uid = unsafe { libc::getuid() };
    let alt = PathBuf::from(format!("/var/tmp/dcjail-tests-{uid}"));
    match std::fs::symlink_metadata(&alt) {
        Ok(m) if m.is_dir() && !m.file_type().is_symlink() && m.uid() == uid => {}
        Ok(_) => panic!(
            "{} exists and is not a directory of uid {uid}: remove it",
            alt.display()
        ),
        Err(_) => std::fs::create_dir(&alt).expect("create the scratch base under /var/tmp"),
    }
    std::fs::set_permissions(&alt, std::fs::Permissions::from_mode(0o755)).unwrap();
    let alt = std::fs::canonicalize(&alt).unwrap();
    assert!(
        usable(&alt),
        "no scratch base outside /tmp and $TMPDIR that uid 65534 can enter: tried {} and {}",
        target.display(),
        alt.display()
    );
    alt
}

/// Not under a directory that is a writable root by default, and every
/// ancestor enterable by anyone.
fn usable(p: &Path) -> bool {
    let mut tmps = vec![PathBuf::from("/tmp")];
    if let Some(t) = std::env::var_os("TMPDIR").filter(|t| !t.is_empty()) {
        tmps.push(PathBuf::from(t));
    }
    for t in tmps {
        let t = std::fs::canonicalize(&t).unwrap_or(t);
        if p.starts_with(&t) {
            return false;
        }
    }
    p.ancestors().all(|a| {
        std::fs::metadata(a)
            .map(|m| m.permissions().mode() & 0o001 != 0)
            .unwrap_or(false)
    })
}

/// A fresh, empty directory `name` under the base (removed first if left
/// by an earlier run), canonical.
pub fn fresh(name: &str) -> PathBuf {
    let d = base().join(name);
    remove(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::canonicalize(&d).unwrap()
}

/// The base under `/tmp` for the few tests whose assertion is about `/tmp`
/// itself (a writable root in workspace-write): `/tmp/dcjail-tests-<uid>`,
/// owned by `uid` (a test that runs the command as 65534 needs a tree of
/// that user's there: another user's entries in `/tmp` are not its files).
pub fn tmp_base(uid: u32) -> PathBuf {
    let b = PathBuf::from(format!("/tmp/dcjail-tests-{uid}"));
    match std::fs::symlink_metadata(&b) {
        Ok(m) if m.is_dir() && !m.file_type().is_symlink() && m.uid() == uid => {}
        Ok(_) => panic!(
            "{} exists and is not a directory of uid {uid}: remove it",
            b.display()
        ),
        Err(_) => {
            std::fs::create_dir(&b).expect("create the scratch base under /tmp");
            std::os::unix::fs::chown(&b, Some(uid), Some(uid)).unwrap();
        }
    }
    std::fs::set_permissions(&b, std::fs::Permissions::from_mode(0o755)).unwrap();
    b
}

/// A fresh, empty directory `name` under `tmp_base(uid)`, owned by `uid`.
pub fn fresh_in_tmp(name: &str, uid: u32) -> PathBuf {
    let d = tmp_base(uid).join(name);
    remove(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::os::unix::fs::chown(&d, Some(uid), Some(uid)).unwrap();
    std::fs::canonicalize(&d).unwrap()
}

/// Removes a scratch tree without ever leaving it: anything mounted below it
/// is detached first, and the removal does not cross file systems nor
/// follow symlinks. Refuses to touch anything outside the bases.
pub fn remove(root: &Path) {
    let b = base();
    let in_tmp = root.parent().and_then(Path::parent) == Some(Path::new("/tmp"))
        && root
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|n| n.to_string_lossy().starts_with("dcjail-tests-"));
    if !in_tmp && (!root.starts_with(&b) || root == b) {
        return;
    }
    if std::fs::symlink_metadata(root).is_err() {
        return;
    }
    if let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") {
        let mut points: Vec<&str> = info
            .lines()
            .filter_map(|l| l.split(' ').nth(4))
            .filter(|m| Path::new(m).starts_with(root))
            .collect();
        points.sort_by_key(|m| std::cmp::Reverse(m.len()));
        for m in points {
            let _ = Command::new("umount").arg("-l").arg(m).status();
        }
    }
    let _ = Command::new("rm")
        .arg("-rf")
        .arg("--one-file-system")
        .arg("--")
        .arg(root)
        .status();
}

/// `remove`, shaped like `std::fs::remove_dir_all` for the call sites that
/// used it.
pub fn remove_all(root: &Path) -> std::io::Result<()> {
    remove(root);
    Ok(())
}
