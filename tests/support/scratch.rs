//! What every test file shares (included as `#[path = "support/scratch.rs"]
//! mod scratch;`): the scratch space (`fresh`, `Dir`, `remove`), the dcjail
//! binary (`exe`), the users a test runs as (`users`, `user_command`,
//! `command_as`) and the requirement check (`require`, `root`, `need`,
//! `bwrap_works`), which fails a test whose prerequisite is missing under
//! `DCJAIL_TEST_REQUIRE=1`. Test files keep no copies of these.
//!
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
    let alt = own_dir(PathBuf::from(format!("/var/tmp/dcjail-tests-{uid}")), uid);
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

/// The dcjail binary for tests to run: the build's own when it lies outside
/// /tmp and $TMPDIR and uid 65534 can reach it; otherwise a copy under the
/// base. landlock refuses to run a dcjail it cannot keep read-only (its own
/// binary inside a writable root, as in a checkout under /tmp), and uid
/// 65534 cannot execute one in a mode-0700 home: where the checkout lives
/// must not decide what the tests see.
pub fn exe() -> &'static str {
    static EXE: OnceLock<String> = OnceLock::new();
    EXE.get_or_init(|| {
        let built = PathBuf::from(env!("CARGO_BIN_EXE_dcjail"));
        let built = std::fs::canonicalize(&built).unwrap_or(built);
        let runnable = std::fs::metadata(&built)
            .map(|m| m.permissions().mode() & 0o001 != 0)
            .unwrap_or(false);
        if runnable && built.parent().map(usable).unwrap_or(false) {
            return built.display().to_string();
        }
        let m = std::fs::metadata(&built).expect("the dcjail binary");
        // Named after the build, so every test binary of one build shares
        // one copy; copies of older builds are removed.
        let name = format!("dcjail-{}-{}", m.len(), m.mtime_nsec() ^ m.mtime());
        let dir = base().join(format!("exe-{}", checkout_key()));
        let _ = std::fs::create_dir_all(&dir);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let copy = dir.join(&name);
        if std::fs::metadata(&copy).map(|c| c.len()).ok() != Some(m.len()) {
            let tmp = dir.join(format!(".{name}.{}", std::process::id()));
            std::fs::copy(&built, &tmp).expect("copy the dcjail binary");
            std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).unwrap();
            std::fs::rename(&tmp, &copy).unwrap();
            if let Ok(rd) = std::fs::read_dir(&dir) {
                for e in rd.flatten() {
                    if e.file_name() != name.as_str()
                        && !e.file_name().to_string_lossy().starts_with('.')
                    {
                        let _ = std::fs::remove_file(e.path());
                    }
                }
            }
        }
        copy.display().to_string()
    })
}

/// A key for this checkout, so directories shared by every checkout of one
/// user (under /var/tmp) do not mix two checkouts' files.
pub fn checkout_key() -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    env!("CARGO_MANIFEST_DIR").hash(&mut h);
    format!("{:016x}", h.finish())
}

/// A fresh, empty directory `name` where a unix socket fits: a socket's
/// path holds at most 107 bytes, which a deep checkout's base can exceed.
/// Under the base when there is room (a socket name of up to 20 bytes
/// included), otherwise under a short directory of this uid's in /var/tmp.
pub fn socket_dir(name: &str) -> PathBuf {
    let d = base().join(name);
    if d.as_os_str().len() + 21 <= 107 {
        return fresh(name);
    }
    let d = short_base().join(name);
    remove(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::canonicalize(&d).unwrap()
}

static SHORT: OnceLock<PathBuf> = OnceLock::new();

fn short_base() -> PathBuf {
    SHORT
        .get_or_init(|| {
            // SAFETY: getuid never fails.
            let uid = unsafe { libc::getuid() };
            own_dir(PathBuf::from(format!("/var/tmp/dcjail-s{uid}")), uid)
        })
        .clone()
}

/// `p`, a directory of `uid`'s (made when missing), mode 0755, canonical;
/// anything else there is an error to fix by hand.
fn own_dir(p: PathBuf, uid: u32) -> PathBuf {
    match std::fs::symlink_metadata(&p) {
        Ok(m) if m.is_dir() && !m.file_type().is_symlink() && m.uid() == uid => {}
        Ok(_) => panic!(
            "{} exists and is not a directory of uid {uid}: remove it",
            p.display()
        ),
        Err(_) => std::fs::create_dir(&p).expect("create a scratch directory under /var/tmp"),
    }
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::canonicalize(&p).unwrap()
}

/// A fresh, empty directory `name` under the base (removed first if left
/// by an earlier run), canonical.
pub fn fresh(name: &str) -> PathBuf {
    let d = base().join(name);
    remove(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::canonicalize(&d).unwrap()
}

/// A fresh scratch tree under the base for one test, named after `tag`,
/// this process and a counter (so tests running at once, in this binary or
/// another, never share one), mode 0755 (uid 65534 can enter it), removed
/// with `remove` when dropped.
pub struct Dir(pub PathBuf);

impl Dir {
    pub fn new(tag: &str) -> Dir {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let d = fresh(&format!("{tag}-{}-{n}", std::process::id()));
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        Dir(d)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
    pub fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.0.join(rel)
    }
}

impl AsRef<Path> for Dir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl std::ops::Deref for Dir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        remove(&self.0);
    }
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
/// follow symlinks. Refuses to touch anything outside the bases (and the
/// short directory of `socket_dir`).
pub fn remove(root: &Path) {
    let b = base();
    // Below a base under /tmp (`tmp_base`), at any depth.
    let in_tmp = root.strip_prefix("/tmp").is_ok_and(|rest| {
        let mut c = rest.components();
        c.next()
            .is_some_and(|b| b.as_os_str().to_string_lossy().starts_with("dcjail-tests-"))
            && c.next().is_some()
    });
    let inside = |b: &Path| root.starts_with(b) && root != b;
    if !in_tmp && !inside(&b) && !SHORT.get().map(|s| inside(s)).unwrap_or(false) {
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

/// Runs `c` (its stdout and stderr captured) for at most `secs` seconds;
/// past that it is killed by its own handle (its pid) and the test fails
/// with what it printed. Both pipes are read while it runs (by a thread
/// each), so a command printing more than a pipe holds (64 KiB) is never
/// held up by the test itself.
pub fn output_within(mut c: Command, secs: u64) -> std::process::Output {
    use std::io::Read;
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = c.spawn().expect("start the command");
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|r| Box::new(r) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|r| Box::new(r) as Box<dyn Read + Send>),
    );
    let end = Instant::now() + Duration::from_secs(secs);
    let (status, late) = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break (status, false);
        }
        if Instant::now() > end {
            let _ = child.kill();
            break (child.wait().unwrap(), true);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // A grandchild still holding a pipe would keep a reader waiting: the
    // readers are joined only once the command itself is gone, and a
    // late command's output is what it printed so far.
    let o = std::process::Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    };
    if late {
        panic!("timed out after {secs}s: {}", text(&o));
    }
    o
}

/// A finished command's status, stdout and stderr, for a failing assertion.
pub fn text(o: &std::process::Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Whether the tests run as root (then they also run the command as uid
/// 65534: `users`).
pub fn is_root() -> bool {
    // SAFETY: getuid never fails.
    unsafe { libc::getuid() == 0 }
}

/// The users a test runs its command as: the caller (`false`) and uid
/// 65534 (`true`), which only root can switch to: not root, the uid-65534
/// half is skipped visibly, or fails under `DCJAIL_TEST_REQUIRE=1`.
pub fn users() -> &'static [bool] {
    if root("run the command as uid 65534 too") {
        &[false, true]
    } else {
        &[false]
    }
}

// The requirement check. A test whose prerequisite is missing proves
// nothing: under `DCJAIL_TEST_REQUIRE=1` (set by scripts/test.sh and
// .ci/run) it fails, naming the line that installs what is missing;
// without it (a developer's `cargo test`) it may skip that part, and says
// so on stderr. No test returns early on its own.

/// Whether a missing prerequisite fails the test.
pub fn required() -> bool {
    std::env::var_os("DCJAIL_TEST_REQUIRE").is_some_and(|v| v == "1")
}

/// `present`; otherwise `what` is missing and `fix` is how to get it: a
/// failure under `DCJAIL_TEST_REQUIRE=1`, else a note and `false` (the
/// caller skips the part that needs it).
#[track_caller]
pub fn require(present: bool, what: &str, fix: &str) -> bool {
    if present {
        return true;
    }
    assert!(
        !required(),
        "missing prerequisite: {what}; {fix} (DCJAIL_TEST_REQUIRE=1: a missing prerequisite fails)"
    );
    eprintln!(
        "SKIPPED at {}: {what}; {fix} (with DCJAIL_TEST_REQUIRE=1 this fails)",
        std::panic::Location::caller()
    );
    false
}

/// Root, which the part of a test doing `what` needs (switching to uid
/// 65534, mounting, another user's files, a pid namespace of its own).
#[track_caller]
pub fn root(what: &str) -> bool {
    require(
        is_root(),
        &format!("root, to {what}"),
        "run the tests as root, as CI does: sudo scripts/test.sh",
    )
}

/// `program` on PATH. Every program a test runs is in scripts/test.sh's
/// install list (tests/prerequisites.rs checks it), which names its
/// Debian package for the failure.
#[track_caller]
pub fn need(program: &str) -> bool {
    let package = installed_by_test_sh()
        .into_iter()
        .find(|(p, _)| p == program)
        .map(|(_, pkg)| pkg)
        .unwrap_or_else(|| panic!("{program} is not in scripts/test.sh's install list: add it"));
    require(
        on_path(program),
        &format!("`{program}` is not installed"),
        &format!("install it with: apt-get install -y {package} (scripts/test.sh does)"),
    )
}

/// Whether `program` is an executable file in a directory of PATH.
pub fn on_path(program: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|d| {
        std::fs::metadata(d.join(program))
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    })
}

/// scripts/test.sh's install list, `program:package` pairs of its
/// `for t in ...; do` loop, read from the checkout.
pub fn installed_by_test_sh() -> Vec<(String, String)> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/test.sh");
    let text = std::fs::read_to_string(&script).expect("read scripts/test.sh");
    let joined = text.replace("\\\n", " ");
    let list = joined
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("for t in "))
        .and_then(|l| l.split_once("; do"))
        .map(|(list, _)| list)
        .expect("scripts/test.sh has its `for t in program:package ...; do` list");
    list.split_whitespace()
        .map(|t| {
            let (p, pkg) = t.split_once(':').expect("program:package");
            (p.to_string(), pkg.to_string())
        })
        .collect()
}

/// Whether bubblewrap runs here and can make a user namespace (Ubuntu
/// 24.04's AppArmor refuses it to unprivileged users without a profile).
#[track_caller]
pub fn bwrap_works() -> bool {
    if !need("bwrap") {
        return false;
    }
    let ok = Command::new("bwrap")
        .args(["--ro-bind", "/", "/", "--unshare-user", "--", "true"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    require(
        ok,
        "bubblewrap cannot create a user namespace here",
        "allow it with `dcjail setup apparmor --install` (Ubuntu 24.04) or run the tests as root",
    )
}

/// `program`, run as the caller or (`nobody`) as uid 65534 and its group,
/// without supplementary groups, through setpriv; nothing else set.
pub fn user_command(nobody: bool, program: impl AsRef<std::ffi::OsStr>) -> Command {
    if nobody {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(program);
        c
    } else {
        Command::new(program)
    }
}

/// `argv` in `cwd`, as the caller or (`nobody`) as uid 65534 through
/// setpriv, with `DCJAIL_POLICY` removed and stdin closed.
pub fn command_as(cwd: &Path, nobody: bool, argv: &[&str]) -> Command {
    let mut cmd = user_command(nobody, argv[0]);
    cmd.args(&argv[1..]);
    cmd.current_dir(cwd)
        .env_remove("DCJAIL_POLICY")
        .stdin(std::process::Stdio::null());
    cmd
}

/// `dcjail ARGS…` in `dir` as the caller (`DCJAIL_POLICY` removed, stdin
/// closed), run to its end.
pub fn dcjail(dir: &Path, args: &[&str]) -> std::process::Output {
    let mut cmd = command_as(dir, false, &[exe()]);
    cmd.args(args);
    cmd.output().expect("run dcjail")
}

/// `command_as`, run for at most 60 seconds.
pub fn run_as(cwd: &Path, nobody: bool, argv: &[&str]) -> std::process::Output {
    output_within(command_as(cwd, nobody, argv), 60)
}
