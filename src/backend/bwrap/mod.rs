//! The `bwrap` backend: bubblewrap builds the namespaces and the mount tree,
//! then runs dcjail's second stage inside it, which applies the landlock +
//! seccomp layer and execs the command. Two independent layers.
//!
//! This module owns what the launch is, as data: finding a trustworthy
//! `bwrap` ([`find`]: fixed absolute paths, never one the workspace could
//! plant), the cheap probe `auto` uses and the layer ([`linux`]), the pure
//! rendering of the bwrap argv from a `Plan` ([`render`]: the mount order is
//! the security argument and is unit-tested), and the guards that keep a
//! missing protected name uncreatable (held by the broker inside). Starting
//! bwrap and supervising it is `exec::bwrap`'s; what stops bwrap on a
//! machine, and `doctor`'s real namespace test, are `backend::obstacle`'s.
//!
//! It must never: run a `bwrap` found inside a writable root, write anything
//! on the host, cache probe results on disk, start anything, or render a
//! launch when any piece of the plan cannot be expressed (it refuses).

mod find;
#[cfg(target_os = "linux")]
mod linux;
mod render;
#[cfg(test)]
mod tests;

pub use find::{find, install_hint, parse_version, version, NO_TRUSTED_BWRAP};
#[cfg(target_os = "linux")]
pub use linux::{layer_bytes_for_default, prepare};
pub use render::{render, Guard, Host, Node, RealHost, Rendered};

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Where a distribution installs bubblewrap. Only these, or a PATH entry
/// that no sandbox can write, are ever executed.
pub const BWRAP_PATHS: &[&str] = &[
    "/usr/bin/bwrap",
    "/bin/bwrap",
    "/usr/local/bin/bwrap",
    "/usr/libexec/bwrap",
    "/run/current-system/sw/bin/bwrap",
];

/// Oldest bubblewrap that has every option rendered here
/// (`--args`, `--die-with-parent`, `--new-session`, `--cap-drop`,
/// `--unshare-cgroup-try`, `--remount-ro`) or passed at launch
/// (`--json-status-fd`).
pub const MIN_VERSION: (u32, u32, u32) = (0, 4, 0);

/// The hidden subcommand bwrap runs inside the sandbox.
pub use crate::inside::stub_format::STAGE2;

/// The proxy's port inside a bwrap network namespace, where every port is
/// free: the layer lets the command connect to it, and the second stage
/// binds the listener the allowlist proxy outside accepts on.
pub use crate::inside::stub_format::PROXY_PORT as SANDBOX_PROXY_PORT;

/// dcjail's own binary, as the second stage is started from it.
pub const SELF_EXE: &str = "/proc/self/exe";

/// The layer as data, for `explain` (Linux only: elsewhere there is none).
#[cfg(target_os = "linux")]
pub type Layer = super::landlock::LayerSpec;
#[cfg(not(target_os = "linux"))]
pub type Layer = ();

/// Everything `exec` needs to start the command under bwrap.
#[derive(Debug)]
pub struct BwrapLaunch {
    pub bwrap: PathBuf,
    pub rendered: Rendered,
    /// The landlock + seccomp layer the second stage applies.
    pub layer: Layer,
    /// The same layer as the second stage runs it (`stub_format`), with
    /// the guards' directories known by inode: what the embedded stub, or
    /// dcjail itself where memfds cannot be executed, reads.
    pub program: Vec<u8>,
    /// dcjail's own binary, run again inside as stage 2.
    pub exe: PathBuf,
    /// The facts behind each rule that varies with the caller (the
    /// truncate right and the descriptor that decided it), for `explain`.
    pub facts: Vec<String>,
}

/// `explain`'s view of the launch; `euid` is the caller's (from the facts).
pub fn describe(l: &BwrapLaunch, euid: u32) -> serde_json::Value {
    let lossy = |v: &[OsString]| -> Vec<String> {
        v.iter().map(|a| a.to_string_lossy().into_owned()).collect()
    };
    serde_json::json!({
        "kind": "bwrap",
        "bwrap": l.bwrap.to_string_lossy(),
        "argv": lossy(&l.rendered.args),
        "args_via": "--args FD (NUL-separated) and --json-status-fd FD, then `-- STAGE2 __stage2 FD IGN ERR STD -- COMMAND...`",
        "uncreatable": l.rendered.guards.iter().map(|g| {
            g.dir.join(&g.name).to_string_lossy().into_owned()
        }).collect::<Vec<_>>(),
        "no_new_git_below": l.rendered.zones.iter().map(|z| {
            z.to_string_lossy().into_owned()
        }).collect::<Vec<_>>(),
        // Each writable root is a mount of its own: the broker makes a hard
        // link between two of these through the host's mount of them.
        "links_between_roots": l.layer.host_roots.iter().map(|r| {
            r.to_string_lossy().into_owned()
        }).collect::<Vec<_>>(),
        "stage2": {
            "exe": if l.exe == Path::new(SELF_EXE) {
                crate::plan::own_exe().unwrap_or_else(|| l.exe.clone())
            } else {
                l.exe.clone()
            }
            .to_string_lossy(),
            "runs": stage2_runs(),
            "layer": layer_json(&l.layer, euid),
        },
        "notes": l.rendered.notes,
        "facts": l.facts,
    })
}

/// Which second stage a launch starts, for `explain`.
#[cfg(not(target_os = "linux"))]
fn stage2_runs() -> String {
    "dcjail itself (`exe`), re-executed inside".into()
}
#[cfg(target_os = "linux")]
use linux::stage2_runs;

#[cfg(target_os = "linux")]
fn layer_json(layer: &Layer, euid: u32) -> serde_json::Value {
    layer.describe(euid)
}

#[cfg(not(target_os = "linux"))]
fn layer_json(_layer: &Layer, _euid: u32) -> serde_json::Value {
    serde_json::Value::Null
}
