//! The Linux half of the bwrap backend: the probe `auto` uses, the layer
//! the second stage applies, and `prepare`, which ties them to the pure
//! renderer. It reads the host (bwrap's file, guard directories' inodes),
//! never writes to it, and starts nothing.

use super::render::{render, Guard, RealHost};
use super::{find, BwrapLaunch, SELF_EXE};
use crate::backend::program::{self, GuardId};
use crate::backend::unavailable::Because;
use crate::backend::{Kind, Missing, Unavailable};
use crate::plan::Plan;
use crate::policy::NetMode;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

const BWRAP: Kind = Kind::Bwrap;

/// `p` itself when it is absolute, plain (no `.`, `..`, `//`) and no
/// component of it is a symlink: then it is its own canonical path. One path
/// walk (openat2 with RESOLVE_NO_SYMLINKS) instead of realpath's one per
/// component, on every launch. None means "find out the slow way".
pub(super) fn without_symlinks(p: &Path) -> Option<(PathBuf, std::fs::Metadata)> {
    let plain = p.is_absolute()
        && p.components()
            .skip(1)
            .all(|c| matches!(c, std::path::Component::Normal(_)))
        && !p.as_os_str().as_bytes().windows(2).any(|w| w == b"//")
        && !p.as_os_str().as_bytes().ends_with(b"/");
    if !plain {
        return None;
    }
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).ok()?;
    // SAFETY: open_how is plain data.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_PATH | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_NO_SYMLINKS;
    // SAFETY: valid C string and open_how of the size given.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            c.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        return None;
    }
    // SAFETY: the fd was just opened and is owned from here.
    let f = std::fs::File::from(unsafe {
        <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd as i32)
    });
    // fstat works on an O_PATH descriptor: the metadata of what was opened.
    let m = f.metadata().ok()?;
    Some((p.to_path_buf(), m))
}

/// The layer the second stage applies: the landlock ruleset for what
/// landlock can express (writable roots, reads) and the seccomp filter. The
/// write subtraction (protected paths, deny_write) is left to the read-only
/// mounts, which landlock cannot express and bwrap enforces.
fn layer_spec(plan: &Plan) -> Result<crate::backend::landlock::LayerSpec, String> {
    use crate::backend::landlock::{layer_spec_with, WriteSubtraction};
    let mut spec = layer_spec_with(plan, WriteSubtraction::ByMounts)?;
    if plan.effective_net() == NetMode::Allowlist {
        // The proxy's listener inside the namespace (net::session).
        spec.tcp_connect_ports = vec![super::SANDBOX_PROXY_PORT];
    }
    trim_to_mounts(&mut spec);
    Ok(spec)
}

/// Leaves reading and executing out of the layer when it grants them at `/`
/// (no `deny_read` path outside the writable roots; bwrap's mounts mask the
/// ones inside): the rule would allow every read it checks, and a handled
/// right costs a walk up the path on every open that asks for it (`find`,
/// `git status` and builds open files by the hundred thousand).
/// Truncation stays handled although landlock asks for it on every open:
/// the mounts alone would let `truncate("/proc/self/fd/0")` reach a host
/// file the caller redirected into the command, through the caller's mount.
fn trim_to_mounts(spec: &mut crate::backend::landlock::LayerSpec) {
    use crate::backend::landlock::access;
    let reads_everywhere = spec
        .fs_rules
        .iter()
        .any(|r| r.path == std::path::Path::new("/") && r.access & access::READ == access::READ);
    if !reads_everywhere {
        return;
    }
    spec.handled_fs &= !access::READ;
    for r in &mut spec.fs_rules {
        r.access &= spec.handled_fs;
    }
    spec.fs_rules.retain(|r| r.access != 0);
}

/// `layer_spec`, checked against this kernel.
fn layer(
    plan: &Plan,
    host: &dyn crate::backend::host::Probe,
) -> Result<crate::backend::landlock::LayerSpec, String> {
    let spec = layer_spec(plan)?;
    spec.check_supported_with(host)?;
    Ok(spec)
}

/// Each guard's directory by inode, as the broker inside compares it. The
/// directory was seen on the way from a writable root in `render`; it must
/// still be a directory, and not a symlink, now.
fn guard_ids(guards: &[Guard]) -> Result<Vec<GuardId>, String> {
    use std::os::unix::fs::MetadataExt;
    guards
        .iter()
        .map(|g| {
            let m = std::fs::symlink_metadata(&g.dir).map_err(|e| {
                format!(
                    "`{}` (where `{}` must stay uncreatable): {}",
                    g.dir.display(),
                    g.name.to_string_lossy(),
                    crate::policy::io_words(&e)
                )
            })?;
            if !m.is_dir() {
                return Err(format!(
                    "`{}` changed while the sandbox was being set up",
                    g.dir.display()
                ));
            }
            Ok((m.dev(), m.ino(), g.name.as_bytes().to_vec()))
        })
        .collect()
}

/// What `auto` (and `--backend bwrap`) checks before rendering: a trusted
/// bwrap, and nothing that stops its namespaces (`obstacle::userns_obstacle`:
/// kernel switches, a seccomp filter, AppArmor). The version is not
/// read here (that costs a read of the whole binary per launch): a bwrap too
/// old for an option rendered here stops with "Unknown option" before the
/// second stage, which `launch` turns into a refusal or an `auto` fallback;
/// `doctor` reports the version.
///
/// Then renders: the `prepare` step of backend selection.
pub fn prepare(
    plan: &Plan,
    host: &dyn crate::backend::host::Probe,
) -> Result<BwrapLaunch, Unavailable> {
    let bwrap = find(Some(plan)).because(BWRAP, Missing::Program)?;
    if let Some(o) = crate::backend::obstacle::userns_obstacle(host, &bwrap) {
        return Err(Unavailable::new(BWRAP, Missing::Host(o.to_string())));
    }
    let rendered = render(plan, &RealHost).because(BWRAP, Missing::Rule)?;
    let mut spec = layer_spec(plan).because(BWRAP, Missing::Rule)?;
    spec.check_supported_with(host)
        .because(BWRAP, Missing::Host)?;
    let guards = guard_ids(&rendered.guards).because(BWRAP, Missing::Setup)?;
    spec.fs.create = rendered.missing;
    let program = program::encode(&spec, &guards).because(BWRAP, Missing::Rule)?;
    // Opened through the magic link at launch: no readlink (its path walk
    // contends with every mount namespace being set up or torn down on the
    // machine), and no window in which the path could name another file.
    let exe = PathBuf::from(SELF_EXE);
    Ok(BwrapLaunch {
        bwrap,
        rendered,
        layer: spec,
        program,
        exe,
    })
}

/// Whether the second stage's layer is available for the default policy
/// (`doctor`).
pub fn layer_bytes_for_default() -> Result<(), String> {
    let mut policy = crate::policy::Policy::embedded().map_err(|r| r.message)?;
    policy.sandbox.backend = crate::policy::BackendChoice::Bwrap;
    let facts = crate::plan::Facts::gather().map_err(|r| r.message)?;
    let plan = crate::plan::build(&policy, vec!["true".into()], &facts).map_err(|r| r.message)?;
    let spec = layer(&plan, &crate::backend::host::Real)?;
    if !program::STUB.is_empty() {
        program::encode(&spec, &[])?;
    }
    Ok(())
}

/// Which second stage a launch starts, for `explain`.
pub(super) fn stage2_runs() -> String {
    if program::STUB.is_empty() {
        "dcjail itself (`exe`), re-executed inside".into()
    } else {
        format!(
            "the embedded stub ({} bytes, static, no libc) from a sealed memfd; dcjail itself \
             (`exe`) where this system refuses to execute memfds (vm.memfd_noexec = 2)",
            program::STUB.len()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::landlock::access;

    fn plan_denying(deny: &[&str]) -> Plan {
        let mut policy = crate::policy::Policy::default();
        policy.sandbox.filesystem.deny_read = deny.iter().map(std::path::PathBuf::from).collect();
        let facts = crate::plan::Facts {
            cwd: std::path::PathBuf::from("/"),
            home: None,
            tmpdir: None,
            exe: None,
        };
        crate::plan::build(&policy, vec!["true".into()], &facts).unwrap()
    }

    fn assert_rules_within_handled(spec: &crate::backend::landlock::LayerSpec) {
        for r in &spec.fs_rules {
            assert_eq!(r.access & !spec.handled_fs, 0, "{r:?}");
            assert_ne!(r.access, 0, "{r:?}");
        }
    }

    #[test]
    fn with_nothing_denied_outside_the_roots_the_layer_leaves_reads_to_the_mounts() {
        let spec = layer_spec(&plan_denying(&[])).unwrap();
        assert_eq!(spec.handled_fs & access::READ, 0);
        assert_eq!(spec.handled_fs & access::TRUNCATE, access::TRUNCATE);
        assert_eq!(spec.handled_fs & access::WRITE_FILE, access::WRITE_FILE);
        assert_eq!(spec.handled_fs & access::MAKE_REG, access::MAKE_REG);
        assert_rules_within_handled(&spec);
    }

    #[test]
    fn a_denied_path_outside_the_roots_keeps_reads_handled() {
        // /etc is outside every writable root of a read-only plan.
        let spec = layer_spec(&plan_denying(&["/etc/hostname"])).unwrap();
        assert_eq!(spec.handled_fs & access::READ, access::READ);
        assert_eq!(spec.handled_fs & access::TRUNCATE, access::TRUNCATE);
        assert!(!spec
            .fs_rules
            .iter()
            .any(|r| r.path == std::path::Path::new("/") && r.access & access::READ_FILE != 0));
        assert_rules_within_handled(&spec);
    }
}
