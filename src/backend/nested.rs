//! A dcjail inside another dcjail (a subagent's inside its parent's): the
//! outer one's seccomp filter refuses new namespaces, so only landlock can
//! run, and landlock cannot keep a protected path inside a writable root
//! read-only and uncreatable. Where the outer sandbox already holds such a
//! path, the inner run relies on it, after checking that it really does,
//! and says so under `layers.relied_on_outer`.
//!
//! Owns the check, over the machine as the inner dcjail sees it:
//! - an existing protected path is held when it lies on a read-only mount
//!   (`fstatvfs` on the name itself, not what a symlink points to): its
//!   contents cannot change, and it cannot be removed or renamed (it is a
//!   mount point, or its directory is read-only too);
//! - a missing one is held when its first missing component cannot be
//!   created: the check creates it (`O_CREAT | O_EXCL`, no mode bits) and
//!   holds it only when that fails with EROFS (a read-only mount, or the
//!   outer broker's guard) or EACCES (no right to create there at all); one
//!   it did create is removed at once and the run refused;
//! - a repository's worktree is held when `.git` cannot be created inside
//!   its `.git` directory (the outer broker refuses `.git` in and below
//!   every worktree it keeps, by the same check).
//!
//! Whoever starts the inner dcjail can make it believe it is nested: that
//! makes only its own run rely on checks that then fail and refuse, never
//! the outer sandbox weaker.

use crate::plan::Plan;
use std::path::{Path, PathBuf};

/// What the outer sandbox holds for the inner plan.
#[derive(Debug, Default)]
pub struct Relied {
    /// The protected paths inside the writable roots the outer keeps.
    pub protected: Vec<PathBuf>,
    /// The worktrees in which the outer keeps any new `.git` from being made.
    pub zones: Vec<PathBuf>,
    /// The writable roots the outer keeps read-only: writing there fails.
    pub read_only_roots: Vec<PathBuf>,
}

impl Relied {
    /// `layers.relied_on_outer`, in words.
    pub fn words(&self) -> Vec<String> {
        let mut v = Vec::new();
        if !self.protected.is_empty() {
            v.push(format!(
                "{} protected paths inside the writable roots are kept read-only and uncreatable \
                 by the outer dcjail sandbox (checked at launch: on a read-only mount, or not \
                 creatable), not by this one",
                self.protected.len()
            ));
        }
        for z in &self.zones {
            v.push(format!(
                "no new `.git` in or below the worktree `{}`: kept by the outer dcjail sandbox \
                 (checked at launch), not by this one",
                z.display()
            ));
        }
        v
    }

    /// `layers.narrowed`: the writable roots the outer does not let this
    /// run write.
    pub fn narrowed(&self) -> Vec<String> {
        self.read_only_roots
            .iter()
            .map(|r| {
                format!(
                    "the writable root `{}` is on a read-only mount here: the outer dcjail \
                     sandbox does not let this one write there (writing fails with EROFS)",
                    r.display()
                )
            })
            .collect()
    }
}

/// How trying to create `p` went.
enum Made {
    /// EROFS or EACCES: it cannot be made here.
    Refused,
    /// It could: made and removed again (or the removal failed: `Err`).
    Could(Result<(), String>),
    /// Anything else (it appeared meanwhile, a directory vanished): unproven.
    Other(std::io::Error),
}

/// The open flags of a nested dcjail's launch check (below):
/// it tries to create the first missing component of each protected name
/// the outer sandbox is to hold, as an empty file, exclusively, expecting
/// EROFS or EACCES. O_NOCTTY and O_NONBLOCK change nothing for a regular
/// file; they mark the call so that the outer dcjail's report (`denials::classify`) can list it
/// apart from the command's own attempts.
pub const LAUNCH_CHECK_FLAGS: i32 = libc::O_WRONLY
    | libc::O_CREAT
    | libc::O_EXCL
    | libc::O_NOCTTY
    | libc::O_NONBLOCK
    | libc::O_NOFOLLOW;

/// Tries to create `p`, with the flags that let the outer dcjail's report
/// list the call as a launch check (`LAUNCH_CHECK_FLAGS`).
fn try_create(p: &Path) -> Made {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(LAUNCH_CHECK_FLAGS | libc::O_CLOEXEC)
        .mode(0o000)
        .open(p)
    {
        Ok(f) => {
            drop(f);
            Made::Could(
                std::fs::remove_file(p).map_err(|e| format!("and removing it again failed: {e}")),
            )
        }
        Err(e) if matches!(e.raw_os_error(), Some(libc::EROFS) | Some(libc::EACCES)) => {
            Made::Refused
        }
        Err(e) => Made::Other(e),
    }
}

/// The first component of `p` that does not exist (`p` itself, or an
/// ancestor), or `None` when `p` exists.
fn first_missing(p: &Path) -> Option<PathBuf> {
    if p.symlink_metadata().is_ok() {
        return None;
    }
    let mut cur = p.to_path_buf();
    for _ in 0..p.components().count() {
        match cur.parent() {
            Some(up) if up.symlink_metadata().is_err() => cur = up.to_path_buf(),
            _ => return Some(cur),
        }
    }
    Some(cur)
}

fn not_held(p: &Path, root: &Path, how: &str) -> String {
    format!(
        "landlock cannot keep the protected path `{}` read-only and uncreatable inside the \
         writable root `{}` (it cannot subtract rights inside a granted tree), and the outer \
         dcjail sandbox this one runs inside does not hold it either: {how}; use \
         --no-protect-defaults (sandbox.filesystem.protect_defaults = false), or a writable root \
         the outer sandbox protects the same way",
        p.display(),
        root.display()
    )
}

/// The plan with what the outer sandbox is checked to hold taken out of
/// it (landlock then grants writing there; the outer keeps it), and what
/// was relied on; or the refusal naming the first path it does not hold.
pub fn rely_on_outer(plan: &Plan) -> Result<(Plan, Relied), String> {
    let mut relied = Relied {
        read_only_roots: plan
            .fs
            .writable
            .iter()
            .filter(|w| super::host::on_read_only_mount(w))
            .cloned()
            .collect(),
        ..Default::default()
    };
    let root_of = |p: &Path| plan.fs.writable.iter().find(|w| p.starts_with(w)).cloned();
    let mut keep = Vec::with_capacity(plan.fs.protected.len());
    for p in &plan.fs.protected {
        let Some(root) = root_of(p) else {
            keep.push(p.clone());
            continue;
        };
        match first_missing(p) {
            None if super::host::on_read_only_mount(p) => relied.protected.push(p.clone()),
            None => {
                return Err(not_held(
                    p,
                    &root,
                    "it exists and is not on a read-only mount here",
                ))
            }
            Some(m) => match try_create(&m) {
                Made::Refused => relied.protected.push(p.clone()),
                Made::Could(removed) => {
                    let how = match removed {
                        Ok(()) => format!(
                            "`{}` could be created here (this check made it and removed it again)",
                            m.display()
                        ),
                        Err(e) => format!("`{}` could be created here ({e})", m.display()),
                    };
                    return Err(not_held(p, &root, &how));
                }
                Made::Other(e) => {
                    return Err(not_held(
                        p,
                        &root,
                        &format!("creating `{}` to check failed otherwise: {e}", m.display()),
                    ))
                }
            },
        }
    }
    for z in &plan.fs.git_checkouts {
        if root_of(z).is_none() {
            continue;
        }
        let probe = z.join(".git").join(".git");
        match try_create(&probe) {
            Made::Refused => relied.zones.push(z.clone()),
            Made::Could(_) | Made::Other(_) => {
                return Err(format!(
                    "landlock cannot keep a new `.git` out of the worktree `{}`, and the outer \
                     dcjail sandbox this one runs inside does not either (`{}` could be created \
                     here, or the check failed); use --no-protect-defaults \
                     (sandbox.filesystem.protect_defaults = false)",
                    z.display(),
                    probe.display()
                ))
            }
        }
    }
    let mut out = plan.clone();
    out.fs.protected = keep;
    out.fs.git_checkouts.retain(|z| !relied.zones.contains(z));
    Ok((out, relied))
}
