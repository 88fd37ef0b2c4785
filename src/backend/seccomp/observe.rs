//! The filter when denials are recorded: the same answers, but the calls
//! that can be refused for a path are handed to the broker with a tag
//! (`denial_wire::TAG_*`) saying what the filter itself would answer.
//! An answer of the filter's own (an errno) stays that errno, given by the
//! broker; a call the filter allows goes on to the kernel
//! (SECCOMP_USER_NOTIF_FLAG_CONTINUE), whose layers decide as without the
//! observer. So recording can add a round trip, never an allow.
//! Read-only opens stay allowed by the filter itself: observing every open
//! would cost too much.

use super::{Action, Cmp, Entry};
use crate::inside::denial_wire::{TAG_CONTINUE, TAG_ERRNO};

const O_CREAT: u64 = 0o100;
const O_TMPFILE_BIT: u64 = 0o20000000;
const O_ACCMODE: u64 = 3;
const O_TRUNC: u64 = 0o1000;

/// Calls whose errno answers are recorded (the broker gives the errno).
const REFUSING: &[&str] = &[
    "socket",
    "openat",
    "open",
    "creat",
    "fchmod",
    "fchmodat",
    "fchmodat2",
    "fchown",
    "fchownat",
    "utimensat",
    "setxattr",
    "lsetxattr",
    "fsetxattr",
    "removexattr",
    "lremovexattr",
    "fremovexattr",
    "mknodat",
    "mknod",
    "chmod",
    "chown",
    "lchown",
    "utime",
    "utimes",
    "futimesat",
];

/// Calls that change a name or a file's content: observed, then continued
/// where the filter allows them.
fn continued() -> Vec<(&'static str, i64)> {
    use libc::*;
    let mut v = vec![
        ("openat", SYS_openat),
        ("mkdirat", SYS_mkdirat),
        ("mknodat", SYS_mknodat),
        ("symlinkat", SYS_symlinkat),
        ("linkat", SYS_linkat),
        ("renameat2", SYS_renameat2),
        ("unlinkat", SYS_unlinkat),
        ("truncate", SYS_truncate),
    ];
    #[cfg(target_arch = "x86_64")]
    v.extend([
        ("open", SYS_open),
        ("creat", SYS_creat),
        ("mkdir", SYS_mkdir),
        ("mknod", SYS_mknod),
        ("symlink", SYS_symlink),
        ("link", SYS_link),
        ("rename", SYS_rename),
        ("renameat", SYS_renameat),
        ("unlink", SYS_unlink),
        ("rmdir", SYS_rmdir),
    ]);
    v
}

fn tagged(a: Action) -> Action {
    match a {
        // ENOSYS sends callers to an older call, which is observed.
        Action::Errno(e) if e != libc::ENOSYS => Action::Notify(TAG_ERRNO | (e as u16 & 0x0fff)),
        Action::Allow => Action::Notify(TAG_CONTINUE),
        other => other,
    }
}

/// Rewrites the table for observation.
pub fn apply(t: &mut Vec<Entry>) {
    for e in t.iter_mut().filter(|e| REFUSING.contains(&e.name)) {
        for (_, a) in e.rules.iter_mut() {
            if matches!(a, Action::Errno(_)) {
                *a = tagged(*a);
            }
        }
        if matches!(e.default, Action::Errno(_)) {
            e.default = tagged(e.default);
        }
    }
    for (name, nr) in continued() {
        match t.iter_mut().find(|e| e.name == name) {
            Some(e) => {
                // Opens: only write intent leaves the short path to Allow.
                if let Some(Cmp::Masked(flags, _, 0)) = e.allow.first().copied() {
                    e.allow = vec![Cmp::Masked(
                        flags,
                        O_CREAT | O_TMPFILE_BIT | O_ACCMODE | O_TRUNC,
                        0,
                    )];
                }
                if e.default == Action::Allow {
                    e.default = tagged(Action::Allow);
                    if let Some(last) = e.says.last_mut() {
                        last.push_str("; recorded when a layer refuses it");
                    }
                }
            }
            None => t.push(Entry {
                name,
                nr,
                allow: Vec::new(),
                rules: Vec::new(),
                default: tagged(Action::Allow),
                says: vec!["allowed; recorded when a layer refuses it".into()],
            }),
        }
    }
}

pub fn action_name(tag: u16) -> &'static str {
    if tag & TAG_CONTINUE != 0 {
        "observed"
    } else {
        match i32::from(tag & 0x0fff) {
            libc::EROFS => "EROFS (recorded)",
            libc::EPERM => "EPERM (recorded)",
            _ => "refused (recorded)",
        }
    }
}
