//! `dcjail worktree enter|exit`: the worktree lifecycle (issue 5, the seed
//! design's EnterWorktree/ExitWorktree). It owns creating a throwaway git
//! worktree for a call to run in and folding it back into a branch. It must
//! never lose work: a refusal or a failure leaves the worktree, its changes
//! and its branch where they were.
//!
//! Where worktrees go: `<parent>/<name>.worktrees/dc-wt-<id>` next to the
//! main checkout `<parent>/<name>` (for a bare repository, next to it too),
//! on a new branch `dc-wt-<id>`. Beside, not inside: nothing appears in the
//! main checkout's `git status`, tools that crawl the checkout do not see a
//! second copy of the sources, the path is not under the protected `.dcjail`
//! of a writable root, and, unlike `/tmp`, it survives a reboot and is not
//! shared with other users.
//!
//! Git is run by absolute path, found on PATH skipping relative entries and
//! any directory inside the repository or worktree at hand (a `git` planted
//! in the checkout is never run), with the repository-locating variables
//! `git rev-parse --local-env-vars` lists (GIT_DIR, GIT_WORK_TREE, …)
//! removed, and with no `-c` override: the user's hooks run, and a hook that
//! refuses a commit makes `exit` fail.
//!
//! Exit status: 0 done; 120 `plan-blocked` (enter in plan mode); 125
//! `usage-error`/`policy-error` (bad arguments or policy, not in a git
//! repository, already inside a dcjail worktree, PATH not a dcjail
//! worktree); 1 when git itself failed (no git, `worktree add` failed, the
//! commit was refused by a hook, the removal failed). A git failure is not a
//! refusal: git and the hooks have run and their stderr is shown as is, so
//! it does not use the refusal statuses; its last line is
//! `dcjail: worktree: <what failed>; <what was kept>`.

use crate::error::{Error, Failure};
use crate::policy::{GateArgs, Overrides};
use clap::{Parser, Subcommand};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Branch and directory names of dcjail worktrees start with this.
pub const PREFIX: &str = "dc-wt-";

/// The repository-locating variables a parent git (a hook running dcjail,
/// say) may have set; `git rev-parse --local-env-vars` prints this list.
const GIT_LOCAL_ENV: &[&str] = &[
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_OBJECT_DIRECTORY",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_REPLACE_REF_BASE",
    "GIT_PREFIX",
    "GIT_SHALLOW_FILE",
    "GIT_COMMON_DIR",
];

/// dcjail worktree: make a throwaway git worktree, or fold one back.
#[derive(Parser, Debug)]
#[command(
    name = "dcjail worktree",
    subcommand_required = true,
    arg_required_else_help = false
)]
struct WorktreeCli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Make a fresh git worktree on a new branch dc-wt-<id>; print its path
    Enter {
        /// Branch (or commit) to start from; default: HEAD
        #[arg(long, value_name = "BRANCH")]
        base: Option<String>,
        /// Print {path, branch, base, base_commit} as JSON
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        gate: GateArgs,
    },
    /// Commit the worktree's changes on its branch and remove it, or remove
    /// it (and its branch) when nothing changed
    Exit {
        /// The worktree, as `enter` printed it
        #[arg(value_name = "PATH", value_hint = clap::ValueHint::DirPath)]
        path: PathBuf,
        /// Print {path, branch, committed, commit, files, removed, branch_kept} as JSON
        #[arg(long)]
        json: bool,
    },
}

/// The `worktree` parser, for the completion generator.
pub fn command() -> clap::Command {
    <WorktreeCli as clap::CommandFactory>::command()
}

/// A failure after git ran: exit 1, one last line of our own.
struct GitFailure(String);

impl From<GitFailure> for Failure {
    fn from(g: GitFailure) -> Self {
        Failure::Tool {
            who: "worktree",
            message: g.0,
        }
    }
}

type Res<T> = std::result::Result<T, Failure>;

pub fn main(args: &[OsString]) -> i32 {
    let mut a = vec![OsString::from("dcjail worktree")];
    a.extend(args.iter().cloned());
    let cli: WorktreeCli = match crate::usage::parse(a) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let result = match cli.cmd {
        Cmd::Enter { base, json, gate } => enter(args, base.as_deref(), json, gate),
        Cmd::Exit { path, json } => exit(&path, json),
    };
    crate::error::finish(result)
}

/// `worktree enter`: the policy loaded and the plan-mode gate run as for a
/// run, then a fresh worktree beside the main checkout.
fn enter(args: &[OsString], base: Option<&str>, json: bool, gate: GateArgs) -> Res<()> {
    let o = Overrides {
        gate,
        ..Overrides::default()
    };
    let (policy, facts) = crate::run::load(&o, None)?;
    let mut argv = vec![OsString::from("dcjail"), OsString::from("worktree")];
    argv.extend(args.iter().cloned());
    crate::run::gate(&policy, &argv, &facts, crate::decide::enter_worktree)?;
    let cwd = std::fs::canonicalize(&facts.cwd).unwrap_or(facts.cwd.clone());
    if let Some(wt) = enclosing_dcjail_worktree(&cwd) {
        return Err(Error::InsideWorktree(wt).into());
    }
    let Some(top) = enclosing_checkout(&cwd) else {
        return Err(Error::NotInRepo(cwd).into());
    };
    let git = Git::find(std::slice::from_ref(&top))?;
    let main_checkout = main_checkout_of(&git.common_dir(&cwd)?);
    let git = Git::find(&[top, main_checkout.clone()])?;
    let base_name = base.unwrap_or("HEAD");
    let base_commit = resolve_base(&git, &cwd, base_name)?;
    let home = worktrees_home(&main_checkout)?;
    let made = add_worktree(&git, &cwd, &home, &base_commit)?;
    if json {
        let v = serde_json::json!({
            "path": made.path.to_string_lossy(),
            "branch": made.branch,
            "base": base_name,
            "base_commit": base_commit,
        });
        println!("{v}");
    } else {
        println!("{}", made.path.display());
    }
    Ok(())
}

/// The main checkout a git common dir belongs to: the directory holding
/// `.git`, or the bare repository itself.
fn main_checkout_of(common: &Path) -> PathBuf {
    if common.file_name() == Some(OsStr::new(".git")) {
        common
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or(common.to_path_buf())
    } else {
        common.to_path_buf()
    }
}

/// The commit `--base` names, refused when it names none.
fn resolve_base(git: &Git, cwd: &Path, base_name: &str) -> Res<String> {
    let spec = format!("{base_name}^{{commit}}");
    let found = git
        .capture(
            cwd,
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                "--end-of-options",
                &spec,
            ],
        )
        .ok()
        .map(|o| String::from_utf8_lossy(&o).trim().to_string())
        .filter(|s| !s.is_empty());
    found.ok_or_else(|| Error::BadBase(base_name.to_string()).into())
}

/// `<parent>/<name>.worktrees` beside the main checkout, created.
fn worktrees_home(main_checkout: &Path) -> Res<PathBuf> {
    let (parent, name) = match (main_checkout.parent(), main_checkout.file_name()) {
        (Some(p), Some(n)) => (p.to_path_buf(), n.to_os_string()),
        _ => return Err(Error::NoPlaceBeside(main_checkout.to_path_buf()).into()),
    };
    let mut home_name = name;
    home_name.push(".worktrees");
    let home = parent.join(home_name);
    std::fs::create_dir_all(&home).map_err(|e| {
        GitFailure(format!(
            "cannot create {}: {}",
            home.display(),
            crate::policy::io_words(&e)
        ))
    })?;
    Ok(std::fs::canonicalize(&home).unwrap_or(home))
}

/// A worktree `enter` made.
struct Made {
    path: PathBuf,
    branch: String,
}

/// `git worktree add` on a fresh `dc-wt-<id>` branch and directory under
/// `home`, starting at `base_commit`.
fn add_worktree(git: &Git, cwd: &Path, home: &Path, base_commit: &str) -> Res<Made> {
    for _ in 0..8 {
        let branch = format!("{PREFIX}{}", random_id());
        let path = home.join(&branch);
        let taken = std::fs::symlink_metadata(&path).is_ok()
            || git
                .status(
                    cwd,
                    &[
                        "show-ref",
                        "--verify",
                        "--quiet",
                        &format!("refs/heads/{branch}"),
                    ],
                )
                .unwrap_or(true);
        if taken {
            continue;
        }
        let mut add: Vec<&OsStr> = ["worktree", "add", "-q", "--no-track", "-b"]
            .iter()
            .map(OsStr::new)
            .collect();
        add.push(OsStr::new(&branch));
        add.push(path.as_os_str());
        add.push(OsStr::new(base_commit));
        if !git.run(cwd, &add)? {
            // Only removes the `.worktrees` dir when this call left it empty.
            let _ = std::fs::remove_dir(home);
            return Err(GitFailure(format!(
                "`git worktree add {}` failed; nothing was created",
                path.display()
            ))
            .into());
        }
        return Ok(Made { path, branch });
    }
    Err(GitFailure("no free dc-wt-<id> name after 8 tries".into()).into())
}

/// What `exit` found and did, for its output.
struct ExitReport {
    path: PathBuf,
    branch: String,
    commit: Option<String>,
    files: Vec<String>,
    branch_kept: bool,
}

/// `worktree exit`: checks PATH is a dcjail worktree on its own branch,
/// commits what changed, removes the worktree, and deletes the branch when
/// nothing of it would be lost.
fn exit(path: &Path, json: bool) -> Res<()> {
    let Checked {
        wt,
        common,
        git,
        branch,
    } = check_worktree(path)?;
    let mut report = ExitReport {
        path: wt.clone(),
        branch: branch.clone(),
        commit: None,
        files: Vec::new(),
        branch_kept: true,
    };
    if has_changes(&git, &wt)? {
        commit_changes(&git, &wt, &mut report)?;
    } else {
        report.branch_kept = has_own_commits(&git, &common, &branch);
    }
    remove_worktree(&git, &common, &mut report)?;
    print_exit(&report, json);
    Ok(())
}

/// A worktree `exit` may fold back: canonical, with its git common dir, the
/// git to run there and its branch.
struct Checked {
    wt: PathBuf,
    common: PathBuf,
    git: Git,
    branch: String,
}

/// Refuses, changing nothing, anything but a dcjail worktree on its own
/// branch.
fn check_worktree(path: &Path) -> Res<Checked> {
    let refuse = |why: String| -> Failure {
        Error::NotDcjailWorktree {
            path: path.to_path_buf(),
            why,
        }
        .into()
    };
    let wt = std::fs::canonicalize(path).map_err(|e| refuse(crate::policy::io_words(&e)))?;
    let dir_name = wt
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !dir_name.starts_with(PREFIX) {
        return Err(refuse(format!("its name does not start with {PREFIX}")));
    }
    let dirs = crate::plan::git_dirs(&wt.join(".git"));
    let [gitdir, common] = dirs.as_slice() else {
        return Err(refuse(
            "it has no `.git` file naming a linked worktree".into(),
        ));
    };
    let admin = gitdir.parent();
    if admin.and_then(Path::file_name) != Some(OsStr::new("worktrees"))
        || admin.and_then(Path::parent) != Some(common.as_path())
    {
        return Err(refuse(
            "its `.git` file does not name a linked worktree".into(),
        ));
    }
    let git = Git::find(&[wt.clone(), main_checkout_of(common)])?;
    let top = git
        .capture(&wt, &["rev-parse", "--show-toplevel"])
        .map(|o| PathBuf::from(OsStr::from_bytes(trim_nl(&o))))
        .map_err(|_| refuse("git does not see a worktree there".into()))?;
    if std::fs::canonicalize(&top).ok().as_ref() != Some(&wt) {
        return Err(refuse(format!("its top is {}", top.display())));
    }
    let branch = git
        .capture(&wt, &["symbolic-ref", "-q", "--short", "HEAD"])
        .map(|o| String::from_utf8_lossy(trim_nl(&o)).into_owned())
        .unwrap_or_default();
    if branch != dir_name {
        let on = if branch.is_empty() {
            "a detached HEAD".to_string()
        } else {
            format!("branch `{branch}`")
        };
        return Err(Error::OffOwnBranch {
            wt,
            on,
            own: dir_name,
        }
        .into());
    }
    Ok(Checked {
        common: common.clone(),
        wt,
        git,
        branch,
    })
}

/// Whether `git status` shows anything to commit (untracked files and
/// submodules included).
fn has_changes(git: &Git, wt: &Path) -> Res<bool> {
    let status = git
        .capture(
            wt,
            &[
                "status",
                "--porcelain=v1",
                "-z",
                "--untracked-files=all",
                "--ignore-submodules=none",
            ],
        )
        .map_err(|_| {
            GitFailure(format!(
                "`git status` failed in {}; nothing was changed",
                wt.display()
            ))
        })?;
    Ok(!status.is_empty())
}

/// `git add -A` and a commit on the worktree's branch, the committed files
/// and the commit noted in `report`.
fn commit_changes(git: &Git, wt: &Path, report: &mut ExitReport) -> Res<()> {
    let branch = report.branch.clone();
    let kept = format!("{} and its changes are left as they were", wt.display());
    if !git.run(wt, &[OsStr::new("add"), OsStr::new("-A")])? {
        return Err(GitFailure(format!("`git add -A` failed; {kept}")).into());
    }
    let names = git
        .capture(
            wt,
            &["diff", "--cached", "--name-only", "-z", "--no-renames"],
        )
        .map_err(|_| GitFailure(format!("`git diff --cached` failed; {kept}")))?;
    report.files = names
        .split(|b| *b == 0)
        .filter(|n| !n.is_empty())
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .collect();
    let msg = format!("dcjail: worktree session {branch}");
    if !git.run(
        wt,
        &[
            OsStr::new("commit"),
            OsStr::new("-q"),
            OsStr::new("-m"),
            OsStr::new(&msg),
        ],
    )? {
        return Err(GitFailure(format!(
            "the commit on `{branch}` failed (see git's message above); {} keeps its changes (now staged) and nothing was removed",
            wt.display()
        ))
        .into());
    }
    report.commit = git
        .capture(wt, &["rev-parse", "HEAD"])
        .ok()
        .map(|o| String::from_utf8_lossy(trim_nl(&o)).into_owned());
    Ok(())
}

/// `git worktree remove`, then the `.worktrees` dir when it is empty and
/// the branch when `report` says it need not be kept.
fn remove_worktree(git: &Git, common: &Path, report: &mut ExitReport) -> Res<()> {
    let (wt, branch) = (report.path.clone(), report.branch.clone());
    // Removal runs from the git dir: the worktree is about to vanish.
    let remove = [OsStr::new("worktree"), OsStr::new("remove"), wt.as_os_str()];
    if !git.run(common, &remove)? {
        let done = match &report.commit {
            Some(c) => format!("the changes are committed as {c} on `{branch}`, but "),
            None => String::new(),
        };
        return Err(GitFailure(format!(
            "{done}`git worktree remove {}` failed; the worktree is still there",
            wt.display()
        ))
        .into());
    }
    // The `<name>.worktrees` dir goes with its last worktree.
    if let Some(home) = wt.parent() {
        if home.as_os_str().as_bytes().ends_with(b".worktrees") {
            let _ = std::fs::remove_dir(home);
        }
    }
    if !report.branch_kept {
        let deleted = git.run(
            common,
            &[
                OsStr::new("branch"),
                OsStr::new("-q"),
                OsStr::new("-D"),
                OsStr::new(&branch),
            ],
        )?;
        report.branch_kept = !deleted;
    }
    Ok(())
}

/// Whether `branch` holds commits no other branch, tag, remote branch or the
/// main HEAD reaches: deleting it would lose them (a command inside the
/// worktree may have committed and left it clean).
fn has_own_commits(git: &Git, common: &Path, branch: &str) -> bool {
    let exclude = format!("--exclude={branch}");
    let tip = format!("refs/heads/{branch}");
    match git.capture(
        common,
        &[
            "rev-list",
            "-n1",
            &tip,
            "--not",
            &exclude,
            "--branches",
            "--tags",
            "--remotes",
            "HEAD",
        ],
    ) {
        Ok(out) => !trim_nl(&out).is_empty(),
        // When in doubt, keep it.
        Err(_) => true,
    }
}

fn print_exit(r: &ExitReport, json: bool) {
    if json {
        let v = serde_json::json!({
            "path": r.path.to_string_lossy(),
            "branch": r.branch,
            "committed": r.commit.is_some(),
            "commit": r.commit,
            "files": r.files,
            "removed": true,
            "branch_kept": r.branch_kept,
        });
        println!("{v}");
        return;
    }
    match &r.commit {
        Some(c) => {
            let shown = crate::error::one_line;
            println!("branch: {}", shown(&r.branch));
            println!("path: {} (removed)", shown(&r.path.display().to_string()));
            println!("commit: {}", shown(c));
            println!("files:");
            for f in &r.files {
                println!("  {}", shown(f));
            }
        }
        None => {
            let b = if r.branch_kept {
                format!("branch {} kept: it has commits of its own", r.branch)
            } else {
                format!("branch {} deleted", r.branch)
            };
            println!(
                "{}",
                crate::error::one_line(&format!(
                    "no uncommitted changes: removed {}; {b}",
                    r.path.display()
                ))
            );
        }
    }
}

/// The git binary and how to run it.
struct Git {
    exe: PathBuf,
}

impl Git {
    /// Finds `git` on PATH, skipping relative entries and any directory
    /// inside one of `avoid`.
    fn find(avoid: &[PathBuf]) -> Res<Git> {
        let path = std::env::var_os("PATH").unwrap_or_default();
        for dir in std::env::split_paths(&path) {
            if !dir.is_absolute() {
                continue;
            }
            let Ok(canon) = std::fs::canonicalize(&dir) else {
                continue;
            };
            let cand = canon.join("git");
            let Ok(real) = std::fs::canonicalize(&cand) else {
                continue;
            };
            if avoid
                .iter()
                .any(|a| canon.starts_with(a) || real.starts_with(a))
            {
                continue;
            }
            if is_executable(&real) {
                return Ok(Git { exe: cand });
            }
        }
        Err(
            GitFailure("no `git` on PATH outside the repository; nothing was changed".into())
                .into(),
        )
    }

    fn command(&self, dir: &Path) -> Command {
        let mut c = Command::new(&self.exe);
        c.arg("-C").arg(dir);
        for v in GIT_LOCAL_ENV {
            c.env_remove(v);
        }
        for (k, _) in std::env::vars_os() {
            let k = k.as_bytes();
            if k.starts_with(b"GIT_CONFIG_KEY_") || k.starts_with(b"GIT_CONFIG_VALUE_") {
                c.env_remove(OsStr::from_bytes(k));
            }
        }
        c.stdin(Stdio::null());
        c
    }

    /// Runs git with its stdout sent to our stderr (our stdout is the
    /// answer) and its stderr shown; `Ok(false)` when it failed.
    fn run<S: AsRef<OsStr>>(&self, dir: &Path, args: &[S]) -> Res<bool> {
        use std::os::fd::AsFd;
        let stderr = std::io::stderr()
            .as_fd()
            .try_clone_to_owned()
            .map(Stdio::from)
            .unwrap_or_else(|_| Stdio::inherit());
        let st = self
            .command(dir)
            .args(args)
            .stdout(stderr)
            .stderr(Stdio::inherit())
            .status()
            .map_err(|e| {
                GitFailure(format!(
                    "cannot run {}: {}",
                    self.exe.display(),
                    crate::policy::io_words(&e)
                ))
            })?;
        Ok(st.success())
    }

    /// Runs git quietly and returns its stdout, or `Err` with its status.
    fn capture(&self, dir: &Path, args: &[&str]) -> std::result::Result<Vec<u8>, Option<i32>> {
        let out = self
            .command(dir)
            .args(args)
            .stderr(Stdio::null())
            .output()
            .map_err(|_| None)?;
        if out.status.success() {
            Ok(out.stdout)
        } else {
            Err(out.status.code())
        }
    }

    /// `Ok(true)` when git exits 0.
    fn status(&self, dir: &Path, args: &[&str]) -> std::result::Result<bool, ()> {
        match self.capture(dir, args) {
            Ok(_) => Ok(true),
            Err(Some(_)) => Ok(false),
            Err(None) => Err(()),
        }
    }

    fn common_dir(&self, cwd: &Path) -> Res<PathBuf> {
        let out = self
            .capture(
                cwd,
                &["rev-parse", "--path-format=absolute", "--git-common-dir"],
            )
            .map_err(|_| Failure::from(Error::NotInRepo(cwd.to_path_buf())))?;
        let p = PathBuf::from(OsStr::from_bytes(trim_nl(&out)));
        Ok(std::fs::canonicalize(&p).unwrap_or(p))
    }
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

fn trim_nl(b: &[u8]) -> &[u8] {
    let mut end = b.len();
    while end > 0 && (b[end - 1] == b'\n' || b[end - 1] == b'\r') {
        end -= 1;
    }
    &b[..end]
}

/// The nearest directory at or above `dir` holding a `.git` entry.
fn enclosing_checkout(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|a| std::fs::symlink_metadata(a.join(".git")).is_ok())
        .map(Path::to_path_buf)
}

/// The dcjail worktree `dir` is in, if any: an ancestor whose `.git` is a
/// file and which is named, or whose git dir is named, `dc-wt-…`.
pub fn enclosing_dcjail_worktree(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|a| {
            let dotgit = a.join(".git");
            let is_file = std::fs::symlink_metadata(&dotgit)
                .map(|m| m.is_file())
                .unwrap_or(false);
            if !is_file {
                return false;
            }
            let named = |p: &Path| {
                p.file_name()
                    .is_some_and(|n| n.as_bytes().starts_with(PREFIX.as_bytes()))
            };
            named(a)
                || crate::plan::git_dirs(&dotgit)
                    .first()
                    .is_some_and(|g| named(g))
        })
        .map(Path::to_path_buf)
}

/// Eight hex digits from the kernel's random source.
fn random_id() -> String {
    let mut buf = [0u8; 4];
    // SAFETY: `buf` is valid for writes of its length.
    #[cfg(target_os = "linux")]
    let ok =
        unsafe { libc::getrandom(buf.as_mut_ptr().cast(), buf.len(), 0) } == buf.len() as isize;
    // SAFETY: as above (getentropy takes up to 256 bytes).
    #[cfg(not(target_os = "linux"))]
    let ok = unsafe { libc::getentropy(buf.as_mut_ptr().cast(), buf.len()) } == 0;
    if !ok {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        buf = (t ^ std::process::id().rotate_left(16)).to_le_bytes();
    }
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_eight_hex_digits_and_vary() {
        let a = random_id();
        let b = random_id();
        assert_eq!(a.len(), 8);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn trim_nl_strips_only_line_ends() {
        assert_eq!(trim_nl(b"abc\n"), b"abc");
        assert_eq!(trim_nl(b" a \r\n"), b" a ");
        assert_eq!(trim_nl(b""), b"");
    }
}
