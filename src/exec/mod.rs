//! The one place with side effects on the launch path: environment, cwd,
//! `execve` (`command`), and — when a timeout, a proxy or a backend needs a
//! parent — a supervisor that forwards signals, kills the whole tree and
//! maps the exit status (`supervise`, `status`: 128+N on signal death, 124
//! at the timeout). Each backend's launch is started here: `bwrap` (memfds,
//! bwrap's descriptors, its status reports), `stage2` (dcjail itself as the
//! second stage), `watch` (landlock's broker), `seatbelt`; `wire` hands the
//! allowlist proxy's endpoint to the rendered launch.
//!
//! Supervision is built on Linux facilities (a child subreaper, a parent
//! death signal, `sigtimedwait`, `/proc/PID/task/*/children`: `os/linux.rs`).
//! On macOS it degrades to what the platform offers (`os/other.rs`); see
//! [`supervise_with`] for what is weaker there. It must never leave the
//! command running unsupervised where a supervisor was asked for.

#[cfg(target_os = "linux")]
pub mod bwrap;
pub mod caches;
mod cargo_home;
#[cfg(target_os = "linux")]
mod landlock;
pub mod seatbelt;
#[cfg(target_os = "linux")]
pub mod stage2;
#[cfg(target_os = "linux")]
pub use stage2::fail_text;
pub mod status;
pub mod stdfds;
mod wire;
pub use wire::start_net;
#[cfg(target_os = "linux")]
mod watch;
#[cfg(target_os = "linux")]
pub use watch::{supervise_watched, Start as WatchedStart};

mod command;
#[cfg_attr(target_os = "linux", path = "os/linux.rs")]
#[cfg_attr(not(target_os = "linux"), path = "os/other.rs")]
mod os;
mod supervise;

pub use command::{c_argv, enter_cwd, environment, errno, exec_command};
#[cfg(target_os = "linux")]
use os::{become_subreaper, spawn, SignalFd};
pub use supervise::{
    kill_tree, status_of, supervise, supervise_with, Heard, Side, Teardown, Watch,
};
#[cfg(target_os = "linux")]
use supervise::{supervisor_mask, Woke};

/// Exit status when the timeout killed the command.
pub const TIMEOUT_STATUS: i32 = status::TIMEOUT;
