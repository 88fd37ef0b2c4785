//! A Linux launch with a layer missing: without landlock (a kernel built
//! without it, gVisor, a filter that refuses its system calls) and without
//! seccomp user notification (no broker: gVisor, an outer sandbox that
//! holds the listener). Per feature of the plan, it decides what the
//! layers present still hold, what runs narrower than the policy allows
//! (said in `explain`, the report and `doctor`), and what is refused,
//! naming the feature, the missing layer and what the user can change.
//!
//! Owns those decisions, pure over the plan and the layer. It must never
//! drop a guarantee silently: a feature only the missing layer holds is a
//! refusal, never a quieter run.

use super::landlock::LayerSpec;
use super::seccomp::{Meta, Unix};
use super::{Layer, Missing};
use crate::plan::{Plan, StdFd, STD_NAMES};
use crate::policy::NetMode;

/// The layers a launch runs without, and what that narrows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Without {
    /// Why landlock is not applied; `None`: it is.
    pub landlock: Option<String>,
    /// Why no broker takes the seccomp notifications; `None`: one can.
    pub listener: Option<String>,
    /// Why bwrap gives the command no network namespace of its own;
    /// `None`: it does (or `full` asks for none).
    pub netns: Option<String>,
    /// What runs narrower than the policy allows because of them.
    pub narrowed: Vec<String>,
    /// What this launch leaves to the dcjail sandbox it runs inside,
    /// checked at launch (`backend::nested`).
    pub relied: Vec<String>,
}

const LANDLOCK: Layer = Layer::Landlock;
const LISTENER: Layer = Layer::SeccompNotify;

/// The refusal of one feature: what it is, the layer it needs, why that
/// layer is missing here, and what the user can change.
fn needs(feature: &str, layer: Layer, why: &str, fix: &'static str) -> Missing {
    Missing::NeedsLayer {
        feature: feature.to_string(),
        layer,
        why: why.to_string(),
        fix,
    }
}

/// bwrap without its inner landlock layer. The mounts and namespaces hold
/// read-only, workspace-write, protected and deny_write paths (read-only
/// mounts), deny_read (masks), the terminals (bwrap's own /dev), signals
/// (a pid namespace) and, under `none` and `allowlist`, the network and
/// abstract unix sockets (a network namespace of its own). Refused: what
/// only landlock holds, a descriptor that names a host file through the
/// caller's mount (which the read-only mounts do not cover: reopened
/// through /proc/self/fd it is writable), and the host's abstract sockets
/// under `full`.
pub fn bwrap_without_landlock(plan: &Plan, spec: &mut LayerSpec, why: &str) -> Result<(), Missing> {
    if plan.effective_net() == NetMode::Full {
        return Err(needs(
            "network full",
            LANDLOCK,
            why,
            "the command would share the host's network namespace, where only landlock's \
             scoping keeps the host's abstract unix sockets (D-Bus, X11, agents) out of reach; \
             use --net none or --net allowlist",
        ));
    }
    if let Some(s) = spec.unix_sockets.first() {
        return Err(needs(
            &format!(
                "the named unix socket `{}` (allow_unix_sockets)",
                s.display()
            ),
            LANDLOCK,
            why,
            "a process behind it could send the command a descriptor of a host file, which it \
             could reopen for writing past the read-only mounts; drop allow_unix_sockets",
        ));
    }
    if !spec.keep_fds.is_empty() {
        return Err(needs(
            &format!("descriptors above 2 kept open ({:?})", spec.keep_fds),
            LANDLOCK,
            why,
            "a descriptor of a host file could be reopened for writing past the read-only mounts",
        ));
    }
    if let Some(fd) = stdio_past_the_mounts(plan) {
        return Err(needs(
            &fd,
            LANDLOCK,
            why,
            "the command could reopen it for writing through /proc/self/fd (a descriptor names \
             its file through the caller's mount, past the read-only mounts); pass it through a \
             pipe instead (`cat FILE | dcjail …`)",
        ));
    }
    spec.abi = 0;
    spec.handled_fs = 0;
    spec.fs_rules.clear();
    spec.restrict_tcp = false;
    spec.tcp_connect_ports.clear();
    spec.scopes = 0;
    spec.without.landlock = Some(why.to_string());
    if plan.facts.stdio.iter().any(|s| matches!(s, StdFd::Socket)) {
        spec.without.narrowed.push(
            "a standard descriptor is a socket: a descriptor the process at its other end (the \
             caller) chose to send would name its file through the caller's mount; nothing \
             else can send one"
                .into(),
        );
    }
    Ok(())
}

/// A standard descriptor that is a host file outside the writable roots,
/// open for reading only, said as the refusal names it.
fn stdio_past_the_mounts(plan: &Plan) -> Option<String> {
    plan.facts
        .stdio
        .iter()
        .zip(STD_NAMES)
        .find_map(|(s, name)| match s {
            StdFd::File {
                writing: false,
                path: Some(p),
            } if p.is_absolute() && plan.fs.writable.iter().any(|r| p.starts_with(r)) => None,
            StdFd::File {
                writing: false,
                path: Some(p),
            } => Some(format!(
                "{name} open for reading on the host file `{}` outside the writable roots",
                p.display()
            )),
            StdFd::File {
                writing: false,
                path: None,
            } => Some(format!(
                "{name} open for reading on a host file whose path could not be read"
            )),
            _ => None,
        })
}

/// bwrap where it cannot make a network namespace (a filter refuses the
/// NETLINK_ROUTE socket that sets up its loopback: Codex's sandbox with
/// its network access off). Under `none` the command shares the network
/// namespace dcjail runs in, and the layer inside holds the network as
/// the landlock backend does: no socket but AF_UNIX (seccomp), the
/// abstract unix sockets out of reach (landlock's scoping), named ones at
/// the broker. Refused: the allowlist, whose proxy the command reaches
/// inside a namespace of its own, and `none` without landlock, whose
/// scoping alone keeps the shared namespace's abstract sockets away.
pub fn bwrap_without_netns(
    plan: &Plan,
    spec: &mut LayerSpec,
    why: &str,
    fix: &'static str,
) -> Result<(), Missing> {
    match plan.effective_net() {
        NetMode::Full => return Ok(()),
        NetMode::Allowlist => {
            return Err(needs(
                "the network allowlist (the command reaches its proxy inside a network namespace \
                 of its own)",
                Layer::NetNamespace,
                why,
                fix,
            ))
        }
        NetMode::None => {}
    }
    if let Some(ll) = &spec.without.landlock {
        return Err(needs(
            "network none without a network namespace of its own (only landlock's scoping keeps \
             the shared namespace's abstract unix sockets out of reach)",
            LANDLOCK,
            ll,
            "allow landlock's system calls, or NETLINK_ROUTE sockets, where dcjail runs",
        ));
    }
    spec.sockets.inet = super::seccomp::Inet::Deny;
    spec.without.netns = Some(why.to_string());
    spec.without.narrowed.push(
        "network none without a network namespace of its own: the command shares the one dcjail \
         runs in, where the seccomp filter refuses every socket but AF_UNIX (the command's own \
         loopback servers included) and landlock's scoping keeps the abstract unix sockets out \
         of reach, as under the landlock backend"
            .into(),
    );
    Ok(())
}

/// What a broker would hold that the launch needs: `missing` lists the
/// protected names absent at launch (kept uncreatable by the broker),
/// `zones` the repositories' worktrees where no `.git` may be made.
pub struct Brokered<'a> {
    pub missing: Vec<std::path::PathBuf>,
    pub zones: &'a [std::path::PathBuf],
}

/// Either backend without seccomp user notification: no broker. Refused:
/// the features only the broker holds (a missing protected name kept
/// uncreatable, no new repository in a worktree, a named unix socket).
/// Narrower, and said: no unix socket but a socketpair, metadata changes
/// refused everywhere (the broker allowed them where writing is), a hard
/// link between two writable roots fails (EXDEV), denials unrecorded.
pub fn without_listener(
    spec: &mut LayerSpec,
    brokered: Option<Brokered<'_>>,
    why: &str,
) -> Result<(), Missing> {
    if let Some(s) = spec.unix_sockets.first() {
        return Err(needs(
            &format!(
                "the named unix socket `{}` (allow_unix_sockets)",
                s.display()
            ),
            LISTENER,
            why,
            "the broker checks each connect; drop allow_unix_sockets",
        ));
    }
    if let Some(b) = &brokered {
        if let Some(first) = b.missing.first() {
            let more = match b.missing.len() {
                1 => String::new(),
                n => format!(" (and {} more missing protected names)", n - 1),
            };
            return Err(needs(
                &format!(
                    "the protected path `{}` does not exist{more}, and keeping it uncreatable",
                    first.display()
                ),
                LISTENER,
                why,
                "create it, or set protect_defaults = false (--no-protect-defaults)",
            ));
        }
        if let Some(z) = b.zones.first() {
            return Err(needs(
                &format!(
                    "keeping a new git repository out of the worktree `{}` (a `.git` made in or \
                     below it would be entered by a later git)",
                    z.display()
                ),
                LISTENER,
                why,
                "set protect_defaults = false (--no-protect-defaults), or use --sandbox-mode \
                 read-only",
            ));
        }
    }
    let w = &mut spec.without;
    w.listener = Some(why.to_string());
    if spec.sockets.unix == Unix::Named {
        spec.sockets.unix = Unix::Refuse;
        w.narrowed.push(
            "unix sockets: none can be made or reached but a socketpair (the broker that checks \
             each connect needs seccomp user notification)"
                .into(),
        );
    }
    if spec.fs.meta == Meta::Broker {
        spec.fs.meta = Meta::Refuse;
        w.narrowed.push(
            "metadata changes (chmod, chown, touch -d, extended attributes) are refused \
             everywhere, inside the writable roots too (EROFS): the broker that allows them \
             only where writing is needs seccomp user notification"
                .into(),
        );
    }
    if !spec.host_roots.is_empty() {
        spec.host_roots.clear();
        w.narrowed.push(
            "a hard link between two writable roots fails (EXDEV): the broker makes it through \
             the host's mount"
                .into(),
        );
    }
    if spec.fs.observe {
        spec.fs.observe = false;
        w.narrowed.push(
            "denials are not recorded (the report, --events and the summary line list none): \
             the broker records them"
                .into(),
        );
    }
    spec.fs.create = false;
    Ok(())
}

/// The layers in force and the ones missing, for `explain`, the report
/// and the hook: `in_force` names what the backend applies anyway.
pub fn to_json(w: &Without, in_force: &[&str], brokered: bool) -> serde_json::Value {
    let mut on: Vec<&str> = in_force.to_vec();
    if w.landlock.is_none() {
        on.push("landlock");
    }
    on.push("seccomp");
    if brokered {
        on.push("seccomp-notify");
    }
    let mut missing = Vec::new();
    if let Some(why) = &w.landlock {
        missing.push(serde_json::json!({ "layer": "landlock", "why": why }));
    }
    if let Some(why) = &w.listener {
        missing.push(serde_json::json!({ "layer": "seccomp-notify", "why": why }));
    }
    if let Some(why) = &w.netns {
        missing.push(serde_json::json!({ "layer": "network-namespace", "why": why }));
    }
    let mut j = serde_json::json!({
        "in_force": on,
        "missing": missing,
        "narrowed": w.narrowed,
    });
    if !w.relied.is_empty() {
        j["relied_on_outer"] = serde_json::json!(w.relied);
    }
    j
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{NetMode, SandboxMode};
    use std::path::PathBuf;

    fn plan(mode: SandboxMode, net: NetMode) -> Plan {
        let mut policy = crate::policy::Policy::default();
        policy.sandbox.mode = mode;
        policy.sandbox.network.mode = net;
        policy.sandbox.filesystem.protect_defaults = false;
        let facts = crate::plan::Facts {
            cwd: PathBuf::from("/"),
            ..Default::default()
        };
        crate::plan::build(&policy, vec!["true".into()], &facts).unwrap()
    }

    fn layer(p: &Plan) -> LayerSpec {
        crate::backend::landlock::layer_spec_with(
            p,
            crate::backend::landlock::WriteSubtraction::ByMounts,
        )
        .unwrap()
    }

    #[test]
    fn without_landlock_the_layer_carries_no_landlock_rule_and_network_full_is_refused() {
        let p = plan(SandboxMode::WorkspaceWrite, NetMode::None);
        let mut s = layer(&p);
        bwrap_without_landlock(&p, &mut s, "no landlock here").unwrap();
        assert_eq!((s.handled_fs, s.scopes, s.restrict_tcp), (0, 0, false));
        assert!(s.fs_rules.is_empty() && s.tcp_connect_ports.is_empty());
        assert_eq!(s.without.landlock.as_deref(), Some("no landlock here"));
        let p = plan(SandboxMode::ReadOnly, NetMode::Full);
        let e = bwrap_without_landlock(&p, &mut layer(&p), "no landlock here")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(
                "network full needs landlock, which is missing here (no landlock here): "
            ),
            "{e}"
        );
    }

    #[test]
    fn without_a_network_namespace_none_is_held_by_the_layer_and_the_allowlist_refused() {
        let p = plan(SandboxMode::WorkspaceWrite, NetMode::None);
        let mut s = layer(&p);
        bwrap_without_netns(&p, &mut s, "no netlink here", "use --net none").unwrap();
        assert_eq!(s.sockets.inet, super::super::seccomp::Inet::Deny);
        assert_eq!(s.without.netns.as_deref(), Some("no netlink here"));
        assert!(s.without.narrowed[0].starts_with("network none without a network namespace"));
        let j = to_json(&s.without, &["namespaces", "mounts"], false);
        assert_eq!(j["missing"][0]["layer"], "network-namespace");
        // Full asks for none: nothing changes.
        let p = plan(SandboxMode::WorkspaceWrite, NetMode::Full);
        let mut s = layer(&p);
        let before = s.clone();
        bwrap_without_netns(&p, &mut s, "x", "y").unwrap();
        assert_eq!(s, before);
        let p = plan(SandboxMode::ReadOnly, NetMode::Allowlist);
        let e = bwrap_without_netns(&p, &mut layer(&p), "no netlink here", "use --net none")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "the network allowlist (the command reaches its proxy inside a network namespace of \
             its own) needs a network namespace of its own, which is missing here (no netlink \
             here): use --net none"
        );
        // Without landlock too, nothing keeps the shared namespace's
        // abstract sockets away: refused.
        let p = plan(SandboxMode::ReadOnly, NetMode::None);
        let mut s = layer(&p);
        s.without.landlock = Some("no landlock".into());
        let e = bwrap_without_netns(&p, &mut s, "x", "y")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("needs landlock, which is missing here (no landlock)"),
            "{e}"
        );
    }

    #[test]
    fn without_a_listener_what_only_the_broker_holds_is_refused_and_the_rest_narrowed() {
        let p = plan(SandboxMode::WorkspaceWrite, NetMode::None);
        let zones = vec![PathBuf::from("/ws")];
        let b = || Brokered {
            missing: Vec::new(),
            zones: &zones,
        };
        let e = without_listener(&mut layer(&p), Some(b()), "none here")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "keeping a new git repository out of the worktree `/ws` (a `.git` made in or below \
             it would be entered by a later git) needs seccomp user notification, which is \
             missing here (none here): set protect_defaults = false (--no-protect-defaults), or \
             use --sandbox-mode read-only"
        );
        let missing = Brokered {
            missing: vec!["/ws/.envrc".into(), "/ws/.bashrc".into()],
            zones: &zones,
        };
        let e = without_listener(&mut layer(&p), Some(missing), "none here")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "the protected path `/ws/.envrc` does not exist (and 1 more missing protected \
             names), and keeping it uncreatable needs seccomp user notification, which is \
             missing here (none here): create it, or set protect_defaults = false \
             (--no-protect-defaults)"
        );
        let mut s = layer(&p);
        s.unix_sockets = vec!["/run/a.sock".into()];
        let e = without_listener(&mut s, None, "none here")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("the named unix socket `/run/a.sock` (allow_unix_sockets) needs seccomp user notification"), "{e}");
        let mut s = layer(&p);
        s.host_roots = vec!["/ws".into(), "/tmp".into()];
        s.fs.observe = true;
        s.fs.create = true;
        without_listener(&mut s, None, "none here").unwrap();
        assert!(!s.brokered(), "{s:?}");
        assert_eq!(s.sockets.unix, Unix::Refuse);
        assert_eq!(s.fs.meta, Meta::Refuse);
        assert!(s.host_roots.is_empty());
        assert_eq!(s.without.narrowed.len(), 4, "{:?}", s.without.narrowed);
        let j = to_json(&s.without, &["namespaces", "mounts"], s.brokered());
        assert_eq!(
            j["in_force"],
            serde_json::json!(["namespaces", "mounts", "landlock", "seccomp"])
        );
        assert_eq!(j["missing"][0]["layer"], "seccomp-notify");
    }
}
