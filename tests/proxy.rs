//! The allowlist proxy, driven over real loopback sockets: every test starts
//! its own origin servers and its own proxy, and asserts what reached the
//! origin (bytes, Host header) — or that nothing did.

use dcjail::net::conn::{spawn_bridge, Endpoint, Listener};
use dcjail::net::domain::{DomainRule, Rules};
use dcjail::net::proxy::{base64, Config, Denial, Proxy, Resolver, Upstream};
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

#[path = "support/scratch.rs"]
mod scratch;
#[path = "support/upstream.rs"]
mod upstream;
use upstream::{fake_upstream, settled};

const SECRET: &str = "0123456789abcdef0123456789abcdef";

/// An origin the test owns: counts connections, remembers request heads,
/// answers HTTP with the Host it saw, or echoes raw bytes.
struct Origin {
    port: u16,
    conns: Arc<AtomicUsize>,
    heads: Arc<Mutex<Vec<String>>>,
}

fn origin(http: bool) -> Origin {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let conns = Arc::new(AtomicUsize::new(0));
    let heads = Arc::new(Mutex::new(Vec::new()));
    let (c2, h2) = (conns.clone(), heads.clone());
    thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            c2.fetch_add(1, Ordering::SeqCst);
            let h3 = h2.clone();
            thread::spawn(move || {
                if http {
                    let mut buf = Vec::new();
                    let mut b = [0u8; 1024];
                    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                        match s.read(&mut b) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&b[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&buf).into_owned();
                    let host = head
                        .lines()
                        .find_map(|l| l.strip_prefix("Host: "))
                        .unwrap_or("")
                        .to_string();
                    h3.lock().unwrap().push(head);
                    let body = format!("hello from origin, host={host}");
                    let _ = write!(
                        s,
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                } else {
                    let mut r = s.try_clone().unwrap();
                    let _ = std::io::copy(&mut r, &mut s);
                }
            });
        }
    });
    Origin { port, conns, heads }
}

/// Names ending in `.test` resolve to loopback, where the test origins
/// listen (or to what the table says), without /etc/hosts.
fn test_resolver() -> Resolver {
    Arc::new(|name: &str, port: u16| {
        let ips: &[&str] = match name {
            "meta.test" | "sneaky.allowed.test" => &["169.254.169.254"],
            "v6.test" => &["::1"],
            "ten.wild.test" => &["10.1.2.3"],
            "home.wild.test" => &["192.168.1.1"],
            "cgnat.wild.test" => &["100.64.0.7"],
            "ula.wild.test" => &["fd00::7"],
            "zero.wild.test" => &["0.0.0.0"],
            "mapped.wild.test" => &["::ffff:127.0.0.1"],
            "nat64.wild.test" => &["64:ff9b::7f00:1"],
            "v6loop.wild.test" => &["::1"],
            "mixed.wild.test" => &["192.0.2.1", "127.0.0.1"],
            n if n.ends_with(".test") || n == "test" => &["127.0.0.1"],
            _ => return Err(std::io::Error::other("test resolver: unknown name")),
        };
        Ok(ips
            .iter()
            .map(|ip| SocketAddr::new(ip.parse().unwrap(), port))
            .collect())
    })
}

fn rules(allow: &[&str], deny: &[&str]) -> Rules {
    Rules {
        allow: allow
            .iter()
            .map(|r| DomainRule::parse(r).unwrap())
            .collect(),
        deny: deny.iter().map(|r| DomainRule::parse(r).unwrap()).collect(),
    }
}

fn start(allow: &[&str], deny: &[&str]) -> (Proxy, SocketAddr) {
    let mut c = Config::new(rules(allow, deny), Some(SECRET.into()));
    c.resolver = test_resolver();
    start_with(c)
}

fn start_with(c: Config) -> (Proxy, SocketAddr) {
    let p = Proxy::new(c);
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    p.spawn(Listener::Tcp(l)).unwrap();
    (p, addr)
}

fn auth() -> String {
    format!(
        "Proxy-Authorization: Basic {}\r\n",
        base64(format!("dcjail:{SECRET}").as_bytes())
    )
}

fn connect(proxy: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(proxy).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// Sends a request head, returns everything the proxy answered until close.
fn http_exchange(proxy: SocketAddr, head: impl AsRef<[u8]>) -> String {
    let mut s = connect(proxy);
    s.write_all(head.as_ref()).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// CONNECT, then one echo round trip; returns the proxy's status line.
fn connect_echo(proxy: SocketAddr, target: &str, headers: &str) -> (String, Option<Vec<u8>>) {
    let mut s = connect(proxy);
    write!(
        s,
        "CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n{headers}\r\n"
    )
    .unwrap();
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match s.read(&mut b) {
            Ok(1) => head.push(b[0]),
            _ => break,
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let status = head.lines().next().unwrap_or("").to_string();
    if !status.contains(" 200 ") {
        return (status, None);
    }
    s.write_all(b"ping through the tunnel").unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    let mut echoed = Vec::new();
    s.read_to_end(&mut echoed).unwrap();
    (status, Some(echoed))
}

/// SOCKS5 handshake with user/pass; returns the reply code (or the failing
/// stage) and, on success, the echoed bytes.
fn socks_echo(
    proxy: SocketAddr,
    user: &str,
    pass: &str,
    addr: &[u8],
    port: u16,
) -> Result<Vec<u8>, String> {
    let mut s = connect(proxy);
    s.write_all(&[5, 1, 2]).unwrap();
    let mut r = [0u8; 2];
    s.read_exact(&mut r).map_err(|e| format!("greeting: {e}"))?;
    if r != [5, 2] {
        return Err(format!("method {:#x}", r[1]));
    }
    let mut up = vec![1, user.len() as u8];
    up.extend_from_slice(user.as_bytes());
    up.push(pass.len() as u8);
    up.extend_from_slice(pass.as_bytes());
    s.write_all(&up).unwrap();
    s.read_exact(&mut r).map_err(|e| format!("auth: {e}"))?;
    if r != [1, 0] {
        return Err("auth refused".into());
    }
    let mut req = vec![5, 1, 0];
    req.extend_from_slice(addr);
    req.extend_from_slice(&port.to_be_bytes());
    s.write_all(&req).unwrap();
    let mut rep = [0u8; 10];
    s.read_exact(&mut rep).map_err(|e| format!("reply: {e}"))?;
    if rep[1] != 0 {
        return Err(format!("reply {:#04x}", rep[1]));
    }
    s.write_all(b"ping via socks").unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    Ok(out)
}

fn socks_name(n: &str) -> Vec<u8> {
    let mut v = vec![3, n.len() as u8];
    v.extend_from_slice(n.as_bytes());
    v
}

#[test]
fn allowed_name_tunnels_through_http_connect() {
    let o = origin(false);
    let (_p, proxy) = start(&["allowed.test"], &[]);
    let (status, echoed) = connect_echo(proxy, &format!("allowed.test:{}", o.port), &auth());
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    assert_eq!(echoed.as_deref(), Some(&b"ping through the tunnel"[..]));
    assert_eq!(settled(&o.conns, 1), 1);
}

#[test]
fn absolute_uri_get_is_forwarded_with_host_rewritten_and_credentials_dropped() {
    let o = origin(true);
    let (_p, proxy) = start(&["Allowed.TEST"], &[]);
    let resp = http_exchange(
        proxy,
        format!(
            "GET http://allowed.test:{}/some/path?q=1 HTTP/1.1\r\nHost: evil.example\r\n{}Proxy-Connection: keep-alive\r\n\r\n",
            o.port,
            auth()
        ),
    );
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    assert!(
        resp.ends_with(&format!("host=allowed.test:{}", o.port)),
        "{resp}"
    );
    let heads = o.heads.lock().unwrap();
    assert_eq!(heads.len(), 1);
    assert!(
        heads[0].starts_with("GET /some/path?q=1 HTTP/1.1\r\n"),
        "{}",
        heads[0]
    );
    assert!(
        !heads[0].contains(SECRET) && !heads[0].to_ascii_lowercase().contains("proxy-"),
        "{}",
        heads[0]
    );
    assert!(!heads[0].contains("evil.example"));
}

#[test]
fn allowed_name_works_through_socks5_domain_and_ip_address_types() {
    let o = origin(false);
    let (_p, proxy) = start(&["allowed.test", "127.0.0.1"], &[]);
    assert_eq!(
        socks_echo(proxy, "dcjail", SECRET, &socks_name("allowed.test"), o.port).unwrap(),
        b"ping via socks"
    );
    assert_eq!(
        socks_echo(proxy, "dcjail", SECRET, &[1, 127, 0, 0, 1], o.port).unwrap(),
        b"ping via socks"
    );
    // ATYP 4 with an IPv4-mapped address is the same IP.
    let mut v6 = vec![4];
    v6.extend_from_slice(
        &"::ffff:127.0.0.1"
            .parse::<std::net::Ipv6Addr>()
            .unwrap()
            .octets(),
    );
    assert_eq!(
        socks_echo(proxy, "dcjail", SECRET, &v6, o.port).unwrap(),
        b"ping via socks"
    );
    assert_eq!(settled(&o.conns, 3), 3);
}

#[test]
fn denied_name_gets_403_naming_host_and_dcjail_and_nothing_reaches_the_origin() {
    let o = origin(true);
    let (p, proxy) = start(&["allowed.test"], &[]);
    let resp = http_exchange(
        proxy,
        format!(
            "GET http://other.test:{}/ HTTP/1.1\r\n{}\r\n",
            o.port,
            auth()
        ),
    );
    assert!(resp.starts_with("HTTP/1.1 403"), "{resp}");
    assert!(
        resp.contains(&format!("other.test:{}", o.port)) && resp.contains("dcjail"),
        "{resp}"
    );
    let (status, _) = connect_echo(proxy, &format!("other.test:{}", o.port), &auth());
    assert!(status.starts_with("HTTP/1.1 403"), "{status}");
    assert_eq!(
        socks_echo(proxy, "dcjail", SECRET, &socks_name("other.test"), o.port),
        Err("reply 0x02".into())
    );
    assert_eq!(settled(&o.conns, 0), 0);
    // Collected once for the exit report, with the reason.
    assert_eq!(
        p.denied(),
        vec![Denial {
            dest: format!("other.test:{}", o.port),
            why: "not in sandbox.network.allow_domains".into()
        }]
    );
}

#[test]
fn deny_rule_beats_allow_rule() {
    let o = origin(false);
    // The origin is on loopback: a wildcard reaches it only with its address named.
    let (_p, proxy) = start(&["*.allowed.test", "127.0.0.1"], &["secret.allowed.test"]);
    let (status, _) = connect_echo(proxy, &format!("secret.allowed.test:{}", o.port), &auth());
    assert!(status.starts_with("HTTP/1.1 403"), "{status}");
    let (status, _) = connect_echo(proxy, &format!("www.allowed.test:{}", o.port), &auth());
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    assert_eq!(settled(&o.conns, 1), 1);
}

#[test]
fn wildcard_does_not_match_the_apex() {
    let o = origin(false);
    let (_p, proxy) = start(&["*.wild.test", "127.0.0.1"], &[]);
    let (status, _) = connect_echo(proxy, &format!("wild.test:{}", o.port), &auth());
    assert!(status.starts_with("HTTP/1.1 403"), "{status}");
    let (status, echoed) = connect_echo(proxy, &format!("a.wild.test:{}", o.port), &auth());
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    assert!(echoed.is_some());
    assert_eq!(settled(&o.conns, 1), 1);
}

#[test]
fn ip_literal_spellings_do_not_pass_a_name_rule() {
    let o = origin(false);
    let (_p, proxy) = start(&["allowed.test", "localhost"], &[]);
    for host in [
        "127.0.0.1",
        "2130706433",
        "0x7f.1",
        "0177.0.0.1",
        "127.1",
        "0x7f000001",
        "[::ffff:127.0.0.1]",
        "[::1]",
        "127.0.0.1.",
    ] {
        let (status, _) = connect_echo(proxy, &format!("{host}:{}", o.port), &auth());
        assert!(status.starts_with("HTTP/1.1 403"), "{host}: {status}");
        let resp = http_exchange(
            proxy,
            format!("GET http://{host}:{}/ HTTP/1.1\r\n{}\r\n", o.port, auth()),
        );
        assert!(resp.starts_with("HTTP/1.1 403"), "{host}: {resp}");
    }
    for name in ["2130706433", "0x7f.1", "127.1"] {
        assert_eq!(
            socks_echo(proxy, "dcjail", SECRET, &socks_name(name), o.port),
            Err("reply 0x02".into()),
            "{name}"
        );
    }
    assert_eq!(
        socks_echo(proxy, "dcjail", SECRET, &[1, 127, 0, 0, 1], o.port),
        Err("reply 0x02".into())
    );
    // Host-splitting tricks are refused, not guessed at.
    for target in [
        "allowed.test%00.evil",
        "allowed.test@127.0.0.1",
        "allowed.test\t",
    ] {
        let (status, _) = connect_echo(proxy, &format!("{target}:{}", o.port), &auth());
        assert!(!status.contains(" 200 "), "{target:?}: {status}");
    }
    assert_eq!(settled(&o.conns, 0), 0);
}

#[test]
fn names_resolving_to_metadata_addresses_are_refused_unless_the_ip_is_allowed() {
    let (_p, proxy) = start(
        &["meta.test", "*.allowed.test", "metadata.google.internal"],
        &[],
    );
    for host in [
        "meta.test",
        "sneaky.allowed.test",
        "metadata.google.internal",
    ] {
        let (status, _) = connect_echo(proxy, &format!("{host}:80"), &auth());
        assert!(status.starts_with("HTTP/1.1 403"), "{host}: {status}");
    }
    let resp = http_exchange(
        proxy,
        format!("GET http://meta.test/latest HTTP/1.1\r\n{}\r\n", auth()),
    );
    assert!(resp.contains("169.254.169.254"), "{resp}");
}

#[test]
fn missing_or_wrong_secret_is_refused_before_any_connection() {
    let o = origin(false);
    let (p, proxy) = start(&["allowed.test"], &[]);
    let target = format!("allowed.test:{}", o.port);
    let (status, _) = connect_echo(proxy, &target, "");
    assert!(status.starts_with("HTTP/1.1 407"), "{status}");
    let wrong = format!(
        "Proxy-Authorization: Basic {}\r\n",
        base64(b"dcjail:not-the-secret")
    );
    let (status, _) = connect_echo(proxy, &target, &wrong);
    assert!(status.starts_with("HTTP/1.1 407"), "{status}");
    let wrong_user = format!(
        "Proxy-Authorization: Basic {}\r\n",
        base64(format!("root:{SECRET}").as_bytes())
    );
    let (status, _) = connect_echo(proxy, &target, &wrong_user);
    assert!(status.starts_with("HTTP/1.1 407"), "{status}");
    let resp = http_exchange(proxy, format!("GET http://{target}/ HTTP/1.1\r\n\r\n"));
    assert!(resp.starts_with("HTTP/1.1 407"), "{resp}");
    // SOCKS: no-auth only is not acceptable; a wrong password is refused.
    let mut s = connect(proxy);
    s.write_all(&[5, 1, 0]).unwrap();
    let mut r = [0u8; 2];
    s.read_exact(&mut r).unwrap();
    assert_eq!(r, [5, 0xff]);
    assert_eq!(
        socks_echo(
            proxy,
            "dcjail",
            "wrong",
            &socks_name("allowed.test"),
            o.port
        ),
        Err("auth refused".into())
    );
    assert_eq!(settled(&o.conns, 0), 0);
    // Credential failures are not destinations.
    assert!(p.denied().is_empty());
}

#[test]
fn malformed_oversized_and_slow_requests_are_closed() {
    let mut c = Config::new(rules(&["allowed.test"], &[]), Some(SECRET.into()));
    c.resolver = test_resolver();
    c.handshake_timeout = Duration::from_millis(300);
    let (_p, proxy) = start_with(c);
    let resp = http_exchange(
        proxy,
        "GET /origin-form HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
    );
    assert!(resp.starts_with("HTTP/1.1 400"), "{resp}");
    let big = format!(
        "GET http://allowed.test/ HTTP/1.1\r\nX: {}\r\n\r\n",
        "a".repeat(70_000)
    );
    let mut s = connect(proxy);
    let _ = s.write_all(big.as_bytes());
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    assert!(String::from_utf8_lossy(&out).starts_with("HTTP/1.1 431"));
    // A client that never finishes its head is dropped at the deadline.
    let mut s = connect(proxy);
    s.write_all(b"CONNECT allowed.test:1 HTTP/1.1\r\n").unwrap();
    let t = std::time::Instant::now();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    assert!(t.elapsed() < Duration::from_secs(5));
    assert!(out.is_empty());
    // Binary garbage and SOCKS4 get no tunnel.
    let resp = http_exchange(
        proxy,
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n",
    );
    assert!(resp.starts_with("HTTP/1.1 400"), "{resp}");
    let resp = http_exchange(proxy, b"\x04\x01\x00\x50\x7f\x00\x00\x01\x00");
    assert_eq!(resp.as_bytes().get(1), Some(&0x5b));
}

#[test]
fn connections_beyond_the_cap_are_closed_at_once() {
    let mut c = Config::new(rules(&["allowed.test"], &[]), Some(SECRET.into()));
    c.resolver = test_resolver();
    c.max_connections = 2;
    let (p, proxy) = start_with(c);
    let _a = connect(proxy);
    let _b = connect(proxy);
    for _ in 0..100 {
        if p.active() == 2 {
            break;
        }
        thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(p.active(), 2);
    let mut third = connect(proxy);
    let mut buf = [0u8; 1];
    let t = std::time::Instant::now();
    assert_eq!(third.read(&mut buf).unwrap_or(0), 0);
    assert!(t.elapsed() < Duration::from_secs(5));
}

#[test]
fn the_parents_proxy_is_used_as_upstream() {
    let o = origin(false);
    let (up_port, seen) = fake_upstream();
    let mut c = Config::new(rules(&["far.away.example"], &[]), Some(SECRET.into()));
    // The name resolves only at the upstream: the local resolver fails.
    c.resolver = Arc::new(|_: &str, _: u16| Err(std::io::Error::other("no local DNS")));
    c.upstream = Some(
        Upstream::from_env(|k| {
            (k == "HTTPS_PROXY").then(|| format!("http://u:p@127.0.0.1:{up_port}"))
        })
        .unwrap()
        .unwrap(),
    );
    let (_p, proxy) = start_with(c);
    let (status, echoed) = connect_echo(proxy, &format!("far.away.example:{}", o.port), &auth());
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    assert_eq!(echoed.as_deref(), Some(&b"ping through the tunnel"[..]));
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].starts_with(&format!("CONNECT far.away.example:{} HTTP/1.1\r\n", o.port)));
    assert!(seen[0].contains(&format!("Proxy-Authorization: Basic {}", base64(b"u:p"))));
    assert!(!seen[0].contains(SECRET));
    // Denied names never reach the upstream either.
    drop(seen);
    let (status, _) = connect_echo(proxy, &format!("other.example:{}", o.port), &auth());
    assert!(status.starts_with("HTTP/1.1 403"));
}

fn scratch_dir(tag: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    scratch::fresh(&format!(
        "proxy-{}-{}-{tag}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ))
}

#[test]
fn bridge_from_loopback_reaches_the_proxy_on_a_unix_socket() {
    let o = origin(false);
    let dir = scratch_dir("bridge");
    let sock = dir.join("proxy.sock");
    let mut c = Config::new(rules(&["allowed.test"], &[]), Some(SECRET.into()));
    c.resolver = test_resolver();
    let p = Proxy::new(c);
    p.spawn(Listener::Unix(UnixListener::bind(&sock).unwrap()))
        .unwrap();
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let bridge_addr = l.local_addr().unwrap();
    spawn_bridge(Listener::Tcp(l), Endpoint::Unix(sock.clone()), 64).unwrap();
    let (status, echoed) = connect_echo(bridge_addr, &format!("allowed.test:{}", o.port), &auth());
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    assert_eq!(echoed.as_deref(), Some(&b"ping through the tunnel"[..]));
    let (status, _) = connect_echo(bridge_addr, &format!("other.test:{}", o.port), &auth());
    assert!(status.starts_with("HTTP/1.1 403"), "{status}");
    assert_eq!(
        socks_echo(
            bridge_addr,
            "dcjail",
            SECRET,
            &socks_name("allowed.test"),
            o.port
        )
        .unwrap(),
        b"ping via socks"
    );
    scratch::remove(&dir);
}

/// curl, the client most agents use, through the proxy as the environment
/// would configure it; names that really resolve (`localhost`).
#[test]
fn curl_reaches_an_allowed_name_and_gets_403_for_another() {
    if !scratch::need("curl") {
        return;
    }
    let o = origin(true);
    let mut c = Config::new(rules(&["localhost"], &[]), Some(SECRET.into()));
    c.resolver = dcjail::net::proxy::system_resolver();
    let (p, proxy) = start_with(c);
    let curl = |args: &[&str]| {
        let out = std::process::Command::new("curl")
            .args(["-sS", "--max-time", "10", "-w", "\n%{http_code}"])
            .args(args)
            .env_remove("http_proxy")
            .env_remove("HTTPS_PROXY")
            .env_remove("https_proxy")
            .env_remove("ALL_PROXY")
            .env_remove("all_proxy")
            .env_remove("NO_PROXY")
            .env_remove("no_proxy")
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let http_proxy = format!("http://dcjail:{SECRET}@{proxy}");
    let socks = format!("socks5h://dcjail:{SECRET}@{proxy}");
    let url = format!("http://localhost:{}/x", o.port);
    let out = curl(&["-x", &http_proxy, &url]);
    assert!(
        out.ends_with("\n200") && out.contains("host=localhost:"),
        "{out}"
    );
    let out = curl(&["-x", &http_proxy, "-p", &url]);
    assert!(out.ends_with("\n200"), "CONNECT: {out}");
    let out = curl(&["-x", &socks, &url]);
    assert!(out.ends_with("\n200"), "socks: {out}");
    let denied = format!("http://127.0.0.1:{}/x", o.port);
    let out = curl(&["-x", &http_proxy, &denied]);
    assert!(out.ends_with("\n403") && out.contains("dcjail"), "{out}");
    let out = curl(&["-x", &format!("http://{proxy}"), &url]);
    assert!(out.ends_with("\n407"), "{out}");
    assert_eq!(settled(&o.conns, 3), 3);
    let dests: Vec<String> = p.denied().into_iter().map(|d| d.dest).collect();
    assert_eq!(dests, vec![format!("127.0.0.1:{}", o.port)]);
}

#[test]
fn a_head_sent_byte_by_byte_is_parsed_once_complete() {
    let o = origin(false);
    let (_p, proxy) = start(&["allowed.test"], &[]);
    let mut s = connect(proxy);
    s.set_nodelay(true).unwrap();
    let head = format!("CONNECT allowed.test:{} HTTP/1.1\r\n{}\r\n", o.port, auth());
    for b in head.as_bytes() {
        s.write_all(&[*b]).unwrap();
    }
    let mut got = [0u8; 12];
    s.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"HTTP/1.1 200");
    assert_eq!(settled(&o.conns, 1), 1);
}

/// The attack of an allowed wildcard whose DNS its owner controls: the name
/// answers with loopback, where this host's own services listen.
#[test]
fn a_wildcard_name_resolving_to_loopback_is_refused_over_http_and_socks() {
    let o = origin(true);
    let (p, proxy) = start(&["*.wild.test"], &[]);
    let target = format!("evil.wild.test:{}", o.port);
    let why = "resolves to 127.0.0.1, a loopback address; name evil.wild.test or 127.0.0.1 in sandbox.network.allow_domains to allow it";
    let (status, _) = connect_echo(proxy, &target, &auth());
    assert!(status.starts_with("HTTP/1.1 403"), "{status}");
    let resp = http_exchange(
        proxy,
        format!("GET http://{target}/ HTTP/1.1\r\n{}\r\n", auth()),
    );
    assert!(resp.starts_with("HTTP/1.1 403"), "{resp}");
    assert!(
        resp.contains(&format!("dcjail: network access to {target} denied: {why}")),
        "{resp}"
    );
    assert_eq!(
        socks_echo(
            proxy,
            "dcjail",
            SECRET,
            &socks_name("evil.wild.test"),
            o.port
        ),
        Err("reply 0x02".into())
    );
    assert_eq!(
        settled(&o.conns, 0),
        0,
        "a byte reached the loopback origin"
    );
    assert_eq!(
        p.denied(),
        vec![Denial {
            dest: target,
            why: why.into()
        }]
    );
}

#[test]
fn every_kind_of_private_answer_is_refused_for_a_wildcard_name() {
    let o = origin(false);
    let (p, proxy) = start(&["*.wild.test"], &[]);
    for (name, shown) in [
        ("ten.wild.test", "10.1.2.3, a private-network address"),
        ("home.wild.test", "192.168.1.1, a private-network address"),
        (
            "cgnat.wild.test",
            "100.64.0.7, a shared (carrier-grade NAT) address",
        ),
        ("ula.wild.test", "[fd00::7], a private-network address"),
        ("zero.wild.test", "0.0.0.0, an unspecified address"),
        ("mapped.wild.test", "127.0.0.1, a loopback address"),
        (
            "nat64.wild.test",
            "[64:ff9b::7f00:1], an IPv6 form of 127.0.0.1, a loopback address",
        ),
        ("v6loop.wild.test", "[::1], a loopback address"),
    ] {
        let target = format!("{name}:{}", o.port);
        let (status, _) = connect_echo(proxy, &target, &auth());
        assert!(status.starts_with("HTTP/1.1 403"), "{name}: {status}");
        let resp = http_exchange(
            proxy,
            format!("GET http://{target}/ HTTP/1.1\r\n{}\r\n", auth()),
        );
        assert!(
            resp.contains(&format!("resolves to {shown}")),
            "{name}: {resp}"
        );
        assert_eq!(
            socks_echo(proxy, "dcjail", SECRET, &socks_name(name), o.port),
            Err("reply 0x02".into()),
            "{name}"
        );
    }
    assert_eq!(settled(&o.conns, 0), 0);
    assert_eq!(p.denied().len(), 8);
}

#[test]
fn an_answer_mixing_a_public_and_a_loopback_address_is_refused_whole() {
    let o = origin(false);
    let (_p, proxy) = start(&["*.wild.test"], &[]);
    let (status, _) = connect_echo(proxy, &format!("mixed.wild.test:{}", o.port), &auth());
    assert!(status.starts_with("HTTP/1.1 403"), "{status}");
    assert_eq!(settled(&o.conns, 0), 0);
}

#[test]
fn an_exact_name_or_the_address_itself_lets_a_loopback_answer_through() {
    let o = origin(false);
    let calls = Arc::new(AtomicUsize::new(0));
    let resolver = {
        let calls = calls.clone();
        let inner = test_resolver();
        let r: Resolver = Arc::new(move |n: &str, p: u16| {
            // A second lookup would get another answer (rebinding): the
            // proxy must dial what it checked, so it asks once.
            if calls.fetch_add(1, Ordering::SeqCst) % 2 == 1 {
                return Ok(vec![SocketAddr::new("127.0.0.2".parse().unwrap(), p)]);
            }
            inner(n, p)
        });
        r
    };
    let start_r = |allow: &[&str]| {
        let mut c = Config::new(rules(allow, &[]), Some(SECRET.into()));
        c.resolver = resolver.clone();
        calls.store(0, Ordering::SeqCst);
        start_with(c)
    };
    let target = format!("evil.wild.test:{}", o.port);
    // The name itself, exactly.
    let (_p, proxy) = start_r(&["*.wild.test", "evil.wild.test"]);
    let (status, echoed) = connect_echo(proxy, &target, &auth());
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    assert_eq!(echoed.as_deref(), Some(&b"ping through the tunnel"[..]));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    calls.store(0, Ordering::SeqCst);
    assert_eq!(
        socks_echo(
            proxy,
            "dcjail",
            SECRET,
            &socks_name("evil.wild.test"),
            o.port
        )
        .unwrap(),
        b"ping via socks"
    );
    // The address, by an IP rule.
    let (_p, proxy) = start_r(&["*.wild.test", "127.0.0.1"]);
    let (status, _) = connect_echo(proxy, &target, &auth());
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    assert_eq!(settled(&o.conns, 3), 3);
    // Another address named, or the exact name for another port: no.
    for allow in [
        &["*.wild.test", "127.0.0.2"][..],
        &["*.wild.test", "evil.wild.test:1"][..],
    ] {
        let (_p, proxy) = start_r(allow);
        let (status, _) = connect_echo(proxy, &target, &auth());
        assert!(status.starts_with("HTTP/1.1 403"), "{allow:?}: {status}");
    }
    assert_eq!(settled(&o.conns, 3), 3);
}

/// The relay moves bytes inside the kernel: what arrives is exactly what was
/// sent, in both directions at once, and a half-close still lets the rest of
/// the reply through.
#[test]
fn a_large_transfer_arrives_intact_in_both_directions() {
    let o = origin(false);
    let (_p, proxy) = start(&["allowed.test"], &[]);
    let mut s = connect(proxy);
    write!(
        s,
        "CONNECT allowed.test:{} HTTP/1.1\r\n{}\r\n",
        o.port,
        auth()
    )
    .unwrap();
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut b).unwrap();
        head.push(b[0]);
    }
    assert!(head.starts_with(b"HTTP/1.1 200"));
    // 24 MiB of a pattern that no shifted copy matches.
    let data: Vec<u8> = (0..24u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let data = Arc::new(data);
    let mut w = s.try_clone().unwrap();
    let d2 = data.clone();
    let writer = thread::spawn(move || {
        for chunk in d2.chunks(100_003) {
            w.write_all(chunk).unwrap();
        }
        w.shutdown(Shutdown::Write).unwrap();
    });
    let mut back = Vec::with_capacity(data.len());
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.read_to_end(&mut back).unwrap();
    writer.join().unwrap();
    assert_eq!(back.len(), data.len());
    assert!(back == *data, "the echoed bytes differ");
}

#[test]
fn an_origin_that_resets_ends_the_tunnel_promptly() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    thread::spawn(move || {
        if let Ok((s, _)) = l.accept() {
            // SO_LINGER 0: close sends a reset, not a FIN.
            let lin = libc::linger {
                l_onoff: 1,
                l_linger: 0,
            };
            // SAFETY: setsockopt reads a linger struct that outlives the call.
            unsafe {
                libc::setsockopt(
                    std::os::fd::AsRawFd::as_raw_fd(&s),
                    libc::SOL_SOCKET,
                    libc::SO_LINGER,
                    (&lin as *const libc::linger).cast(),
                    std::mem::size_of::<libc::linger>() as libc::socklen_t,
                );
            }
            let mut r = [0u8; 5];
            let mut s = s;
            let _ = s.read_exact(&mut r);
            drop(s);
        }
    });
    let (_p, proxy) = start(&["allowed.test"], &[]);
    let mut s = connect(proxy);
    write!(s, "CONNECT allowed.test:{port} HTTP/1.1\r\n{}\r\n", auth()).unwrap();
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut b).unwrap();
        head.push(b[0]);
    }
    s.write_all(b"hello").unwrap();
    let t = std::time::Instant::now();
    let mut rest = Vec::new();
    // EOF or a reset; either way, not the 10 s read timeout.
    let _ = s.read_to_end(&mut rest);
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert!(rest.is_empty());
}
