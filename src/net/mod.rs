//! Network allowlist (`sandbox.network.mode = "allowlist"`): dcjail's own
//! HTTP/SOCKS5 proxy ([`proxy`]), the wire parsers it trusts nothing
//! without ([`parse`]), the byte relay and the loopback↔unix bridge
//! ([`conn`]), and the per-run glue: the secret, the command's proxy
//! environment, the exit report of refused destinations.
//!
//! This module never decides *whether* the command may use the network —
//! the plan says so — and never runs an external program.

pub mod conn;
pub mod parse;
pub mod proxy;

use std::ffi::OsString;

/// A fresh per-run secret: 128 random bits, hex. The proxy serves only
/// clients that present it, so another local process cannot use the
/// sandbox's proxy to reach what the sandbox may reach.
pub fn new_secret() -> Result<String, String> {
    let mut b = [0u8; 16];
    let mut got = 0;
    while got < b.len() {
        // SAFETY: writes at most the remaining length into `b`.
        let n = unsafe { libc::getrandom(b[got..].as_mut_ptr().cast(), b.len() - got, 0) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(format!("cannot get random bytes for the proxy secret: {e}"));
        }
        got += n as usize;
    }
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
