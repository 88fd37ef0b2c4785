//! Writable roots must hold files: a workspace, worktree root or
//! `allow_write` root on a kernel interface filesystem (`/proc`, `/sys`,
//! `/dev`, cgroups, …) would let the command change the host's kernel
//! settings, devices or services, which outlive the run, and nothing there
//! is a file the sandbox's write rules mean. Decided by filesystem type
//! (`statfs(2)`), after symlinks are resolved, so a link to `/proc` is
//! `/proc`.
//!
//! A deny-list of the kernel's interface filesystems, not an allow-list of
//! storage ones: an allow-list would refuse every storage filesystem it
//! does not name (ZFS, bcachefs, NFS, 9p, virtiofs, FUSE, overlay in a
//! container, …), a refusal of real work; the cost of the deny-list is
//! that a new interface filesystem is accepted until it is added here.
//! `devtmpfs` reports tmpfs's type, so `/dev` is told by its device
//! instead: below `/dev`, on `/dev`'s own filesystem (`/dev/shm`, a tmpfs
//! of its own, stays usable).

use super::fs::{Fs, FsOf};
use std::path::Path;

/// Interface filesystems by `statfs` type (linux/magic.h).
const PSEUDO: &[(u64, &str)] = &[
    (0x9fa0, "proc"),
    (0x6265_6572, "sysfs"),
    (0x1cd1, "devpts"),
    (0x0027_e0eb, "cgroup"),
    (0x6367_7270, "cgroup2"),
    (0x6462_6720, "debugfs"),
    (0x7472_6163, "tracefs"),
    (0x7363_6673, "securityfs"),
    (0xcafe_4a11, "bpf"),
    (0x6265_6570, "configfs"),
    (0x6573_5543, "fusectl"),
    (0x6165_676c, "pstore"),
    (0xde5e_81e4, "efivarfs"),
    (0x1980_0202, "mqueue"),
    (0x9584_58f6, "hugetlbfs"),
    (0x4249_4e4d, "binfmt_misc"),
    (0xf97c_ff8c, "selinuxfs"),
    (0x4341_5d53, "smackfs"),
    (0x6e73_6673, "nsfs"),
    (0x0765_5821, "resctrl"),
    (0x6c6f_6f70, "binderfs"),
];

/// The kind of filesystem `canonical` lies on when it is a kernel
/// interface rather than storage; `None` for storage, and when the type
/// cannot be read (the launch then meets the path as it is).
pub fn pseudo(fs: &dyn Fs, canonical: &Path) -> Option<&'static str> {
    let at = fs.filesystem(canonical).ok()?;
    if let Some((_, name)) = PSEUDO.iter().find(|(m, _)| *m == at.magic) {
        return Some(name);
    }
    let dev = Path::new("/dev");
    if canonical.starts_with(dev) && fs.filesystem(dev).ok().map(|d: FsOf| d.dev) == Some(at.dev) {
        return Some("the device directory (devtmpfs)");
    }
    None
}
