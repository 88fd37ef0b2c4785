//! The real-work suite's common ground: run the same command with and
//! without dcjail (per backend, as the invoking user and as uid 65534), in a
//! tree rebuilt at the same path for every run, and compare what it printed
//! and what it left. The test files declare `mod scratch;` next to this one.
#![allow(dead_code)]

use crate::scratch;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The dcjail binary, where every user can run it and landlock accepts it.
pub use crate::scratch::exe as bin;

/// A PATH without the invoking user's private directories, so both users
/// find the same programs.
pub const SYS_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Fixed dates make every commit hash the same in every run.
pub const GIT_DATE: &str = "2020-01-02T03:04:05Z";

#[derive(Clone, Copy, PartialEq, Eq, Debug, PartialOrd, Ord)]
pub enum User {
    /// Whoever runs the tests (root in CI).
    Invoker,
    /// uid 65534, through setpriv.
    Nobody,
}

impl User {
    pub fn label(self) -> &'static str {
        match self {
            User::Invoker if is_root() => "root",
            User::Invoker => "invoker",
            User::Nobody => "uid65534",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, PartialOrd, Ord)]
pub enum Backend {
    Bwrap,
    Landlock,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Bwrap => "bwrap",
            Backend::Landlock => "landlock",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, PartialOrd, Ord)]
pub enum Mode {
    Direct,
    Jail(Backend),
}

impl Mode {
    pub fn label(self) -> &'static str {
        match self {
            Mode::Direct => "direct",
            Mode::Jail(b) => b.name(),
        }
    }
}

pub use crate::scratch::is_root;

/// Both users (`scratch::users`: switching user needs root).
pub fn users() -> Vec<User> {
    scratch::users()
        .iter()
        .map(|&nobody| if nobody { User::Nobody } else { User::Invoker })
        .collect()
}

/// The backends that run a trivial workspace-write command here. A backend
/// missing from the machine is said loudly, never silently skipped.
pub fn backends() -> Vec<Backend> {
    static B: OnceLock<Vec<Backend>> = OnceLock::new();
    B.get_or_init(|| {
        let probe = scratch::fresh(&format!("realwork-probe-{}", std::process::id()));
        let mut v = Vec::new();
        for b in [Backend::Bwrap, Backend::Landlock] {
            let o = Command::new(bin())
                .arg("--policy")
                .arg(policy_file(b))
                .args(["--backend", b.name(), "--workspace"])
                .arg(&probe)
                .args(["--", "true"])
                .current_dir(&probe)
                .env_remove("DCJAIL_POLICY")
                .stdin(Stdio::null())
                .output()
                .unwrap();
            if scratch::require(
                o.status.success(),
                &format!(
                    "backend {} runs here: {}",
                    b.name(),
                    String::from_utf8_lossy(&o.stderr).trim()
                ),
                "see `dcjail doctor` (bwrap: apt-get install -y bubblewrap; landlock: kernel 5.13+)",
            ) {
                v.push(b);
            }
        }
        scratch::remove(&probe);
        v
    })
    .clone()
}

/// The runs of a workload: without dcjail, under each backend, and without
/// dcjail again. The second run without dcjail proves the workload itself is
/// deterministic (so a difference is dcjail's), and gives a warm time.
pub fn modes() -> Vec<Mode> {
    let mut m = vec![Mode::Direct];
    m.extend(backends().into_iter().map(Mode::Jail));
    m.push(Mode::Direct);
    m
}

/// How a run is named in a failure.
pub fn what(workload: &str, user: User, mode: Mode, first: bool) -> String {
    let m = match mode {
        Mode::Direct if !first => "no dcjail, again (the workload differs from itself)",
        _ => mode.label(),
    };
    format!("{workload} as {} under {m}", user.label())
}

/// The policy of every jailed run: the person asked for it, workspace-write.
/// landlock cannot keep protected names read-only inside a writable root, so
/// its runs use `protect_defaults = false`, the policy it accepts.
pub fn policy_file(b: Backend) -> PathBuf {
    policy_with(
        b,
        "default",
        "[permission]\noutcome = \"allow\"\napproval = \"granted\"\n\
         [sandbox]\nmode = \"workspace-write\"\n",
        "",
    )
}

/// The agent example of docs/agents.md (`call.toml`): acceptEdits, an approved
/// `bash` call, workspace-write, and `deny_read` of `~/.ssh`, `~/.aws` and
/// every `.env`.
pub fn agent_policy_file(b: Backend) -> PathBuf {
    policy_with(
        b,
        "agent",
        "mode = \"acceptEdits\"\ntool = \"bash\"\n\
         [permission]\noutcome = \"ask\"\nrule = \"Bash(cargo test:*)\"\napproval = \"granted\"\n\
         [sandbox]\nmode = \"workspace-write\"\ntimeout = 600\n",
        "deny_read = [\"~/.ssh\", \"~/.aws\", \"**/.env\"]\n",
    )
}

/// Writes `head`, then `[sandbox.filesystem]` with `filesystem` (and
/// `protect_defaults = false` for landlock), as `<name>-<backend>.toml`
/// outside every workspace (dcjail refuses to run with its policy writable).
pub fn policy_with(b: Backend, name: &str, head: &str, filesystem: &str) -> PathBuf {
    let d = scratch::base().join("realwork-policies");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    let extra = match b {
        Backend::Landlock => "protect_defaults = false\n",
        Backend::Bwrap => "",
    };
    let text = format!("{head}[sandbox.filesystem]\n{filesystem}{extra}");
    let p = d.join(format!("{name}-{}.toml", b.name()));
    if std::fs::read_to_string(&p).ok().as_deref() == Some(text.as_str()) {
        return p;
    }
    // Written whole and renamed into place: another test may be reading it.
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let tmp = d.join(format!(".{name}-{}.{}-{n}", b.name(), std::process::id()));
    std::fs::write(&tmp, &text).unwrap();
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::rename(&tmp, &p).unwrap();
    p
}

/// The words in front of a command: `setpriv … --` for uid 65534, then
/// `dcjail --policy … --backend … --workspace WS OPTS --` when jailed
/// (`policy_file` unless OPTS name another `--policy`).
pub fn prefix(mode: Mode, user: User, workspace: &Path, opts: &[String]) -> Vec<OsString> {
    let mut v: Vec<OsString> = Vec::new();
    if user == User::Nobody {
        for a in [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
        ] {
            v.push(a.into());
        }
    }
    if let Mode::Jail(b) = mode {
        v.push(bin().into());
        if !opts.iter().any(|o| o == "--policy") {
            v.push("--policy".into());
            v.push(policy_file(b).into());
        }
        v.push("--backend".into());
        v.push(b.name().into());
        v.push("--workspace".into());
        v.push(workspace.into());
        for o in opts {
            v.push(o.into());
        }
        v.push("--".into());
    }
    v
}

/// The environment every run gets, whatever the mode: nothing inherited but
/// what is named here, so a direct and a jailed run differ only by dcjail.
#[derive(Clone, Debug)]
pub struct Env {
    pub vars: BTreeMap<String, String>,
}

impl Env {
    /// HOME, TMPDIR and git's global config in `base/{home,tmpdir}`; the
    /// caller makes them.
    pub fn new(home: &Path, tmpdir: &Path) -> Env {
        let mut vars = BTreeMap::new();
        for (k, v) in [
            ("PATH", SYS_PATH.to_string()),
            ("HOME", home.display().to_string()),
            ("TMPDIR", tmpdir.display().to_string()),
            ("LANG", "C.UTF-8".into()),
            ("LC_ALL", "C.UTF-8".into()),
            ("TERM", "dumb".into()),
            ("GIT_CONFIG_NOSYSTEM", "1".into()),
            ("GIT_AUTHOR_DATE", GIT_DATE.into()),
            ("GIT_COMMITTER_DATE", GIT_DATE.into()),
            ("GIT_AUTHOR_NAME", "Real Work".into()),
            ("GIT_AUTHOR_EMAIL", "rw@example.invalid".into()),
            ("GIT_COMMITTER_NAME", "Real Work".into()),
            ("GIT_COMMITTER_EMAIL", "rw@example.invalid".into()),
            ("GIT_PAGER", "cat".into()),
            ("PAGER", "cat".into()),
        ] {
            vars.insert(k.to_string(), v);
        }
        Env { vars }
    }
    pub fn set(&mut self, k: &str, v: impl Into<String>) -> &mut Env {
        self.vars.insert(k.to_string(), v.into());
        self
    }
    pub fn apply(&self, c: &mut Command) {
        c.env_clear();
        for (k, v) in &self.vars {
            c.env(k, v);
        }
    }
}

/// What one run printed (stdout and stderr, and both as the scripts merge
/// them), its status and how long it took.
#[derive(Clone, Debug)]
pub struct Ran {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub secs: f64,
}

impl Ran {
    pub fn all(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

/// Runs `argv` in `cwd` under `mode` as `user`, stdin from /dev/null.
pub fn run(
    mode: Mode,
    user: User,
    workspace: &Path,
    cwd: &Path,
    opts: &[String],
    env: &Env,
    argv: &[&str],
) -> Ran {
    let mut words = prefix(mode, user, workspace, opts);
    words.extend(argv.iter().map(OsString::from));
    let mut c = Command::new(&words[0]);
    c.args(&words[1..]).current_dir(cwd).stdin(Stdio::null());
    env.apply(&mut c);
    let t = Instant::now();
    let o: Output = c.output().unwrap();
    let secs = t.elapsed().as_secs_f64();
    Ran {
        code: o.status.code(),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        secs,
    }
}

/// `sh -c SCRIPT` with stderr merged into stdout, so messages keep their
/// place among the steps.
pub fn sh(
    mode: Mode,
    user: User,
    workspace: &Path,
    cwd: &Path,
    opts: &[String],
    env: &Env,
    script: &str,
) -> Ran {
    let s = format!("exec 2>&1\n{script}");
    run(mode, user, workspace, cwd, opts, env, &["sh", "-c", &s])
}

/// A shell function the scripts use: prints the step, runs it, prints its
/// status, so a failing step shows in the comparison even when later ones
/// pass.
pub const STEP: &str = "step() { echo \"== $*\"; \"$@\"; echo \"rc=$?\"; }\n";

/// Hands a tree to uid 65534 (every run of that user works on its own files).
pub fn give(user: User, p: &Path) {
    if user == User::Nobody {
        let ok = Command::new("chown")
            .args(["-R", "-h", "65534:65534", "--"])
            .arg(p)
            .status()
            .unwrap()
            .success();
        assert!(ok, "chown {}", p.display());
    }
}

/// A fresh directory tree for one workload: `home`, `tmpdir` and `work`
/// under a scratch dir named after the workload and user, owned by the user.
pub struct Tree {
    pub root: PathBuf,
    pub home: PathBuf,
    pub tmpdir: PathBuf,
    pub work: PathBuf,
}

impl Tree {
    pub fn new(tag: &str, user: User) -> Tree {
        let root = scratch::fresh(&format!("rw-{tag}-{}-{}", user.label(), std::process::id()));
        let t = Tree {
            home: root.join("home"),
            tmpdir: root.join("tmpdir"),
            work: root.join("work"),
            root,
        };
        for d in [&t.home, &t.tmpdir, &t.work] {
            std::fs::create_dir_all(d).unwrap();
        }
        give(user, &t.root);
        t
    }
    /// The same tree under /tmp, outside every git repository (the scratch
    /// base may lie inside this checkout, and a writable root below a
    /// repository's worktree may have no `.git` made in it, docs/
    /// filesystem.md, which changes what a tool that makes one does).
    pub fn new_outside_repos(tag: &str, user: User) -> Tree {
        let uid = match user {
            User::Nobody => 65534,
            // SAFETY: geteuid never fails.
            User::Invoker => unsafe { libc::geteuid() },
        };
        let root = scratch::fresh_in_tmp(
            &format!("rw-{tag}-{}-{}", user.label(), std::process::id()),
            uid,
        );
        let t = Tree {
            home: root.join("home"),
            tmpdir: root.join("tmpdir"),
            work: root.join("work"),
            root,
        };
        for d in [&t.home, &t.tmpdir, &t.work] {
            std::fs::create_dir_all(d).unwrap();
        }
        give(user, &t.root);
        t
    }
    pub fn env(&self) -> Env {
        Env::new(&self.home, &self.tmpdir)
    }
    /// Empties `work`, `home` and `tmpdir` for the next run at the same paths.
    pub fn reset(&self, user: User) {
        for d in [&self.home, &self.tmpdir, &self.work] {
            scratch::remove(d);
            std::fs::create_dir_all(d).unwrap();
        }
        give(user, &self.root);
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        scratch::remove(&self.root);
    }
}

/// `git` on the host as the invoker, for building trees and reading their
/// state afterwards (any owner accepted: the trees of uid 65534 too).
pub fn git(dir: &Path, env: &Env, args: &[&str]) -> String {
    let mut c = Command::new("git");
    env.apply(&mut c);
    let o = c
        .args(["-c", "safe.directory=*", "-C"])
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Like `git`, but returns whatever it printed and never fails.
pub fn git_any(dir: &Path, env: &Env, args: &[&str]) -> String {
    let mut c = Command::new("git");
    env.apply(&mut c);
    let o = c
        .args(["-c", "safe.directory=*", "-C"])
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    format!(
        "{}{}rc={}\n",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
        o.status.code().unwrap_or(-1)
    )
}

/// Everything a later person would see of a repository: refs, HEAD, every
/// commit with what it changed, the stash, status (ignored files too), lock
/// files, and the files (and empty directories) of the checkout.
pub fn repo_state(dir: &Path, env: &Env) -> String {
    repo_state_skipping(dir, env, &[])
}

/// `repo_state` without the build outputs named in `skip` (top-level
/// entries whose file names vary from run to run, e.g. cargo's
/// incremental directories): they are left out of the file listing and
/// of the ignored files.
pub fn repo_state_skipping(dir: &Path, env: &Env, skip: &[&str]) -> String {
    let mut s = String::new();
    let ignored = if skip.is_empty() {
        "--ignored"
    } else {
        "--ignored=no"
    };
    for (title, args) in [
        (
            "refs",
            &["for-each-ref", "--format=%(refname) %(objectname)"][..],
        ),
        ("HEAD", &["symbolic-ref", "-q", "HEAD"][..]),
        ("head", &["rev-parse", "HEAD"][..]),
        (
            "log",
            &[
                "log",
                "--all",
                "--format=%H %T %P %s",
                "--name-status",
                "--no-renames",
            ][..],
        ),
        ("ls-tree", &["ls-tree", "-r", "HEAD"][..]),
        ("stash", &["stash", "list", "--format=%H %gs"][..]),
        (
            "status",
            &["status", "--porcelain=v1", "--untracked-files=all", ignored][..],
        ),
        ("worktrees", &["worktree", "list", "--porcelain"][..]),
        ("fsck", &["fsck", "--no-progress", "--no-dangling"][..]),
    ] {
        s.push_str(&format!("## {title}\n{}", git_any(dir, env, args)));
    }
    s.push_str("## files\n");
    let mut skip_all = vec![".git"];
    skip_all.extend_from_slice(skip);
    s.push_str(&listing(dir, &skip_all));
    let gd = PathBuf::from(git(dir, env, &["rev-parse", "--git-common-dir"]).trim());
    let gd = if gd.is_absolute() { gd } else { dir.join(gd) };
    s.push_str("## lock files\n");
    for l in listing(&gd, &[]).lines() {
        if l.contains(".lock") {
            s.push_str(l);
            s.push('\n');
        }
    }
    s
}

/// The tree under `dir`, one `type path` line each, sorted, skipping the
/// named top-level entries. Never follows symlinks.
pub fn listing(dir: &Path, skip: &[&str]) -> String {
    let mut out = Vec::new();
    fn walk(base: &Path, d: &Path, skip: &[&str], out: &mut Vec<String>) {
        let Ok(rd) = std::fs::read_dir(d) else { return };
        for e in rd.flatten() {
            let p = e.path();
            let rel = p.strip_prefix(base).unwrap().display().to_string();
            if skip.contains(&rel.as_str()) {
                continue;
            }
            let Ok(m) = std::fs::symlink_metadata(&p) else {
                continue;
            };
            let t = if m.is_dir() {
                "d"
            } else if m.file_type().is_symlink() {
                "l"
            } else {
                "f"
            };
            out.push(format!("{t} {rel}"));
            if m.is_dir() {
                walk(base, &p, skip, out);
            }
        }
    }
    walk(dir, dir, skip, &mut out);
    out.sort();
    let mut s = out.join("\n");
    s.push('\n');
    s
}

/// Every entry under `dir` with its type, mode, size, modification time
/// and (for a file) an FNV-1a hash of its bytes; a symlink with its
/// target. Never follows symlinks.
pub fn tree_state(dir: &Path) -> String {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let Ok(m) = std::fs::symlink_metadata(&p) else {
                continue;
            };
            let rel = p.strip_prefix(dir).unwrap().display().to_string();
            let what = if m.file_type().is_symlink() {
                format!("l -> {}", std::fs::read_link(&p).unwrap().display())
            } else if m.is_dir() {
                todo.push(p.clone());
                "d".to_string()
            } else {
                let mut h: u64 = 0xcbf2_9ce4_8422_2325;
                for b in std::fs::read(&p).unwrap() {
                    h ^= u64::from(b);
                    h = h.wrapping_mul(0x0000_0100_0000_01b3);
                }
                format!("f {} {h:016x}", m.len())
            };
            out.push(format!(
                "{rel} {what} mode={:o} mtime={}.{}",
                m.permissions().mode(),
                m.mtime(),
                m.mtime_nsec()
            ));
        }
    }
    out.sort();
    out.join("\n") + "\n"
}

/// `diff -u` of two texts, or None when equal.
pub fn diff(label: &str, want: &str, got: &str) -> Option<String> {
    if want == got {
        return None;
    }
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let d = scratch::fresh(&format!("rw-diff-{}-{n}", std::process::id()));
    let a = d.join("without-dcjail");
    let b = d.join("with-dcjail");
    std::fs::write(&a, want).unwrap();
    std::fs::write(&b, got).unwrap();
    let o = Command::new("diff")
        .args(["-u", "--label", "without dcjail", "--label", "with dcjail"])
        .arg(&a)
        .arg(&b)
        .output()
        .unwrap();
    scratch::remove(&d);
    Some(format!(
        "--- {label}: differs from the run without dcjail:\n{}",
        String::from_utf8_lossy(&o.stdout)
    ))
}

/// Replaces the variable parts of tool output (durations) with a fixed word.
pub fn normalize_times(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for line in s.lines() {
        let words: Vec<String> = line.split(' ').map(time_word).collect();
        out.push_str(&words.join(" "));
        out.push('\n');
    }
    out
}

/// One word of tool output with a duration (`14ms`, `1.05s,`) replaced by
/// `<time>`, its trailing punctuation kept.
pub fn time_word(w: &str) -> String {
    let core = w.trim_end_matches([',', ')', ';', '.']);
    let tail = &w[core.len()..];
    let num = core
        .trim_end_matches("ms")
        .trim_end_matches('s')
        .trim_end_matches('m');
    let is_time = core.len() > num.len()
        && !num.is_empty()
        && num.chars().all(|c| c.is_ascii_digit() || c == '.');
    if is_time {
        format!("<time>{tail}")
    } else {
        w.to_string()
    }
}

/// Wall times of the workloads, printed as ratios jailed/direct.
static TIMES: Mutex<Vec<(String, String, String, f64)>> = Mutex::new(Vec::new());

pub fn record(workload: &str, user: User, mode: Mode, secs: f64) {
    TIMES.lock().unwrap().push((
        workload.to_string(),
        user.label().to_string(),
        mode.label().to_string(),
        secs,
    ));
}

/// One line per workload, user and backend: the direct and jailed wall
/// times (the fastest of each, as the first run warms the caches) and their
/// ratio. Printed, never asserted.
pub fn print_timings(workload_prefix: &str) {
    let t = TIMES.lock().unwrap();
    let mut by: BTreeMap<(String, String, String), f64> = BTreeMap::new();
    for (w, u, m, s) in t.iter().filter(|x| x.0.starts_with(workload_prefix)) {
        let e = by.entry((w.clone(), u.clone(), m.clone())).or_insert(*s);
        *e = e.min(*s);
    }
    for ((workload, u, m), s) in &by {
        if m == "direct" {
            continue;
        }
        if let Some(d) = by.get(&(workload.clone(), u.clone(), "direct".to_string())) {
            println!(
                "TIMING {workload:<24} user={u:<8} backend={m:<8} direct={d:.3}s jailed={s:.3}s ratio={:.2}",
                s / d
            );
        }
    }
}

/// The names SPEC §5 protects and dcjail may make placeholders for, as
/// the first component of a path in a writable root: what must never
/// appear in /tmp or $TMPDIR because of a run.
pub fn dcjail_names() -> Vec<String> {
    let mut v: Vec<String> = [
        ".git",
        ".gitmodules",
        ".bashrc",
        ".bash_profile",
        ".bash_login",
        ".bash_logout",
        ".profile",
        ".zshrc",
        ".zshenv",
        ".zprofile",
        ".zlogin",
        ".zlogout",
        ".gitconfig",
        ".config",
        ".ssh",
        ".vscode",
        ".idea",
        ".mcp.json",
        ".claude",
        ".dcjail",
        ".codex",
        ".cursor",
        ".gemini",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for e in dcjail::protected::entries(dcjail::protected::Scope::Root) {
        let first = e.path.split('/').next().unwrap_or(e.path).to_string();
        if !v.contains(&first) {
            v.push(first);
        }
    }
    v
}

/// The names in a directory (not recursive).
pub fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The real cargo and its toolchain, found from the environment the tests
/// were started with (cargo sets CARGO), so no rustup proxy is involved.
#[derive(Clone)]
pub struct Toolchain {
    pub cargo: PathBuf,
    pub bin_dir: PathBuf,
    pub cargo_home: PathBuf,
}

pub fn toolchain() -> Toolchain {
    let cargo = std::env::var_os("CARGO")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("cargo"));
    let cargo = std::fs::canonicalize(&cargo).unwrap_or(cargo);
    let bin_dir = cargo
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("/usr/bin"));
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .unwrap_or_else(|| PathBuf::from("/nonexistent"));
    Toolchain {
        cargo,
        bin_dir,
        cargo_home,
    }
}

/// Every user the suite runs as: each gets a toolchain it can run
/// (`toolchain_for`), so no user's cargo runs are left out.
pub fn cargo_users() -> Vec<User> {
    users()
}

/// The toolchain `user` runs: the one running the tests when the user can
/// run it and read its cargo home's registry; otherwise (uid 65534, with
/// the toolchain in root's mode-0700 home) a copy of it under the scratch
/// base — `bin` and `lib` of its sysroot and the cargo home's `registry`,
/// hard links where the filesystem allows (a copy otherwise) in
/// directories that user can enter and not write — so its runs use the
/// same cargo and rustc and the same registry, read-only.
pub fn toolchain_for(user: User) -> Toolchain {
    let tc = toolchain();
    if can_run(user, &[&tc.cargo, &tc.bin_dir.join("rustc")])
        && can_read(user, &tc.cargo_home.join("registry"))
    {
        return tc;
    }
    static COPY: OnceLock<Toolchain> = OnceLock::new();
    let copy = COPY.get_or_init(|| copy_toolchain(&tc)).clone();
    assert!(
        can_run(user, &[&copy.cargo, &copy.bin_dir.join("rustc")]),
        "{} cannot run the copy of the toolchain at {}",
        user.label(),
        copy.bin_dir.display()
    );
    copy
}

fn copy_toolchain(tc: &Toolchain) -> Toolchain {
    let sysroot = tc.bin_dir.parent().expect("the toolchain's sysroot");
    assert!(
        sysroot != Path::new("/usr") && sysroot != Path::new("/"),
        "a toolchain in {} that uid 65534 cannot run",
        sysroot.display()
    );
    let dst = scratch::base().join(format!("toolchain-{}", scratch::checkout_key()));
    let cargo_name = tc.cargo.file_name().expect("cargo's file name");
    let stamp = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| (m.len(), m.mtime(), m.mtime_nsec()))
            .ok()
    };
    let made = Toolchain {
        cargo: dst.join("bin").join(cargo_name),
        bin_dir: dst.join("bin"),
        cargo_home: dst.join("cargo-home"),
    };
    // Test binaries run in parallel: one makes the copy, the others wait.
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dst.with_extension("lock"))
        .expect("open the toolchain copy's lock");
    let _held = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| e)
        .expect("lock the toolchain copy");
    // One copy per checkout, made again when the toolchain changed (a
    // hard link has the original's size and times; a copy keeps them, -a).
    if stamp(&made.cargo).is_some() && stamp(&made.cargo) == stamp(&tc.cargo) {
        return made;
    }
    let tmp = dst.with_extension(format!("new{}", std::process::id()));
    scratch::remove(&tmp);
    if dst.exists() {
        scratch::remove(&dst);
    }
    std::fs::create_dir_all(tmp.join("cargo-home")).expect("make the toolchain copy's directory");
    let mut parts: Vec<(PathBuf, PathBuf)> = vec![
        (sysroot.join("bin"), tmp.join("bin")),
        (sysroot.join("lib"), tmp.join("lib")),
    ];
    let reg = tc.cargo_home.join("registry");
    if reg.is_dir() {
        parts.push((reg, tmp.join("cargo-home/registry")));
    }
    for (from, to) in parts {
        let linked = Command::new("cp")
            .arg("-al")
            .arg(&from)
            .arg(&to)
            .stderr(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if !linked {
            scratch::remove(&to);
            let ok = Command::new("cp")
                .arg("-a")
                .arg(&from)
                .arg(&to)
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            assert!(ok, "copy {} to {}", from.display(), to.display());
        }
    }
    for d in [&tmp, &tmp.join("cargo-home")] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::rename(&tmp, &dst).expect("put the toolchain copy in place");
    made
}

/// Whether `user` can list and enter `dir`.
pub fn can_read(user: User, dir: &Path) -> bool {
    succeeds_as(user, "test -r \"$0\" && test -x \"$0\"", dir)
}

/// Whether `user` can run each of `programs` as a shell would (uid 65534
/// cannot when they live in a mode-0700 home).
pub fn can_run(user: User, programs: &[&Path]) -> bool {
    programs
        .iter()
        .all(|program| succeeds_as(user, "exec \"$0\" --version", program))
}

/// Whether `sh -c script arg`, run as `user` in `/` without dcjail, exits 0.
fn succeeds_as(user: User, script: &str, arg: &Path) -> bool {
    let mut words = prefix(Mode::Direct, user, Path::new("/"), &[]);
    words.extend(["sh".into(), "-c".into(), script.into()]);
    words.push(arg.into());
    Command::new(&words[0])
        .args(&words[1..])
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// The network a run from a loopback index needs: under bwrap the
/// allowlist naming the server; landlock cannot hold an address allowlist
/// (it refuses one, exit 122), so its runs get `full` and show the
/// caches, not the network; none without dcjail.
pub fn index_net_opts(mode: Mode, port: u16) -> Vec<String> {
    match mode {
        Mode::Direct => vec![],
        Mode::Jail(Backend::Bwrap) => vec![
            "--net".into(),
            "allowlist".into(),
            "--allow-domain".into(),
            format!("127.0.0.1:{port}"),
        ],
        Mode::Jail(Backend::Landlock) => vec!["--net".into(), "full".into()],
    }
}

/// A loopback HTTP server for package indexes: serves the files under
/// `root` (a directory request gets its `index.html` or `index.json`),
/// counts requests, and stops when dropped.
pub struct StaticServer {
    pub port: u16,
    pub requests: std::sync::Arc<Mutex<Vec<String>>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl StaticServer {
    pub fn start(root: &Path) -> StaticServer {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        l.set_nonblocking(true).unwrap();
        let requests = std::sync::Arc::new(Mutex::new(Vec::new()));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (root, req2, stop2) = (root.to_path_buf(), requests.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop2.load(std::sync::atomic::Ordering::SeqCst) {
                match l.accept() {
                    Ok((c, _)) => {
                        let (root, req) = (root.clone(), req2.clone());
                        std::thread::spawn(move || serve_one(c, &root, &req));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        StaticServer {
            port,
            requests,
            stop,
        }
    }
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
    pub fn count(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
}

impl Drop for StaticServer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

fn serve_one(mut c: TcpStream, root: &Path, req: &Mutex<Vec<String>>) {
    let _ = c.set_nonblocking(false);
    let _ = c.set_read_timeout(Some(Duration::from_secs(10)));
    loop {
        let mut head = Vec::new();
        let mut b = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            match c.read(&mut b) {
                Ok(1) => head.push(b[0]),
                _ => return,
            }
            if head.len() > 65536 {
                return;
            }
        }
        let head = String::from_utf8_lossy(&head).into_owned();
        let first = head.lines().next().unwrap_or("").to_string();
        let keep = !head.to_ascii_lowercase().contains("connection: close");
        req.lock().unwrap().push(first.clone());
        let mut target = first.split(' ').nth(1).unwrap_or("/").to_string();
        // A proxy may forward the absolute form.
        if let Some(rest) = target.strip_prefix("http://") {
            target = rest
                .find('/')
                .map(|i| rest[i..].to_string())
                .unwrap_or("/".into());
        }
        let path = target.split(['?', '#']).next().unwrap_or("/");
        let path = percent_decode(path);
        let rel = path.trim_start_matches('/');
        let body = if rel.split('/').any(|c| c == "..") {
            None
        } else {
            let p = root.join(rel);
            if p.is_dir() {
                ["index.html", "index.json"]
                    .iter()
                    .map(|i| p.join(i))
                    .find(|i| i.is_file())
                    .and_then(|i| std::fs::read(&i).ok().map(|b| (i, b)))
            } else {
                std::fs::read(&p).ok().map(|b| (p, b))
            }
        };
        let ok = match body {
            Some((p, b)) => {
                let ct = match p.extension().and_then(|e| e.to_str()) {
                    Some("html") => "text/html",
                    Some("json") => "application/json",
                    Some("tgz") => "application/octet-stream",
                    _ => "application/octet-stream",
                };
                let h = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: {ct}\r\nContent-Length: {}\r\n{}\r\n",
                    b.len(),
                    if keep { "" } else { "Connection: close\r\n" }
                );
                c.write_all(h.as_bytes()).is_ok() && c.write_all(&b).is_ok()
            }
            None => {
                let h = format!(
                    "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n{}\r\n",
                    if keep { "" } else { "Connection: close\r\n" }
                );
                c.write_all(h.as_bytes()).is_ok()
            }
        };
        if !ok || !keep {
            return;
        }
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
