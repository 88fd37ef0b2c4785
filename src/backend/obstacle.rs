//! Why a Linux backend cannot work on this machine, and the fix: judged
//! from [`Probe`] answers only, so every environment dcjail meets (Ubuntu's
//! AppArmor restriction of user namespaces, containers and their seccomp
//! profiles, `user.max_user_namespaces = 0`, kernels without landlock, WSL)
//! is tested with made-up answers, and the real machine is asked the same
//! questions in the same order.
//!
//! Owns: the obstacles (a closed set, each with its words and fix), the
//! quick judgement `auto` makes before choosing bwrap ([`userns_obstacle`]),
//! the landlock diagnosis ([`landlock_abi`]), which AppArmor profile (if any)
//! lets the bwrap dcjail uses create namespaces ([`apparmor`]); the Linux
//! half of `doctor`'s report is built from these in `linux_report`. It never
//! changes the machine: setting things right is `dcjail setup` (or the
//! person).

use super::host::{paths, NsCalls, Probe, Sys};
use std::path::{Path, PathBuf};

/// The profile file `dcjail setup apparmor` installs.
pub const DCJAIL_PROFILE: &str = "dcjail-bwrap";
/// The profile a distribution ships for its own bubblewrap
/// (`apparmor-profiles`: it attaches to /usr/bin/bwrap only).
pub const DISTRO_PROFILE: &str = "bwrap-userns-restrict";
/// Where a distribution's bubblewrap lives, the one path its profile covers.
pub const DISTRO_BWRAP: &str = "/usr/bin/bwrap";
/// At most this many files named for bwrap are read looking for one that
/// covers it; a machine with more is judged on the first ones.
const PROFILE_SCAN_LIMIT: usize = 1000;

/// A thing that stops a backend here. Each has its words and its fix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Obstacle {
    /// `user.max_user_namespaces = 0`: nobody may create a user namespace.
    /// `outer`: the sandbox dcjail runs inside, which set it (srt does).
    UsernsLimitZero {
        container: Option<String>,
        outer: Option<Outer>,
    },
    /// Debian's `kernel.unprivileged_userns_clone = 0`.
    UnprivilegedUsernsOff,
    /// A seccomp filter answers `unshare`/`clone` with namespace flags
    /// before the kernel does (Docker's and Podman's default profiles).
    UsernsFiltered {
        call: &'static str,
        answer: Sys,
        container: Option<String>,
    },
    /// The same refusal from the seccomp filter of another dcjail this one
    /// runs inside (`outer`: its backend), not a container's profile.
    UsernsFilteredByDcjail {
        call: &'static str,
        answer: Sys,
        outer: String,
    },
    /// Running as uid 0 without CAP_SETFCAP (a container started with
    /// `--cap-drop ALL` as root; an outer sandbox that dropped every
    /// capability, Codex's among them): since Linux 5.12 mapping uid 0
    /// into a new user namespace needs that capability, so bubblewrap
    /// cannot write its uid map.
    RootWithoutSetfcap {
        container: Option<String>,
        outer: Option<Outer>,
    },
    /// A seccomp filter answers `mount` before the kernel does (a profile
    /// that keeps namespaces but not mounts): bwrap creates its namespaces
    /// and then cannot build the sandbox's mounts.
    MountsFiltered {
        answer: Sys,
        container: Option<String>,
        /// The backend of the dcjail whose filter it is, when nested.
        outer: Option<String>,
    },
    /// `kernel.apparmor_restrict_unprivileged_userns = 1` and no AppArmor
    /// profile grants `userns` to the bwrap dcjail uses. `elsewhere` is a
    /// profile that covers another bwrap (the distribution's covers only
    /// /usr/bin/bwrap).
    AppArmorUserns {
        bwrap: PathBuf,
        elsewhere: Option<(String, String)>,
    },
    /// ENOSYS with no filter in the way: the kernel has no landlock.
    LandlockNotBuilt { kernel: String, wsl: bool },
    /// EOPNOTSUPP: built in, but not in the LSM list the kernel booted with.
    LandlockDisabled { lsm: Option<String>, wsl: bool },
    /// Refused by a seccomp filter. `sure` when the answer cannot be the
    /// kernel's own (EPERM, a kill, or ENOSYS while the LSM list names
    /// landlock).
    LandlockFiltered {
        answer: Sys,
        sure: bool,
        container: Option<String>,
    },
    /// Landlock answers, but with an ABI older than the one needed.
    LandlockOld {
        abi: u32,
        needed: u32,
        kernel: String,
        wsl: bool,
    },
    /// Any other answer to the version query.
    LandlockUnknown { answer: Sys },
}

fn errno_name(e: i32) -> String {
    let name = match e {
        libc::EPERM => "EPERM",
        libc::EACCES => "EACCES",
        libc::ENOSYS => "ENOSYS",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::EINVAL => "EINVAL",
        libc::ENOSPC => "ENOSPC",
        libc::EBUSY => "EBUSY",
        _ => return format!("errno {e}"),
    };
    name.to_string()
}

/// Why no filter of dcjail's can hand system calls to a broker here
/// (seccomp user notification), or `None` when one can.
pub fn listener_missing(host: &dyn Probe) -> Option<String> {
    match host.seccomp_listener_answer()? {
        Sys::Ok(_) => None,
        Sys::Err(libc::EBUSY) => Some(
            "seccomp user notification is taken: a seccomp filter above dcjail holds the listener \
             already (dcjail runs inside another sandbox that brokers its system calls, a dcjail \
             among them)"
                .into(),
        ),
        a => Some(format!(
            "seccomp user notification is refused here: installing a filter with \
             SECCOMP_FILTER_FLAG_NEW_LISTENER {} under the seccomp filter dcjail runs in \
             (gVisor and some container runtimes have no user notification)",
            answer_words(a)
        )),
    }
}

fn answer_words(a: Sys) -> String {
    match a {
        Sys::Ok(v) => format!("returned {v}"),
        Sys::Err(e) => format!("failed with {}", errno_name(e)),
        Sys::Killed(s) => format!("killed the process asking (signal {s})"),
    }
}

fn in_container(c: &Option<String>) -> String {
    match c {
        Some(c) => format!(" (this runs inside a {c} container)"),
        None => String::new(),
    }
}

pub(super) const NS_FILTER_FIX: &str = "start the container with a seccomp profile that allows unshare and clone with namespace flags (Docker, Podman: --security-opt seccomp=PROFILE), or use --backend landlock, which needs no namespace";
pub(super) const MOUNT_FILTER_FIX: &str = "start the container with a seccomp profile that allows mount, umount2 and pivot_root (Docker, Podman: --security-opt seccomp=PROFILE), or use --backend landlock, which makes no mount";
pub(super) const NESTED_FIX: &str = "use --backend landlock, which needs no namespace (auto chooses it here), or run this dcjail outside the other one";
pub(super) const APPARMOR_FIX: &str = "sudo dcjail setup apparmor --install (a profile for this bwrap only; `dcjail setup apparmor` prints it first), or use --backend landlock";
pub(super) const SETFCAP_FIX: &str = "run dcjail as a user other than root (Docker: --user UID:GID; Kubernetes: runAsUser), or keep CAP_SETFCAP (Docker gives it to root unless --cap-drop removes it; --cap-add SETFCAP), or use --backend landlock, which needs no namespace";
pub(super) const PROC_MASKED_FIX: &str = "start the container with its /proc unmasked (Docker: --security-opt systempaths=unconfined; Podman: --security-opt unmask=ALL; Kubernetes: procMount: Unmasked, which needs hostUsers: false), or use --backend landlock, which mounts nothing";
pub(super) const UNKNOWN_FIX: &str = "see bwrap's words above; or use --backend landlock";

const LANDLOCK_CALLS: &str =
    "landlock_create_ruleset, landlock_add_rule and landlock_restrict_self";

impl Obstacle {
    /// The `doctor` check this obstacle fails.
    pub fn check_id(&self) -> &'static str {
        match self {
            Obstacle::UsernsLimitZero { .. }
            | Obstacle::UnprivilegedUsernsOff
            | Obstacle::UsernsFiltered { .. }
            | Obstacle::UsernsFilteredByDcjail { .. }
            | Obstacle::RootWithoutSetfcap { .. } => "user-namespaces",
            Obstacle::AppArmorUserns { .. } => "apparmor-userns",
            Obstacle::MountsFiltered { .. } => "mounts",
            _ => "landlock",
        }
    }

    /// The obstacle in a few words, where a refusal names it a second
    /// time (the landlock backend's, saying why bwrap cannot hold a path).
    pub fn short(&self) -> String {
        match self {
            Obstacle::RootWithoutSetfcap { outer, .. } => format!(
                "uid 0 without CAP_SETFCAP{}",
                match outer {
                    Some(Outer::CodexNoNetwork) => " inside Codex's sandbox",
                    _ => "",
                }
            ),
            Obstacle::UsernsLimitZero {
                outer: Some(Outer::Srt),
                ..
            } => "srt sets user.max_user_namespaces = 0".into(),
            o => o.message(),
        }
    }

    pub fn message(&self) -> String {
        match self {
            Obstacle::UsernsLimitZero {
                outer: Some(o), ..
            } => format!(
                "user namespaces are disabled (user.max_user_namespaces = 0) {}, which sets it \
                 to 0 for the commands it runs",
                o.words()
            ),
            Obstacle::UsernsLimitZero { container, .. } => format!(
                "user namespaces are disabled (user.max_user_namespaces = 0){}",
                in_container(container)
            ),
            Obstacle::UnprivilegedUsernsOff => {
                "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone = 0)"
                    .into()
            }
            Obstacle::UsernsFiltered {
                call,
                answer,
                container,
            } => format!(
                "a seccomp filter refuses namespace creation: {call} with CLONE_NEWUSER {}, before the kernel saw it{}",
                answer_words(*answer),
                in_container(container)
            ),
            Obstacle::UsernsFilteredByDcjail {
                call,
                answer,
                outer,
            } => format!(
                "{}: {call} with CLONE_NEWUSER {}",
                nested_words(outer),
                answer_words(*answer)
            ),
            Obstacle::RootWithoutSetfcap { container, outer } => format!(
                "uid 0 without CAP_SETFCAP cannot map itself into a new user namespace (Linux 5.12 and later ask for that capability), so bubblewrap cannot set up its uid map{}",
                match outer {
                    Some(o) => format!(" (dcjail runs {})", o.words()),
                    None => in_container(container),
                }
            ),
            Obstacle::MountsFiltered {
                answer,
                outer: Some(outer),
                ..
            } => format!(
                "inside another dcjail sandbox, whose seccomp filter refuses mounts (the outer \
                 backend: {outer}): mount {}",
                answer_words(*answer)
            ),
            Obstacle::MountsFiltered {
                answer, container, ..
            } => format!(
                "a seccomp filter refuses mounts: mount {}, before the kernel saw it, so bubblewrap \
                 cannot build the sandbox's mounts{}",
                answer_words(*answer),
                in_container(container)
            ),
            Obstacle::AppArmorUserns { bwrap, elsewhere } => {
                let mut m = format!(
                    "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1) and no AppArmor profile grants `userns` to {}, the bubblewrap dcjail uses",
                    bwrap.display()
                );
                if let Some((file, path)) = elsewhere {
                    m.push_str(&format!(
                        " ({}/{file} covers only {path})",
                        paths::APPARMOR_DIR
                    ));
                }
                m
            }
            _ => self.landlock_message(),
        }
    }

    /// `message` for the landlock obstacles.
    fn landlock_message(&self) -> String {
        match self {
            Obstacle::LandlockNotBuilt { kernel, .. } => format!(
                "landlock is not built into this kernel ({kernel}): landlock_create_ruleset is ENOSYS and no seccomp filter is in the way"
            ),
            Obstacle::LandlockDisabled { lsm, .. } => format!(
                "landlock is built into this kernel but not enabled: it is not in the LSM list{}",
                match lsm {
                    Some(l) => format!(" ({l})"),
                    None => String::new(),
                }
            ),
            Obstacle::LandlockFiltered {
                answer,
                sure,
                container,
            } => {
                if *sure {
                    format!(
                        "a seccomp filter refuses landlock's system calls (landlock_create_ruleset {}){}",
                        answer_words(*answer),
                        in_container(container)
                    )
                } else {
                    format!(
                        "landlock_create_ruleset {} under a seccomp filter: the filter refuses landlock's system calls, or the kernel lacks landlock{}",
                        answer_words(*answer),
                        in_container(container)
                    )
                }
            }
            Obstacle::LandlockOld {
                abi,
                needed,
                kernel,
                ..
            } => format!(
                "landlock ABI {abi} in this kernel ({kernel}): ABI {needed} (Linux 6.12) is needed for signal and abstract-socket scoping"
            ),
            Obstacle::LandlockUnknown { answer } => {
                format!("cannot query landlock: {}", answer_words(*answer))
            }
            _ => String::new(),
        }
    }

    pub fn fix(&self) -> String {
        let wsl_kernel = "from Windows, `wsl --update` for a newer WSL kernel (landlock ABI 6 needs Linux 6.12), or a kernel of your own built with CONFIG_SECURITY_LANDLOCK=y set as `kernel=` in the [wsl2] section of %UserProfile%\\.wslconfig, then `wsl --shutdown`";
        match self {
            Obstacle::UsernsLimitZero {
                outer: Some(o), ..
            } => o.userns_fix().into(),
            Obstacle::RootWithoutSetfcap {
                outer: Some(Outer::CodexNoNetwork),
                ..
            } => "run dcjail as a user other than root (start Codex as that user), or use \
                  --backend landlock, which needs no namespace"
                .into(),
            Obstacle::UsernsLimitZero {
                container: None, ..
            } => {
                "sudo sysctl -w user.max_user_namespaces=15000 (and the same line in /etc/sysctl.d/ to keep it), or use --backend landlock".into()
            }
            Obstacle::UsernsLimitZero {
                container: Some(_),
                ..
            } => {
                "raise user.max_user_namespaces where it is 0 (on the host: sudo sysctl -w user.max_user_namespaces=15000; or in the user namespace the container runs in), or use --backend landlock".into()
            }
            Obstacle::UnprivilegedUsernsOff => {
                "sudo sysctl -w kernel.unprivileged_userns_clone=1 (and the same line in /etc/sysctl.d/ to keep it), or use --backend landlock".into()
            }
            Obstacle::UsernsFiltered { .. } => NS_FILTER_FIX.into(),
            Obstacle::UsernsFilteredByDcjail { .. } => NESTED_FIX.into(),
            Obstacle::RootWithoutSetfcap { .. } => SETFCAP_FIX.into(),
            Obstacle::MountsFiltered { outer: Some(_), .. } => NESTED_FIX.into(),
            Obstacle::MountsFiltered { .. } => MOUNT_FILTER_FIX.into(),
            Obstacle::AppArmorUserns { .. } => APPARMOR_FIX.into(),
            Obstacle::LandlockNotBuilt { wsl: true, .. }
            | Obstacle::LandlockOld { wsl: true, .. } => wsl_kernel.into(),
            Obstacle::LandlockNotBuilt { .. } => {
                "run a kernel built with CONFIG_SECURITY_LANDLOCK=y, Linux 6.12 or newer (your distribution's newer or HWE kernel)".into()
            }
            Obstacle::LandlockOld { .. } => {
                "run Linux 6.12 or newer (your distribution's newer or HWE kernel)".into()
            }
            Obstacle::LandlockDisabled { lsm, wsl } => {
                let list = match lsm {
                    Some(l) if !l.is_empty() => format!("{l},landlock"),
                    _ => "landlock,lockdown,yama,integrity,apparmor,bpf".into(),
                };
                if *wsl {
                    format!("add `kernelCommandLine = lsm={list}` to the [wsl2] section of %UserProfile%\\.wslconfig, then `wsl --shutdown` from Windows")
                } else {
                    format!("boot with lsm={list} (for GRUB: add it to GRUB_CMDLINE_LINUX in /etc/default/grub, run update-grub, reboot)")
                }
            }
            Obstacle::LandlockFiltered { .. } => format!(
                "start the container with a seccomp profile that allows {LANDLOCK_CALLS} (Docker, Podman: --security-opt seccomp=PROFILE; newer runtimes' default profiles allow them)"
            ),
            Obstacle::LandlockUnknown { .. } => {
                "run a kernel with landlock (Linux 6.12 or newer)".into()
            }
        }
    }
}

impl std::fmt::Display for Obstacle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}; fix: {}", self.message(), self.fix())
    }
}

pub(super) fn sysctl(p: &dyn Probe, path: &str) -> Option<String> {
    p.read(path).map(|s| s.trim().to_string())
}

/// The backend of the dcjail this one runs inside, or `None`. The outer
/// dcjail sets `DCJAIL=1` and `DCJAIL_BACKEND` for its command, and every
/// backend of it installs a seccomp filter, so both must be seen. The
/// command can fake them only to change this dcjail's words about its own
/// obstacles, never what the outer one enforces.
pub fn nested(p: &dyn Probe) -> Option<String> {
    let outer = p.env("DCJAIL_BACKEND").filter(|b| !b.is_empty())?;
    (p.env("DCJAIL").as_deref() == Some("1") && p.seccomp_filtered()).then_some(outer)
}

/// Another sandbox dcjail can tell it runs inside, by the variable that
/// sandbox sets for its commands, believed only under a seccomp filter
/// (both install one). It chooses words, never what runs: whoever starts
/// dcjail can set the variable, and then only the refusals read otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outer {
    /// Codex's Linux sandbox with its network access off: Codex sets
    /// CODEX_SANDBOX_NETWORK_DISABLED=1, and its seccomp filter refuses
    /// every socket but AF_UNIX (and connect, bind, sendto... on those).
    CodexNoNetwork,
    /// srt, Anthropic's sandbox runtime: it sets SANDBOX_RUNTIME=1, and
    /// user.max_user_namespaces = 0 in the namespace it runs commands in.
    Srt,
}

impl Outer {
    /// Where dcjail runs, in words.
    pub fn words(self) -> &'static str {
        match self {
            Outer::CodexNoNetwork => {
                "inside Codex's sandbox with its network access off \
                 (CODEX_SANDBOX_NETWORK_DISABLED=1)"
            }
            Outer::Srt => "inside srt, Anthropic's sandbox runtime (SANDBOX_RUNTIME=1)",
        }
    }

    fn userns_fix(self) -> &'static str {
        match self {
            Outer::Srt => {
                "set \"allowNestedUserNamespaces\": true in srt's settings (srt warns that a \
                 hostile command can then undo its write denies), or use --backend landlock, \
                 which needs no namespace"
            }
            Outer::CodexNoNetwork => NESTED_FIX,
        }
    }
}

/// The sandbox dcjail runs inside, when it says so and a filter is there.
pub fn outer(p: &dyn Probe) -> Option<Outer> {
    if !p.seccomp_filtered() {
        return None;
    }
    if p.env("CODEX_SANDBOX_NETWORK_DISABLED").as_deref() == Some("1") {
        return Some(Outer::CodexNoNetwork);
    }
    (p.env("SANDBOX_RUNTIME").as_deref() == Some("1")).then_some(Outer::Srt)
}

/// Why bwrap cannot give the command a network namespace of its own here,
/// or `None` when it can: a filter refuses the NETLINK_ROUTE socket over
/// which bwrap sets up the new namespace's loopback.
pub fn netns_missing(p: &dyn Probe) -> Option<String> {
    let a = p.netlink_route();
    if matches!(a, Sys::Ok(_)) {
        return None;
    }
    Some(format!(
        "a seccomp filter refuses NETLINK_ROUTE sockets (socket(AF_NETLINK) {}), over which \
         bubblewrap sets up a new network namespace's loopback{}",
        answer_words(a),
        match outer(p) {
            Some(o) => format!("; dcjail runs {}", o.words()),
            None => String::new(),
        }
    ))
}

/// What the user can change to get the network allowlist where
/// `netns_missing` says why not.
pub fn netns_fix(p: &dyn Probe) -> &'static str {
    match outer(p) {
        Some(Outer::CodexNoNetwork) => {
            "turn Codex's network access on (sandbox_workspace_write.network_access = true in its \
             config.toml, or `codex sandbox -c sandbox_workspace_write.network_access=true`), or \
             use --net none"
        }
        _ => "run dcjail where its seccomp filter allows NETLINK_ROUTE sockets, or use --net none",
    }
}

/// How a refusal names the outer dcjail's filter.
pub fn nested_words(outer: &str) -> String {
    format!(
        "inside another dcjail sandbox, whose seccomp filter refuses new namespaces (the outer \
         backend: {outer})"
    )
}

/// Whether, and which, container dcjail runs in.
pub fn container(p: &dyn Probe) -> Option<String> {
    if let Some(v) = p.env("container").filter(|v| !v.is_empty()) {
        return Some(v);
    }
    if p.exists(paths::DOCKERENV) {
        return Some("docker".into());
    }
    if p.exists(paths::CONTAINERENV) {
        return Some("podman".into());
    }
    let cg = p.read(paths::INIT_CGROUP).unwrap_or_default();
    ["docker", "kubepods", "lxc", "containerd"]
        .into_iter()
        .find(|k| cg.contains(k))
        .map(String::from)
}

/// The mount points strictly below /proc (from mountinfo, at most `max`):
/// a container runtime's masked paths (/proc/kcore, /proc/keys, ... covered
/// by /dev/null or an empty tmpfs). While any is there the kernel refuses
/// a new /proc inside a user namespace, so bwrap cannot mount the
/// sandbox's. Empty when mountinfo cannot be read.
pub fn proc_covered(p: &dyn Probe, max: usize) -> Vec<String> {
    let text = p.read(paths::MOUNTINFO).unwrap_or_default();
    let mut out: Vec<String> = text
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .filter(|m| m.starts_with("/proc/"))
        .map(String::from)
        .collect();
    out.sort();
    out.dedup();
    out.truncate(max);
    out
}

/// Windows Subsystem for Linux.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Wsl {
    /// WSL1 translates system calls: no namespaces, landlock or seccomp.
    One,
    /// WSL2 runs Microsoft's Linux kernel in a VM.
    Two { kernel: String },
}

pub fn wsl(p: &dyn Probe) -> Option<Wsl> {
    let version = p.read(paths::VERSION).unwrap_or_default();
    let release = p.kernel_release();
    let both = format!("{version} {release}");
    let lower = both.to_ascii_lowercase();
    if !lower.contains("microsoft") && !lower.contains("wsl") {
        return None;
    }
    let interop = p.exists(paths::WSL_INTEROP) && p.env("WSL_INTEROP").is_some();
    if lower.contains("wsl2") || lower.contains("microsoft-standard") || interop {
        Some(Wsl::Two { kernel: release })
    } else {
        Some(Wsl::One)
    }
}

/// The quick judgement `auto` makes before choosing bwrap: kernel switches,
/// a seccomp filter in front of namespace creation or of `mount`, AppArmor's
/// restriction. It creates no namespace and mounts nothing (the two filter
/// questions are asked only under a seccomp filter, in a throwaway child);
/// what it cannot foresee makes bwrap fail at launch, before the command,
/// and `auto` falls back then, saying so (`run::launch`).
pub fn userns_obstacle(p: &dyn Probe, bwrap: &Path) -> Option<Obstacle> {
    if sysctl(p, paths::MAX_USER_NAMESPACES).as_deref() == Some("0") {
        return Some(Obstacle::UsernsLimitZero {
            container: container(p),
            outer: outer(p),
        });
    }
    if let NsCalls::Filtered { unshare, clone } = p.ns_calls() {
        let refused = |a: Sys| a != Sys::Err(libc::EINVAL) && !matches!(a, Sys::Ok(_));
        // bwrap creates its namespaces with clone; unshare is asked first
        // because it is the one filters usually name.
        for (call, answer) in [("unshare", unshare), ("clone", clone)] {
            if refused(answer) {
                if let Some(outer) = nested(p) {
                    return Some(Obstacle::UsernsFilteredByDcjail {
                        call,
                        answer,
                        outer,
                    });
                }
                return Some(Obstacle::UsernsFiltered {
                    call,
                    answer,
                    container: container(p),
                });
            }
        }
    }
    if p.euid() == 0 && !has_setfcap(p) && kernel_at_least(&p.kernel_release(), 5, 12) {
        return Some(Obstacle::RootWithoutSetfcap {
            container: container(p),
            outer: outer(p),
        });
    }
    if let Some(o) = mount_obstacle(p) {
        return Some(o);
    }
    if p.euid() != 0 && !p.setuid_root(bwrap) {
        if sysctl(p, paths::UNPRIVILEGED_USERNS_CLONE).as_deref() == Some("0") {
            return Some(Obstacle::UnprivilegedUsernsOff);
        }
        if let AppArmor::Uncovered { elsewhere } = apparmor(p, bwrap) {
            return Some(Obstacle::AppArmorUserns {
                bwrap: bwrap.to_path_buf(),
                elsewhere,
            });
        }
    }
    None
}

/// CAP_SETFCAP in this process's effective set (/proc/self/status); an
/// unreadable status counts as having it, so that only a capability known
/// to be missing is named.
fn has_setfcap(p: &dyn Probe) -> bool {
    const CAP_SETFCAP: u32 = 31;
    let Some(status) = p.read(paths::SELF_STATUS) else {
        return true;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .is_none_or(|caps| caps & (1 << CAP_SETFCAP) != 0)
}

/// Whether a `uname -r` release is at least `major.minor` (an unreadable
/// one is taken as new: the check then names what it sees).
fn kernel_at_least(release: &str, major: u32, minor: u32) -> bool {
    let mut parts = release
        .split(|c: char| !c.is_ascii_digit())
        .map(|n| n.parse::<u32>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(a), Some(b)) => (a, b) >= (major, minor),
        _ => true,
    }
}

/// A seccomp filter in front of `mount` (asked only under a filter).
pub fn mount_obstacle(p: &dyn Probe) -> Option<Obstacle> {
    let answer = p.mount_call()?;
    (answer != Sys::Err(libc::EINVAL) && !matches!(answer, Sys::Ok(_))).then(|| {
        Obstacle::MountsFiltered {
            answer,
            container: container(p),
            outer: nested(p),
        }
    })
}

/// Where AppArmor stands for one bwrap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AppArmor {
    /// No restriction of unprivileged user namespaces here.
    NotRestricted,
    /// Restricted, and this profile file grants `userns` to the bwrap.
    Covered { file: String },
    /// Restricted, and no profile covers it; `elsewhere` is one that
    /// covers another bwrap (file, path).
    Uncovered { elsewhere: Option<(String, String)> },
}

/// Whether the restriction is on, and which profile in /etc/apparmor.d
/// (not disabled) attaches to `bwrap` and grants `userns`. dcjail's own
/// and the distribution's files are read first, then other files with
/// `bwrap` in their name: this runs before every launch on such a machine,
/// and reading all of a distribution's hundred-odd profiles each time would
/// cost more than the launch. A profile under another name is not seen
/// (`doctor`'s real run of bwrap then says that bwrap works but is passed
/// over).
pub fn apparmor(p: &dyn Probe, bwrap: &Path) -> AppArmor {
    if sysctl(p, paths::APPARMOR_RESTRICT).as_deref() != Some("1") {
        return AppArmor::NotRestricted;
    }
    let mut names: Vec<&Path> = vec![bwrap];
    let canon = p.canonical(bwrap);
    if let Some(c) = &canon {
        if c != bwrap {
            names.push(c);
        }
    }
    let mut elsewhere = None;
    let look = |file: &str, elsewhere: &mut Option<(String, String)>| -> bool {
        if p.exists(&format!("{}/{file}", paths::APPARMOR_DISABLED_DIR)) {
            return false;
        }
        let Some(text) = p.read(&format!("{}/{file}", paths::APPARMOR_DIR)) else {
            return false;
        };
        let prof = parse_profile(&text);
        if !prof.userns {
            return false;
        }
        if prof
            .attachments
            .iter()
            .any(|a| names.iter().any(|n| Path::new(a) == *n))
        {
            return true;
        }
        if elsewhere.is_none() {
            if let Some(a) = prof.attachments.iter().find(|a| a.ends_with("/bwrap")) {
                *elsewhere = Some((file.to_string(), a.clone()));
            }
        }
        false
    };
    for file in [DCJAIL_PROFILE, DISTRO_PROFILE, "bwrap"] {
        if look(file, &mut elsewhere) {
            return AppArmor::Covered { file: file.into() };
        }
    }
    for file in p
        .list(paths::APPARMOR_DIR)
        .iter()
        .filter(|f| profile_file_name(f))
        .take(PROFILE_SCAN_LIMIT)
    {
        if look(file, &mut elsewhere) {
            return AppArmor::Covered { file: file.clone() };
        }
    }
    AppArmor::Uncovered { elsewhere }
}

/// Other profile files that may be bubblewrap's: named for it, and read
/// by AppArmor's loader (not backup files, package leftovers or the
/// directories of includes).
fn profile_file_name(f: &str) -> bool {
    f.contains("bwrap")
        && !f.starts_with('.')
        && !f.ends_with('~')
        && !f.contains(".dpkg-")
        && !f.contains(".rpm")
        && !matches!(
            f,
            "abi"
                | "abstractions"
                | "tunables"
                | "local"
                | "disable"
                | "force-complain"
                | "cache"
                | "README"
                | DCJAIL_PROFILE
                | DISTRO_PROFILE
                | "bwrap"
        )
}

/// What a profile file attaches to and whether it grants `userns`.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ProfileFacts {
    pub attachments: Vec<String>,
    pub userns: bool,
}

/// Reads the two facts that matter out of a profile file's text: the
/// executables its profiles attach to (`profile NAME /path … {` or
/// `/path … {`), exactly as written (no glob is evaluated), and whether a
/// `userns,` rule appears.
pub fn parse_profile(text: &str) -> ProfileFacts {
    let mut out = ProfileFacts::default();
    for line in text.lines() {
        let line = match line.find('#') {
            Some(i) => &line[..i],
            None => line,
        }
        .trim();
        if line.is_empty() {
            continue;
        }
        let words = tokens(line);
        let rule: Vec<&str> = words
            .iter()
            .map(String::as_str)
            .skip_while(|w| matches!(*w, "allow" | "audit"))
            .collect();
        if rule == ["userns,"] || rule == ["userns", ","] {
            out.userns = true;
        }
        let attach = match words.first().map(String::as_str) {
            Some("profile") => words.get(2),
            Some(w) if w.starts_with('/') && line.contains('{') => words.first(),
            _ => None,
        };
        if let Some(a) = attach.filter(|a| a.starts_with('/')) {
            out.attachments.push(a.clone());
        }
    }
    out
}

/// A profile line's words: split at blanks and before `{`, a quoted word
/// kept whole without its quotes.
fn tokens(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            c if !quoted && (c.is_whitespace() || c == '{') => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                if c == '{' {
                    out.push("{".into());
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The landlock ABI, or the obstacle that hides it.
pub fn landlock_abi(p: &dyn Probe) -> Result<u32, Obstacle> {
    let answer = p.landlock_abi();
    if let Sys::Ok(v) = answer {
        if v > 0 {
            // The launch path: nothing else is read when landlock answers.
            return Ok(u32::try_from(v).unwrap_or(u32::MAX));
        }
    }
    let wsl = matches!(wsl(p), Some(Wsl::Two { .. }));
    let lsm = p
        .read(paths::LSM)
        .map(|s| s.trim().trim_end_matches(',').to_string());
    let lsm_has_landlock = lsm
        .as_deref()
        .map(|l| l.split(',').any(|m| m == "landlock"));
    let filtered = p.seccomp_filtered();
    match answer {
        Sys::Err(libc::EOPNOTSUPP) => Err(Obstacle::LandlockDisabled {
            lsm: lsm.or_else(|| cmdline_lsm(p)),
            wsl,
        }),
        Sys::Err(libc::ENOSYS) if filtered => Err(Obstacle::LandlockFiltered {
            answer,
            sure: lsm_has_landlock == Some(true),
            container: container(p),
        }),
        Sys::Err(libc::ENOSYS) => Err(Obstacle::LandlockNotBuilt {
            kernel: p.kernel_release(),
            wsl,
        }),
        // The version query has no other failure in the kernel: anything
        // else under a filter is the filter's.
        Sys::Err(_) | Sys::Killed(_) if filtered => Err(Obstacle::LandlockFiltered {
            answer,
            sure: true,
            container: container(p),
        }),
        other => Err(Obstacle::LandlockUnknown { answer: other }),
    }
}

/// The `lsm=` boot parameter, when the LSM list itself cannot be read
/// (securityfs not mounted).
fn cmdline_lsm(p: &dyn Probe) -> Option<String> {
    p.read(paths::CMDLINE)?
        .split_whitespace()
        .find_map(|w| w.strip_prefix("lsm="))
        .map(String::from)
}

/// The landlock ABI, at least `needed`, or the obstacle.
pub fn landlock_at_least(p: &dyn Probe, needed: u32) -> Result<u32, Obstacle> {
    let abi = landlock_abi(p)?;
    if abi < needed {
        return Err(Obstacle::LandlockOld {
            abi,
            needed,
            kernel: p.kernel_release(),
            wsl: matches!(wsl(p), Some(Wsl::Two { .. })),
        });
    }
    Ok(abi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_facts_read_attachments_and_userns() {
        let text = "# comment userns,\nabi <abi/4.0>,\ninclude <tunables/global>\n\
                    profile bwrap /usr/bin/bwrap flags=(unconfined) {\n  userns,\n}\n\
                    \"/opt/my bwrap\" {\n  allow capability,\n}\n";
        let f = parse_profile(text);
        assert_eq!(
            f.attachments,
            vec!["/usr/bin/bwrap".to_string(), "/opt/my bwrap".to_string()]
        );
        assert!(f.userns);
        let f = parse_profile("profile x /usr/local/bin/bwrap {\n  # userns,\n}\n");
        assert_eq!(f.attachments, vec!["/usr/local/bin/bwrap".to_string()]);
        assert!(!f.userns);
        let f =
            parse_profile("/usr/bin/bwrap {\n  allow userns,\n}\nprofile unpriv flags=(x) {\n}\n");
        assert_eq!(f.attachments, vec!["/usr/bin/bwrap".to_string()]);
        assert!(f.userns);
    }
}
