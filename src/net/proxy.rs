//! dcjail's own proxy for `network.mode = "allowlist"`: one endpoint that
//! speaks HTTP (CONNECT and absolute-URI requests) and SOCKS5, told apart by
//! the first byte. Every request must carry the run's secret; every
//! destination goes through [`Rules`] (deny, then allow) and, after one
//! resolution, [`Rules::check_address`] for every address of the answer;
//! the proxy then connects to those checked addresses, never looking the
//! name up again (a second answer could differ: DNS rebinding). Refused
//! destinations are collected once each, with the reason, for the exit
//! report. A plain-HTTP connection carries one request (`net::forward`):
//! nothing the client sends after it reaches the origin, and no request's
//! credentials (the secret) reach an origin at all.
//!
//! It must never connect anywhere the rules did not allow, never forward a
//! request that failed to parse, and never let one client hold unbounded
//! memory or threads: heads are capped ([`MAX_HEAD`]), handshakes have a
//! deadline, connections are capped ([`Limit`]).

use super::conn::{accept_loop, relay, Conn, Limit, Listener};
use super::forward;
use super::parse::{self, reply, Framing, ParseError, Request, SocksAddr, Target, MAX_HEAD};
use crate::net::domain::{Host, Rules, Verdict, METADATA_NAMES};
pub use crate::policy::creds::base64;
use std::fmt;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// The user name in the proxy URL; the password is the per-run secret.
pub const PROXY_USER: &str = "dcjail";
/// Most distinct refused destinations remembered for the report.
const MAX_DENIED: usize = 1000;

/// Name resolution, replaceable so tests can map names to any address
/// without touching /etc/hosts. Called once per destination.
pub type Resolver = Arc<dyn Fn(&str, u16) -> io::Result<Vec<SocketAddr>> + Send + Sync>;

/// The system resolver (getaddrinfo through std).
pub fn system_resolver() -> Resolver {
    Arc::new(|name: &str, port: u16| Ok((name, port).to_socket_addrs()?.collect()))
}

/// An upstream HTTP proxy (the parent's own `HTTPS_PROXY`), reached with CONNECT.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Upstream {
    pub host: String,
    pub port: u16,
    /// `Proxy-Authorization` value when the URL carried credentials.
    pub auth: Option<String>,
    /// The parent's `NO_PROXY` entries (lower-case, leading dot removed).
    pub no_proxy: Vec<String>,
}

impl Upstream {
    /// Reads `HTTPS_PROXY`, `https_proxy`, `HTTP_PROXY`, `http_proxy` in that
    /// order from `get` (the parent's environment). `Ok(None)`: none set.
    /// `Err`: set but not an `http://` proxy this proxy can CONNECT through.
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Option<Upstream>, String> {
        let Some((var, url)) = ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"]
            .iter()
            .find_map(|k| get(k).filter(|v| !v.trim().is_empty()).map(|v| (*k, v)))
        else {
            return Ok(None);
        };
        let no_proxy = get("NO_PROXY")
            .or_else(|| get("no_proxy"))
            .unwrap_or_default()
            .split(',')
            .map(|s| {
                s.trim()
                    .trim_start_matches("*.")
                    .trim_start_matches('.')
                    .to_ascii_lowercase()
            })
            .filter(|s| !s.is_empty())
            .collect();
        Upstream::parse(url.trim(), no_proxy)
            .map(Some)
            .map_err(|e| format!("{var}: {e}"))
    }

    pub fn parse(url: &str, no_proxy: Vec<String>) -> Result<Upstream, String> {
        let rest = match url.find("://") {
            Some(i) if url[..i].eq_ignore_ascii_case("http") => &url[i + 3..],
            Some(i) => {
                return Err(format!(
                    "upstream proxy scheme `{}` is not supported (only http://)",
                    &url[..i]
                ))
            }
            None => url,
        };
        let authority = rest.split('/').next().unwrap_or_default();
        let (userinfo, hostport) = match authority.rfind('@') {
            Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
            None => (None, authority),
        };
        let (host, port) = if let Some(r) = hostport.strip_prefix('[') {
            let close = r.find(']').ok_or("unclosed `[`")?;
            let port = r[close + 1..].strip_prefix(':').unwrap_or("");
            (r[..close].to_string(), port)
        } else {
            match hostport.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), p),
                None => (hostport.to_string(), ""),
            }
        };
        if host.is_empty() {
            return Err("no host in the upstream proxy URL".into());
        }
        let port = if port.is_empty() {
            1080
        } else {
            port.parse::<u16>()
                .map_err(|_| format!("bad port `{port}`"))?
        };
        let auth = userinfo.map(|u| {
            let (user, pass) = u.split_once(':').unwrap_or((u, ""));
            let cred = [percent_decode(user), b":".to_vec(), percent_decode(pass)].concat();
            format!("Basic {}", base64(&cred))
        });
        Ok(Upstream {
            host,
            port,
            auth,
            no_proxy,
        })
    }

    fn bypassed(&self, host: &Host) -> bool {
        let h = match host {
            Host::Name(n) => n.clone(),
            Host::Ip(ip) => ip.to_string(),
        };
        self.no_proxy
            .iter()
            .any(|n| n == "*" || h == *n || h.ends_with(&format!(".{n}")))
    }
}

/// Everything the proxy needs for one run.
#[derive(Clone)]
pub struct Config {
    pub rules: Rules,
    /// Required password (user [`PROXY_USER`]); `None` only when the
    /// endpoint is reachable by nothing but the sandbox.
    pub secret: Option<String>,
    pub upstream: Option<Upstream>,
    pub resolver: Resolver,
    pub max_connections: usize,
    /// Deadline for a client to finish its request head or SOCKS handshake.
    pub handshake_timeout: Duration,
    pub connect_timeout: Duration,
    /// Credentials added on the wire to bound destinations; `None` when
    /// the policy binds none (then nothing of TLS is set up).
    pub creds: Option<Arc<crate::net::creds::Injector>>,
}

impl Config {
    pub fn new(rules: Rules, secret: Option<String>) -> Config {
        Config {
            rules,
            secret,
            upstream: None,
            resolver: system_resolver(),
            max_connections: 256,
            handshake_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(10),
            creds: None,
        }
    }
}

/// One refused destination: `host:port` as the client named it, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Denial {
    pub dest: String,
    pub why: String,
}

impl fmt::Display for Denial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.dest, self.why)
    }
}

struct Shared {
    config: Config,
    /// `Basic base64(dcjail:SECRET)`.
    expected_auth: Option<String>,
    denied: Mutex<Vec<Denial>>,
    limit: Limit,
}

/// A running proxy; cheap to clone, shared by its listener threads.
#[derive(Clone)]
pub struct Proxy {
    shared: Arc<Shared>,
}

impl Proxy {
    pub fn new(config: Config) -> Proxy {
        let expected_auth = config
            .secret
            .as_ref()
            .map(|s| format!("Basic {}", base64(format!("{PROXY_USER}:{s}").as_bytes())));
        let limit = Limit::new(config.max_connections);
        Proxy {
            shared: Arc::new(Shared {
                config,
                expected_auth,
                denied: Mutex::new(Vec::new()),
                limit,
            }),
        }
    }

    /// Serves `listener` on a background thread for the life of the process.
    pub fn spawn(&self, listener: Listener) -> io::Result<thread::JoinHandle<()>> {
        let me = self.clone();
        thread::Builder::new()
            .name("dcjail-proxy".into())
            .stack_size(super::conn::THREAD_STACK)
            .spawn(move || me.serve(listener))
    }

    /// Serves `listener` on this thread, forever.
    pub fn serve(&self, listener: Listener) {
        let shared = self.shared.clone();
        let limit = shared.limit.clone();
        accept_loop(listener, limit, move |c| handle(&shared, c))
    }

    /// Every refused destination, once each (the first reason), in order.
    pub fn denied(&self) -> Vec<Denial> {
        self.shared
            .denied
            .lock()
            .map(|d| d.clone())
            .unwrap_or_default()
    }

    /// Connections being served right now.
    pub fn active(&self) -> usize {
        self.shared.limit.active()
    }
}

fn record_denied(shared: &Shared, dest: &str, why: &str) {
    if let Ok(mut d) = shared.denied.lock() {
        if d.len() < MAX_DENIED && !d.iter().any(|x| x.dest == dest) {
            d.push(Denial {
                dest: dest.to_string(),
                why: crate::error::one_line(why),
            });
        }
    }
}

/// Reads more bytes into `buf` before `deadline`; `Ok(0)` at EOF.
fn read_more(c: &mut Box<dyn Conn>, buf: &mut Vec<u8>, deadline: Instant) -> io::Result<usize> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(io::ErrorKind::TimedOut.into());
    }
    c.set_read_timeout_conn(Some(left))?;
    let mut chunk = [0u8; 4096];
    loop {
        match c.read(&mut chunk) {
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                return Ok(n);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

fn handle(shared: &Shared, mut client: Box<dyn Conn>) {
    let deadline = Instant::now() + shared.config.handshake_timeout;
    let _ = client.set_write_timeout_conn(Some(shared.config.handshake_timeout));
    let mut buf = Vec::with_capacity(4096);
    match read_more(&mut client, &mut buf, deadline) {
        Ok(n) if n > 0 => {}
        _ => return,
    }
    if buf[0] == parse::SOCKS_VERSION {
        socks(shared, client, buf, deadline);
    } else if buf[0] == 4 {
        // SOCKS4 carries no credentials and no names: never served.
        let _ = client.write_all(&[0, 0x5b, 0, 0, 0, 0, 0, 0]);
    } else {
        http(shared, client, buf, deadline);
    }
}

// ---- HTTP ----

fn http(shared: &Shared, mut client: Box<dyn Conn>, mut buf: Vec<u8>, deadline: Instant) {
    let Some((req, used)) = read_head(&mut client, &mut buf, deadline) else {
        return;
    };
    if !authorized(shared, &req) {
        return respond(
            &mut client,
            407,
            "Proxy Authentication Required",
            "dcjail proxy: this proxy serves only its own sandbox (missing or wrong credentials)\n",
            "Proxy-Authenticate: Basic realm=\"dcjail\"\r\n",
        );
    }
    // A plain-HTTP request's body must end where the origin will see it
    // end: anything else is refused before any connection is made.
    let Some(framing) = framing_or_refuse(&mut client, &req) else {
        return;
    };
    let port = req.target.port();
    let host = match Host::parse(req.target.host()) {
        Ok(h) => h,
        Err(e) => {
            let shown = crate::error::one_line(req.target.host());
            record_denied(shared, &format!("{shown}:{port}"), &e);
            return respond(
                &mut client,
                403,
                "Forbidden",
                &format!(
                    "dcjail: network access denied: {}\n",
                    crate::error::one_line(&e)
                ),
                "",
            );
        }
    };
    let dest = format!("{host}:{port}");
    let upstream = match open(shared, &host, port) {
        Ok(s) => s,
        Err(OpenError::Denied(why)) => {
            record_denied(shared, &dest, &why);
            return respond(
                &mut client,
                403,
                "Forbidden",
                &format!("dcjail: network access to {dest} denied: {why}\n"),
                "",
            );
        }
        Err(OpenError::Failed(why)) => {
            return respond(
                &mut client,
                502,
                "Bad Gateway",
                &format!("dcjail proxy: cannot reach {dest}: {why}\n"),
                "",
            )
        }
    };
    let _ = client.set_read_timeout_conn(None);
    let _ = client.set_write_timeout_conn(None);
    let rest = buf.split_off(used);
    match &req.target {
        // A tunnel: after the 200 the bytes are the client's own (its TLS);
        // the CONNECT head, with the secret, stays here.
        Target::Authority { .. } => {
            if client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .is_ok()
            {
                pass_on(shared, &host, port, client, rest, upstream);
            }
        }
        // One request, checked above; nothing after it is forwarded.
        Target::Absolute { .. } => {
            // TRACE would answer with the request, credential and all.
            let trace = ["TRACE", "TRACK"]
                .iter()
                .any(|m| req.method.eq_ignore_ascii_case(m));
            let inject = shared
                .config
                .creds
                .as_ref()
                .filter(|_| !trace)
                .map(|c| c.headers_for(&host, port, false))
                .unwrap_or_default();
            forward::one_request(client, upstream, &req, framing, rest, &inject, |c, why| {
                respond(
                    c,
                    502,
                    "Bad Gateway",
                    &format!("dcjail proxy: {dest}: {}\n", crate::error::one_line(why)),
                    "",
                )
            })
        }
    }
}

/// The credentials for `host:port`, when the policy binds any there.
fn bound<'a>(
    shared: &'a Shared,
    host: &Host,
    port: u16,
) -> Option<&'a crate::net::creds::Injector> {
    shared
        .config
        .creds
        .as_deref()
        .filter(|c| c.binds(host, port))
}

/// A request's body framing; `None` once a body the proxy will not forward
/// (one the origin could read to another end) has been answered 400 or 501.
fn framing_or_refuse(client: &mut Box<dyn Conn>, req: &Request) -> Option<Framing> {
    match &req.target {
        Target::Authority { .. } => Some(Framing::Empty),
        Target::Absolute { .. } => match parse::request_framing(req) {
            Ok(f) => Some(f),
            Err(refused) => {
                let reason = if refused.code == 501 {
                    "Not Implemented"
                } else {
                    "Bad Request"
                };
                respond(
                    client,
                    refused.code,
                    reason,
                    &format!("dcjail proxy: {}\n", refused.why),
                    "",
                );
                None
            }
        },
    }
}

/// Reads until the request head parses; a head too large or malformed is
/// answered here (431, 400), and then, as at the client's end, `None`.
fn read_head(
    client: &mut Box<dyn Conn>,
    buf: &mut Vec<u8>,
    deadline: Instant,
) -> Option<(Request, usize)> {
    // Parse only once the head can be complete, so a client trickling
    // bytes costs a scan of what is new, not of the whole buffer each time.
    let mut scanned: usize = 0;
    loop {
        let from = scanned.saturating_sub(3);
        let fresh = &buf[from..];
        let decisive = fresh.windows(4).any(|w| w == b"\r\n\r\n") || fresh.contains(&0);
        scanned = buf.len();
        let parsed = if decisive || buf.len() >= MAX_HEAD {
            parse::parse_request(buf)
        } else {
            Ok(None)
        };
        match parsed {
            Ok(Some(r)) => return Some(r),
            Ok(None) => match read_more(client, buf, deadline) {
                Ok(n) if n > 0 => {}
                _ => return None,
            },
            Err(ParseError::TooLarge) => {
                respond(
                    client,
                    431,
                    "Request Header Fields Too Large",
                    "dcjail proxy: request head too large\n",
                    "",
                );
                return None;
            }
            Err(ParseError::Malformed(why)) => {
                respond(
                    client,
                    400,
                    "Bad Request",
                    &format!("dcjail proxy: {why}\n"),
                    "",
                );
                return None;
            }
        }
    }
}

fn authorized(shared: &Shared, req: &Request) -> bool {
    let Some(expected) = &shared.expected_auth else {
        return true;
    };
    let Some(got) = req.header("proxy-authorization") else {
        return false;
    };
    let got = String::from_utf8_lossy(got);
    let Some((scheme, token)) = got.trim().split_once(' ') else {
        return false;
    };
    let Some((_, want)) = expected.split_once(' ') else {
        return false;
    };
    scheme.eq_ignore_ascii_case("basic") && ct_eq(token.trim().as_bytes(), want.as_bytes())
}

fn respond(client: &mut Box<dyn Conn>, code: u16, reason: &str, body: &str, extra: &str) {
    let head = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\nX-Dcjail: {}\r\n{extra}\r\n",
        body.len(),
        if code == 403 { "network-denied" } else { "proxy" }
    );
    let _ = client.write_all(head.as_bytes());
    let _ = client.write_all(body.as_bytes());
    let _ = client.flush();
    client.shutdown_conn(Shutdown::Write);
    forward::drain(client);
}

// ---- SOCKS5 ----

fn socks(shared: &Shared, mut client: Box<dyn Conn>, mut buf: Vec<u8>, deadline: Instant) {
    let socks_fail = |c: &mut Box<dyn Conn>, code: u8| {
        let _ = c.write_all(&[5, code, 0, 1, 0, 0, 0, 0, 0, 0]);
    };
    // Greeting.
    let (methods, used) =
        match read_until(&mut client, &mut buf, deadline, parse::parse_socks_greeting) {
            Some(x) => x,
            None => return,
        };
    buf.drain(..used);
    let need_auth = shared.expected_auth.is_some();
    let method = if need_auth {
        parse::METHOD_USER_PASS
    } else {
        parse::METHOD_NO_AUTH
    };
    if !methods.contains(&method) {
        let _ = client.write_all(&[5, parse::METHOD_NONE_ACCEPTABLE]);
        return;
    }
    if client.write_all(&[5, method]).is_err() {
        return;
    }
    if need_auth {
        let ((user, pass), used) =
            match read_until(&mut client, &mut buf, deadline, parse::parse_socks_userpass) {
                Some(x) => x,
                None => return,
            };
        buf.drain(..used);
        let ok = user == PROXY_USER.as_bytes()
            && shared
                .config
                .secret
                .as_ref()
                .is_some_and(|s| ct_eq(&pass, s.as_bytes()));
        if !ok {
            let _ = client.write_all(&[1, 1]);
            return;
        }
        if client.write_all(&[1, 0]).is_err() {
            return;
        }
    }
    let (req, used) = match read_until(&mut client, &mut buf, deadline, parse::parse_socks_request)
    {
        Some(x) => x,
        None => return socks_fail(&mut client, reply::GENERAL_FAILURE),
    };
    buf.drain(..used);
    if req.command != 1 {
        return socks_fail(&mut client, reply::COMMAND_NOT_SUPPORTED);
    }
    let port = req.port;
    let host = match &req.addr {
        SocksAddr::V4(ip) => Ok(Host::Ip(IpAddr::V4(*ip))),
        SocksAddr::V6(ip) => Ok(Host::Ip(crate::net::domain::canonical_ip(IpAddr::V6(*ip)))),
        SocksAddr::Name(n) => match std::str::from_utf8(n) {
            Ok(s) => Host::parse(s),
            Err(_) => Err("host name is not UTF-8".to_string()),
        },
    };
    let host = match host {
        Ok(h) => h,
        Err(e) => {
            let shown = match &req.addr {
                SocksAddr::Name(n) => crate::error::one_line(&String::from_utf8_lossy(n)),
                _ => String::new(),
            };
            record_denied(shared, &format!("{shown}:{port}"), &e);
            return socks_fail(&mut client, reply::NOT_ALLOWED);
        }
    };
    let dest = format!("{host}:{port}");
    let upstream = match open(shared, &host, port) {
        Ok(s) => s,
        Err(OpenError::Denied(why)) => {
            record_denied(shared, &dest, &why);
            return socks_fail(&mut client, reply::NOT_ALLOWED);
        }
        Err(OpenError::Failed(_)) => {
            return socks_fail(&mut client, reply::HOST_UNREACHABLE);
        }
    };
    let _ = client.set_read_timeout_conn(None);
    let _ = client.set_write_timeout_conn(None);
    if client
        .write_all(&[5, reply::SUCCEEDED, 0, 1, 0, 0, 0, 0, 0, 0])
        .is_err()
    {
        return;
    }
    pass_on(shared, &host, port, client, buf, upstream);
}

/// An open tunnel (CONNECT or SOCKS5) to `host:port`: relayed as it is,
/// or, when a credential is bound there, ended here so the proxy adds it
/// on its own TLS connection to the origin. `pending`: what the client
/// sent after its request.
fn pass_on(
    shared: &Shared,
    host: &Host,
    port: u16,
    client: Box<dyn Conn>,
    pending: Vec<u8>,
    mut upstream: Box<dyn Conn>,
) {
    if let (Some(inj), Host::Name(name)) = (bound(shared, host, port), host) {
        let deadline = Instant::now() + shared.config.handshake_timeout;
        return crate::net::creds::terminate::serve(
            inj, name, port, client, pending, upstream, deadline,
        );
    }
    if !pending.is_empty() && upstream.write_all(&pending).is_err() {
        return;
    }
    relay(client, upstream);
}

type Parser<T> = fn(&[u8]) -> Result<Option<(T, usize)>, ParseError>;

fn read_until<T>(
    c: &mut Box<dyn Conn>,
    buf: &mut Vec<u8>,
    deadline: Instant,
    parser: Parser<T>,
) -> Option<(T, usize)> {
    loop {
        match parser(buf) {
            Ok(Some(x)) => return Some(x),
            Ok(None) if buf.len() < 1024 => match read_more(c, buf, deadline) {
                Ok(n) if n > 0 => {}
                _ => return None,
            },
            _ => return None,
        }
    }
}

// ---- Opening the destination ----

enum OpenError {
    /// The rules refuse it: 403 / SOCKS "not allowed", recorded.
    Denied(String),
    /// Allowed but unreachable: 502 / SOCKS "host unreachable".
    Failed(String),
}

fn open(shared: &Shared, host: &Host, port: u16) -> Result<Box<dyn Conn>, OpenError> {
    let rules = &shared.config.rules;
    match rules.verdict(host, port) {
        Verdict::Allowed => {}
        Verdict::Denied(rule) => {
            return Err(OpenError::Denied(format!(
                "matches sandbox.network.deny_domains rule `{rule}`"
            )))
        }
        Verdict::NotAllowed => {
            return Err(OpenError::Denied(
                "not in sandbox.network.allow_domains".to_string(),
            ))
        }
    }
    let upstream = shared
        .config
        .upstream
        .as_ref()
        .filter(|u| !u.bypassed(host));
    let metadata_name = matches!(host, Host::Name(n) if METADATA_NAMES.contains(&n.as_str()));
    let addrs: Vec<SocketAddr> = match host {
        Host::Ip(ip) => vec![SocketAddr::new(*ip, port)],
        Host::Name(n) => match (shared.config.resolver)(n, port) {
            Ok(a) => a,
            // Its address must be checked against an IP rule: unknown is no.
            Err(_) if metadata_name => Vec::new(),
            // Behind an upstream proxy the name may resolve only there.
            Err(_) if upstream.is_some() => Vec::new(),
            Err(e) => return Err(OpenError::Failed(format!("cannot resolve: {e}"))),
        },
    };
    // Every address of the answer must pass: connecting to the first
    // that works would let a name mix a public address with a private one.
    for a in &addrs {
        rules
            .check_address(host, port, a.ip())
            .map_err(OpenError::Denied)?;
    }
    if metadata_name && addrs.is_empty() {
        return Err(OpenError::Denied("a cloud metadata name".to_string()));
    }
    let timeout = shared.config.connect_timeout;
    if let Some(up) = upstream {
        return connect_via(up, host, port, timeout).map_err(OpenError::Failed);
    }
    let mut last = String::from("no address");
    for a in addrs {
        match TcpStream::connect_timeout(&a, timeout) {
            Ok(s) => {
                let _ = s.set_nodelay(true);
                return Ok(Box::new(s));
            }
            Err(e) => last = e.to_string(),
        }
    }
    Err(OpenError::Failed(last))
}

/// A tunnel through the upstream proxy: `CONNECT host:port`, 2xx expected.
fn connect_via(
    up: &Upstream,
    host: &Host,
    port: u16,
    timeout: Duration,
) -> Result<Box<dyn Conn>, String> {
    let addrs: Vec<SocketAddr> = (up.host.as_str(), up.port)
        .to_socket_addrs()
        .map_err(|e| format!("upstream proxy {}: {e}", up.host))?
        .collect();
    let mut stream = None;
    let mut last = String::from("upstream proxy has no address");
    for a in addrs {
        match TcpStream::connect_timeout(&a, timeout) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = format!("upstream proxy: {e}"),
        }
    }
    let mut s = stream.ok_or(last)?;
    let _ = s.set_nodelay(true);
    let mut req = format!("CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n");
    if let Some(a) = &up.auth {
        req.push_str(&format!("Proxy-Authorization: {a}\r\n"));
    }
    req.push_str("\r\n");
    s.set_read_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    s.write_all(req.as_bytes()).map_err(|e| e.to_string())?;
    // Byte by byte so nothing of the tunnelled stream is swallowed.
    let mut head = Vec::with_capacity(256);
    let mut b = [0u8; 1];
    loop {
        match s.read(&mut b) {
            Ok(1) => head.push(b[0]),
            Ok(_) => return Err("upstream proxy closed the connection".into()),
            Err(e) => return Err(format!("upstream proxy: {e}")),
        }
        match parse::parse_response_status(&head) {
            Ok(None) if head.len() < MAX_HEAD => continue,
            Ok(Some((code, _))) if (200..300).contains(&code) => break,
            Ok(Some((code, _))) => return Err(format!("upstream proxy answered {code}")),
            _ => return Err("upstream proxy sent a malformed reply".into()),
        }
    }
    s.set_read_timeout(None).map_err(|e| e.to_string())?;
    Ok(Box::new(s))
}

// ---- small helpers ----

/// Equality whose time does not depend on where the inputs differ.
fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn percent_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let hex = |c: u8| (c as char).to_digit(16);
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (i, o) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(i.as_bytes()), o);
        }
    }

    #[test]
    fn upstream_is_read_from_the_parents_proxy_variables() {
        let env = |k: &str| match k {
            "HTTPS_PROXY" => Some("http://us%40r:p%3Ass@proxy.corp:3128/".to_string()),
            "NO_PROXY" => Some("localhost, .internal.corp,*.svc".to_string()),
            _ => None,
        };
        let up = Upstream::from_env(env).unwrap().unwrap();
        assert_eq!(up.host, "proxy.corp");
        assert_eq!(up.port, 3128);
        assert_eq!(
            up.auth.as_deref(),
            Some(format!("Basic {}", base64(b"us@r:p:ss")).as_str())
        );
        assert!(up.bypassed(&Host::parse("localhost").unwrap()));
        assert!(up.bypassed(&Host::parse("a.internal.corp").unwrap()));
        assert!(up.bypassed(&Host::parse("x.svc").unwrap()));
        assert!(!up.bypassed(&Host::parse("example.com").unwrap()));
        assert_eq!(Upstream::from_env(|_| None), Ok(None));
        assert!(
            Upstream::from_env(|k| (k == "http_proxy").then(|| "socks5://x:1".to_string()))
                .is_err()
        );
        let up = Upstream::from_env(|k| (k == "http_proxy").then(|| "10.0.0.1:8080".to_string()))
            .unwrap()
            .unwrap();
        assert_eq!(
            (up.host.as_str(), up.port, up.auth),
            ("10.0.0.1", 8080, None)
        );
    }

    #[test]
    fn percent_decode_handles_truncated_escapes() {
        assert_eq!(percent_decode("a%41b"), b"aAb");
        assert_eq!(percent_decode("a%4"), b"a%4");
        assert_eq!(percent_decode("%"), b"%");
        assert_eq!(percent_decode("%zz"), b"%zz");
    }
}
