//! Internet connections the sandbox kept from their destination, judged:
//! a `git://` fetch, ssh, a database client or a name lookup of a program
//! that does not go through dcjail's proxy, and a connection to a server on
//! the host's loopback that the command's own loopback does not have.
//!
//! The broker records a failed internet `connect` when the command has a
//! network namespace of dcjail's (bwrap with `--net none` or `allowlist`):
//! there no route out exists and loopback is the command's own. It also
//! records a port the landlock layer refuses (the landlock backend under
//! the allowlist, where only the proxy's port is open). Nothing here can
//! allow these narrowly, so no option is suggested: the why says what
//! would work and what it opens.

use super::classify::Denial;
use crate::inside::denial_wire::{Fact, INET};
use crate::plan::Plan;
use crate::policy::NetMode;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;

/// The address a record of an internet connect carries.
pub fn address(f: &Fact<'_>) -> Option<SocketAddr> {
    if f.flags & INET == 0 {
        return None;
    }
    let sa = f.named;
    let family = u16::from_ne_bytes([*sa.first()?, *sa.get(1)?]);
    let port = u16::from_be_bytes([*sa.get(2)?, *sa.get(3)?]);
    let ip = match i32::from(family) {
        libc::AF_INET => {
            let b: [u8; 4] = sa.get(4..8)?.try_into().ok()?;
            IpAddr::V4(Ipv4Addr::from(b))
        }
        libc::AF_INET6 => {
            let b: [u8; 16] = sa.get(8..24)?.try_into().ok()?;
            IpAddr::V6(Ipv6Addr::from(b))
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

/// Whether the record is of an internet connect.
pub fn is_inet(f: &Fact<'_>) -> bool {
    f.flags & INET != 0
}

/// Whether a recorded refusal was not dcjail's doing and is left out: a
/// connect to the command's own loopback where nothing listened, when
/// nothing listens at that port on the host's loopback either (a program
/// polling for its own server, a client tried before it started).
pub fn not_ours(f: &Fact<'_>) -> bool {
    match address(f) {
        Some(a) if f.errno == libc::ECONNREFUSED => !host_listens(a),
        _ => false,
    }
}

/// Judges an internet connect the sandbox kept from its destination.
pub fn judge(plan: &Plan, f: &Fact<'_>, mut d: Denial) -> Denial {
    d.kind = "network";
    d.rule = "network";
    let Some(a) = address(f) else {
        d.why_not = Some("the address could not be read".into());
        return d;
    };
    let udp = f.arg == libc::SOCK_DGRAM as u64;
    let shown = if udp {
        format!("{a} (udp)")
    } else {
        a.to_string()
    };
    d.path = Some(shown.clone());
    d.resolved = Some(PathBuf::from(shown));
    let mode = plan.effective_net();
    let proxy = "programs that use HTTP_PROXY/HTTPS_PROXY (curl, git over https, npm, pip, cargo) reach an allowed domain through dcjail's proxy, which also looks up its name";
    let by_itself = "a program that connects by itself (git://, ssh, a database or mail client, a name lookup of its own) cannot reach outside; --net full lets it, and opens the whole network to the command";
    let lookup = if a.port() == 53 {
        "a name lookup (DNS): "
    } else {
        ""
    };
    d.why_not = Some(match (f.errno, mode) {
        (libc::ECONNREFUSED, _) => format!(
            "nothing listened on {a} in the command's own loopback: under --net {} the bwrap backend gives the command a network namespace of its own, so a server on the host's loopback at that port (one listens there now) is out of its reach; --net full reaches it, and opens the whole network to the command",
            mode.word()
        ),
        (libc::EACCES | libc::EPERM, _) => format!(
            "{lookup}the sandbox's network layer allows TCP connections only to the ports the policy opens (dcjail's proxy); {proxy}; {by_itself}"
        ),
        (_, NetMode::Allowlist) => format!(
            "{lookup}under --net allowlist the command's network namespace reaches nothing outside but dcjail's proxy: {proxy}; {by_itself} (for git, an https:// URL goes through the proxy)"
        ),
        _ => format!(
            "{lookup}under --net {} the command's network namespace has only its own loopback. With --net allowlist --allow-domain D, {proxy}; {by_itself}",
            mode.word()
        ),
    });
    d
}

/// Whether a TCP socket listens at `a`'s port on the host's loopback (or
/// on every address), as the host's `/proc/net/tcp*` says: dcjail reads
/// them outside the sandbox, in the host's network namespace.
fn host_listens(a: SocketAddr) -> bool {
    const LISTEN: &str = "0A";
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|t| {
        std::fs::read_to_string(t).is_ok_and(|s| {
            s.lines().skip(1).any(|l| {
                let mut w = l.split_whitespace();
                let local = w.nth(1).unwrap_or("");
                let state = w.nth(1).unwrap_or("");
                let port = local
                    .rsplit(':')
                    .next()
                    .and_then(|p| u16::from_str_radix(p, 16).ok());
                state == LISTEN && port == Some(a.port())
            })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fact(sa: &[u8], errno: i32) -> Fact<'_> {
        Fact {
            source: 1,
            flags: INET,
            nr: libc::SYS_connect as i32,
            errno,
            pid: 1,
            arg: libc::SOCK_DGRAM as u64,
            dropped: 0,
            named: sa,
            resolved: b"",
            program: b"git",
        }
    }

    #[test]
    fn an_address_is_read_from_the_raw_sockaddr_of_either_family() {
        let mut v4 = vec![0u8; 16];
        v4[..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
        v4[2..4].copy_from_slice(&53u16.to_be_bytes());
        v4[4..8].copy_from_slice(&[10, 255, 255, 53]);
        assert_eq!(
            address(&fact(&v4, libc::ENETUNREACH)),
            Some("10.255.255.53:53".parse().unwrap())
        );
        let mut v6 = vec![0u8; 28];
        v6[..2].copy_from_slice(&(libc::AF_INET6 as u16).to_ne_bytes());
        v6[2..4].copy_from_slice(&9418u16.to_be_bytes());
        v6[8..24].copy_from_slice(&Ipv6Addr::LOCALHOST.octets());
        assert_eq!(
            address(&fact(&v6, libc::ENETUNREACH)),
            Some("[::1]:9418".parse().unwrap())
        );
        // Cut short, or another family: no address.
        assert_eq!(address(&fact(&v4[..6], libc::ENETUNREACH)), None);
        let mut f = fact(&v4, libc::ENETUNREACH);
        f.flags = 0;
        assert_eq!(address(&f), None);
    }

    #[test]
    fn a_refused_loopback_connect_is_kept_only_when_the_host_listens_there() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let mut sa = vec![0u8; 16];
        sa[..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
        sa[2..4].copy_from_slice(&port.to_be_bytes());
        sa[4..8].copy_from_slice(&[127, 0, 0, 1]);
        assert!(!not_ours(&fact(&sa, libc::ECONNREFUSED)));
        drop(l);
        assert!(not_ours(&fact(&sa, libc::ECONNREFUSED)));
        // No route out is always dcjail's.
        assert!(!not_ours(&fact(&sa, libc::ENETUNREACH)));
    }
}
