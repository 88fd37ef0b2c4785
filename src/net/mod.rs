//! Network allowlist (`sandbox.network.mode = "allowlist"`): dcjail's own
//! HTTP/SOCKS5 proxy ([`proxy`]; one plain-HTTP request per connection,
//! `forward`), the wire parsers it trusts nothing
//! without ([`parse`]), the byte relay and the loopback↔unix bridge
//! ([`conn`]; on Linux the bytes move inside the kernel, `splice`), and the
//! per-run glue: the secret, the command's proxy environment, the exit
//! report of refused destinations.
//!
//! This module never decides *whether* the command may use the network —
//! the plan says so — and never runs an external program.

pub mod conn;
pub mod creds;
pub mod domain;
mod forward;
pub mod framing;
pub mod parse;
pub mod proxy;
#[cfg(any(target_os = "linux", target_os = "macos"))]
pub mod session;
#[cfg(target_os = "linux")]
mod splice;

use crate::plan::Plan;
use std::ffi::{CString, OsString};

/// A fresh per-run secret: 128 random bits, hex. The proxy serves only
/// clients that present it, so another local process cannot use the
/// sandbox's proxy to reach what the sandbox may reach.
pub fn new_secret() -> Result<String, String> {
    use std::io::Read;
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .map_err(|e| format!("cannot get random bytes for the proxy secret: {e}"))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// Variables that make ordinary clients use the proxy: HTTP(S) through
/// `http://dcjail:SECRET@HOST:PORT`, everything else through SOCKS5 with
/// remote name resolution (the command has no DNS), and no exceptions.
pub fn proxy_env(endpoint: &str, secret: &str) -> Vec<(OsString, OsString)> {
    let user = proxy::PROXY_USER;
    let http = format!("http://{user}:{secret}@{endpoint}");
    let socks = format!("socks5h://{user}:{secret}@{endpoint}");
    let mut out = Vec::new();
    for (k, v) in [
        ("HTTP_PROXY", &http),
        ("HTTPS_PROXY", &http),
        ("ALL_PROXY", &socks),
        ("NO_PROXY", &String::new()),
    ] {
        out.push((OsString::from(k), OsString::from(v)));
        out.push((OsString::from(k.to_ascii_lowercase()), OsString::from(v)));
    }
    out
}

/// In a network namespace of its own the command's loopback is its own:
/// a client reaches the command's own servers directly, not through the
/// proxy (which would refuse a loopback address). A loopback name the
/// allowlist itself names means the host's service, through the proxy: it
/// is not exempt. Nothing else is.
fn own_loopback_direct(env: &mut [(OsString, OsString)], plan: &Plan) {
    use domain::RuleHost;
    let named = |n: &str| {
        plan.net.allow.iter().any(|r| match &r.host {
            RuleHost::Exact(h) => h == n,
            RuleHost::Ip(ip) => ip.to_string() == n,
            RuleHost::Subdomains(_) => false,
        })
    };
    let direct: Vec<&str> = ["localhost", "127.0.0.1", "::1"]
        .into_iter()
        .filter(|n| !named(n))
        .collect();
    for (k, v) in env.iter_mut() {
        if k == "NO_PROXY" || k == "no_proxy" {
            *v = OsString::from(direct.join(","));
        }
    }
}

/// The proxy side of one run, as the launcher sees it: nothing when the
/// network is not an allowlist.
#[derive(Default)]
pub struct NetRun {
    #[cfg(any(target_os = "linux", target_os = "macos"))]
    session: Option<session::Session>,
    /// Variables for the command (and, for bwrap, stage 2).
    pub env: Vec<(OsString, OsString)>,
    /// The loopback port the command may connect to ([`Way::Loopback`]).
    pub port: Option<u16>,
    /// Stage 2's end of the proxy socketpair, kept open until bwrap has it.
    #[cfg(target_os = "linux")]
    _chan: Option<std::os::fd::OwnedFd>,
}

impl NetRun {
    /// A proxy on a loopback port of dcjail's own (landlock, Seatbelt).
    #[cfg(any(target_os = "linux", target_os = "macos"))]
    fn serving(s: session::Session) -> NetRun {
        NetRun {
            env: s.env(),
            session: Some(s),
            port: None,
            #[cfg(target_os = "linux")]
            _chan: None,
        }
    }

    /// At exit: prints `dcjail: network-denied:` lines, returns the list.
    pub fn finish(&self) -> Vec<String> {
        #[cfg(any(target_os = "linux", target_os = "macos"))]
        if let Some(s) = &self.session {
            return s.report();
        }
        Vec::new()
    }
}

/// Where the sandbox reaches the proxy; the backend decides, `exec` asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Way {
    /// A loopback port of dcjail's own network namespace (landlock,
    /// Seatbelt): the launch is then told the port ([`NetRun::port`]).
    Loopback,
    /// 127.0.0.1:`port` inside the sandbox's own network namespace (bwrap):
    /// stage 2 binds it and hands the listener out over a socketpair.
    Netns { port: u16 },
}

/// Starts the allowlist proxy for one run, reached the `way` given. The
/// endpoint comes back as data (the port, the variables, stage 2's
/// channel); this module never sees the launch it is for.
pub fn start(plan: &Plan, way: Way, creds: Option<&creds::Prepared>) -> Result<NetRun, String> {
    #[cfg(any(target_os = "linux", target_os = "macos"))]
    {
        let inj = creds.map(|c| c.injector.clone());
        let with_trust = |mut env: Vec<(OsString, OsString)>| {
            if let Some(c) = creds {
                env.extend(c.bundle.env());
            }
            env
        };
        match way {
            Way::Loopback => {
                let (s, port) = session::Session::start_tcp(plan, inj)?;
                let mut run = NetRun::serving(s);
                run.env = with_trust(run.env);
                run.port = Some(port);
                Ok(run)
            }
            #[cfg(target_os = "linux")]
            Way::Netns { port } => {
                use std::os::fd::AsRawFd;
                let (s, chan) = session::Session::start_netns(plan, port, inj)?;
                let mut env = with_trust(s.env());
                own_loopback_direct(&mut env, plan);
                env.push((
                    session::STAGE2_PROXY_FD.into(),
                    chan.as_raw_fd().to_string().into(),
                ));
                Ok(NetRun {
                    session: Some(s),
                    env,
                    port: None,
                    _chan: Some(chan),
                })
            }
            #[cfg(not(target_os = "linux"))]
            Way::Netns { .. } => Err("the bwrap backend runs only on Linux".into()),
        }
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        let _ = (plan, way, creds);
        Err("network allowlist is not in this build for this OS".into())
    }
}

/// Drops an inherited stage-2 channel variable that this run did not set:
/// only dcjail itself may hand one to stage 2.
pub fn strip_internal(envp: Vec<CString>, net: &NetRun) -> Vec<CString> {
    let ours = net.env.iter().any(|(k, _)| k == STAGE2_VAR);
    envp.into_iter()
        .filter(|e| {
            ours || !e
                .as_bytes()
                .starts_with(format!("{STAGE2_VAR}=").as_bytes())
        })
        .collect()
}

/// Stage 2's proxy channel variable (`stub_format`'s, which the stub reads).
pub const STAGE2_VAR: &str = crate::inside::stub_format::PROXY_FD_VAR;

/// The exit report's stderr lines, one per refused destination.
pub fn denied_lines(denied: &[String]) -> Vec<String> {
    denied
        .iter()
        .map(|d| format!("dcjail: network-denied: {}", crate::error::one_line(d)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_fresh_and_hex() {
        let a = new_secret().unwrap();
        let b = new_secret().unwrap();
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn proxy_env_sets_every_variable_and_its_lower_case_twin() {
        let env = proxy_env("127.0.0.1:4000", "s3");
        let get = |k: &str| {
            env.iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.to_string_lossy().into_owned())
        };
        for k in ["HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"] {
            assert_eq!(get(k).as_deref(), Some("http://dcjail:s3@127.0.0.1:4000"));
        }
        for k in ["ALL_PROXY", "all_proxy"] {
            assert_eq!(
                get(k).as_deref(),
                Some("socks5h://dcjail:s3@127.0.0.1:4000")
            );
        }
        assert_eq!(get("NO_PROXY").as_deref(), Some(""));
        assert_eq!(get("no_proxy").as_deref(), Some(""));
    }
}
