//! One HTTPS request to a bound destination: the command's TLS ends here
//! (the run's leaf for that name), the request head is parsed with
//! httparse, checked (its `Host` must be the name the tunnel was opened
//! for), given the bound header, and sent on the proxy's own TLS
//! connection to the origin, verified against the system roots and the
//! binding's CA; the response comes back with `Connection: close`.
//!
//! One request per connection, as on the plain-HTTP path: what the command
//! sends after the first request's body is never forwarded, so every
//! request that carries the secret is one this proxy checked. Redirects are
//! the client's business (the proxy never follows one; the client's next
//! request is a new connection, bound or not by its own name). Refusals
//! are answered over the command's TLS with one line saying why; no
//! message holds a header value.

use super::Injector;
use crate::net::conn::Conn;
use crate::net::forward::{self, Source};
use crate::net::parse::{Framing, HOP_BY_HOP, MAX_HEAD, MAX_HEADERS};
use rustls::{ClientConnection, ServerConnection, StreamOwned};
use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::time::Instant;

/// The command's side: the bytes it sent after CONNECT, then its socket.
struct Prefixed {
    pending: Vec<u8>,
    pos: usize,
    conn: Box<dyn Conn>,
}

impl Read for Prefixed {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos < self.pending.len() {
            let n = out.len().min(self.pending.len() - self.pos);
            out[..n].copy_from_slice(&self.pending[self.pos..self.pos + n]);
            self.pos += n;
            return Ok(n);
        }
        self.conn.read(out)
    }
}

impl Write for Prefixed {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.conn.write(b)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.conn.flush()
    }
}

/// A reader for which a close without TLS `close_notify` is an end.
struct Lax<'a, R: Read>(&'a mut R);

impl<R: Read> Read for Lax<'_, R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        match self.0.read(out) {
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(0),
            other => other,
        }
    }
}

type Client = StreamOwned<ServerConnection, Prefixed>;
type Origin = StreamOwned<ClientConnection, Box<dyn Conn>>;

/// A request head, owned.
struct Head {
    method: String,
    path: String,
    headers: Vec<(String, Vec<u8>)>,
}

impl Head {
    fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }
}

/// Why a request is answered here instead of forwarded.
struct Refused {
    code: u16,
    reason: &'static str,
    why: String,
}

fn refused(code: u16, reason: &'static str, why: impl Into<String>) -> Refused {
    Refused {
        code,
        reason,
        why: why.into(),
    }
}

/// Serves the tunnel the command opened to `host:port` (already allowed,
/// `upstream` connected, the `200` sent); `pending`: bytes after CONNECT.
pub fn serve(
    inj: &Injector,
    host: &str,
    port: u16,
    client: Box<dyn Conn>,
    pending: Vec<u8>,
    upstream: Box<dyn Conn>,
    deadline: Instant,
) {
    let (Some(server_cfg), Some(client_cfg)) = (inj.tls.server(host), inj.tls.client(host)) else {
        return;
    };
    let Ok(conn) = ServerConnection::new(server_cfg) else {
        return;
    };
    let left = deadline.saturating_duration_since(Instant::now());
    let _ = client.set_read_timeout_conn(Some(left.max(std::time::Duration::from_millis(1))));
    let raw = match client.try_clone_conn() {
        Ok(r) => r,
        Err(_) => return,
    };
    let mut tls = StreamOwned::new(
        conn,
        Prefixed {
            pending,
            pos: 0,
            conn: client,
        },
    );
    // The handshake (a client that does not trust the run's CA, or names
    // another server, ends here).
    while tls.conn.is_handshaking() {
        if tls.conn.complete_io(&mut tls.sock).is_err() {
            raw.shutdown_conn(Shutdown::Both);
            return;
        }
    }
    let (head, rest) = match read_head(&mut tls) {
        Ok(h) => h,
        Err(r) => return answer(&mut tls, raw.as_ref(), r),
    };
    let prepared = check(&head, host, port).map(|f| {
        let inject = inj.headers_for(
            &crate::net::domain::Host::Name(host.to_string()),
            port,
            true,
        );
        (f, origin_head(&head, host, port, &inject))
    });
    let (framing, out_head) = match prepared {
        Ok(p) => p,
        Err(r) => return answer(&mut tls, raw.as_ref(), r),
    };
    let _ = raw.set_read_timeout_conn(None);
    let mut origin = match connect(client_cfg, host, upstream) {
        Ok(o) => o,
        Err(why) => {
            return answer(
                &mut tls,
                raw.as_ref(),
                refused(
                    502,
                    "Bad Gateway",
                    format!("dcjail proxy: {host}:{port}: {why}"),
                ),
            )
        }
    };
    exchange(
        &mut tls,
        raw.as_ref(),
        &head,
        rest,
        framing,
        &out_head,
        &mut origin,
        host,
        port,
    );
    origin.sock.shutdown_conn(Shutdown::Both);
}

/// Sends the checked request (head, then exactly its body) on the
/// proxy's TLS to the origin and passes the response back.
#[allow(clippy::too_many_arguments)]
fn exchange(
    tls: &mut Client,
    raw: &dyn Conn,
    head: &Head,
    rest: Vec<u8>,
    framing: Framing,
    out_head: &[u8],
    origin: &mut Origin,
    host: &str,
    port: u16,
) {
    let expects = head
        .all("expect")
        .any(|v| v.eq_ignore_ascii_case(b"100-continue"));
    if expects {
        let _ = tls.write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
        let _ = tls.flush();
    }
    let sent = origin.write_all(out_head).and_then(|_| {
        let mut from = Source::new(&mut *tls, rest);
        forward::body(&mut from, framing, &mut *origin)?;
        origin.flush()
    });
    if sent.is_err() {
        return answer(
            tls,
            raw,
            refused(
                502,
                "Bad Gateway",
                format!("dcjail proxy: {host}:{port}: the request could not be sent"),
            ),
        );
    }
    let head_request = head.method == "HEAD";
    if let Err(Some(why)) = response(origin, tls, head_request) {
        return answer(
            tls,
            raw,
            refused(
                502,
                "Bad Gateway",
                format!("dcjail proxy: {host}:{port}: {why}"),
            ),
        );
    }
    finish(tls, raw);
}

fn finish(tls: &mut Client, raw: &dyn Conn) {
    tls.conn.send_close_notify();
    let _ = tls.flush();
    raw.shutdown_conn(Shutdown::Write);
    let mut raw = match raw.try_clone_conn() {
        Ok(r) => r,
        Err(_) => return,
    };
    forward::drain(&mut raw);
    raw.shutdown_conn(Shutdown::Both);
}

/// Answers `r` to the command over its TLS and closes.
fn answer(tls: &mut Client, raw: &dyn Conn, r: Refused) {
    let body = format!("{}\n", crate::error::one_line(&r.why));
    let head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\nX-Dcjail: proxy\r\n\r\n",
        r.code,
        r.reason,
        body.len()
    );
    let _ = tls.write_all(head.as_bytes());
    let _ = tls.write_all(body.as_bytes());
    finish(tls, raw);
}

/// Reads one request head; returns it and what followed it.
fn read_head(tls: &mut Client) -> Result<(Head, Vec<u8>), Refused> {
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(&buf) {
            Ok(httparse::Status::Complete(n)) => {
                if req.version != Some(1) {
                    return Err(refused(
                        505,
                        "HTTP Version Not Supported",
                        "dcjail proxy: only HTTP/1.1 is served to a bound destination",
                    ));
                }
                let head = Head {
                    method: req.method.unwrap_or_default().to_string(),
                    path: req.path.unwrap_or_default().to_string(),
                    headers: req
                        .headers
                        .iter()
                        .map(|h| (h.name.to_string(), h.value.to_vec()))
                        .collect(),
                };
                return Ok((head, buf[n..].to_vec()));
            }
            Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => {}
            Ok(httparse::Status::Partial) => {
                return Err(refused(
                    431,
                    "Request Header Fields Too Large",
                    "dcjail proxy: request head too large",
                ))
            }
            Err(e) => {
                return Err(refused(
                    400,
                    "Bad Request",
                    format!("dcjail proxy: malformed request: {e}"),
                ))
            }
        }
        match tls.read(&mut chunk) {
            Ok(0) | Err(_) => {
                return Err(refused(
                    400,
                    "Bad Request",
                    "dcjail proxy: the connection ended before a request",
                ))
            }
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// The request's checks: origin-form target, `Host` naming the tunnel's
/// destination, a body whose end the origin will see where the proxy does.
fn check(head: &Head, host: &str, port: u16) -> Result<Framing, Refused> {
    // TRACE answers with the request it got, credential and all.
    if head.method.eq_ignore_ascii_case("TRACE") || head.method.eq_ignore_ascii_case("TRACK") {
        return Err(refused(
            405,
            "Method Not Allowed",
            "dcjail proxy: TRACE would echo the credential back; not forwarded to a bound destination",
        ));
    }
    if head.method == "CONNECT" || !head.path.starts_with('/') {
        return Err(refused(
            400,
            "Bad Request",
            "dcjail proxy: only origin-form requests (`GET /path`) are served on a bound connection",
        ));
    }
    let hosts: Vec<&[u8]> = head.all("host").collect();
    let [value] = hosts.as_slice() else {
        return Err(refused(
            400,
            "Bad Request",
            "dcjail proxy: the request needs exactly one Host header",
        ));
    };
    let shown = String::from_utf8_lossy(value).into_owned();
    if !host_matches(&shown, host, port) {
        return Err(refused(
            421,
            "Misdirected Request",
            format!(
                "dcjail proxy: Host `{}` is not {host}:{port}, the destination this connection was opened for",
                crate::error::one_line(&shown)
            ),
        ));
    }
    request_framing(head)
}

fn host_matches(value: &str, host: &str, port: u16) -> bool {
    let v = value.trim();
    let (name, p) = match v.rsplit_once(':') {
        Some((n, p)) if !n.contains(':') => match p.parse::<u16>() {
            Ok(p) => (n, p),
            Err(_) => return false,
        },
        Some(_) => return false,
        None => (v, 443),
    };
    name.trim_end_matches('.').eq_ignore_ascii_case(host) && p == port
}

fn request_framing(head: &Head) -> Result<Framing, Refused> {
    let te: Vec<&[u8]> = head.all("transfer-encoding").collect();
    let cl: Vec<&[u8]> = head.all("content-length").collect();
    if !te.is_empty() {
        if !cl.is_empty() {
            return Err(refused(
                400,
                "Bad Request",
                "dcjail proxy: both Transfer-Encoding and Content-Length",
            ));
        }
        if te.len() == 1 && te[0].trim_ascii().eq_ignore_ascii_case(b"chunked") {
            return Ok(Framing::Chunked);
        }
        return Err(refused(
            501,
            "Not Implemented",
            "dcjail proxy: only `Transfer-Encoding: chunked` is forwarded",
        ));
    }
    match content_length(&cl) {
        Ok(Some(n)) => Ok(Framing::Length(n)),
        Ok(None) => Ok(Framing::Empty),
        Err(()) => Err(refused(
            400,
            "Bad Request",
            "dcjail proxy: bad Content-Length",
        )),
    }
}

fn content_length(values: &[&[u8]]) -> Result<Option<u64>, ()> {
    let mut found: Option<u64> = None;
    for v in values {
        let v = v.trim_ascii();
        if v.is_empty() || !v.iter().all(u8::is_ascii_digit) || v.len() > 18 {
            return Err(());
        }
        let n: u64 = std::str::from_utf8(v)
            .map_err(|_| ())?
            .parse()
            .map_err(|_| ())?;
        if found.is_some_and(|f| f != n) {
            return Err(());
        }
        found = Some(n);
    }
    Ok(found)
}

/// The head sent upstream: the client's headers less hop-by-hop ones, those
/// its `Connection` names, `Expect` (answered here) and the bound names;
/// then the bound headers, `Host` and `Connection: close`.
fn origin_head(head: &Head, host: &str, port: u16, inject: &[(String, Vec<u8>)]) -> Vec<u8> {
    let named: Vec<String> = head
        .all("connection")
        .flat_map(|v| {
            String::from_utf8_lossy(v)
                .split(',')
                .map(|s| s.trim().to_ascii_lowercase())
                .collect::<Vec<_>>()
        })
        .collect();
    let mut out = Vec::with_capacity(512);
    out.extend_from_slice(format!("{} {} HTTP/1.1\r\n", head.method, head.path).as_bytes());
    if port == 443 {
        out.extend_from_slice(format!("Host: {host}\r\n").as_bytes());
    } else {
        out.extend_from_slice(format!("Host: {host}:{port}\r\n").as_bytes());
    }
    for (n, v) in &head.headers {
        let lower = n.to_ascii_lowercase();
        if HOP_BY_HOP.contains(&lower.as_str())
            || lower == "expect"
            || named.contains(&lower)
            || inject.iter().any(|(i, _)| i.eq_ignore_ascii_case(n))
        {
            continue;
        }
        push_header(&mut out, n, v);
    }
    for (n, v) in inject {
        push_header(&mut out, n, v);
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    out
}

fn push_header(out: &mut Vec<u8>, n: &str, v: &[u8]) {
    out.extend_from_slice(n.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(v);
    out.extend_from_slice(b"\r\n");
}

/// The proxy's TLS to the origin, verified; an unknown certificate is an
/// error naming the reason, never a plaintext fallback.
fn connect(
    cfg: std::sync::Arc<rustls::ClientConfig>,
    host: &str,
    upstream: Box<dyn Conn>,
) -> Result<Origin, String> {
    let name = super::tls::server_name(host)?;
    let conn = ClientConnection::new(cfg, name).map_err(|e| format!("TLS: {e}"))?;
    let _ = upstream.set_read_timeout_conn(Some(std::time::Duration::from_secs(30)));
    let mut s = StreamOwned::new(conn, upstream);
    while s.conn.is_handshaking() {
        s.conn
            .complete_io(&mut s.sock)
            .map_err(|e| format!("TLS to the origin failed: {e}"))?;
    }
    let _ = s.sock.set_read_timeout_conn(None);
    Ok(s)
}

/// Passes the origin's response back; `Err(Some(why))` when nothing was
/// sent yet (the caller answers 502), `Err(None)` when it broke part-way.
fn response(
    origin: &mut Origin,
    tls: &mut Client,
    head_request: bool,
) -> Result<(), Option<String>> {
    let mut lax = Lax(origin);
    let mut from = Source::new(&mut lax, Vec::new());
    let mut sent = false;
    let fail = |sent: bool, why: String| if sent { None } else { Some(why) };
    for _ in 0..16 {
        let (code, out, framing) = loop {
            let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
            let mut resp = httparse::Response::new(&mut headers);
            match resp.parse(from.unread_bytes()) {
                Ok(httparse::Status::Complete(n)) => {
                    let code = resp.code.unwrap_or(0);
                    let framing = response_framing(resp.headers, code, head_request)
                        .map_err(|w| fail(sent, w.to_string()))?;
                    let out = client_head(&resp, framing);
                    from.consume(n);
                    break (code, out, framing);
                }
                Ok(httparse::Status::Partial) if from.unread_bytes().len() < MAX_HEAD => {
                    match from.more() {
                        Ok(true) => {}
                        Ok(false) => {
                            return Err(fail(sent, "the origin closed without a response".into()))
                        }
                        Err(e) => return Err(fail(sent, format!("reading the response: {e}"))),
                    }
                }
                Ok(httparse::Status::Partial) => {
                    return Err(fail(sent, "response head too large".into()))
                }
                Err(e) => return Err(fail(sent, format!("bad response: {e}"))),
            }
        };
        tls.write_all(&out).map_err(|_| None)?;
        sent = true;
        if code == 101 {
            // No `Upgrade` was forwarded: a switch nobody asked for.
            return Err(None);
        }
        if (100..200).contains(&code) {
            continue;
        }
        forward::body(&mut from, framing, tls).map_err(|_| None)?;
        return Ok(());
    }
    Err(None)
}

fn response_framing(
    headers: &[httparse::Header<'_>],
    code: u16,
    head_request: bool,
) -> Result<Framing, &'static str> {
    if head_request || (100..200).contains(&code) || code == 204 || code == 304 {
        return Ok(Framing::Empty);
    }
    let all = |n: &str| -> Vec<&[u8]> {
        headers
            .iter()
            .filter(|h| h.name.eq_ignore_ascii_case(n))
            .map(|h| h.value)
            .collect()
    };
    let te = all("transfer-encoding");
    if let Some(last) = te.last() {
        let chunked = String::from_utf8_lossy(last)
            .rsplit(',')
            .next()
            .is_some_and(|c| c.trim().eq_ignore_ascii_case("chunked"));
        return Ok(if chunked {
            Framing::Chunked
        } else {
            Framing::UntilClose
        });
    }
    match content_length(&all("content-length")) {
        Ok(Some(n)) => Ok(Framing::Length(n)),
        Ok(None) => Ok(Framing::UntilClose),
        Err(()) => Err("bad Content-Length from the origin"),
    }
}

/// The response head the command gets: hop-by-hop headers dropped, the
/// body's framing said once, `Connection: close`.
fn client_head(resp: &httparse::Response<'_, '_>, framing: Framing) -> Vec<u8> {
    let mut out = Vec::with_capacity(512);
    out.extend_from_slice(
        format!(
            "HTTP/1.1 {} {}\r\n",
            resp.code.unwrap_or(0),
            resp.reason.unwrap_or("")
        )
        .as_bytes(),
    );
    for h in resp.headers.iter() {
        let lower = h.name.to_ascii_lowercase();
        if HOP_BY_HOP.contains(&lower.as_str())
            || lower == "content-length"
            || lower == "transfer-encoding"
        {
            continue;
        }
        push_header(&mut out, h.name, h.value);
    }
    match framing {
        Framing::Length(n) => out.extend_from_slice(format!("Content-Length: {n}\r\n").as_bytes()),
        Framing::Chunked => out.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
        Framing::Empty | Framing::UntilClose => {
            // A HEAD or 304 answer keeps the length it describes.
            if let Some(h) = resp
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("content-length"))
            {
                push_header(&mut out, h.name, h.value);
            }
        }
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(lines: &[(&str, &str)]) -> Head {
        Head {
            method: "GET".into(),
            path: "/x".into(),
            headers: lines
                .iter()
                .map(|(n, v)| (n.to_string(), v.as_bytes().to_vec()))
                .collect(),
        }
    }

    #[test]
    fn host_must_name_the_tunnels_destination() {
        assert!(host_matches("api.example.com", "api.example.com", 443));
        assert!(host_matches("API.example.com.:443", "api.example.com", 443));
        assert!(host_matches("localhost:8443", "localhost", 8443));
        assert!(!host_matches("localhost", "localhost", 8443));
        assert!(!host_matches("evil.example", "api.example.com", 443));
        assert!(!host_matches("api.example.com:444", "api.example.com", 443));
        assert!(!host_matches("api.example.com:x", "api.example.com", 443));
        assert!(!host_matches("[::1]:443", "api.example.com", 443));
        let e = check(&head(&[("Host", "evil.example")]), "a.example", 443).unwrap_err();
        assert_eq!(e.code, 421);
        let mut trace = head(&[("Host", "a.example")]);
        trace.method = "TRACE".into();
        assert_eq!(
            check(&trace, "a.example", 443).err().map(|r| r.code),
            Some(405)
        );
        assert!(check(&head(&[]), "a.example", 443).is_err());
        assert!(check(
            &head(&[("Host", "a.example"), ("host", "a.example")]),
            "a.example",
            443
        )
        .is_err());
    }

    #[test]
    fn bodies_are_framed_strictly() {
        let f = |h: &[(&str, &str)]| request_framing(&head(h)).map_err(|r| r.code);
        assert_eq!(f(&[]), Ok(Framing::Empty));
        assert_eq!(f(&[("Content-Length", "5")]), Ok(Framing::Length(5)));
        assert_eq!(f(&[("Transfer-Encoding", "chunked")]), Ok(Framing::Chunked));
        assert_eq!(
            f(&[("Transfer-Encoding", "chunked"), ("Content-Length", "5")]),
            Err(400)
        );
        assert_eq!(f(&[("Transfer-Encoding", "gzip")]), Err(501));
        assert_eq!(
            f(&[("Content-Length", "5"), ("Content-Length", "6")]),
            Err(400)
        );
        assert_eq!(f(&[("Content-Length", "-1")]), Err(400));
    }

    #[test]
    fn the_bound_header_replaces_the_clients_and_hop_by_hop_ones_go() {
        let h = head(&[
            ("Host", "a.example"),
            ("authorization", "Bearer fake"),
            ("Connection", "keep-alive, X-Drop"),
            ("X-Drop", "1"),
            ("Expect", "100-continue"),
            ("Accept", "*/*"),
        ]);
        let out = origin_head(
            &h,
            "a.example",
            443,
            &[("Authorization".into(), b"Bearer real".to_vec())],
        );
        let s = String::from_utf8(out).unwrap();
        assert_eq!(
            s,
            "GET /x HTTP/1.1\r\nHost: a.example\r\nAccept: */*\r\nAuthorization: Bearer real\r\nConnection: close\r\n\r\n"
        );
    }
}
