//! One plain-HTTP request per proxy connection. The attack: on a connection
//! whose first request (`GET http://allowed.test/`) passed the checks, the
//! client sends a second one — pipelined in the same write, or after the
//! first response on a kept-open connection — for a host that is not
//! allowed, carrying the run's secret. A naive relay (the proxy's former
//! code path, reproduced here) delivers it to the allowed origin; dcjail's
//! proxy must deliver the first request only, without the secret. Real
//! clients (curl with keep-alive over two URLs, Python's urllib) must get
//! the same answers through the proxy as without it.
//!
//! Every origin is a loopback server of the test's own that records every
//! byte it receives and, keep-alive, answers every request it can parse.

use dcjail::net::conn::{relay, Conn, Listener};
use dcjail::net::domain::{DomainRule, Rules};
use dcjail::net::parse;
use dcjail::net::proxy::{base64, Config, Proxy, Resolver};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

#[path = "support/scratch.rs"]
mod scratch;

const SECRET: &str = "feedfacefeedfacefeedfacefeedface";

/// A keep-alive origin: records all bytes of every connection, answers each
/// request head it reads (after its `Content-Length` body, sending
/// `100 Continue` first when asked) with `200` and a body naming the
/// request's line, and keeps the connection open for the next one.
struct Origin {
    port: u16,
    conns: Arc<AtomicUsize>,
    /// Bytes received, per connection, in order of arrival.
    seen: Arc<Mutex<Vec<Vec<u8>>>>,
    /// Connections that ended (EOF or error) on the proxy's side.
    ended: Arc<AtomicUsize>,
}

impl Origin {
    fn all(&self) -> String {
        let seen = self.seen.lock().unwrap();
        seen.iter()
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .collect::<Vec<_>>()
            .join("\n--- next connection ---\n")
    }

    /// Waits (bounded) until `n` connections ended.
    fn wait_ended(&self, n: usize) -> bool {
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(10) {
            if self.ended.load(Ordering::SeqCst) >= n {
                return true;
            }
            thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// Waits (bounded) until the recording contains `needle`.
    fn wait_for(&self, needle: &str) -> bool {
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(5) {
            if self.all().contains(needle) {
                return true;
            }
            thread::sleep(Duration::from_millis(20));
        }
        false
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn origin() -> Origin {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let conns = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let ended = Arc::new(AtomicUsize::new(0));
    let (c2, s2, e2) = (conns.clone(), seen.clone(), ended.clone());
    thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let idx = {
                let mut seen = s2.lock().unwrap();
                seen.push(Vec::new());
                seen.len() - 1
            };
            c2.fetch_add(1, Ordering::SeqCst);
            let (s3, e3) = (s2.clone(), e2.clone());
            thread::spawn(move || {
                s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
                let mut buf: Vec<u8> = Vec::new();
                let mut b = [0u8; 4096];
                let mut continued = false;
                loop {
                    // Answer every complete request in the buffer.
                    while let Some(end) = find(&buf, b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                        let len: usize = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .map_or(0, |v| v.trim().parse().unwrap_or(0));
                        if head.contains("expect: 100-continue") && !continued {
                            let _ = s.write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
                            continued = true;
                        }
                        if buf.len() < end + 4 + len {
                            break;
                        }
                        let line = head.lines().next().unwrap_or("").to_string();
                        let body = format!("origin answered: {line}\n");
                        let _ = write!(
                            s,
                            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nKeep-Alive: timeout=15\r\n\r\n{body}",
                            body.len()
                        );
                        buf.drain(..end + 4 + len);
                        continued = false;
                    }
                    match s.read(&mut b) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            buf.extend_from_slice(&b[..n]);
                            s3.lock().unwrap()[idx].extend_from_slice(&b[..n]);
                        }
                    }
                }
                e3.fetch_add(1, Ordering::SeqCst);
            });
        }
    });
    Origin {
        port,
        conns,
        seen,
        ended,
    }
}

fn resolver() -> Resolver {
    Arc::new(|name: &str, port: u16| match name {
        "allowed.test" | "other.test" | "localhost" => {
            Ok(vec![SocketAddr::from(([127, 0, 0, 1], port))])
        }
        _ => Err(std::io::Error::other("test resolver: unknown name")),
    })
}

fn proxy(allow: &[&str]) -> SocketAddr {
    let rules = Rules {
        allow: allow
            .iter()
            .map(|r| DomainRule::parse(r).unwrap())
            .collect(),
        deny: Vec::new(),
    };
    let mut c = Config::new(rules, Some(SECRET.into()));
    c.resolver = resolver();
    let p = Proxy::new(c);
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    p.spawn(Listener::Tcp(l)).unwrap();
    addr
}

/// The proxy's former plain-HTTP path, as the control: the first request
/// head is parsed and its host checked, then the rest of the connection is
/// relayed blindly to that origin.
fn naive_relay(allowed: &'static str) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { continue };
            thread::spawn(move || {
                let mut buf = Vec::new();
                let mut b = [0u8; 4096];
                let (req, used) = loop {
                    if let Ok(Some(r)) = parse::parse_request(&buf) {
                        break r;
                    }
                    match c.read(&mut b) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&b[..n]),
                    }
                };
                if req.target.host() != allowed {
                    let _ = c.write_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n");
                    return;
                }
                let mut up = TcpStream::connect(("127.0.0.1", req.target.port())).unwrap();
                up.write_all(&parse::origin_head(&req, &[])).unwrap();
                up.write_all(&buf[used..]).unwrap();
                let (a, b): (Box<dyn Conn>, Box<dyn Conn>) = (Box::new(c), Box::new(up));
                relay(a, b);
            });
        }
    });
    addr
}

fn auth() -> String {
    format!(
        "Proxy-Authorization: Basic {}\r\n",
        base64(format!("dcjail:{SECRET}").as_bytes())
    )
}

fn get(host: &str, port: u16, path: &str) -> String {
    format!(
        "GET http://{host}:{port}{path} HTTP/1.1\r\nHost: {host}:{port}\r\n{}Proxy-Connection: keep-alive\r\n\r\n",
        auth()
    )
}

fn client(proxy: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(proxy).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// Reads one response (head and `Content-Length` body); `None` at EOF.
fn read_response(s: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut b = [0u8; 1];
    while find(&buf, b"\r\n\r\n").is_none() {
        match s.read(&mut b) {
            Ok(1) => buf.push(b[0]),
            _ => return None,
        }
    }
    let head = String::from_utf8_lossy(&buf).to_ascii_lowercase();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse().unwrap_or(0));
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).ok()?;
    buf.extend_from_slice(&body);
    Some(String::from_utf8_lossy(&buf).into_owned())
}

/// The pipelined attack: both requests in one write. Returns what the
/// client read until the connection closed (bounded).
fn pipelined(proxy: SocketAddr, port: u16) -> String {
    let mut s = client(proxy);
    let two = format!(
        "{}{}",
        get("allowed.test", port, "/first"),
        get("denied.test", port, "/second")
    );
    s.write_all(two.as_bytes()).unwrap();
    let mut out = Vec::new();
    let t = Instant::now();
    let mut b = [0u8; 4096];
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    while t.elapsed() < Duration::from_secs(4) {
        match s.read(&mut b) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&b[..n]),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The kept-alive attack: the second request after the first response.
/// Returns the first response and whether a second one came.
fn kept_alive(proxy: SocketAddr, port: u16) -> (Option<String>, Option<String>) {
    let mut s = client(proxy);
    s.write_all(get("allowed.test", port, "/first").as_bytes())
        .unwrap();
    let first = read_response(&mut s);
    // The proxy may have closed already: a failed write is the refusal.
    let _ = s.write_all(get("denied.test", port, "/second").as_bytes());
    let second = read_response(&mut s);
    (first, second)
}

#[test]
fn control_a_naive_relay_delivers_the_second_request_and_the_secret() {
    let o = origin();
    let relay = naive_relay("allowed.test");
    let out = pipelined(relay, o.port);
    assert!(
        o.wait_for("denied.test"),
        "the control attack did not land: {}",
        o.all()
    );
    let all = o.all();
    assert!(all.contains("Host: denied.test"), "{all}");
    assert!(all.contains(&auth()), "{all}");
    assert_eq!(out.matches("HTTP/1.1 200").count(), 2, "{out}");

    let o = origin();
    let (first, second) = kept_alive(relay, o.port);
    assert!(first.is_some_and(|r| r.contains("origin answered: get /first")));
    assert!(
        second.as_deref().is_some_and(|r| r.contains("denied.test")),
        "{second:?}"
    );
    assert!(o.all().contains("Host: denied.test"), "{}", o.all());
    assert_eq!(o.conns.load(Ordering::SeqCst), 1);
}

#[test]
fn a_pipelined_second_request_never_reaches_the_origin() {
    let o = origin();
    let p = proxy(&["allowed.test"]);
    let out = pipelined(p, o.port);
    assert!(o.wait_ended(1), "the proxy kept the origin connection open");
    let all = o.all();
    assert!(all.starts_with("GET /first HTTP/1.1\r\n"), "{all}");
    assert_eq!(all.matches("HTTP/1.1").count(), 1, "{all}");
    assert!(
        !all.contains("denied.test") && !all.contains("/second"),
        "{all}"
    );
    assert!(!all.to_ascii_lowercase().contains("proxy-"), "{all}");
    assert!(
        !all.contains(SECRET) && !all.contains(&base64(format!("dcjail:{SECRET}").as_bytes())),
        "{all}"
    );
    assert_eq!(o.conns.load(Ordering::SeqCst), 1);
    // The client got exactly the first answer, told the connection closes.
    assert_eq!(out.matches("HTTP/1.1 200").count(), 1, "{out}");
    assert!(out.contains("origin answered: get /first"), "{out}");
    assert!(out.contains("Connection: close\r\n"), "{out}");
    assert!(!out.to_ascii_lowercase().contains("keep-alive"), "{out}");
}

#[test]
fn a_second_request_on_a_kept_open_connection_never_reaches_the_origin() {
    let o = origin();
    let p = proxy(&["allowed.test", "other.test"]);
    let (first, second) = kept_alive(p, o.port);
    let first = first.unwrap_or_default();
    assert!(first.contains("origin answered: get /first"), "{first}");
    assert!(first.contains("Connection: close\r\n"), "{first}");
    assert_eq!(second, None, "a second answer came on the connection");
    assert!(o.wait_ended(1));
    let all = o.all();
    assert_eq!(all.matches("HTTP/1.1").count(), 1, "{all}");
    assert!(!all.contains("/second") && !all.contains(SECRET), "{all}");
    assert!(!all.to_ascii_lowercase().contains("proxy-"), "{all}");

    // Even a second request for an allowed host is not relayed on the
    // same connection: the client opens a new one, checked again.
    let mut s = client(p);
    s.write_all(get("allowed.test", o.port, "/a").as_bytes())
        .unwrap();
    assert!(read_response(&mut s).is_some());
    let _ = s.write_all(get("other.test", o.port, "/b").as_bytes());
    assert_eq!(read_response(&mut s), None);
    assert!(o.wait_ended(2));
    assert!(!o.all().contains("GET /b"), "{}", o.all());
}

#[test]
fn a_request_smuggled_after_a_body_is_dropped() {
    let o = origin();
    let p = proxy(&["allowed.test"]);
    let smuggled = get("denied.test", o.port, "/smuggled");
    // Content-Length body, then a request.
    let mut s = client(p);
    let post = format!(
        "POST http://allowed.test:{}/up HTTP/1.1\r\n{}Content-Length: 5\r\n\r\nhello{smuggled}",
        o.port,
        auth()
    );
    s.write_all(post.as_bytes()).unwrap();
    let r = read_response(&mut s).unwrap_or_default();
    assert!(r.contains("origin answered: post /up"), "{r}");
    // Chunked body, then a request.
    let mut s = client(p);
    let post = format!(
        "POST http://allowed.test:{}/chunked HTTP/1.1\r\n{}Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n{smuggled}",
        o.port,
        auth()
    );
    s.write_all(post.as_bytes()).unwrap();
    let mut r = Vec::new();
    let _ = s.read_to_end(&mut r);
    assert!(o.wait_ended(2));
    let all = o.all();
    assert!(!all.contains("/smuggled") && !all.contains(SECRET), "{all}");
    assert!(all.contains("\r\n\r\nhello"), "{all}");
    assert!(all.contains("5\r\nhello\r\n0\r\n\r\n"), "{all}");

    // Framing the proxy and an origin could read differently: refused
    // before any connection.
    for (framing, code) in [
        ("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", "400"),
        ("Transfer-Encoding: gzip, chunked\r\n", "501"),
        ("Content-Length: 5\r\nContent-Length: 6\r\n", "400"),
    ] {
        let mut s = client(p);
        let post = format!(
            "POST http://allowed.test:{}/x HTTP/1.1\r\n{}{framing}\r\nhello{smuggled}",
            o.port,
            auth()
        );
        s.write_all(post.as_bytes()).unwrap();
        let r = read_response(&mut s).unwrap_or_default();
        assert!(r.starts_with(&format!("HTTP/1.1 {code}")), "{framing}: {r}");
    }
    assert_eq!(o.conns.load(Ordering::SeqCst), 2);
}

fn run(cmd: &mut Command, proxy: Option<SocketAddr>) -> (String, String) {
    for k in [
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
        "NO_PROXY",
        "no_proxy",
    ] {
        cmd.env_remove(k);
    }
    if let Some(p) = proxy {
        cmd.env("http_proxy", format!("http://dcjail:{SECRET}@{p}"));
    }
    let out = cmd.output().unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn curl_keep_alive_over_two_urls_and_a_post_work_as_without_the_proxy() {
    if !scratch::need("curl") {
        return;
    }
    let o = origin();
    let p = proxy(&["localhost"]);
    // A body large enough that curl waits for `100 Continue`.
    let dir = scratch::fresh(&format!("proxy-requests-{}", std::process::id()));
    let file = dir.join("body");
    std::fs::write(&file, "x".repeat(2 * 1024 * 1024)).unwrap();
    let data = format!("@{}", file.display());
    let curl = |via: Option<SocketAddr>| {
        let mut c = Command::new("curl");
        c.args(["-sS", "--max-time", "20", "-w", "[%{http_code}]\n"])
            .arg(format!("http://localhost:{}/one", o.port))
            .arg(format!("http://localhost:{}/two", o.port))
            .args(["-H", "Expect: 100-continue", "--data-binary", &data])
            .arg(format!("http://localhost:{}/three", o.port));
        run(&mut c, via)
    };
    let (direct, derr) = curl(None);
    let (proxied, perr) = curl(Some(p));
    scratch::remove(&dir);
    assert_eq!(
        direct.matches("[200]").count(),
        3,
        "direct: {direct} {derr}"
    );
    assert_eq!(proxied, direct, "{perr}");
    let all = o.all();
    assert!(!all.contains(SECRET), "{}", &all[..all.len().min(2000)]);
    // Directly, curl keeps one connection; through the proxy, one per request.
    assert!(o.wait_ended(4));
    assert_eq!(o.conns.load(Ordering::SeqCst), 4);
}

#[test]
fn python_urllib_works_as_without_the_proxy() {
    if !scratch::need("python3") {
        return;
    }
    let o = origin();
    let p = proxy(&["localhost"]);
    let script = format!(
        "import urllib.request as u\n\
         for path in ('/a', '/b'):\n\
         \x20   r = u.urlopen('http://localhost:{port}' + path, timeout=10)\n\
         \x20   print(r.status, r.read().decode().strip())\n\
         r = u.urlopen(u.Request('http://localhost:{port}/post', data=b'payload'), timeout=10)\n\
         print(r.status, r.read().decode().strip())\n",
        port = o.port
    );
    let (direct, derr) = run(Command::new("python3").args(["-c", &script]), None);
    let (proxied, perr) = run(Command::new("python3").args(["-c", &script]), Some(p));
    assert_eq!(direct.lines().count(), 3, "{direct} {derr}");
    assert_eq!(proxied, direct, "{perr}");
    assert!(!o.all().contains(SECRET));
}
