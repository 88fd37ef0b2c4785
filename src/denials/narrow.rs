//! Which directory a refused write meant, at the narrowest level that makes
//! a rerun work (`classify::suggest` turns it into an option), and what an
//! option opens beyond what it seems to. Pure but for `exists`/`is_dir`
//! checks of the host's tree: a suggestion names a directory that the
//! program's own next write lands in, never a file, never a temporary name.
//!
//! What was measured with the real programs (tests/advice_kinds.rs): vim
//! and less write `~/.viminfo.tmp` and `~/.lesshsQ`, renamed over
//! `~/.viminfo` and `~/.lesshst`; a tool's cache or data goes to
//! `~/.cache/TOOL` or `~/.local/share/TOOL`, in several subdirectories;
//! `git worktree add ../sib` makes `../sib` and then fails on `../sib/.git`
//! even with `../sib` allowed (a root's missing `.git` is protected); a
//! push to a bare repository writes `objects/` and `refs/`, and deleting a
//! packed branch rewrites `packed-refs` at its top, so the repository's
//! directory is what a rerun needs; a signed commit needs the gpg-agent's
//! socket only (gpg goes on without its lock file in `~/.gnupg`).

use std::path::{Path, PathBuf};

/// Directories in the home directory that hold one directory per program:
/// the program's own is one level below.
const HOME_CONTAINERS: &[&str] = &[
    ".cache",
    ".config",
    ".local",
    ".local/share",
    ".local/state",
    ".var/app",
];

/// The same outside the home directory.
const SYSTEM_CONTAINERS: &[&str] = &[
    "/usr/local/share",
    "/usr/local/lib",
    "/usr/local/include",
    "/usr/local/etc",
    "/usr/share",
    "/usr/lib",
    "/opt",
    "/var/lib",
    "/var/cache",
    "/etc",
];

/// Trust stores: a certificate or key added there is trusted by every
/// program that reads it, later and outside the sandbox.
const TRUST_STORES: &[&str] = &[
    "/etc/ssl",
    "/etc/pki",
    "/etc/ca-certificates",
    "/usr/local/share/ca-certificates",
    "/usr/share/ca-certificates",
    "~/.pki",
    "~/.local/share/ca-certificates",
];

/// What one refused path meant: the directory to allow (and whether the
/// program was making it), and what to say beside it.
#[derive(Debug, PartialEq, Eq)]
pub struct Meant {
    pub dir: PathBuf,
    /// The program made this very directory (it must be made first).
    pub made: bool,
    pub warning: Option<String>,
}

/// The final name a temporary name becomes, when the name says so: vim's
/// `X.tmp` (its viminfo) and `X~` (its backup), less's `.lesshsQ` (for
/// `.lesshst`), a lock `X.lock`, vim's swap `.X.swp` (about X), vim's
/// probe `4913`; `None` for a random mkstemp-style name (`X.Ab3dE9`,
/// `tmp…`), whose final name cannot be known; `Some(same)` otherwise.
pub fn final_name(name: &str) -> Option<String> {
    if name == ".lesshsQ" {
        return Some(".lesshst".into());
    }
    if name == "4913" || tmp_prefixed(name) {
        return None;
    }
    for suffix in [".tmp", "~", ".lock", ".new", ".part"] {
        if let Some(base) = name.strip_suffix(suffix).filter(|b| !b.is_empty()) {
            return Some(base.to_string());
        }
    }
    for swap in [".swp", ".swo", ".swn", ".swx"] {
        if let Some(base) = name
            .strip_suffix(swap)
            .and_then(|b| b.strip_prefix('.'))
            .filter(|b| !b.is_empty())
        {
            return Some(base.to_string());
        }
    }
    if random_suffix(name) {
        return None;
    }
    Some(name.to_string())
}

/// Python's `tempfile` names (`tmpab3kd9_x`, `tmp_objdir…`): `tmp` and
/// at least six more, a digit or `_` among them; a plain `tmp` or
/// `tmpfiles` is a name like any other.
fn tmp_prefixed(name: &str) -> bool {
    name.strip_prefix("tmp").is_some_and(|rest| {
        rest.len() >= 6 && rest.bytes().any(|b| b.is_ascii_digit() || b == b'_')
    })
}

/// `X.Ab3dE9`, `X-Fmu0Zq`, `X_k2Jd8a`: six letters and digits after a
/// separator, mixed the way mkstemp's `XXXXXX` are (a digit, or both
/// cases), which a word rarely is.
fn random_suffix(name: &str) -> bool {
    let Some(i) = name.rfind(['.', '-', '_']) else {
        return false;
    };
    let tail = &name[i + 1..];
    let alnum = tail.len() == 6 && tail.bytes().all(|b| b.is_ascii_alphanumeric());
    let digit = tail.bytes().any(|b| b.is_ascii_digit());
    let letter = tail.bytes().any(|b| b.is_ascii_alphabetic());
    let mixed = tail.bytes().any(|b| b.is_ascii_uppercase())
        && tail.bytes().any(|b| b.is_ascii_lowercase());
    i > 0 && alnum && letter && (digit || mixed)
}

/// Whether `name` is a temporary name (its final name differs or is
/// unknown).
pub fn is_temporary(name: &str) -> bool {
    final_name(name).as_deref() != Some(name)
}

/// The git directory holding `p` that is not a worktree's `.git`: a bare
/// repository (HEAD, objects/ and refs/ at its top), below `stop`.
pub fn bare_repo_holding(p: &Path, stop: Option<&Path>) -> Option<PathBuf> {
    p.ancestors()
        .skip(1)
        .take_while(|a| Some(*a) != stop && a.parent().is_some())
        .find(|a| a.join("HEAD").is_file() && a.join("objects").is_dir() && a.join("refs").is_dir())
        .map(Path::to_path_buf)
}

/// The top of the git worktree holding `p` (a directory with a `.git`
/// entry), below `stop`.
pub fn worktree_holding(p: &Path, stop: Option<&Path>) -> Option<PathBuf> {
    p.ancestors()
        .skip(1)
        .take_while(|a| Some(*a) != stop && a.parent().is_some())
        .find(|a| a.join(".git").symlink_metadata().is_ok())
        .map(Path::to_path_buf)
}

/// Whether the worktree `tree` is one of the workspace's project: beside
/// it (a sibling worktree, the main one of a linked workspace), or a linked
/// worktree whose `.git` file points into the workspace. Another
/// project's tree is not opened whole for one write in it.
fn related(tree: &Path, workspace: &Path) -> bool {
    if tree.parent().is_some() && tree.parent() == workspace.parent() {
        return true;
    }
    std::fs::read_to_string(tree.join(".git")).is_ok_and(|s| {
        s.strip_prefix("gitdir: ")
            .is_some_and(|g| Path::new(g.trim_end()).starts_with(workspace))
    })
}

/// The directory a refused write of `p` meant, or why none is suggested.
/// `op`: the call refused (`mkdir` makes `p`; a metadata call on an
/// existing directory changes `p` itself; any other writes in `p`'s
/// directory).
pub fn meant(
    p: &Path,
    op: &str,
    program: &str,
    home: Option<&Path>,
    workspace: &Path,
) -> Result<Meant, String> {
    let dir_op = matches!(op, "mkdir" | "mkdirat");
    let on_itself = super::classify::is_meta(op) && p.is_dir();
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = is_temporary(&name);
    let stop = home.filter(|h| p.starts_with(h));
    if let Some(bare) = bare_repo_holding(p, stop) {
        return Ok(Meant {
            warning: Some(bare_warning()),
            dir: bare,
            made: false,
        });
    }
    if let Some(tree) = worktree_holding(p, stop) {
        if !workspace.starts_with(&tree) && related(&tree, workspace) {
            return Ok(Meant {
                dir: tree,
                made: false,
                warning: None,
            });
        }
    }
    if dir_op && !temp && is_git(program) {
        return Err(GIT_MAKES_A_REPOSITORY.into());
    }
    // The directory the program wanted: the one it made (a temporary one
    // stands for the directory it is made in), else the file's directory.
    let (start, made) = if dir_op && !temp {
        (p.to_path_buf(), !p.is_dir())
    } else if on_itself {
        (p.to_path_buf(), false)
    } else {
        match p.parent() {
            Some(d) => (d.to_path_buf(), false),
            None => return Err("writing / needs danger-full-access".into()),
        }
    };
    match home.and_then(|h| start.strip_prefix(h).ok().map(|r| (h, r))) {
        Some((h, rest)) => in_home(h, rest, made, &name, temp),
        None => outside_home(&start, made, workspace),
    }
}

fn in_home(h: &Path, rest: &Path, made: bool, name: &str, temp: bool) -> Result<Meant, String> {
    if rest.as_os_str().is_empty() {
        // The why names the file: only a name that reads as it is.
        if !crate::error::showable(name) {
            return Err(super::classify::UNSHOWABLE.into());
        }
        let what = match (temp, final_name(name)) {
            (true, Some(f)) => format!(
                "`~/{name}` is a temporary name for `~/{f}`, a file directly in the home directory: "
            ),
            (true, None) => format!(
                "`~/{name}` is a temporary name (what it becomes is not known), directly in the home directory: "
            ),
            (false, _) => format!("`~/{name}` is a file directly in the home directory: "),
        };
        return Err(format!(
            "{what}a new entry directly in the home directory needs the home directory itself writable (danger-full-access); no narrower option allows it"
        ));
    }
    let rel = rest.to_string_lossy();
    // The program's own directory: the top-level entry, or one level below
    // a directory holding one per program.
    let mut level = 1;
    while let Some(c) = HOME_CONTAINERS
        .iter()
        .find(|c| Path::new(c).components().count() == level && rest.starts_with(c))
    {
        if rest == Path::new(c) {
            if made {
                return Err(format!(
                    "`~/{c}` holds a directory of every program's; make it (mkdir -p ~/{c}) and run again with --report: the report then names the program's own directory in it, the one to allow"
                ));
            }
            return Ok(Meant {
                dir: h.join(c),
                made: false,
                warning: Some(format!(
                    "`~/{c}` holds the files of every program (but what dcjail protects there): the command could change any of them"
                )),
            });
        }
        level += 1;
    }
    let top: PathBuf = rest.components().take(level).collect();
    let dir = h.join(&top);
    let made = made && rest == top;
    let warning =
        trust_store(&format!("~/{}", top.display())).or_else(|| trust_store(&format!("~/{rel}")));
    Ok(Meant { dir, made, warning })
}

fn outside_home(start: &Path, made: bool, workspace: &Path) -> Result<Meant, String> {
    let mut dir = start.to_path_buf();
    let mut made = made;
    if let Some(c) = SYSTEM_CONTAINERS
        .iter()
        .filter(|c| start.starts_with(c) && start != Path::new(c))
        .max_by_key(|c| c.len())
    {
        let level = Path::new(c).components().count() + 1;
        let top: PathBuf = start.components().take(level).collect();
        made = made && top == start;
        dir = top;
    }
    let shown = dir.to_string_lossy().into_owned();
    let mut warning = trust_store(&shown);
    if warning.is_none() && SYSTEM_CONTAINERS.iter().any(|c| dir == Path::new(c)) {
        warning = Some(format!(
            "`{shown}` holds the files of every program installed there: the command could change any of them"
        ));
    }
    if warning.is_none() && (workspace.starts_with(&dir) || holds_projects(&dir)) {
        warning = Some(format!(
            "`{shown}` holds other projects (the workspace's parent, or a directory of repositories): the command could change every one of them"
        ));
    }
    Ok(Meant { dir, made, warning })
}

/// Whether `dir` holds a git repository one level down.
fn holds_projects(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .take(4096)
        .any(|e| {
            e.path().join(".git").symlink_metadata().is_ok() || e.path().join("HEAD").is_file()
        })
}

fn trust_store(shown: &str) -> Option<String> {
    TRUST_STORES
        .iter()
        .find(|t| Path::new(shown).starts_with(t) || Path::new(t).starts_with(shown))
        .map(|t| {
            format!(
                "`{shown}` is (or holds) a trust store ({t}): a certificate or key the command adds there is trusted by every program that reads it, after the run and outside the sandbox"
            )
        })
}

/// Why a directory git makes outside the writable roots gets no option:
/// measured with `git worktree add ../sib` and the directory allowed (made
/// first), git still fails on `../sib/.git`.
const GIT_MAKES_A_REPOSITORY: &str = "git makes this directory to hold a repository or a linked worktree (clone, init, worktree add), and its `.git` cannot be created in a writable root: dcjail keeps it from the command, whose `.git` there would carry its own configuration into your later git commands; so allowing the directory would not make the rerun work. Make it outside the sandbox (git worktree add, git clone, or `dcjail worktree enter`), then allow that directory with --allow-write";

fn is_git(program: &str) -> bool {
    let base = program.rsplit('/').next().unwrap_or(program);
    base == "git" || base.starts_with("git-")
}

/// Said beside a suggestion that opens a bare repository.
pub fn bare_warning() -> String {
    "it opens the whole repository (objects, refs, packed-refs): the command can rewrite every branch in it; its hooks, config and objects/info/alternates stay read-only, as dcjail protects them in every repository below a writable root".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporary_names_map_to_what_they_become_or_to_nothing() {
        assert_eq!(final_name(".lesshsQ").as_deref(), Some(".lesshst"));
        assert_eq!(final_name(".viminfo.tmp").as_deref(), Some(".viminfo"));
        assert_eq!(final_name("notes.txt~").as_deref(), Some("notes.txt"));
        assert_eq!(final_name(".notes.txt.swp").as_deref(), Some("notes.txt"));
        assert_eq!(final_name("main.lock").as_deref(), Some("main"));
        assert_eq!(final_name("tmp_objdir-incoming-Fmu0Zq"), None);
        assert_eq!(final_name("data.Ab3dE9"), None);
        assert_eq!(final_name("4913"), None);
        for plain in [
            "config.toml",
            "readme",
            "my-notes",
            "archive.tar.gz",
            "x_static",
        ] {
            assert_eq!(final_name(plain).as_deref(), Some(plain), "{plain}");
            assert!(!is_temporary(plain));
        }
    }

    #[test]
    fn a_trust_store_is_named_in_a_warning() {
        assert!(trust_store("/usr/local/share/ca-certificates").is_some());
        assert!(trust_store("/etc/ssl/certs").is_some());
        assert!(trust_store("/usr/local/share/fonts").is_none());
    }
}
