//! Makes the run's private cache directory (`plan::caches`) before the
//! backend renders the plan, and drops the caches from the plan when it
//! cannot be made as it must be.
//!
//! From the home directory down, each component is made (mode 0700) and
//! opened without following a symlink, and must belong to the invoking
//! user: another user's directory or link can neither redirect where the
//! command writes nor make a run refuse. The caches are a convenience, not
//! a guarantee (the host's caches stay read-only whatever happens here), so
//! a failure runs the command without them rather than refusing it.

use crate::plan::caches::{env_file, parse_env_file, Go, Private, VARS};
use crate::plan::Plan;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

/// Makes `plan`'s private cache root, or takes the caches out of the plan.
pub fn prepare(plan: &mut Plan) {
    let Some(c) = plan.fs.caches.clone() else {
        return;
    };
    match make(&c) {
        Ok(root) => feed_cargo(plan, &c, &root),
        Err(_) => {
            plan.fs.caches = None;
            plan.fs.writable.retain(|w| w != &c.root);
        }
    }
}

/// When the command gets cargo's home of its own (the caller set no
/// `CARGO_HOME`), feeds it from the host's `~/.cargo` (`cargo_home`).
fn feed_cargo(plan: &Plan, c: &Private, root: &Dir) {
    let gets_it = env_here(c, |k| plan.env.removes(k).is_some())
        .iter()
        .any(|(k, _)| *k == "CARGO_HOME");
    if !gets_it {
        return;
    }
    let Some(sub) = VARS.iter().find(|v| v.name == "CARGO_HOME").map(|v| v.sub) else {
        return;
    };
    // The host's home, where cargo would find it (a symlinked `~/.cargo`
    // resolved, as the plan's rules are matched against canonical paths).
    let Ok(base) = std::fs::canonicalize(c.home.join(".cargo")) else {
        return;
    };
    let Ok(own) = super::cargo_home::sub(root, sub) else {
        return;
    };
    let readable = |p: &Path| plan.readable(p);
    super::cargo_home::feed(
        &own,
        &super::cargo_home::Host {
            base,
            readable: &readable,
        },
    );
}

/// `Private::env` for this process: what exists on the host, what the
/// caller set (the environment the command inherits, read here, where the
/// command's environment is built, and never by `plan`). `removed` names
/// the variables the policy takes out of the command's environment: go's
/// settings count as unset then, as the command's go would see them.
pub fn env_here(
    c: &Private,
    removed: impl Fn(&str) -> bool,
) -> Vec<(&'static str, std::ffi::OsString)> {
    c.env(
        |k| std::env::var_os(k).is_some_and(|v| !v.is_empty()),
        &go_here(&c.home, removed),
    )
}

/// What go would use outside dcjail: the caller's variables, then go's env
/// file (read as the invoking user; an unreadable one counts as none).
fn go_here(home: &Path, removed: impl Fn(&str) -> bool) -> Go {
    let var = |k: &str| {
        if removed(k) {
            return None;
        }
        std::env::var(k).ok()
    };
    let file = env_file(home, var)
        .and_then(|f| std::fs::read_to_string(f).ok())
        .map(|t| parse_env_file(&t))
        .unwrap_or_default();
    Go::read(home, var, &file, |p| {
        std::fs::metadata(p).is_ok_and(|m| m.is_dir())
    })
}

/// An open directory descriptor, closed on drop, and its permission bits
/// when opened.
pub(super) struct Dir(pub(super) i32, pub(super) libc::mode_t);

impl Drop for Dir {
    fn drop(&mut self) {
        // SAFETY: the descriptor is ours and closed once.
        unsafe { libc::close(self.0) };
    }
}

pub(super) fn cstr(p: &Path) -> std::io::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| std::io::ErrorKind::InvalidInput.into())
}

const FLAGS: i32 = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;

/// Opens `name` in `at` (or the absolute `name`) as a directory, never
/// following a final symlink, and checks that it is the caller's.
pub(super) fn open_own(at: Option<&Dir>, name: &Path) -> std::io::Result<Dir> {
    let c = cstr(name)?;
    let base = at.map_or(libc::AT_FDCWD, |d| d.0);
    // SAFETY: `c` is a valid C string; the result is checked.
    let fd = unsafe { libc::openat(base, c.as_ptr(), FLAGS) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut dir = Dir(fd, 0);
    // SAFETY: `st` is written by fstat on a descriptor we own.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::fstat(dir.0, &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    dir.1 = st.st_mode & 0o7777;
    // SAFETY: geteuid never fails.
    if st.st_uid != unsafe { libc::geteuid() } {
        return Err(std::io::ErrorKind::PermissionDenied.into());
    }
    Ok(dir)
}

/// Whether `prepare` would give the caches, without making anything: the
/// home directory and every component that exists already are the
/// caller's directories, none a symlink (for `explain`).
pub fn would_work(c: &Private) -> bool {
    let Ok(rel) = c.root.strip_prefix(&c.home) else {
        return false;
    };
    let Ok(mut dir) = open_own(None, &c.home) else {
        return false;
    };
    for name in rel.components() {
        match open_own(Some(&dir), Path::new(name.as_os_str())) {
            Ok(d) => dir = d,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return true,
            Err(_) => return false,
        }
    }
    true
}

/// Makes the directory `name` in `dir`, when `dir` is writable: asked
/// first with `faccessat`, which no sandbox records, so that inside another
/// dcjail's sandbox (where the home directory is read-only) the outer's
/// report holds no refused `mkdir` of dcjail's own.
fn make_in(dir: &Dir, name: &std::ffi::OsStr) -> std::io::Result<()> {
    let here = cstr(Path::new("."))?;
    // SAFETY: `here` is a valid C string and `dir` an open directory.
    if unsafe { libc::faccessat(dir.0, here.as_ptr(), libc::W_OK, libc::AT_EACCESS) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let n = cstr(Path::new(name))?;
    // SAFETY: `n` is a valid C string and `dir` an open directory.
    if unsafe { libc::mkdirat(dir.0, n.as_ptr(), 0o700) } != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EEXIST) {
            return Err(e);
        }
    }
    Ok(())
}

/// Makes the private root and returns it open.
fn make(c: &Private) -> std::io::Result<Dir> {
    let rel = c
        .root
        .strip_prefix(&c.home)
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // The home directory is canonical already (a symlinked $HOME has been
    // resolved); it must be the caller's own.
    let mut dir = open_own(None, &c.home)?;
    let parts: Vec<&std::ffi::OsStr> = rel
        .components()
        .filter_map(|p| match p {
            Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect();
    for (i, name) in parts.iter().enumerate() {
        dir = match open_own(Some(&dir), Path::new(name)) {
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                make_in(&dir, name)?;
                open_own(Some(&dir), Path::new(name))?
            }
            other => other?,
        };
        // `~/.cache` keeps the mode its owner gave it; dcjail's own
        // directories are the user's alone. One that is so already is left
        // untouched: inside another dcjail's sandbox, where `~/.cache` is
        // read-only, a needless chmod is a refused call in the outer's
        // report.
        if i > 0 && dir.1 != 0o700 {
            // SAFETY: fchmod on a descriptor we own.
            if unsafe { libc::fchmod(dir.0, 0o700) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("dcjail-caches-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d.canonicalize().unwrap()
    }

    #[test]
    fn the_private_root_is_made_mode_0700() {
        let home = scratch("make");
        let c = Private::for_workspace(&home, Path::new("/w/app")).unwrap();
        assert!(would_work(&c), "nothing made yet: it would be made");
        make(&c).unwrap();
        assert!(would_work(&c));
        let m = std::fs::metadata(&c.root).unwrap();
        assert_eq!(m.permissions().mode() & 0o777, 0o700);
        // A second run finds it and keeps it.
        std::fs::write(c.root.join("kept"), b"x").unwrap();
        make(&c).unwrap();
        assert!(c.root.join("kept").exists());
        std::fs::remove_dir_all(&home).unwrap();
    }

    #[test]
    fn a_symlink_on_the_way_is_never_followed() {
        let home = scratch("link");
        let elsewhere = home.join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::fs::create_dir(home.join(".cache")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, home.join(".cache/dcjail")).unwrap();
        let c = Private::for_workspace(&home, Path::new("/w/app")).unwrap();
        assert!(!would_work(&c));
        assert!(make(&c).is_err());
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
        std::fs::remove_dir_all(&home).unwrap();
    }
}
