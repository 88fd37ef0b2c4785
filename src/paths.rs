//! Path helpers shared by `plan`, `protected` and `gitfiles`, below all
//! three: lenient canonicalisation, byte-wise containment, an ordered set of
//! paths, a memo of where paths really are, and the environment the host's
//! programs see. They read the filesystem only as their docs say
//! (`resolve_lenient`, `RealPaths`); nothing here decides.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// The environment the host's programs will see, as far as it decides
/// what they run: gathered at the edge so the rest can be tested.
#[derive(Clone, Debug, Default)]
pub struct HostEnv {
    pub path: Option<OsString>,
    pub xdg_config_home: Option<PathBuf>,
    pub git_config_global: Option<PathBuf>,
    pub git_config_system: Option<PathBuf>,
    /// `DCJAIL_WALK_LIMIT`: the bound on directory entries a launch-time
    /// walk reads (the search for git repositories under the writable
    /// roots); `None` for the default. A value that is not a positive
    /// number is refused where the glob walk reads it.
    pub walk_limit: Option<usize>,
}

/// An ordered set of paths. Keyed by the bytes: hashing a `Path` goes
/// component by component and cost more than the syscalls around it.
#[derive(Default)]
pub(crate) struct PathSet {
    list: Vec<PathBuf>,
    seen: HashSet<OsString>,
}

impl PathSet {
    pub(crate) fn add(&mut self, p: PathBuf) {
        if self.seen.insert(p.as_os_str().to_os_string()) {
            self.list.push(p);
        }
    }

    pub(crate) fn into_vec(self) -> Vec<PathBuf> {
        self.list
    }
}

/// `p` is `dir` or lies under it.
pub(crate) fn inside(p: &Path, dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let (p, d) = (p.as_os_str().as_bytes(), dir.as_os_str().as_bytes());
    p.starts_with(d) && (p.len() == d.len() || d.ends_with(b"/") || p[d.len()] == b'/')
}

/// Where a path really is, found without `realpath` on each: the home
/// directory's entries by one listing per directory (names and types come
/// with it), other paths by one cached `lstat` per prefix. A symlink met
/// on the way is resolved; a missing component ends the walk.
#[derive(Default)]
pub(crate) struct RealPaths {
    listings: HashMap<OsString, Option<HashMap<OsString, std::fs::FileType>>>,
    prefixes: HashMap<OsString, Option<PathBuf>>,
}

impl RealPaths {
    fn kind(&mut self, dir: &Path, name: &std::ffi::OsStr) -> Option<std::fs::FileType> {
        if let Some(l) = self.listings.get(dir.as_os_str()) {
            return l.as_ref()?.get(name).copied();
        }
        let listing = self
            .listings
            .entry(dir.as_os_str().to_os_string())
            .or_insert_with(|| {
                let rd = std::fs::read_dir(dir).ok()?;
                let mut m = HashMap::new();
                for e in rd.flatten().take(1 << 16) {
                    if let Ok(t) = e.file_type() {
                        m.insert(e.file_name(), t);
                    }
                }
                Some(m)
            });
        listing.as_ref()?.get(name).copied()
    }

    /// `home/rel` resolved; `home` is canonical.
    pub(crate) fn under(&mut self, home: &Path, rel: &Path) -> Option<PathBuf> {
        let mut real = home.to_path_buf();
        let mut lexical = home.to_path_buf();
        for c in rel.components() {
            lexical.push(c);
            if let Some(hit) = self.prefixes.get(lexical.as_os_str()) {
                real = hit.clone()?;
                continue;
            }
            let next = match self.kind(&real, c.as_os_str()) {
                None => None,
                Some(t) if t.is_symlink() => std::fs::canonicalize(real.join(c)).ok(),
                Some(_) => Some(real.join(c)),
            };
            self.prefixes
                .insert(lexical.as_os_str().to_os_string(), next.clone());
            real = next?;
        }
        Some(real)
    }

    /// An absolute path resolved as `resolve_lenient` does — as far as it
    /// exists, symlinks followed and `..` applied to what they resolved to,
    /// the rest kept lexically — with one cached `lstat` per prefix.
    pub(crate) fn of(&mut self, p: &Path) -> PathBuf {
        if !p.is_absolute() {
            return resolve_lenient(p);
        }
        let mut real = PathBuf::from("/");
        let mut missing = false;
        for c in p.components() {
            let n = match c {
                Component::Normal(n) => n,
                Component::ParentDir => {
                    real.pop();
                    continue;
                }
                _ => continue,
            };
            if missing {
                real.push(n);
                continue;
            }
            let next = real.join(n);
            let hit = match self.prefixes.get(next.as_os_str()) {
                Some(h) => h.clone(),
                None => {
                    let r = match std::fs::symlink_metadata(&next) {
                        Err(_) => None,
                        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(&next).ok(),
                        Ok(_) => Some(next.clone()),
                    };
                    self.prefixes
                        .insert(next.as_os_str().to_os_string(), r.clone());
                    r
                }
            };
            match hit {
                Some(h) => real = h,
                None => {
                    real = next;
                    missing = true;
                }
            }
        }
        real
    }
}

/// Canonical form of a path that may not exist: the longest existing
/// ancestor is canonicalized (symlinks first), the rest is normalized
/// lexically. Never fails: on a symlink loop the lexical form is kept, which
/// for a deny rule still covers what the caller wrote.
pub fn resolve_lenient(p: &Path) -> PathBuf {
    resolve_lenient_with(|p| std::fs::canonicalize(p), p)
}

/// `resolve_lenient` with the filesystem's `canonicalize` given.
pub fn resolve_lenient_with(
    canonicalize: impl Fn(&Path) -> std::io::Result<PathBuf>,
    p: &Path,
) -> PathBuf {
    if let Ok(c) = canonicalize(p) {
        return c;
    }
    let mut rest = Vec::new();
    let mut cur = p.to_path_buf();
    loop {
        match cur.file_name() {
            Some(name) => {
                rest.push(name.to_os_string());
                cur.pop();
                if let Ok(c) = canonicalize(&cur) {
                    let mut out = c;
                    for n in rest.iter().rev() {
                        push_normal(&mut out, Path::new(n));
                    }
                    return out;
                }
            }
            None => return lexical(p),
        }
    }
}

fn push_normal(out: &mut PathBuf, p: &Path) {
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
}

fn lexical(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    push_normal(&mut out, p);
    out
}

/// dcjail's own binary, resolved once per process (`readlink` of
/// /proc/self/exe is not free, and several steps need it).
pub fn own_exe() -> Option<PathBuf> {
    static EXE: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    EXE.get_or_init(|| std::env::current_exe().ok()).clone()
}

// The class rule for the home directory, shared by the plan and the
// repository walk (which must not walk what the rule keeps read-only).

/// Whether `path` is kept read-only by one of `held` under `writable`
/// (`Plan::held_at` on its parts).
pub(crate) fn held_by(held: &[PathBuf], writable: &[PathBuf], path: &Path) -> bool {
    held_at(held, writable, path).is_some()
}

/// `Plan::held_at` on its parts.
pub(crate) fn held_at<'a>(
    held: &'a [PathBuf],
    writable: &[PathBuf],
    path: &Path,
) -> Option<&'a Path> {
    let depth = |p: &Path| p.components().count();
    let held = held
        .iter()
        .filter(|h| path.starts_with(h))
        .max_by_key(|h| depth(h))?;
    let root = writable
        .iter()
        .filter(|r| path.starts_with(r))
        .map(|r| depth(r))
        .max();
    match root {
        Some(d) if d > depth(held) => None,
        _ => Some(held.as_path()),
    }
}

/// The class rule for the home directory: `home` (canonical) is held when
/// a writable root is it or lies above it. `/` as a root is left out, as
/// the protected table leaves it out: it means danger-full-access.
pub(crate) fn held_home(writable: &[PathBuf], home: &Path) -> Vec<PathBuf> {
    let holds = writable
        .iter()
        .any(|r| r.as_path() != Path::new("/") && home.starts_with(r));
    if holds && home != Path::new("/") {
        vec![home.to_path_buf()]
    } else {
        Vec::new()
    }
}
