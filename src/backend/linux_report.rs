//! The Linux half of `dcjail doctor`: every check and the bwrap and
//! landlock backends, judged from `backend::obstacle` over the host probe
//! (pure, so each environment is tested with made-up answers). Only one
//! probe acts: `try_bwrap` runs bwrap for real, with every namespace dcjail
//! asks for and `true` inside.

use super::host::{paths, Probe};
use super::landlock::MIN_ABI;
use super::obstacle::{
    apparmor, container, landlock_at_least, mount_obstacle, nested, nested_words, proc_covered,
    sysctl, userns_obstacle, wsl, AppArmor, Obstacle, Wsl, APPARMOR_FIX, NESTED_FIX, NS_FILTER_FIX,
    PROC_MASKED_FIX, UNKNOWN_FIX,
};
use super::report::{BackendReport, Check, Report, Status};
use super::Kind;
use std::path::{Path, PathBuf};

/// What bwrap's own words on failure say about the obstacle, for `doctor`'s
/// real run (the quick judgement found nothing, yet bwrap failed).
fn bwrap_failure(p: &dyn Probe, said: &str) -> (String, String) {
    let lsm_words = "an LSM (AppArmor, SELinux, a BPF LSM) refuses what bwrap needs";
    if said.contains("RTM_NEWADDR") || said.contains("uid map") || said.contains("setting up uid") {
        if sysctl(p, paths::APPARMOR_RESTRICT).as_deref() == Some("1") {
            return (
                "the user namespace is created but has no privileges inside: AppArmor's restriction of unprivileged user namespaces applies to this bwrap".into(),
                APPARMOR_FIX.into(),
            );
        }
        return (lsm_words.into(), UNKNOWN_FIX.into());
    }
    if said.contains("No permissions to create") || said.contains("Creating new namespace failed") {
        if let Some(outer) = nested(p) {
            return (nested_words(&outer), NESTED_FIX.into());
        }
        return match container(p) {
            Some(c) => (
                format!("the {c} container forbids user namespaces"),
                NS_FILTER_FIX.into(),
            ),
            None => (
                format!("user namespaces cannot be created here ({lsm_words})"),
                UNKNOWN_FIX.into(),
            ),
        };
    }
    if said.contains("Can't mount proc") {
        let covered = proc_covered(p, 4);
        let inside = match super::obstacle::outer(p) {
            Some(o) => format!("; dcjail runs {}, which passes such a /proc on", o.words()),
            None => String::new(),
        };
        return (
            if covered.is_empty() {
                format!(
                    "the kernel refuses a new /proc inside a user namespace while paths of the /proc above are covered by other mounts, as container runtimes mask them{inside}"
                )
            } else {
                format!(
                    "the kernel refuses a new /proc inside a user namespace while paths of the /proc above are covered by other mounts ({}{}), as container runtimes mask them{inside}",
                    covered.join(", "),
                    if covered.len() == 4 { ", ..." } else { "" }
                )
            },
            PROC_MASKED_FIX.into(),
        );
    }
    if said.contains("Failed to make / slave") || said.contains("mount") {
        return (
            "bubblewrap made its namespaces but cannot mount inside them: something other than \
             a seccomp filter refuses mounts there (an LSM rule, such as the `deny mount` of \
             Docker's AppArmor profile for containers)"
                .into(),
            "run the container under an AppArmor profile that allows mounts (Docker: \
             --security-opt apparmor=unconfined), or use --backend landlock, which makes no mount"
                .into(),
        );
    }
    ("unknown obstacle".into(), UNKNOWN_FIX.into())
}

/// The Linux half of `doctor`: every check, and the bwrap and landlock
/// backends judged from them.
pub fn report(p: &dyn Probe) -> Report {
    let mut checks = Vec::new();
    let ctr = container(p);
    let wsl = wsl(p);
    match &wsl {
        Some(Wsl::One) => checks.push(
            Check::new(
                "wsl",
                Status::Fail,
                &[Kind::Bwrap, Kind::Landlock],
                "WSL1: system calls are translated by Windows, with no namespaces, landlock or seccomp".into(),
            )
            .with_fix(Some("convert the distribution to WSL2, from Windows: wsl --set-version <distribution> 2".into())),
        ),
        Some(Wsl::Two { kernel }) => {
            let ll = match landlock_at_least(p, MIN_ABI) {
                Ok(a) => format!("landlock ABI {a} is on"),
                Err(o) => format!("landlock is not usable ({}): bwrap runs without its inner layer, and the landlock backend not at all", o.message()),
            };
            checks.push(Check::new(
                "wsl",
                Status::Info,
                &[],
                format!("WSL2 (kernel {kernel}): user namespaces and bubblewrap work as on other Linux kernels; {ll}"),
            ));
        }
        None => {}
    }
    if let Some(c) = &ctr {
        checks.push(Check::new(
            "container",
            Status::Info,
            &[],
            format!("running inside a container ({c})"),
        ));
    }
    if let Some(outer) = nested(p) {
        checks.push(Check::new(
            "nested",
            Status::Info,
            &[],
            format!(
                "running inside another dcjail sandbox (backend {outer}): its seccomp filter \
                 refuses new namespaces and holds the seccomp listener; under landlock, the \
                 protected paths inside the writable roots that the outer sandbox is checked at \
                 launch to hold are left to it (layers.relied_on_outer), and a run that protects \
                 one it does not hold is refused"
            ),
        ));
    }
    let (landlock_check, landlock) = landlock_checks(p);
    let mut bwrap = bwrap_report(p, &mut checks, &landlock);
    if let (Some(Wsl::One), true) = (&wsl, bwrap.works) {
        bwrap.works = false;
        bwrap
            .details
            .push("WSL1 has no namespaces or seccomp for bwrap to use".into());
    }
    checks.extend(landlock_check);
    let lreport = landlock_backend(p, &landlock);
    Report {
        checks,
        backends: vec![bwrap, lreport],
    }
}

fn landlock_checks(p: &dyn Probe) -> (Vec<Check>, Result<u32, Obstacle>) {
    let both = [Kind::Bwrap, Kind::Landlock];
    let ll = landlock_at_least(p, MIN_ABI);
    let mut v = vec![match &ll {
        Ok(a) => Check::new(
            "landlock",
            Status::Ok,
            &both,
            format!("landlock ABI {a} (needs {MIN_ABI})"),
        ),
        Err(o) => Check::new("landlock", Status::Fail, &both, o.message()).with_fix(Some(o.fix())),
    }];
    v.push(match super::obstacle::listener_missing(p) {
        None => Check::new(
            "seccomp-notify",
            Status::Ok,
            &both,
            "seccomp user notification available (the broker)".into(),
        ),
        Some(why) => Check::new("seccomp-notify", Status::Fail, &both, why).with_fix(Some(
            "run dcjail where a process may install a seccomp filter with \
             SECCOMP_FILTER_FLAG_NEW_LISTENER (not under gVisor, nor inside a sandbox that holds \
             the listener already); until then the features that need the broker are refused by \
             name"
                .into(),
        )),
    });
    v.push(match p.seccomp_available() {
        Ok(()) => Check::new(
            "seccomp",
            Status::Ok,
            &both,
            "seccomp filters available".into(),
        ),
        Err(e) => Check::new("seccomp", Status::Fail, &both, e).with_fix(Some(
            "run a kernel built with CONFIG_SECCOMP_FILTER=y".into(),
        )),
    });
    (v, ll)
}

fn landlock_backend(p: &dyn Probe, ll: &Result<u32, Obstacle>) -> BackendReport {
    let mut details = Vec::new();
    let mut fix = None;
    let mut works = true;
    match ll {
        Ok(a) => details.push(format!("landlock ABI {a} (needs {MIN_ABI})")),
        Err(o) => {
            works = false;
            details.push(o.message());
            fix = Some(o.fix());
        }
    }
    match p.seccomp_available() {
        Ok(()) => details.push("seccomp filters available".into()),
        Err(e) => {
            works = false;
            details.push(e);
        }
    }
    if works {
        details.push(
            "holds: read-only and workspace-write without protected paths, deny_read outside the \
             writable roots, network none/full, only the command's own terminal, no_new_privs, \
             seccomp filter, signal/abstract-socket scoping"
                .into(),
        );
        details.push(super::landlock::capabilities_held(p.euid() == 0).into());
        if let Some(why) = super::obstacle::listener_missing(p) {
            details.push(without_listener_words(&why));
        }
        details.push(
            "refuses: protected paths, deny_write or deny_read inside writable roots, \
             danger-full-access, the network allowlist (connect is filtered by port, not \
             address); bwrap enforces them"
                .into(),
        );
    }
    BackendReport {
        kind: Kind::Landlock,
        works,
        details,
        fix,
    }
}

/// bwrap: installed and trusted, new enough, not stopped by a kernel switch,
/// a filter or AppArmor, able to build its sandbox for real, and with its
/// second stage (landlock + seccomp inside) available.
fn bwrap_report(
    p: &dyn Probe,
    checks: &mut Vec<Check>,
    ll: &Result<u32, Obstacle>,
) -> BackendReport {
    let mut details = Vec::new();
    let fail = |details: Vec<String>, fix: Option<String>| BackendReport {
        kind: Kind::Bwrap,
        works: false,
        details,
        fix,
    };
    let bwrap = match found_bwrap(p, checks, &mut details) {
        Ok(b) => b,
        Err(fix) => return fail(details, fix),
    };
    let quick = namespace_checks(p, &bwrap, checks);
    if let Err(fix) = sandbox_check(p, &bwrap, quick.as_ref(), checks, &mut details) {
        return fail(details, Some(fix));
    }
    if let Some(o) = quick {
        details.push(o.message());
        return fail(details, Some(o.fix()));
    }
    let listener = super::obstacle::listener_missing(p);
    if let Err(e) = p.seccomp_available() {
        details.push(format!("second stage: {e}"));
        return fail(details, None);
    }
    if let Err(o) = ll {
        details.push(format!(
            "second stage: without landlock ({}): {BWRAP_WITHOUT_LANDLOCK}",
            o.message()
        ));
        if let Some(why) = &listener {
            details.push(without_listener_words(why));
        }
        return BackendReport {
            kind: Kind::Bwrap,
            works: true,
            details,
            fix: Some(o.fix()),
        };
    }
    if let Some(why) = &listener {
        details.push(without_listener_words(why));
    }
    match p.second_stage() {
        Ok(()) => {
            details.push("second stage: landlock + seccomp layer supported".into());
            let net = match super::obstacle::netns_missing(p) {
                None => "network none/allowlist/full",
                Some(_) => "network none (without a network namespace of its own) and full; the allowlist is refused",
            };
            details.push(format!("holds: every guarantee for read-only, workspace-write and danger-full-access (protected paths and deny_write by read-only mounts), {net}; globs in deny/allow lists cover what they match at launch (a matched directory whole)"));
            BackendReport {
                kind: Kind::Bwrap,
                works: true,
                details,
                fix: None,
            }
        }
        Err(e) => {
            details.push(format!("second stage: {e}"));
            fail(details, None)
        }
    }
}

/// What bwrap holds and refuses without its inner landlock layer, as
/// `backend::layers::bwrap_without_landlock` decides it.
const BWRAP_WITHOUT_LANDLOCK: &str = "runs without its inner layer: the mounts and namespaces \
    hold read-only, workspace-write, protected and deny_write paths (read-only mounts), deny_read \
    (masks), only the command's own terminal, signals (a pid namespace), network none and \
    allowlist (a network namespace of its own), and the seccomp filter still refuses ptrace, \
    new namespaces, mount, bpf, io_uring and the rest; refused, naming the feature (exit 122): \
    network full (the host's abstract unix sockets), named unix sockets (allow_unix_sockets), \
    and a standard descriptor open for reading on a host file outside the writable roots \
    (reopened through /proc/self/fd it would be writable)";

/// What either Linux backend holds and refuses without a broker.
fn without_listener_words(why: &str) -> String {
    format!(
        "without seccomp user notification ({why}): no broker; refused, naming the feature (exit \
         122): a missing protected name kept uncreatable and no new git repository in a \
         worktree (workspace-write with protect_defaults: set protect_defaults = false, or \
         create the names), named unix sockets; narrower, and said in explain and the report: no \
         unix socket but a socketpair, metadata changes refused everywhere (EROFS), a hard link \
         between two writable roots fails (EXDEV), denials are not recorded"
    )
}

/// The `bubblewrap` check: the bwrap dcjail would run, trusted and new
/// enough; on failure, the fix (if one is known).
fn found_bwrap(
    p: &dyn Probe,
    checks: &mut Vec<Check>,
    details: &mut Vec<String>,
) -> Result<PathBuf, Option<String>> {
    let only = [Kind::Bwrap];
    let bwrap = match p.bwrap() {
        Ok(b) => b,
        Err(e) => {
            let fix = if e.starts_with(super::bwrap::NO_TRUSTED_BWRAP) {
                "run dcjail where root's files belong to root (not inside a user namespace that leaves root unmapped), or install bubblewrap owned by the user running dcjail".to_string()
            } else {
                super::bwrap::install_hint()
            };
            checks.push(
                Check::new("bubblewrap", Status::Fail, &only, e.clone())
                    .with_fix(Some(fix.clone())),
            );
            details.push(e);
            return Err(Some(fix));
        }
    };
    let min = super::bwrap::MIN_VERSION;
    match p.bwrap_version(&bwrap) {
        Some(v) if v >= min => {
            let d = format!("{}: bubblewrap {}.{}.{}", bwrap.display(), v.0, v.1, v.2);
            checks.push(Check::new("bubblewrap", Status::Ok, &only, d.clone()));
            details.push(d);
            Ok(bwrap)
        }
        Some(v) => {
            let d = format!(
                "{}: bubblewrap {}.{}.{} is too old ({}.{}.{} needed)",
                bwrap.display(),
                v.0,
                v.1,
                v.2,
                min.0,
                min.1,
                min.2
            );
            let fix = super::bwrap::install_hint();
            checks.push(
                Check::new("bubblewrap", Status::Fail, &only, d.clone())
                    .with_fix(Some(fix.clone())),
            );
            details.push(d);
            Err(Some(fix))
        }
        None => {
            let d = format!("cannot tell the version of {}", bwrap.display());
            checks.push(Check::new("bubblewrap", Status::Fail, &only, d.clone()));
            details.push(d);
            Err(None)
        }
    }
}

/// The `user-namespaces` and `apparmor-userns` checks, each said whether it
/// fails or not; returns the obstacle `auto` would see.
fn namespace_checks(p: &dyn Probe, bwrap: &Path, checks: &mut Vec<Check>) -> Option<Obstacle> {
    let only = [Kind::Bwrap];
    let quick = userns_obstacle(p, bwrap);
    let userns_fail = quick.as_ref().filter(|o| o.check_id() == "user-namespaces");
    checks.push(match userns_fail {
        Some(o) => {
            Check::new("user-namespaces", Status::Fail, &only, o.message()).with_fix(Some(o.fix()))
        }
        None => Check::new(
            "user-namespaces",
            Status::Ok,
            &only,
            "no kernel switch or seccomp filter stops user namespaces".into(),
        ),
    });
    checks.push(match mount_obstacle(p) {
        Some(o) => Check::new("mounts", Status::Fail, &only, o.message()).with_fix(Some(o.fix())),
        None => Check::new(
            "mounts",
            Status::Ok,
            &only,
            "no seccomp filter refuses mount".into(),
        ),
    });
    let ok = |m: String| Check::new("apparmor-userns", Status::Ok, &only, m);
    checks.push(match (apparmor(p, bwrap), &quick) {
        (_, Some(o @ Obstacle::AppArmorUserns { .. })) => {
            Check::new("apparmor-userns", Status::Fail, &only, o.message()).with_fix(Some(o.fix()))
        }
        (AppArmor::Covered { file }, _) => ok(format!(
            "AppArmor restricts unprivileged user namespaces; {}/{file} grants them to {}",
            paths::APPARMOR_DIR,
            bwrap.display()
        )),
        (AppArmor::Uncovered { .. }, _) => ok(
            "AppArmor restricts unprivileged user namespaces, but not for root or a setuid bwrap"
                .into(),
        ),
        (AppArmor::NotRestricted, _) => {
            ok("AppArmor does not restrict user namespaces here".into())
        }
    });
    quick
}

/// The `bwrap-sandbox` check: bwrap run for real. A failure that an
/// obstacle above foresaw has its fix there; this check then only says so.
/// `Err` holds the fix for bwrap's report.
fn sandbox_check(
    p: &dyn Probe,
    bwrap: &Path,
    quick: Option<&Obstacle>,
    checks: &mut Vec<Check>,
    details: &mut Vec<String>,
) -> Result<(), String> {
    let only = [Kind::Bwrap];
    // Where bwrap cannot set up a network namespace, it runs `none`
    // without one (`layers::bwrap_without_netns`): tried so, and said.
    let netns = super::obstacle::netns_missing(p);
    if let Some(why) = &netns {
        checks.push(
            Check::new(
                "network-namespace",
                Status::Fail,
                &only,
                format!(
                    "{why}: under bwrap, network none runs without a network namespace of its \
                     own (the seccomp filter inside refuses every socket but AF_UNIX), and the \
                     network allowlist is refused"
                ),
            )
            .with_fix(Some(super::obstacle::netns_fix(p).into())),
        );
    }
    match p.try_bwrap(bwrap, netns.is_none()) {
        Ok(()) => {
            if let Some(c) = checks
                .iter_mut()
                .find(|c| c.id == "apparmor-userns" && c.status == Status::Fail)
            {
                c.message.push_str("; bwrap did create its namespaces just now (a profile dcjail does not find in /etc/apparmor.d covers it), but `auto` passes it over until one there does");
            }
            let d = match netns {
                None => "user, pid, ipc, uts, cgroup and net namespaces: created",
                Some(_) => "user, pid, ipc, uts and cgroup namespaces: created (no net namespace)",
            }
            .to_string();
            checks.push(Check::new("bwrap-sandbox", Status::Ok, &only, d.clone()));
            details.push(d);
            Ok(())
        }
        Err(said) => {
            details.push(format!("bwrap could not create the sandbox: {said}"));
            let (words, why, fix, own) = match quick {
                Some(o) => (
                    format!(
                        "bwrap could not create the sandbox ({said}), as the {} check foresaw",
                        o.check_id()
                    ),
                    o.message(),
                    o.fix(),
                    None,
                ),
                None => {
                    let (why, fix) = bwrap_failure(p, &said);
                    (
                        format!("bwrap could not create the sandbox ({said}): {why}"),
                        why,
                        fix.clone(),
                        Some(fix),
                    )
                }
            };
            checks.push(Check::new("bwrap-sandbox", Status::Fail, &only, words).with_fix(own));
            details.push(why);
            Err(fix)
        }
    }
}
