//! Other paths of the same file through the host's bind mounts. A bind
//! mount shows a directory at a second place: a file kept read-only or
//! masked by a mount over its path is, under the second path, the same
//! file with neither (bwrap binds the host's mounts recursively). So every
//! path a kept or denied file has through another mount of its filesystem
//! is kept or denied too.
//!
//! Found from `/proc/self/mountinfo`: for the mount holding a path, its
//! path inside the filesystem (the mount's root plus the rest), and every
//! other mount of that filesystem whose root contains it gives a second
//! path, kept only when it `lstat`s as the same inode (a deeper mount may
//! cover it). Cost: reading the table once per launch that has something
//! kept or denied, and nothing more when no filesystem is mounted twice.

use crate::error::Refusal;
use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, PartialEq)]
struct Mount {
    dev: String,
    root: PathBuf,
    point: PathBuf,
}

/// The host's mounts, as far as second paths go.
#[derive(Clone, Debug, Default)]
pub struct Mounts {
    list: Vec<Mount>,
    /// How many mounts each filesystem has: a path on one mounted once has
    /// no second path.
    count: HashMap<String, usize>,
}

impl Mounts {
    /// This process's mount table; refuses (122) when it cannot be read:
    /// then no second path could be ruled out.
    pub fn read() -> Result<Mounts, Refusal> {
        let text = std::fs::read("/proc/self/mountinfo").map_err(|e| {
            Refusal::unavailable(format!(
                "cannot read /proc/self/mountinfo ({e}): without it a file kept read-only or denied \
                 could have a second path through a bind mount that dcjail cannot see"
            ))
        })?;
        Ok(Mounts::parse(&text))
    }

    fn parse(text: &[u8]) -> Mounts {
        let mut m = Mounts::default();
        for line in text.split(|b| *b == b'\n') {
            let f: Vec<&[u8]> = line.split(|b| *b == b' ').collect();
            if f.len() < 5 {
                continue;
            }
            let mount = Mount {
                dev: String::from_utf8_lossy(f[2]).into_owned(),
                root: unescape(f[3]),
                point: unescape(f[4]),
            };
            *m.count.entry(mount.dev.clone()).or_default() += 1;
            m.list.push(mount);
        }
        m
    }

    /// The mount `p` is reached through: the deepest mount point on its
    /// way, the last mounted where several share one.
    fn holding(&self, p: &Path) -> Option<&Mount> {
        let mut best: Option<&Mount> = None;
        for m in &self.list {
            if p.starts_with(&m.point)
                && best.is_none_or(|b| m.point.components().count() >= b.point.components().count())
            {
                best = Some(m);
            }
        }
        best
    }

    /// Every other path of the existing file or directory `p` (canonical)
    /// through another mount of its filesystem, checked to be the same
    /// inode.
    pub fn aliases(&self, p: &Path) -> Vec<PathBuf> {
        let Some(m) = self.holding(p) else {
            return Vec::new();
        };
        if self.count.get(&m.dev).copied().unwrap_or(0) < 2 {
            return Vec::new();
        }
        let Ok(rest) = p.strip_prefix(&m.point) else {
            return Vec::new();
        };
        let inner = m.root.join(rest);
        let Ok(me) = std::fs::symlink_metadata(p) else {
            return Vec::new();
        };
        let mut out: Vec<PathBuf> = Vec::new();
        for n in self.list.iter().filter(|n| n.dev == m.dev && *n != m) {
            let Ok(sub) = inner.strip_prefix(&n.root) else {
                continue;
            };
            let alias = n.point.join(sub);
            if alias == p || out.contains(&alias) {
                continue;
            }
            if std::fs::symlink_metadata(&alias)
                .is_ok_and(|a| a.dev() == me.dev() && a.ino() == me.ino())
            {
                out.push(alias);
            }
        }
        out
    }
}

/// The mount table, read at most once per launch: both searches (denied
/// files, kept files) ask it, and only when they have a path to ask about.
#[derive(Default)]
pub struct LazyMounts(Option<Mounts>);

impl LazyMounts {
    pub fn get(&mut self) -> Result<&Mounts, Refusal> {
        if self.0.is_none() {
            self.0 = Some(Mounts::read()?);
        }
        Ok(self.0.get_or_insert_with(Mounts::default))
    }
}

impl Mounts {
    /// (path, second path) for every path of `from`, each second path once.
    pub(super) fn alias_pairs<'a>(
        &self,
        from: impl Iterator<Item = &'a PathBuf>,
    ) -> Vec<(PathBuf, PathBuf)> {
        let mut out: Vec<(PathBuf, PathBuf)> = Vec::new();
        for p in from {
            for a in self.aliases(p) {
                if !out.iter().any(|(_, b)| *b == a) {
                    out.push((p.clone(), a));
                }
            }
        }
        out
    }
}

/// mountinfo's octal escapes (`\040` for a space).
fn unescape(b: &[u8]) -> PathBuf {
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() {
            let oct = &b[i + 1..i + 4];
            if oct.iter().all(|c| (b'0'..=b'7').contains(c)) {
                let v = oct.iter().fold(0u32, |a, c| a * 8 + u32::from(c - b'0'));
                if let Ok(v) = u8::try_from(v) {
                    out.push(v);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(b[i]);
        i += 1;
    }
    PathBuf::from(OsString::from_vec(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "\
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw
40 27 254:0 /srv/ws /mnt/alias rw - ext4 /dev/vda rw
41 27 254:0 /home /mnt/with\\040space rw - ext4 /dev/vda rw
42 27 0:30 / /tmp rw - tmpfs tmpfs rw
";

    #[test]
    fn the_table_is_read_with_its_escapes() {
        let m = Mounts::parse(TABLE.as_bytes());
        assert_eq!(m.list.len(), 4);
        assert_eq!(m.list[2].point, PathBuf::from("/mnt/with space"));
        assert_eq!(m.list[1].root, PathBuf::from("/srv/ws"));
        assert_eq!(m.count["254:0"], 3);
        assert_eq!(
            m.holding(Path::new("/mnt/alias/x")).map(|m| &m.point),
            Some(&PathBuf::from("/mnt/alias"))
        );
        assert_eq!(
            m.holding(Path::new("/tmp/x")).map(|m| m.dev.as_str()),
            Some("0:30")
        );
    }

    #[test]
    fn a_path_on_a_filesystem_mounted_once_has_no_alias() {
        let m = Mounts::parse(TABLE.as_bytes());
        assert!(m.aliases(Path::new("/tmp")).is_empty());
    }
}
