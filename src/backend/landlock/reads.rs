//! The read half of the landlock layer: which paths the command may read,
//! and which terminal devices it may open.
//!
//! Landlock rights are inherited down a tree and cannot be subtracted, so
//! "everything but X" is granted as the complement of X: every sibling
//! along the path down to X gets read, the directories on the way only
//! `read_dir`. A file created later directly in one of those directories is
//! in no grant, so the complement is only taken where the command cannot
//! write: landlock alone refuses a `deny_read` path inside a writable root,
//! and under bwrap (whose mounts mask every `deny_read` path) the paths
//! inside writable roots are left to the mounts.
//!
//! It owns: the complement (`visit`), that refusal, the guard that never
//! grants a complement entry which is a denied file or directory under
//! another name (rules attach to inodes), and `/dev`. On landlock alone
//! `/dev` is what bwrap's private `/dev` holds: the command's own terminal
//! (found at launch), `/dev/tty`, `/dev/null` and the plain devices
//! (`DEV_KEPT`); every other terminal (other sessions' `/dev/pts/*`,
//! consoles, `/dev/ptmx`, input devices) and every other device is neither
//! readable nor writable. That is a list, not a complement of terminal names:
//! the complement of `/dev` cost a rule per device node (a hundred and more
//! on a VM) on every launch, and the devices it kept readable were of no use
//! to a command that may not write or ioctl them. It reads directories and
//! `lstat`s entries; it never probes the kernel nor applies anything.

use super::{access, FsRule, WriteSubtraction};
use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

/// Budget for directory entries read while computing the complement: past
/// it the policy is refused rather than half-enforced.
const WALK_BUDGET: usize = 200_000;

/// Where device nodes live.
const DEV: &str = "/dev";
/// Every pseudo-terminal of the machine's default devpts instance.
const PTS: &str = "/dev/pts";

/// The read and terminal rules of the layer. `deny` and `allow` are literal
/// (globs already expanded), `writable` the roots that will be granted,
/// `own` the command's own terminals (`own_terminals`).
pub fn rules(
    deny: &[PathBuf],
    allow: &[PathBuf],
    writable: &[PathBuf],
    subtraction: WriteSubtraction,
    own: &[PathBuf],
) -> Result<Vec<FsRule>, String> {
    let mut out = Vec::new();
    let inodes = inodes_of(deny);
    match subtraction {
        WriteSubtraction::Refuse => {
            refuse_inside_roots(deny, allow, writable)?;
            // /dev as bwrap's own /dev has it: the command's terminal and
            // the plain devices. No other terminal is granted, nor raw disks
            // (which would hand back a denied file's bytes), nor /dev/ptmx:
            // landlock cannot tell a pseudo-terminal the command opens from
            // another session's, both being files in /dev/pts.
            let mut deny = deny.to_vec();
            deny.push(PathBuf::from(DEV));
            let mut allow: Vec<PathBuf> = allow
                .iter()
                .filter(|a| !reopens_terminals(a))
                .cloned()
                .collect();
            allow.extend(DEV_KEPT.iter().map(|n| Path::new(DEV).join(n)));
            allow.extend(own.iter().cloned());
            let mut w = Walk {
                out: &mut out,
                budget: WALK_BUDGET,
                inodes: &inodes,
            };
            visit(Path::new("/"), true, &deny, &allow, &mut w)?;
            if !writable.iter().any(|r| r == Path::new("/")) {
                let mut t = vec![PathBuf::from("/dev/null"), PathBuf::from("/dev/tty")];
                t.extend(own.iter().cloned());
                for path in t {
                    out.push(FsRule {
                        path,
                        access: access::TERMINAL,
                    });
                }
            }
        }
        WriteSubtraction::ByMounts => {
            // bwrap masks every deny_read path with a mount that cannot be
            // renamed or linked; this layer adds the complement only where
            // the command cannot write, so what it creates stays readable.
            let outside: Vec<PathBuf> = deny
                .iter()
                .filter(|d| !writable.iter().any(|w| d.starts_with(w)))
                .cloned()
                .collect();
            let mut w = Walk {
                out: &mut out,
                budget: WALK_BUDGET,
                inodes: &inodes,
            };
            visit(Path::new("/"), true, &outside, allow, &mut w)?;
            // bwrap's /dev is its own: a devpts instance holding only the
            // pseudo-terminals the command opens itself, and /dev/console,
            // where bwrap binds the caller's terminal (what ttyname says of
            // the command's own descriptors, so `less` opens it).
            for t in ["/dev/null", "/dev/tty", "/dev/console", PTS, "/dev/ptmx"] {
                out.push(FsRule {
                    path: PathBuf::from(t),
                    access: access::TERMINAL,
                });
            }
        }
    }
    Ok(out)
}

/// Landlock alone cannot keep a file created beside a denied path readable
/// (the complement grants only what exists at launch) nor keep the denied
/// file from being renamed or linked to a name the next run reads: refused,
/// naming the path.
fn refuse_inside_roots(
    deny: &[PathBuf],
    allow: &[PathBuf],
    writable: &[PathBuf],
) -> Result<(), String> {
    for d in deny.iter().filter(|d| !covered(d, allow)) {
        if let Some(w) = writable.iter().find(|w| d.starts_with(w)) {
            return Err(format!(
                "landlock cannot deny reading `{}` inside the writable root `{}`: files the command \
                 creates beside it would be unreadable, and it could be renamed or linked to a name \
                 a later run reads; use --backend bwrap (which masks it with a mount), or move it \
                 out of the writable roots",
                d.display(),
                w.display()
            ));
        }
    }
    Ok(())
}

/// `(st_dev, st_ino)` of every existing denied path.
fn inodes_of(deny: &[PathBuf]) -> HashSet<(u64, u64)> {
    deny.iter()
        .filter_map(|d| std::fs::symlink_metadata(d).ok())
        .map(|m| (m.dev(), m.ino()))
        .collect()
}

/// The device files of the terminals on descriptors 0–2 (as the facts
/// found them): the command's own terminal.
pub fn own_terminals(stdio: &[crate::plan::StdFd; 3]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for s in stdio {
        if let crate::plan::StdFd::Terminal { device: Some(p) } = s {
            if !out.contains(p) {
                out.push(p.clone());
            }
        }
    }
    out
}

/// What stays readable in /dev: what bwrap's own /dev holds.
const DEV_KEPT: &[&str] = &["null", "zero", "full", "random", "urandom", "tty", "shm"];

/// Whether an allow_read entry would re-open /dev whole or a terminal.
fn reopens_terminals(a: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    if Path::new(DEV).starts_with(a) || a.starts_with(PTS) {
        return true;
    }
    let Ok(rest) = a.strip_prefix(DEV) else {
        return false;
    };
    rest.components()
        .next()
        .is_some_and(|c| terminal_like(c.as_os_str().as_bytes()))
}

/// Names under /dev of terminal-like devices: virtual consoles and their
/// screen buffers, serial lines, legacy and Unix98 pseudo-terminals, the
/// console, and input devices (keyboards). An `allow_read` entry naming one
/// is not applied: it would reach another session's terminal.
fn terminal_like(name: &[u8]) -> bool {
    let starts = |p: &[u8]| name.starts_with(p);
    (starts(b"tty") && name != b"tty")
        || starts(b"vcs")
        || starts(b"pty")
        || starts(b"hidraw")
        || matches!(
            name,
            b"console" | b"ptmx" | b"input" | b"uhid" | b"uinput" | b"vc" | b"tts"
        )
}

struct Walk<'a> {
    out: &'a mut Vec<FsRule>,
    budget: usize,
    /// Denied files and directories: never granted under another name.
    inodes: &'a HashSet<(u64, u64)>,
}

fn covered(p: &Path, list: &[PathBuf]) -> bool {
    list.iter().any(|x| p.starts_with(x))
}

/// The child of `node` on the way down to `target`.
fn next_step(node: &Path, target: &Path) -> Option<PathBuf> {
    let rest = target.strip_prefix(node).ok()?;
    match rest.components().next()? {
        Component::Normal(c) => Some(node.join(c)),
        _ => None,
    }
}

/// Whether `p` is, under this name, a denied file or directory (a hard
/// link beside it, a bind mount of it).
fn denied_inode(p: &Path, inodes: &HashSet<(u64, u64)>) -> bool {
    !inodes.is_empty()
        && std::fs::symlink_metadata(p).is_ok_and(|m| inodes.contains(&(m.dev(), m.ino())))
}

/// Grants read on everything under `node` but `deny` (and `allow` inside
/// it). `dir` says whether `node` is a directory, as its parent's listing
/// said: a non-directory gets only the rights that mean something on it.
fn visit(
    node: &Path,
    dir: bool,
    deny: &[PathBuf],
    allow: &[PathBuf],
    w: &mut Walk,
) -> Result<(), String> {
    let denied = covered(node, deny) && !covered(node, allow);
    let below = |list: &[PathBuf]| -> Vec<PathBuf> {
        list.iter()
            .filter(|p| p.starts_with(node) && p.as_path() != node)
            .cloned()
            .collect()
    };
    let children: Vec<(PathBuf, bool)> = if denied {
        // Only the way down to a re-allowed path matters.
        let mut c: Vec<PathBuf> = below(allow)
            .iter()
            .filter_map(|a| next_step(node, a))
            .collect();
        c.sort();
        c.dedup();
        c.into_iter()
            .filter_map(|p| {
                let t = std::fs::symlink_metadata(&p).ok()?.file_type();
                (!t.is_symlink()).then_some((p, t.is_dir()))
            })
            .collect()
    } else {
        if covered(node, allow) || below(deny).is_empty() {
            // A rule attaches to the inode: granting a second name of a
            // denied file or directory would grant the denied path itself.
            if node != Path::new("/") && denied_inode(node, w.inodes) {
                return Ok(());
            }
            w.out.push(FsRule {
                path: node.to_path_buf(),
                access: if dir {
                    access::READ
                } else {
                    access::READ & access::FILE
                },
            });
            return Ok(());
        }
        w.out.push(FsRule {
            path: node.to_path_buf(),
            access: access::READ_DIR,
        });
        let Ok(rd) = std::fs::read_dir(node) else {
            // What dcjail cannot list it cannot grant: narrower, never wider.
            return Ok(());
        };
        let mut c = Vec::new();
        for e in rd.flatten() {
            w.budget = w.budget.checked_sub(1).ok_or_else(|| {
                "deny_read needs more landlock rules than this backend allows; \
                 use --backend bwrap"
                    .to_string()
            })?;
            // A symlink is not granted: the path it resolves to carries
            // its own rule, so a link to a denied file gains nothing.
            let Ok(t) = e.file_type() else { continue };
            if t.is_symlink() {
                continue;
            }
            c.push((e.path(), t.is_dir()));
        }
        c.sort();
        c
    };
    // A child only needs the entries on its own path (ancestors, for
    // `covered`) or below it: handing down just those keeps a wide tree with
    // many denied files (a glob's matches) linear instead of
    // files × rules.
    let on_path = |list: &[PathBuf], child: &Path| -> Vec<PathBuf> {
        list.iter()
            .filter(|x| child.starts_with(x) || x.starts_with(child))
            .cloned()
            .collect()
    };
    for (child, is_dir) in children {
        let (d, a) = (on_path(deny, &child), on_path(allow, &child));
        visit(&child, is_dir, &d, &a, w)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE_READ: u64 = access::READ & access::FILE;

    fn rules_for(deny: &[&str], allow: &[&str]) -> Vec<FsRule> {
        let d: Vec<PathBuf> = deny.iter().map(PathBuf::from).collect();
        let a: Vec<PathBuf> = allow.iter().map(PathBuf::from).collect();
        let inodes = inodes_of(&d);
        let mut out = Vec::new();
        let mut w = Walk {
            out: &mut out,
            budget: WALK_BUDGET,
            inodes: &inodes,
        };
        visit(Path::new("/"), true, &d, &a, &mut w).unwrap();
        out
    }

    fn tempdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("dcjail-ll-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::canonicalize(&d).unwrap()
    }

    #[test]
    fn no_deny_read_grants_read_on_root_only() {
        let r = rules_for(&[], &[]);
        assert_eq!(
            r,
            vec![FsRule {
                path: "/".into(),
                access: access::READ
            }]
        );
    }

    #[test]
    fn deny_read_grants_the_complement_and_not_the_denied_path() {
        let d = tempdir("complement");
        std::fs::create_dir_all(d.join("secret/inner")).unwrap();
        std::fs::write(d.join("secret/key"), "k").unwrap();
        std::fs::write(d.join("open.txt"), "o").unwrap();
        std::fs::create_dir_all(d.join("sub")).unwrap();
        std::os::unix::fs::symlink(d.join("secret"), d.join("link")).unwrap();
        let secret = d.join("secret");
        let r = rules_for(&[secret.to_str().unwrap()], &[]);
        let get = |p: &Path| r.iter().find(|x| x.path == p).map(|x| x.access);
        assert_eq!(get(&d.join("open.txt")), Some(FILE_READ));
        assert_eq!(get(&d.join("sub")), Some(access::READ));
        assert_eq!(get(&d), Some(access::READ_DIR));
        assert_eq!(get(Path::new("/")), Some(access::READ_DIR));
        // Neither the denied path, anything in it, nor a link to it.
        assert!(r.iter().all(|x| !x.path.starts_with(&secret)));
        assert_eq!(get(&d.join("link")), None);
        // Every ancestor is only listable.
        for a in d.ancestors() {
            assert_eq!(get(a), Some(access::READ_DIR), "{}", a.display());
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_hard_link_beside_a_denied_file_is_not_granted() {
        let d = tempdir("samefile");
        std::fs::write(d.join("key"), "k").unwrap();
        std::fs::hard_link(d.join("key"), d.join("alias")).unwrap();
        std::fs::write(d.join("open.txt"), "o").unwrap();
        let r = rules_for(&[d.join("key").to_str().unwrap()], &[]);
        let get = |p: &Path| r.iter().find(|x| x.path == p).map(|x| x.access);
        assert_eq!(get(&d.join("open.txt")), Some(FILE_READ));
        // A rule on `alias` would be a rule on the inode of `key`.
        assert_eq!(get(&d.join("alias")), None);
        assert_eq!(get(&d.join("key")), None);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn allow_read_reopens_inside_a_denied_directory() {
        let d = tempdir("reopen");
        std::fs::create_dir_all(d.join("secret/pub")).unwrap();
        std::fs::write(d.join("secret/key"), "k").unwrap();
        let r = rules_for(
            &[d.join("secret").to_str().unwrap()],
            &[d.join("secret/pub").to_str().unwrap()],
        );
        let get = |p: &Path| r.iter().find(|x| x.path == p).map(|x| x.access);
        assert_eq!(get(&d.join("secret/pub")), Some(access::READ));
        assert_eq!(get(&d.join("secret")), None);
        assert_eq!(get(&d.join("secret/key")), None);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn landlock_alone_refuses_a_denied_path_inside_a_writable_root_naming_it() {
        let ws = PathBuf::from("/w/ws");
        let e = rules(
            &[PathBuf::from("/w/ws/.env")],
            &[],
            std::slice::from_ref(&ws),
            WriteSubtraction::Refuse,
            &[],
        )
        .unwrap_err();
        assert!(
            e.contains("`/w/ws/.env`") && e.contains("--backend bwrap"),
            "{e}"
        );
        // Re-allowed whole, it is not denied at all.
        assert!(rules(
            &[PathBuf::from("/w/ws/.env")],
            &[PathBuf::from("/w/ws")],
            &[ws],
            WriteSubtraction::Refuse,
            &[],
        )
        .is_ok());
    }

    #[test]
    fn under_mounts_the_complement_leaves_writable_roots_whole() {
        let d = tempdir("bymounts");
        std::fs::create_dir_all(d.join("ws")).unwrap();
        std::fs::create_dir_all(d.join("home/.ssh")).unwrap();
        std::fs::write(d.join("ws/.env"), "e").unwrap();
        let ws = d.join("ws");
        let r = rules(
            &[d.join("ws/.env"), d.join("home/.ssh")],
            &[],
            std::slice::from_ref(&ws),
            WriteSubtraction::ByMounts,
            &[],
        )
        .unwrap();
        let get = |p: &Path| r.iter().find(|x| x.path == p).map(|x| x.access);
        // The mounts mask ws/.env; the workspace stays readable whole, so
        // what the command creates in it is readable.
        assert_eq!(get(&ws), Some(access::READ));
        assert_eq!(get(&d.join("home")), Some(access::READ_DIR));
        assert_eq!(get(&d.join("home/.ssh")), None);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn terminal_like_names() {
        for n in [
            "tty1", "tty63", "ttyS0", "ttyUSB0", "console", "ptmx", "vcs", "vcsa2", "input",
            "hidraw0", "ptyp0",
        ] {
            assert!(terminal_like(n.as_bytes()), "{n}");
        }
        for n in [
            "tty", "null", "pts", "zero", "shm", "urandom", "fuse", "kvm",
        ] {
            assert!(!terminal_like(n.as_bytes()), "{n}");
        }
    }

    #[test]
    fn landlock_alone_grants_no_terminal_but_its_own() {
        let r = rules(&[], &[], &[], WriteSubtraction::Refuse, &[]).unwrap();
        let get = |p: &str| r.iter().find(|x| x.path == Path::new(p)).map(|x| x.access);
        assert_eq!(get("/"), Some(access::READ_DIR));
        assert_eq!(get("/dev"), None);
        assert_eq!(get("/dev/pts"), None);
        assert_eq!(get("/dev/ptmx"), None);
        assert_eq!(get("/dev/console"), None);
        let own: Vec<PathBuf> = Vec::new();
        for x in r.iter().filter(|x| x.path.starts_with(DEV)) {
            let kept = DEV_KEPT.iter().any(|n| x.path == Path::new(DEV).join(n));
            assert!(kept || own.contains(&x.path), "{}", x.path.display());
        }
        if Path::new("/dev/null").exists() {
            assert!(r.contains(&FsRule {
                path: "/dev/null".into(),
                access: FILE_READ
            }));
        }
        assert!(r.contains(&FsRule {
            path: "/dev/tty".into(),
            access: access::TERMINAL
        }));
        let usr = r.iter().find(|x| x.path == Path::new("/usr"));
        assert_eq!(usr.map(|x| x.access), Some(access::READ));
    }

    #[test]
    fn allow_read_never_reopens_a_terminal_or_the_whole_of_dev() {
        for a in [
            "/",
            "/dev",
            "/dev/pts",
            "/dev/pts/3",
            "/dev/tty1",
            "/dev/input/event0",
        ] {
            assert!(reopens_terminals(Path::new(a)), "{a}");
        }
        for a in ["/dev/kvm", "/dev/shm/x", "/usr", "/dev/tty"] {
            assert!(!reopens_terminals(Path::new(a)), "{a}");
        }
        let r = rules(
            &[],
            &[PathBuf::from("/dev/pts"), PathBuf::from("/dev")],
            &[],
            WriteSubtraction::Refuse,
            &[],
        )
        .unwrap();
        assert!(r.iter().all(|x| x.path != Path::new("/dev/pts")));
    }
}
