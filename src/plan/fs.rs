//! The filesystem as the plan reads it: one interface (`Fs`), the real
//! filesystem (`RealFs`) and an in-memory one (`MemFs`) that the plan's
//! unit tests build on any OS. The plan's only reads are these: resolving
//! paths, asking whether something is there, reading a `.git` pointer, and
//! the audit of the protected table and git's files for the writable roots.

use crate::error::Error;
use crate::protected::{Collected, HostEnv};
use std::collections::BTreeMap;
use std::io;
use std::path::{Component, Path, PathBuf};

/// What the plan asks of a filesystem.
pub trait Fs {
    /// `p` with every symlink resolved and `.`/`..` removed, as
    /// `realpath(3)`; an error when `p` or one of its parents is missing.
    fn canonicalize(&self, p: &Path) -> io::Result<PathBuf>;
    /// Whether something is at `p` itself (a dangling symlink counts).
    fn exists_nofollow(&self, p: &Path) -> bool;
    /// Whether `p`, symlinks followed, is a directory.
    fn is_dir(&self, p: &Path) -> bool;
    /// Whether `p` itself (not followed) is a regular file.
    fn is_file_nofollow(&self, p: &Path) -> bool;
    /// The text of the file at `p`.
    fn read_text(&self, p: &Path) -> io::Result<String>;
    /// The filesystem `p` (symlinks followed) lies on: `statfs(2)`'s type
    /// and `stat(2)`'s device.
    fn filesystem(&self, p: &Path) -> io::Result<FsOf>;
    /// The protected table and git's files for the writable `roots`
    /// (canonical), with the grants git needs; `protected::collect` on the
    /// real filesystem. It reads many files (git configs, the home's
    /// dotfiles), so it is one call here rather than a dozen primitives.
    fn protected(
        &self,
        roots: &[PathBuf],
        home: Option<&Path>,
        env: &HostEnv,
        protect: bool,
    ) -> Result<Collected, Error>;
}

/// Which filesystem a path lies on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FsOf {
    /// `statfs(2)`'s `f_type` (the kernel's magic number for the type).
    pub magic: u64,
    /// `stat(2)`'s `st_dev`: equal for two paths on the same mount's
    /// filesystem.
    pub dev: u64,
}

/// ext4's magic: what `MemFs` says when it was told nothing.
pub const EXT4_MAGIC: u64 = 0xef53;

/// The machine's filesystem.
#[derive(Clone, Copy, Debug, Default)]
pub struct RealFs;

impl Fs for RealFs {
    fn canonicalize(&self, p: &Path) -> io::Result<PathBuf> {
        std::fs::canonicalize(p)
    }

    fn exists_nofollow(&self, p: &Path) -> bool {
        std::fs::symlink_metadata(p).is_ok()
    }

    fn is_dir(&self, p: &Path) -> bool {
        p.is_dir()
    }

    fn is_file_nofollow(&self, p: &Path) -> bool {
        std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file())
    }

    fn read_text(&self, p: &Path) -> io::Result<String> {
        std::fs::read_to_string(p)
    }

    #[cfg(unix)]
    fn filesystem(&self, p: &Path) -> io::Result<FsOf> {
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::fs::MetadataExt;
        let dev = std::fs::metadata(p)?.dev();
        let c = std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        // SAFETY: an all-zero statfs is a valid value of the C struct.
        let mut st: libc::statfs = unsafe { std::mem::zeroed() };
        // SAFETY: statfs into a buffer of the right type, with a
        // NUL-terminated path.
        if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // f_type is signed on some libcs; the magic is its low 32 bits.
        #[allow(clippy::unnecessary_cast)]
        let magic = (st.f_type as i64 as u64) & 0xffff_ffff;
        Ok(FsOf { magic, dev })
    }

    #[cfg(not(unix))]
    fn filesystem(&self, _p: &Path) -> io::Result<FsOf> {
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }

    fn protected(
        &self,
        roots: &[PathBuf],
        home: Option<&Path>,
        env: &HostEnv,
        protect: bool,
    ) -> Result<Collected, Error> {
        crate::protected::collect(roots, home, env, protect)
    }
}

/// One entry of a `MemFs`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node {
    Dir,
    File(String),
    Symlink(PathBuf),
}

/// A filesystem held in memory: absolute paths to entries, `/` always a
/// directory. Its audit finds what `audit` says (nothing by default).
#[derive(Clone, Debug, Default)]
pub struct MemFs {
    nodes: BTreeMap<PathBuf, Node>,
    /// Mounts: a path is on the longest one it lies under; ext4 on device
    /// 1 when none.
    mounts: Vec<(PathBuf, FsOf)>,
    pub audit: Option<Collected>,
}

/// Symlinks followed in one resolution before it is taken as a loop (as
/// Linux's ELOOP).
const MAX_LINKS: usize = 40;

impl MemFs {
    pub fn new() -> MemFs {
        MemFs::default()
    }

    /// Adds a directory and its parents.
    pub fn dir(mut self, p: &str) -> MemFs {
        self.parents(Path::new(p));
        self.nodes.insert(PathBuf::from(p), Node::Dir);
        self
    }

    /// Mounts a filesystem of type `magic` (device `dev`) at `p`, which is
    /// added as a directory.
    pub fn mount(mut self, p: &str, magic: u64, dev: u64) -> MemFs {
        self = self.dir(p);
        self.mounts.push((PathBuf::from(p), FsOf { magic, dev }));
        self
    }

    /// Adds a file holding `text` (and its parent directories).
    pub fn file(mut self, p: &str, text: &str) -> MemFs {
        self.parents(Path::new(p));
        self.nodes
            .insert(PathBuf::from(p), Node::File(text.to_string()));
        self
    }

    /// Adds a symlink at `p` pointing to `target` (relative to `p`'s
    /// directory unless absolute).
    pub fn symlink(mut self, p: &str, target: &str) -> MemFs {
        self.parents(Path::new(p));
        self.nodes
            .insert(PathBuf::from(p), Node::Symlink(PathBuf::from(target)));
        self
    }

    fn parents(&mut self, p: &Path) {
        for a in p.ancestors().skip(1) {
            if a.as_os_str().is_empty() || a == Path::new("/") {
                continue;
            }
            self.nodes.entry(a.to_path_buf()).or_insert(Node::Dir);
        }
    }

    fn node(&self, p: &Path) -> Option<&Node> {
        if p == Path::new("/") {
            return Some(&Node::Dir);
        }
        self.nodes.get(p)
    }

    /// The entry at `p` itself: its directory resolved, its name not.
    fn node_nofollow(&self, p: &Path) -> Option<&Node> {
        let (Some(dir), Some(name)) = (p.parent(), p.file_name()) else {
            return self.node(p);
        };
        let d = self.canonicalize(dir).ok()?;
        self.node(&d.join(name))
    }

    /// Resolves `p` component by component, following symlinks.
    fn resolve(&self, p: &Path, links: &mut usize) -> io::Result<PathBuf> {
        // The kernel's errors, so messages read as they do on a real fs.
        let missing = || io::Error::from_raw_os_error(libc::ENOENT);
        let mut out = PathBuf::from("/");
        for c in p.components() {
            match c {
                Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
                Component::ParentDir => {
                    out.pop();
                }
                Component::Normal(name) => {
                    if self.node(&out) != Some(&Node::Dir) {
                        return Err(io::Error::from_raw_os_error(libc::ENOTDIR));
                    }
                    let next = out.join(name);
                    match self.node(&next) {
                        None => return Err(missing()),
                        Some(Node::Symlink(t)) => {
                            *links += 1;
                            if *links > MAX_LINKS {
                                return Err(io::Error::from_raw_os_error(libc::ELOOP));
                            }
                            let target = out.join(t);
                            out = self.resolve(&target, links)?;
                        }
                        Some(_) => out = next,
                    }
                }
            }
        }
        Ok(out)
    }
}

impl Fs for MemFs {
    fn canonicalize(&self, p: &Path) -> io::Result<PathBuf> {
        if !p.is_absolute() {
            return Err(io::Error::from_raw_os_error(libc::ENOENT));
        }
        self.resolve(p, &mut 0)
    }

    fn exists_nofollow(&self, p: &Path) -> bool {
        self.node_nofollow(p).is_some()
    }

    fn is_file_nofollow(&self, p: &Path) -> bool {
        matches!(self.node_nofollow(p), Some(Node::File(_)))
    }

    fn read_text(&self, p: &Path) -> io::Result<String> {
        let c = self.canonicalize(p)?;
        match self.node(&c) {
            Some(Node::File(t)) => Ok(t.clone()),
            _ => Err(io::Error::from_raw_os_error(libc::EISDIR)),
        }
    }

    fn is_dir(&self, p: &Path) -> bool {
        self.canonicalize(p)
            .is_ok_and(|c| self.node(&c) == Some(&Node::Dir))
    }

    fn filesystem(&self, p: &Path) -> io::Result<FsOf> {
        let c = self.canonicalize(p)?;
        Ok(self
            .mounts
            .iter()
            .filter(|(m, _)| c.starts_with(m))
            .max_by_key(|(m, _)| m.components().count())
            .map_or(
                FsOf {
                    magic: EXT4_MAGIC,
                    dev: 1,
                },
                |(_, f)| *f,
            ))
    }

    fn protected(
        &self,
        _roots: &[PathBuf],
        _home: Option<&Path>,
        _env: &HostEnv,
        _protect: bool,
    ) -> Result<Collected, Error> {
        Ok(self.audit.clone().unwrap_or(Collected {
            protected: Vec::new(),
            grants: Vec::new(),
            checkouts: Vec::new(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memory_fs_resolves_symlinks_and_dot_dot_as_realpath_does() {
        let fs = MemFs::new()
            .dir("/home/u/ws")
            .symlink("/w", "/home/u/ws")
            .symlink("/home/u/up", "../u")
            .file("/home/u/ws/a", "text")
            .symlink("/loop", "/loop");
        let c = |p: &str| fs.canonicalize(Path::new(p)).ok();
        assert_eq!(c("/w/a"), Some(PathBuf::from("/home/u/ws/a")));
        assert_eq!(c("/home/u/up/ws/../ws"), Some(PathBuf::from("/home/u/ws")));
        assert_eq!(c("/w/missing"), None);
        assert_eq!(c("/w/a/below-a-file"), None);
        assert_eq!(c("/loop"), None);
        assert!(fs.exists_nofollow(Path::new("/loop")));
        assert!(fs.is_dir(Path::new("/w")));
        assert!(!fs.is_dir(Path::new("/w/a")));
        assert_eq!(fs.read_text(Path::new("/w/a")).unwrap(), "text");
        assert!(fs.is_file_nofollow(Path::new("/w/a")));
        assert!(!fs.is_file_nofollow(Path::new("/w")));
    }
}
