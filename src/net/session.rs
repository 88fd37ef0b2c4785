//! The proxy for one run of an allowlisted command: started by the
//! supervising dcjail before the command, alive until dcjail exits, and
//! asked at the end which destinations it refused.
//!
//! Two ways in, one per backend:
//! - `landlock`: the proxy listens on 127.0.0.1:PORT in dcjail's own network
//!   namespace; the command may connect to that port only.
//! - `bwrap`: the command's network namespace has only loopback. The second
//!   stage binds 127.0.0.1:PORT (`backend::bwrap::SANDBOX_PROXY_PORT`) *inside* it and hands the
//!   listening socket out over a socketpair (`send_listener`, Linux); the
//!   proxy outside accepts on it. No process of dcjail stays inside, no
//!   socket file is mounted in, and nothing outside the sandbox can reach it.
//! - `seatbelt` (macOS): as for landlock, 127.0.0.1:PORT in dcjail's own
//!   process; the profile lets the command connect to localhost:PORT only.
//!
//! Proxy threads never receive the signals the supervisor forwards: they are
//! started with every signal blocked.

use super::conn::Listener;
use super::proxy::{Config, Denial, Proxy, Upstream};
use crate::net::domain::Rules;
use crate::plan::Plan;
use std::ffi::OsString;
use std::net::TcpListener;

#[cfg(target_os = "linux")]
mod netns;
#[cfg(target_os = "linux")]
pub use netns::send_listener;

/// Environment variable naming stage 2's end of the socketpair.
pub const STAGE2_PROXY_FD: &str = super::STAGE2_VAR;

/// A proxy serving one run.
pub struct Session {
    proxy: Proxy,
    secret: String,
    /// `127.0.0.1:PORT` as the command reaches it.
    endpoint: String,
}

impl Session {
    fn new(
        plan: &Plan,
        endpoint: String,
        creds: Option<std::sync::Arc<crate::net::creds::Injector>>,
    ) -> Result<Session, String> {
        let secret = super::new_secret()?;
        let rules = Rules {
            allow: plan.net.allow.clone(),
            deny: plan.net.deny.clone(),
        };
        let mut config = Config::new(rules, Some(secret.clone()));
        config.creds = creds;
        config.upstream = match Upstream::from_env(|k| std::env::var(k).ok()) {
            Ok(u) => u,
            Err(e) => {
                // Going direct only narrows what works; the rules still hold.
                eprintln!(
                    "dcjail: warning: not using the upstream proxy: {}",
                    crate::error::one_line(&e.to_string())
                );
                None
            }
        };
        Ok(Session {
            proxy: Proxy::new(config),
            secret,
            endpoint,
        })
    }

    /// `landlock`: a proxy on an ephemeral loopback port of this namespace.
    /// Returns the session and the port the command may connect to.
    pub fn start_tcp(
        plan: &Plan,
        creds: Option<std::sync::Arc<crate::net::creds::Injector>>,
    ) -> Result<(Session, u16), String> {
        let l = TcpListener::bind("127.0.0.1:0")
            .map_err(|e| format!("cannot start the allowlist proxy: {e}"))?;
        let port = l
            .local_addr()
            .map_err(|e| format!("cannot start the allowlist proxy: {e}"))?
            .port();
        let s = Session::new(plan, format!("127.0.0.1:{port}"), creds)?;
        let proxy = s.proxy.clone();
        with_signals_blocked(|| proxy.spawn(Listener::Tcp(l)))
            .map_err(|e| format!("cannot start the allowlist proxy: {e}"))?;
        Ok((s, port))
    }

    /// The proxy variables for the command's environment.
    pub fn env(&self) -> Vec<(OsString, OsString)> {
        super::proxy_env(&self.endpoint, &self.secret)
    }

    /// Refused destinations so far, once each.
    pub fn denied(&self) -> Vec<Denial> {
        self.proxy.denied()
    }

    /// The exit report on stderr: one `dcjail: network-denied: HOST:PORT
    /// (WHY)` line each; returns the same entries for `--report`.
    pub fn report(&self) -> Vec<String> {
        let d: Vec<String> = self.denied().iter().map(|d| d.to_string()).collect();
        for line in super::denied_lines(&d) {
            eprintln!("{line}");
        }
        d
    }
}

/// Runs `f` with every signal blocked in this thread, so threads it spawns
/// start (and stay) blocked: process-directed signals then reach only the
/// supervisor, which forwards them to the command.
fn with_signals_blocked<T>(f: impl FnOnce() -> T) -> T {
    // SAFETY: sigset_t is plain data; pthread_sigmask with valid pointers.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_BLOCK, &all, &mut old);
        let out = f();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        out
    }
}
