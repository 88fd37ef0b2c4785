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
use crate::plan::{StdFd, STD_NAMES};
use crate::policy::NetMode;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

const BWRAP: Kind = Kind::Bwrap;

/// The layer the second stage applies: the landlock ruleset for what
/// landlock can express (writable roots, reads) and the seccomp filter. The
/// write subtraction (protected paths, deny_write) is left to the read-only
/// mounts, which landlock cannot express and bwrap enforces. Also says,
/// for `explain`, the fact that decided the one right that varies with the
/// caller's descriptors (`truncate: kept, stdin is …`).
fn layer_spec(plan: &Plan) -> Result<(crate::backend::landlock::LayerSpec, String), String> {
    let mut spec = layer_with_truncation(plan)?;
    let why = match descriptors_reach_past_the_mounts(plan, &spec) {
        Some(why) => format!("truncate: kept, {why}"),
        None => {
            trim(&mut spec, crate::backend::landlock::access::TRUNCATE);
            format!(
                "truncate: left to the read-only mounts, no descriptor reaches a host file past \
                 them ({})",
                stdio_words(&plan.facts.stdio)
            )
        }
    };
    Ok((spec, why))
}

/// "stdin: closed, stdout: a terminal (/dev/pts/1), …".
fn stdio_words(stdio: &[StdFd; 3]) -> String {
    stdio
        .iter()
        .zip(STD_NAMES)
        .map(|(s, n)| format!("{n}: {}", s.words()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The layer with truncation handled, as when a descriptor the command
/// holds or can be handed reaches a host file past the mounts.
fn layer_with_truncation(plan: &Plan) -> Result<crate::backend::landlock::LayerSpec, String> {
    use crate::backend::landlock::{access, layer_spec_with, WriteSubtraction};
    let mut spec = layer_spec_with(plan, WriteSubtraction::ByMounts)?;
    if plan.effective_net() != NetMode::Full {
        // A network namespace of its own, where loopback is the only
        // interface: the command's own servers and, under the allowlist,
        // the proxy's listener (net::session) are all it can reach. A test
        // server and its client, a dev server, work as without dcjail.
        spec.restrict_tcp = false;
        spec.sockets.inet = crate::backend::seccomp::Inet::OwnNamespace;
    }
    if reads_everywhere(&spec) {
        trim(&mut spec, access::READ);
    }
    Ok(spec)
}

/// Reading and executing are granted at `/` (no `deny_read` path outside
/// the writable roots; bwrap's mounts mask the ones inside): the rule
/// would allow every read it checks.
fn reads_everywhere(spec: &crate::backend::landlock::LayerSpec) -> bool {
    use crate::backend::landlock::access;
    spec.fs_rules
        .iter()
        .any(|r| r.path == std::path::Path::new("/") && r.access & access::READ == access::READ)
}

/// Leaves the rights `leave` to the mounts: a handled right costs a walk up
/// the path on every open that asks for it, and landlock asks for
/// truncation on every open (`find`, `git status` and builds open files by
/// the hundred thousand). Reading is left when the layer would grant it
/// everywhere anyway. Truncation is left when no descriptor reaches a host
/// file past the mounts (`descriptors_reach_past_the_mounts`): every path
/// the command can name outside the writable roots, and every kept path
/// inside them, is then on a read-only mount, where truncating gives EROFS.
fn trim(spec: &mut crate::backend::landlock::LayerSpec, leave: u64) {
    spec.handled_fs &= !leave;
    for r in &mut spec.fs_rules {
        r.access &= spec.handled_fs;
    }
    spec.fs_rules.retain(|r| r.access != 0);
}

/// Whether the command could truncate a host file through a descriptor
/// rather than a path: a descriptor names its file by the caller's mount,
/// which is writable, so `truncate("/proc/self/fd/N")` or an
/// `O_RDONLY|O_TRUNC` open of it passes the sandbox's read-only mounts, and
/// only landlock's truncate right stops it. True when a standard descriptor
/// is a regular file not open for writing outside the writable roots (open
/// for writing, the caller granted `ftruncate` on it already; inside a
/// root it may be truncated anyway; a kept path there is refused by
/// `check_stdio`), when one is a socket (descriptors can arrive over it),
/// when the command may connect to a named unix socket (a host process
/// could send it one), when another descriptor survives into the command, or
/// when a file descriptor's path cannot be read. Says which, as `explain`
/// shows it; `None` when none does. A closed descriptor gets /dev/null
/// inside; a terminal, a pipe or a device names no host file.
fn descriptors_reach_past_the_mounts(
    plan: &Plan,
    spec: &crate::backend::landlock::LayerSpec,
) -> Option<String> {
    if !spec.unix_sockets.is_empty() {
        return Some(
            "the command may connect to named unix sockets (allow_unix_sockets), over which a \
             host process could send it a descriptor"
                .into(),
        );
    }
    if !spec.keep_fds.is_empty() {
        return Some(format!(
            "descriptors above 2 survive into the command ({:?})",
            spec.keep_fds
        ));
    }
    plan.facts
        .stdio
        .iter()
        .zip(STD_NAMES)
        .find_map(|(s, name)| match s {
            StdFd::Socket => Some(format!(
                "{name} is a socket (descriptors can arrive over it)"
            )),
            StdFd::File {
                writing: false,
                path,
            } => match path {
                Some(p) if p.is_absolute() && plan.fs.writable.iter().any(|r| p.starts_with(r)) => {
                    None
                }
                Some(p) => Some(format!(
                    "{name} is a host file outside the writable roots, open for reading ({})",
                    p.display()
                )),
                None => Some(format!(
                    "{name} is a host file whose path could not be read"
                )),
            },
            _ => None,
        })
}

/// `layer_spec`, checked against this kernel.
fn layer(
    plan: &Plan,
    host: &dyn crate::backend::host::Probe,
) -> Result<crate::backend::landlock::LayerSpec, String> {
    let (spec, _) = layer_spec(plan)?;
    spec.check_supported_with(host).map_err(|m| m.to_string())?;
    Ok(spec)
}

/// Each guard's directory by inode, as the broker inside compares it. The
/// directory was seen on the way from a writable root in `render`; it must
/// still be a directory, and not a symlink, now. One that is gone since
/// (another process removed a repository under /tmp) holds nothing to
/// guard: its own name is a guard of its parent's, or, for a repository's
/// top, what could be made there again is a repository made during the run.
fn guard_ids(guards: &[Guard]) -> Result<Vec<GuardId>, String> {
    let mut out = Vec::with_capacity(guards.len());
    for g in guards {
        if let Some((dev, ino)) = dir_id(&g.dir, &g.name.to_string_lossy())? {
            out.push((dev, ino, g.name.as_bytes().to_vec()));
        }
    }
    Ok(out)
}

/// A `deny_read` path outside the writable roots that does not exist at
/// launch has no mount to mask it: a file the host makes there during the
/// run is readable, where landlock's complement would have kept it
/// unreadable. Said, for `explain` and the report.
fn denied_but_absent(plan: &Plan) -> Option<String> {
    let absent: Vec<String> = plan
        .fs
        .deny_read
        .iter()
        .filter_map(crate::plan::PathRule::literal)
        .filter(|p| !plan.fs.writable.iter().any(|w| p.starts_with(w)))
        .filter(|p| std::fs::symlink_metadata(p).is_err())
        .map(|p| format!("`{}`", p.display()))
        .collect();
    if absent.is_empty() {
        return None;
    }
    Some(format!(
        "deny_read {} does not exist at launch, so no mount masks it: a file another process \
         makes there during the run would be readable (landlock's complement kept such a name \
         unreadable)",
        absent.join(", ")
    ))
}

/// The guards' names that do not exist now: the missing protected names
/// only a broker keeps uncreatable.
fn missing_names(guards: &[Guard]) -> Vec<PathBuf> {
    guards
        .iter()
        .map(|g| g.dir.join(&g.name))
        .filter(|p| std::fs::symlink_metadata(p).is_err())
        .collect()
}

/// Each repository worktree's top by inode, marked `ZONE` for the broker.
/// A worktree that is gone meanwhile is left out, as a guard's directory.
fn zone_ids(zones: &[PathBuf]) -> Result<Vec<GuardId>, String> {
    let mut out = Vec::with_capacity(zones.len());
    for z in zones {
        if let Some((dev, ino)) = dir_id(z, ".git")? {
            out.push((dev, ino, crate::inside::stub_format::ZONE.to_vec()));
        }
    }
    Ok(out)
}

/// `(dev, ino)` of the directory `dir`, `None` when it is gone.
fn dir_id(dir: &Path, name: &str) -> Result<Option<(u64, u64)>, String> {
    use std::os::unix::fs::MetadataExt;
    let m = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(format!(
                "`{}` (where `{name}` must stay uncreatable): {}",
                dir.display(),
                crate::policy::io_words(&e)
            ))
        }
    };
    if !m.is_dir() {
        return Err(format!(
            "`{}` changed while the sandbox was being set up",
            dir.display()
        ));
    }
    Ok(Some((m.dev(), m.ino())))
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
    let bwrap = find(&plan.facts, Some(plan)).because(BWRAP, Missing::Program)?;
    if let Some(o) = crate::backend::obstacle::userns_obstacle(host, &bwrap) {
        return Err(Unavailable::new(BWRAP, Missing::Obstacle(o)));
    }
    let mut rendered = render(
        plan,
        &RealHost {
            euid: plan.facts.euid,
        },
    )
    .because(BWRAP, Missing::Rule)?;
    let (mut spec, truncate) = layer_spec(plan).because(BWRAP, Missing::Rule)?;
    host.seccomp_available().because(BWRAP, Missing::Host)?;
    // Without landlock the mounts and namespaces hold what it would, but
    // for the features `layers` refuses by name.
    if let Err(why) = spec.check_supported_with(host) {
        crate::backend::layers::bwrap_without_landlock(plan, &mut spec, &why.to_string())
            .map_err(|m| Unavailable::new(BWRAP, m))?;
        // No bwrap init beside the command: landlock's domain kept the
        // command from it, and with the same user it could otherwise write
        // to its memory through /proc/1/mem. The second stage is the init,
        // undumpable (`inside::stage2::run`).
        rendered.args.push("--as-pid-1".into());
        if let Some(note) = denied_but_absent(plan) {
            spec.without.narrowed.push(note);
        }
    }
    // Each writable root is a mount of its own here, and the kernel refuses
    // a hard link across two mounts (EXDEV) although the host holds both
    // on one filesystem: the broker makes such a link through the host's
    // mount, after the checks a link inside one root gets (`hostlink`).
    if plan.fs.access == crate::policy::SandboxMode::WorkspaceWrite && plan.fs.writable.len() > 1 {
        spec.host_roots = plan.fs.writable.clone();
    }
    // A zone needs every creation at the broker: any name may be `.git`;
    // so does a link between two roots.
    spec.fs.create = rendered.missing || !rendered.zones.is_empty() || !spec.host_roots.is_empty();
    let listener = crate::backend::obstacle::listener_missing(host);
    if let Some(why) = &listener {
        let brokered = crate::backend::layers::Brokered {
            missing: if rendered.missing {
                missing_names(&rendered.guards)
            } else {
                Vec::new()
            },
            zones: &rendered.zones,
        };
        crate::backend::layers::without_listener(&mut spec, Some(brokered), why)
            .map_err(|m| Unavailable::new(BWRAP, m))?;
    }
    // A filter that refuses NETLINK_ROUTE sockets stops bwrap setting up
    // a network namespace's loopback: `none` shares the one dcjail runs
    // in, held by the layer inside; the allowlist is refused.
    if plan.effective_net() != NetMode::Full {
        if let Some(why) = crate::backend::obstacle::netns_missing(host) {
            let fix = crate::backend::obstacle::netns_fix(host);
            crate::backend::layers::bwrap_without_netns(plan, &mut spec, &why, fix)
                .map_err(|m| Unavailable::new(BWRAP, m))?;
            rendered.share_network();
        }
    }
    let mut guards = guard_ids(&rendered.guards).because(BWRAP, Missing::setup)?;
    guards.extend(zone_ids(&rendered.zones).because(BWRAP, Missing::setup)?);
    let report = plan.report_fd.filter(|_| spec.brokered());
    let program = program::encode(&spec, &guards, report).because(BWRAP, Missing::Rule)?;
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
        facts: vec![truncate],
    })
}

/// Whether the second stage's layer is available for the default policy
/// (`doctor`), for a caller as `facts` say.
pub fn layer_bytes_for_default(facts: &crate::plan::Facts) -> Result<(), String> {
    let mut policy = crate::policy::Policy::embedded().map_err(|r| r.message)?;
    policy.sandbox.backend = crate::policy::BackendChoice::Bwrap;
    let plan = crate::plan::build(&policy, vec!["true".into()], facts).map_err(|r| r.message)?;
    let spec = layer(&plan, &crate::backend::host::Real)?;
    if !program::STUB.is_empty() {
        program::encode(&spec, &[], None)?;
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
            ..Default::default()
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
        let spec = layer_with_truncation(&plan_denying(&[])).unwrap();
        assert_eq!(spec.handled_fs & access::READ, 0);
        assert_eq!(spec.handled_fs & access::TRUNCATE, access::TRUNCATE);
        assert_eq!(spec.handled_fs & access::WRITE_FILE, access::WRITE_FILE);
        assert_eq!(spec.handled_fs & access::MAKE_REG, access::MAKE_REG);
        assert_rules_within_handled(&spec);
    }

    #[test]
    fn truncation_is_left_to_the_mounts_only_when_no_descriptor_reaches_past_them() {
        for denied in [&[][..], &["/etc/hostname"][..]] {
            let kept = layer_with_truncation(&plan_denying(denied)).unwrap();
            let mut left = kept.clone();
            trim(&mut left, access::TRUNCATE);
            assert_eq!(kept.handled_fs & access::TRUNCATE, access::TRUNCATE);
            assert_eq!(left.handled_fs & access::TRUNCATE, 0);
            // Nothing else changes: the same rights, the same rules.
            assert_eq!(left.handled_fs, kept.handled_fs & !access::TRUNCATE);
            assert_eq!(left.handled_fs & access::WRITE_FILE, access::WRITE_FILE);
            assert_rules_within_handled(&left);
            assert_rules_within_handled(&kept);
        }
    }

    /// A plan whose only writable root is `/w`, with fds 0–2 as given.
    fn plan_with_stdio(stdio: [StdFd; 3]) -> Plan {
        let mut plan = plan_denying(&[]);
        plan.fs.writable = vec![PathBuf::from("/w")];
        plan.facts.stdio = stdio;
        plan
    }

    #[test]
    fn the_truncate_right_follows_the_callers_descriptors_and_says_which() {
        let file = |p: Option<&str>, writing: bool| StdFd::File {
            path: p.map(PathBuf::from),
            writing,
        };
        let tty = StdFd::Terminal {
            device: Some("/dev/pts/3".into()),
        };
        let kept = |stdio: [StdFd; 3], fact: &str| {
            let (spec, why) = layer_spec(&plan_with_stdio(stdio)).unwrap();
            assert_eq!(
                spec.handled_fs & access::TRUNCATE,
                access::TRUNCATE,
                "{why}"
            );
            assert_eq!(why, format!("truncate: kept, {fact}"));
        };
        kept(
            [file(Some("/etc/passwd"), false), StdFd::Other, StdFd::Other],
            "stdin is a host file outside the writable roots, open for reading (/etc/passwd)",
        );
        kept(
            [StdFd::Closed, StdFd::Other, StdFd::Socket],
            "stderr is a socket (descriptors can arrive over it)",
        );
        kept(
            [StdFd::Closed, file(None, false), StdFd::Other],
            "stdout is a host file whose path could not be read",
        );
        let left = |stdio: [StdFd; 3]| {
            let (spec, why) = layer_spec(&plan_with_stdio(stdio)).unwrap();
            assert_eq!(spec.handled_fs & access::TRUNCATE, 0, "{why}");
            assert!(
                why.starts_with("truncate: left to the read-only mounts"),
                "{why}"
            );
            why
        };
        let why = left([
            file(Some("/w/in.txt"), false),
            file(None, true),
            tty.clone(),
        ]);
        assert!(
            why.ends_with(
                "(stdin: a file open for reading only (/w/in.txt), stdout: a file open for \
                 writing, stderr: a terminal (/dev/pts/3))"
            ),
            "{why}"
        );
        left([StdFd::Closed, StdFd::Closed, StdFd::Closed]);
        // A descriptor kept past 2, or a named unix socket, keeps it whatever fds 0–2 are.
        let mut plan = plan_with_stdio([StdFd::Closed, StdFd::Closed, StdFd::Closed]);
        plan.net.allow_unix_sockets = vec!["/run/s.sock".into()];
        let (spec, why) = layer_spec(&plan).unwrap();
        assert_eq!(spec.handled_fs & access::TRUNCATE, access::TRUNCATE);
        assert!(why.contains("named unix sockets"), "{why}");
    }

    #[test]
    fn a_denied_path_outside_the_roots_keeps_reads_handled() {
        // /etc is outside every writable root of a read-only plan.
        let spec = layer_with_truncation(&plan_denying(&["/etc/hostname"])).unwrap();
        assert_eq!(spec.handled_fs & access::READ, access::READ);
        assert_eq!(spec.handled_fs & access::TRUNCATE, access::TRUNCATE);
        assert!(!spec
            .fs_rules
            .iter()
            .any(|r| r.path == std::path::Path::new("/") && r.access & access::READ_FILE != 0));
        assert_rules_within_handled(&spec);
    }

    #[test]
    fn a_guard_whose_directory_is_gone_guards_nothing_and_refuses_nothing() {
        let d = std::env::temp_dir().join(format!("dcjail-dirid-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("here")).unwrap();
        std::fs::write(d.join("file"), "").unwrap();
        let g = |dir: &str| Guard {
            dir: d.join(dir),
            name: ".bashrc".into(),
        };
        let ids = guard_ids(&[g("here"), g("gone")]).unwrap();
        assert_eq!(ids.len(), 1);
        assert!(guard_ids(&[g("file")]).is_err());
        assert_eq!(
            zone_ids(&[d.join("gone"), d.join("here")]).unwrap().len(),
            1
        );
        std::fs::remove_dir_all(&d).unwrap();
    }
}
