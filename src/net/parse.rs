//! Wire formats the proxy reads from the sandboxed command: the HTTP/1.x
//! request head (CONNECT and absolute-URI forms) and the SOCKS5 greeting,
//! username/password sub-negotiation and request. Pure functions over a byte
//! buffer: they say "need more bytes", "here is the message and how many
//! bytes it took", or "malformed" — never panic, never allocate beyond the
//! input's size, never do I/O. These are the fuzz targets.

/// Largest request head (request line + headers) the proxy accepts.
pub const MAX_HEAD: usize = 64 * 1024;
/// Most header lines in one request head.
pub const MAX_HEADERS: usize = 128;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// The head is larger than [`MAX_HEAD`] or has too many headers.
    TooLarge,
    /// Not a request this proxy understands; the text says why.
    Malformed(&'static str),
}

/// Where a request goes: `host` exactly as the client wrote it (brackets of
/// an IPv6 literal removed); the caller normalizes it with `domain::Host`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// `CONNECT host:port`.
    Authority { host: String, port: u16 },
    /// `GET http://host[:port]/path`: forwarded in origin form.
    Absolute {
        host: String,
        port: u16,
        path: String,
    },
}

impl Target {
    pub fn host(&self) -> &str {
        match self {
            Target::Authority { host, .. } | Target::Absolute { host, .. } => host,
        }
    }
    pub fn port(&self) -> u16 {
        match self {
            Target::Authority { port, .. } | Target::Absolute { port, .. } => *port,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    pub target: Target,
    /// `HTTP/1.0` or `HTTP/1.1`.
    pub version: String,
    /// Names as sent; values as raw bytes without surrounding whitespace.
    pub headers: Vec<(String, Vec<u8>)>,
}

impl Request {
    /// The first header of that name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }
}

/// Parses one request head. `Ok(None)`: incomplete, read more (unless the
/// buffer already holds [`MAX_HEAD`] bytes, which is `TooLarge`).
/// `Ok(Some((req, n)))`: the head took the first `n` bytes; the rest is body.
pub fn parse_request(buf: &[u8]) -> Result<Option<(Request, usize)>, ParseError> {
    let end = match find(buf, b"\r\n\r\n") {
        Some(i) => i,
        None => {
            if buf.len() >= MAX_HEAD {
                return Err(ParseError::TooLarge);
            }
            // A head cannot contain a bare LF or NUL: fail early, not at 64 KiB.
            if buf.contains(&0) {
                return Err(ParseError::Malformed("NUL byte in the request head"));
            }
            return Ok(None);
        }
    };
    if end + 4 > MAX_HEAD {
        return Err(ParseError::TooLarge);
    }
    // Up to and including the CR of the last header line: every line then
    // ends in CR, and a bare LF anywhere shows up as a line without one.
    let head = &buf[..end + 1];
    let mut lines = head.split(|b| *b == b'\n');
    let first = lines.next().unwrap_or_default();
    let first = strip_cr(first)?;
    let (method, target, version) = parse_request_line(first)?;
    let mut headers = Vec::new();
    for line in lines {
        let line = strip_cr(line)?;
        if headers.len() >= MAX_HEADERS {
            return Err(ParseError::TooLarge);
        }
        headers.push(parse_header(line)?);
    }
    Ok(Some((
        Request {
            method,
            target,
            version,
            headers,
        },
        end + 4,
    )))
}

pub(crate) fn strip_cr(line: &[u8]) -> Result<&[u8], ParseError> {
    let line = line
        .strip_suffix(b"\r")
        .ok_or(ParseError::Malformed("line not ended by CRLF"))?;
    if line.iter().any(|b| *b == b'\r' || *b == 0) {
        return Err(ParseError::Malformed("CR or NUL inside a line"));
    }
    Ok(line)
}

fn parse_request_line(line: &[u8]) -> Result<(String, Target, String), ParseError> {
    let text = std::str::from_utf8(line)
        .map_err(|_| ParseError::Malformed("request line is not ASCII"))?;
    let mut parts = text.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(ParseError::Malformed(
            "request line is not `METHOD TARGET VERSION`",
        ));
    };
    if method.is_empty() || !method.bytes().all(is_tchar) {
        return Err(ParseError::Malformed("bad method"));
    }
    if version != "HTTP/1.1" && version != "HTTP/1.0" {
        return Err(ParseError::Malformed(
            "only HTTP/1.0 and HTTP/1.1 are spoken",
        ));
    }
    if !target.bytes().all(|b| b.is_ascii_graphic()) || target.is_empty() {
        return Err(ParseError::Malformed("bad request target"));
    }
    let target = if method == "CONNECT" {
        let (host, port) = split_authority(target)?;
        Target::Authority {
            host: host.to_string(),
            port: port.ok_or(ParseError::Malformed("CONNECT target needs a port"))?,
        }
    } else {
        parse_absolute(target)?
    };
    Ok((method.to_string(), target, version.to_string()))
}

fn parse_absolute(target: &str) -> Result<Target, ParseError> {
    let Some(colon) = target.find("://") else {
        return Err(ParseError::Malformed(
            "a proxy request needs an absolute URI (http://host/path) or CONNECT",
        ));
    };
    if !target[..colon].eq_ignore_ascii_case("http") {
        return Err(ParseError::Malformed(
            "only http:// URIs are forwarded; use CONNECT for https",
        ));
    }
    let rest = &target[colon + 3..];
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let mut path = rest[end..].to_string();
    if let Some(i) = path.find('#') {
        path.truncate(i);
    }
    if !path.starts_with('/') {
        path.insert(0, '/');
    }
    if authority.contains('@') {
        // `http://allowed.com@evil.com/`: refused rather than risk reading it
        // differently than some client does.
        return Err(ParseError::Malformed("userinfo in a proxied URI"));
    }
    let (host, port) = split_authority(authority)?;
    Ok(Target::Absolute {
        host: host.to_string(),
        port: port.unwrap_or(80),
        path,
    })
}

/// `host`, `host:port`, `[v6]`, `[v6]:port`; brackets removed from the host.
fn split_authority(a: &str) -> Result<(&str, Option<u16>), ParseError> {
    if let Some(rest) = a.strip_prefix('[') {
        let close = rest
            .find(']')
            .ok_or(ParseError::Malformed("unclosed `[` in authority"))?;
        let host = &rest[..close];
        let after = &rest[close + 1..];
        if after.is_empty() {
            return Ok((host, None));
        }
        let p = after
            .strip_prefix(':')
            .ok_or(ParseError::Malformed("junk after `]` in authority"))?;
        return Ok((host, Some(parse_port(p)?)));
    }
    match a.rfind(':') {
        None => Ok((a, None)),
        Some(i) => {
            if a[..i].contains(':') {
                return Err(ParseError::Malformed("IPv6 address without brackets"));
            }
            Ok((&a[..i], Some(parse_port(&a[i + 1..])?)))
        }
    }
}

fn parse_port(p: &str) -> Result<u16, ParseError> {
    if p.is_empty() || p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ParseError::Malformed("bad port"));
    }
    match p.parse::<u16>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(ParseError::Malformed("bad port")),
    }
}

pub(crate) fn parse_header(line: &[u8]) -> Result<(String, Vec<u8>), ParseError> {
    if line.first().is_some_and(|b| *b == b' ' || *b == b'\t') {
        return Err(ParseError::Malformed("folded header line"));
    }
    let colon = line
        .iter()
        .position(|b| *b == b':')
        .ok_or(ParseError::Malformed("header line without `:`"))?;
    let name = &line[..colon];
    if name.is_empty() || !name.iter().all(|b| is_tchar(*b)) {
        return Err(ParseError::Malformed("bad header name"));
    }
    let value = trim(&line[colon + 1..]);
    let name =
        String::from_utf8(name.to_vec()).map_err(|_| ParseError::Malformed("bad header name"))?;
    Ok((name, value.to_vec()))
}

pub(crate) fn trim(v: &[u8]) -> &[u8] {
    let start = v
        .iter()
        .position(|b| *b != b' ' && *b != b'\t')
        .unwrap_or(v.len());
    let end = v
        .iter()
        .rposition(|b| *b != b' ' && *b != b'\t')
        .map_or(start, |i| i + 1);
    &v[start..end.max(start)]
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Hop-by-hop headers never forwarded to the origin (RFC 9110 §7.6.1),
/// plus the proxy's own credentials.
pub const HOP_BY_HOP: &[&str] = &[
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authorization",
    "proxy-authenticate",
    "te",
    "trailer",
    "upgrade",
    "host",
];

/// The head sent to the origin for an absolute-URI request: origin-form
/// target, `Host` from the URI, hop-by-hop headers and any header the
/// `Connection` header names dropped, `Connection: close` (one request per
/// tunnel, so the destination cannot change mid-connection). `inject`:
/// headers of a bound credential, replacing any the client sent by those
/// names.
pub fn origin_head(req: &Request, inject: &[(String, Vec<u8>)]) -> Vec<u8> {
    let Target::Absolute { host, port, path } = &req.target else {
        return Vec::new();
    };
    let named: Vec<String> = req
        .headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("connection"))
        .flat_map(|(_, v)| {
            String::from_utf8_lossy(v)
                .split(',')
                .map(|s| s.trim().to_ascii_lowercase())
                .collect::<Vec<_>>()
        })
        .collect();
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(format!("{} {} {}\r\n", req.method, path, req.version).as_bytes());
    let host_v = if host.contains(':') {
        format!("[{host}]")
    } else {
        host.clone()
    };
    if *port == 80 {
        out.extend_from_slice(format!("Host: {host_v}\r\n").as_bytes());
    } else {
        out.extend_from_slice(format!("Host: {host_v}:{port}\r\n").as_bytes());
    }
    for (n, v) in &req.headers {
        let lower = n.to_ascii_lowercase();
        if HOP_BY_HOP.contains(&lower.as_str())
            || named.contains(&lower)
            || inject.iter().any(|(i, _)| i.eq_ignore_ascii_case(n))
        {
            continue;
        }
        out.extend_from_slice(n.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(v);
        out.extend_from_slice(b"\r\n");
    }
    for (n, v) in inject {
        out.extend_from_slice(n.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(v);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    out
}

/// Parses an upstream proxy's reply head to a CONNECT: its status code and
/// the head's length. `Ok(None)`: incomplete.
pub fn parse_response_status(buf: &[u8]) -> Result<Option<(u16, usize)>, ParseError> {
    let Some(end) = find(buf, b"\r\n\r\n") else {
        if buf.len() >= MAX_HEAD {
            return Err(ParseError::TooLarge);
        }
        return Ok(None);
    };
    let line_end = find(buf, b"\r\n").unwrap_or(end);
    let line = std::str::from_utf8(&buf[..line_end])
        .map_err(|_| ParseError::Malformed("status line is not ASCII"))?;
    let mut parts = line.splitn(3, ' ');
    let version = parts.next().unwrap_or_default();
    if !version.starts_with("HTTP/1.") {
        return Err(ParseError::Malformed("not an HTTP/1 status line"));
    }
    let code = parts
        .next()
        .and_then(|c| {
            if c.len() == 3 {
                c.parse::<u16>().ok()
            } else {
                None
            }
        })
        .ok_or(ParseError::Malformed("bad status code"))?;
    Ok(Some((code, end + 4)))
}

pub use super::framing::*;

// ---- SOCKS5 (RFC 1928, RFC 1929) ----

pub const SOCKS_VERSION: u8 = 5;
pub const METHOD_NO_AUTH: u8 = 0x00;
pub const METHOD_USER_PASS: u8 = 0x02;
pub const METHOD_NONE_ACCEPTABLE: u8 = 0xff;

/// The client's greeting: the authentication methods it offers.
pub fn parse_socks_greeting(buf: &[u8]) -> Result<Option<(Vec<u8>, usize)>, ParseError> {
    let Some(&ver) = buf.first() else {
        return Ok(None);
    };
    if ver != SOCKS_VERSION {
        return Err(ParseError::Malformed("not SOCKS version 5"));
    }
    let Some(&n) = buf.get(1) else {
        return Ok(None);
    };
    let n = n as usize;
    if n == 0 {
        return Err(ParseError::Malformed("SOCKS greeting offers no method"));
    }
    match buf.get(2..2 + n) {
        Some(m) => Ok(Some((m.to_vec(), 2 + n))),
        None => Ok(None),
    }
}

/// RFC 1929 username and password, as sent.
pub type Credentials = (Vec<u8>, Vec<u8>);

/// RFC 1929 username/password sub-negotiation.
pub fn parse_socks_userpass(buf: &[u8]) -> Result<Option<(Credentials, usize)>, ParseError> {
    let Some(&ver) = buf.first() else {
        return Ok(None);
    };
    if ver != 1 {
        return Err(ParseError::Malformed("bad username/password version"));
    }
    let Some(&ulen) = buf.get(1) else {
        return Ok(None);
    };
    let ulen = ulen as usize;
    let Some(user) = buf.get(2..2 + ulen) else {
        return Ok(None);
    };
    let Some(&plen) = buf.get(2 + ulen) else {
        return Ok(None);
    };
    let plen = plen as usize;
    let start = 3 + ulen;
    match buf.get(start..start + plen) {
        Some(pass) => Ok(Some(((user.to_vec(), pass.to_vec()), start + plen))),
        None => Ok(None),
    }
}

/// The destination of a SOCKS5 request, as its address type said it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SocksAddr {
    V4(std::net::Ipv4Addr),
    V6(std::net::Ipv6Addr),
    /// ATYP 3: bytes as sent (not necessarily UTF-8).
    Name(Vec<u8>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SocksRequest {
    /// 1 CONNECT, 2 BIND, 3 UDP ASSOCIATE: only CONNECT is served.
    pub command: u8,
    pub addr: SocksAddr,
    pub port: u16,
}

/// Reply codes (RFC 1928 §6).
pub mod reply {
    pub const SUCCEEDED: u8 = 0x00;
    pub const GENERAL_FAILURE: u8 = 0x01;
    pub const NOT_ALLOWED: u8 = 0x02;
    pub const HOST_UNREACHABLE: u8 = 0x04;
    pub const CONNECTION_REFUSED: u8 = 0x05;
    pub const COMMAND_NOT_SUPPORTED: u8 = 0x07;
    pub const ADDRESS_TYPE_NOT_SUPPORTED: u8 = 0x08;
}

/// `VER CMD RSV ATYP DST.ADDR DST.PORT`.
pub fn parse_socks_request(buf: &[u8]) -> Result<Option<(SocksRequest, usize)>, ParseError> {
    if buf.len() < 4 {
        if buf.first().is_some_and(|v| *v != SOCKS_VERSION) {
            return Err(ParseError::Malformed("not SOCKS version 5"));
        }
        return Ok(None);
    }
    if buf[0] != SOCKS_VERSION {
        return Err(ParseError::Malformed("not SOCKS version 5"));
    }
    let command = buf[1];
    let (addr, at) = match buf[3] {
        1 => match buf.get(4..8) {
            Some(b) => (
                SocksAddr::V4(std::net::Ipv4Addr::new(b[0], b[1], b[2], b[3])),
                8,
            ),
            None => return Ok(None),
        },
        4 => match buf.get(4..20) {
            Some(b) => {
                let mut a = [0u8; 16];
                a.copy_from_slice(b);
                (SocksAddr::V6(std::net::Ipv6Addr::from(a)), 20)
            }
            None => return Ok(None),
        },
        3 => {
            let Some(&len) = buf.get(4) else {
                return Ok(None);
            };
            let len = len as usize;
            if len == 0 {
                return Err(ParseError::Malformed("empty SOCKS domain name"));
            }
            match buf.get(5..5 + len) {
                Some(b) => (SocksAddr::Name(b.to_vec()), 5 + len),
                None => return Ok(None),
            }
        }
        _ => return Err(ParseError::Malformed("unknown SOCKS address type")),
    };
    match buf.get(at..at + 2) {
        Some(p) => Ok(Some((
            SocksRequest {
                command,
                addr,
                port: u16::from_be_bytes([p[0], p[1]]),
            },
            at + 2,
        ))),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(s: &str) -> Result<Option<(Request, usize)>, ParseError> {
        parse_request(s.as_bytes())
    }

    #[test]
    fn connect_request_parses_authority_and_reports_head_length() {
        let s = "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nProxy-Authorization: Basic eA==\r\n\r\nBODY";
        let (r, n) = req(s).unwrap().unwrap();
        assert_eq!(&s[n..], "BODY");
        assert_eq!(
            r.target,
            Target::Authority {
                host: "example.com".into(),
                port: 443
            }
        );
        assert_eq!(r.header("proxy-authorization"), Some(&b"Basic eA=="[..]));
    }

    #[test]
    fn ipv6_connect_target_keeps_the_address_without_brackets() {
        let (r, _) = req("CONNECT [::1]:8443 HTTP/1.1\r\n\r\n").unwrap().unwrap();
        assert_eq!(r.target.host(), "::1");
        assert_eq!(r.target.port(), 8443);
        assert!(req("CONNECT ::1:8443 HTTP/1.1\r\n\r\n").is_err());
        assert!(req("CONNECT example.com HTTP/1.1\r\n\r\n").is_err());
    }

    #[test]
    fn absolute_uri_is_forwarded_in_origin_form_with_host_rewritten() {
        let s = "GET http://Example.com:8080/a/b?c=d#frag HTTP/1.1\r\nHost: evil.net\r\nProxy-Connection: keep-alive\r\nConnection: X-Secret\r\nX-Secret: 1\r\nProxy-Authorization: Basic eA==\r\nAccept: */*\r\n\r\n";
        let (r, _) = req(s).unwrap().unwrap();
        assert_eq!(
            r.target,
            Target::Absolute {
                host: "Example.com".into(),
                port: 8080,
                path: "/a/b?c=d".into()
            }
        );
        let head = String::from_utf8(origin_head(&r, &[])).unwrap();
        assert_eq!(
            head,
            "GET /a/b?c=d HTTP/1.1\r\nHost: Example.com:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        );
        let (r, _) = req("GET http://x.org HTTP/1.0\r\n\r\n").unwrap().unwrap();
        assert_eq!(r.target.port(), 80);
        assert_eq!(
            String::from_utf8(origin_head(&r, &[])).unwrap(),
            "GET / HTTP/1.0\r\nHost: x.org\r\nConnection: close\r\n\r\n"
        );
    }

    #[test]
    fn incomplete_heads_ask_for_more_and_oversized_ones_are_refused() {
        assert_eq!(req("CONNECT example.com:443 HTTP/1.1\r\n"), Ok(None));
        assert_eq!(req(""), Ok(None));
        let big = format!("GET http://x/ HTTP/1.1\r\nX: {}", "a".repeat(MAX_HEAD));
        assert_eq!(req(&big), Err(ParseError::TooLarge));
        let many = format!(
            "GET http://x/ HTTP/1.1\r\n{}\r\n",
            "A: b\r\n".repeat(MAX_HEADERS + 1)
        );
        assert_eq!(req(&many), Err(ParseError::TooLarge));
    }

    #[test]
    fn malformed_requests_are_refused() {
        for s in [
            "GET /origin-form HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET https://x.org/ HTTP/1.1\r\n\r\n",
            "GET http://allowed.com@evil.com/ HTTP/1.1\r\n\r\n",
            "GET http://x.org/ HTTP/2\r\n\r\n",
            "GET  http://x.org/ HTTP/1.1\r\n\r\n",
            "GET http://x.org/ HTTP/1.1\nX: y\r\n\r\n",
            "GET http://x.org/ HTTP/1.1\r\n folded\r\n\r\n",
            "GET http://x.org/ HTTP/1.1\r\nNoColon\r\n\r\n",
            "GET http://x.org/ HTTP/1.1\r\nBad Name: v\r\n\r\n",
            "GET http://x.org:0/ HTTP/1.1\r\n\r\n",
            "GET http://x.org:99999/ HTTP/1.1\r\n\r\n",
            "GET http://x.org:-1/ HTTP/1.1\r\n\r\n",
            "G\0T http://x.org/ HTTP/1.1\r\n\r\n",
            "GET http://x.org/\r HTTP/1.1\r\n\r\n",
            "CONNECT [::1 HTTP/1.1\r\n\r\n",
        ] {
            assert!(matches!(req(s), Err(ParseError::Malformed(_))), "{s:?}");
        }
        assert!(parse_request(b"GET http://x.org/ HTTP/1.1\r\nX: \xff\r\n\r\n").is_ok());
        assert!(parse_request(b"GET http://\xff/ HTTP/1.1\r\n\r\n").is_err());
    }

    #[test]
    fn arbitrary_prefixes_never_panic() {
        let samples: [&[u8]; 4] = [
            b"CONNECT [::1]:1 HTTP/1.1\r\nA: b\r\n\r\n",
            b"GET http://[::1]:80/x HTTP/1.1\r\n\r\n",
            b"\x05\x02\x00\x02\x01\x06dcjail\x03abc",
            b"\x05\x01\x00\x03\x0bexample.com\x01\xbb",
        ];
        for s in samples {
            for i in 0..=s.len() {
                let _ = parse_request(&s[..i]);
                let _ = parse_socks_greeting(&s[..i]);
                let _ = parse_socks_userpass(&s[..i]);
                let _ = parse_socks_request(&s[..i]);
                let _ = parse_response_status(&s[..i]);
            }
        }
        // A crude byte-flip sweep over every position.
        let base = b"GET http://a.b:1/ HTTP/1.1\r\nH: v\r\n\r\n";
        for i in 0..base.len() {
            for b in [0u8, b'\r', b'\n', b':', b'[', b']', b'@', 0xff, b' '] {
                let mut v = base.to_vec();
                v[i] = b;
                let _ = parse_request(&v);
            }
        }
    }

    #[test]
    fn random_mutations_never_panic() {
        let seeds: [&[u8]; 6] = [
            b"CONNECT example.com:443 HTTP/1.1\r\nProxy-Authorization: Basic eA==\r\n\r\n",
            b"GET http://[::ffff:127.0.0.1]:8080/p?q HTTP/1.0\r\nHost: x\r\nConnection: a, b\r\n\r\n",
            b"\x05\x01\x00\x03\x0bexample.com\x01\xbb",
            b"\x01\x06dcjail\x03abc",
            b"\x05\x01\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x50",
            b"HTTP/1.1 200 OK\r\n\r\n",
        ];
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..20_000 {
            let mut v = seeds[(next() % seeds.len() as u64) as usize].to_vec();
            for _ in 0..(next() % 4 + 1) {
                let at = (next() % (v.len() as u64 + 1)) as usize;
                let byte = (next() & 0xff) as u8;
                match next() % 3 {
                    0 if at < v.len() => v[at] = byte,
                    1 => v.insert(at, byte),
                    _ if at < v.len() => {
                        v.remove(at);
                    }
                    _ => {}
                }
            }
            if let Ok(Some((r, n))) = parse_request(&v) {
                assert!(n <= v.len());
                let _ = origin_head(&r, &[]);
                let _ = crate::net::domain::Host::parse(r.target.host());
            }
            let _ = parse_socks_greeting(&v);
            let _ = parse_socks_userpass(&v);
            let _ = parse_socks_request(&v);
            let _ = parse_response_status(&v);
            let _ = crate::net::domain::Host::parse(&String::from_utf8_lossy(&v));
            let _ = crate::net::domain::DomainRule::parse(&String::from_utf8_lossy(&v));
        }
    }

    #[test]
    fn socks_messages_parse_and_ask_for_more() {
        assert_eq!(parse_socks_greeting(b"\x05"), Ok(None));
        assert_eq!(parse_socks_greeting(b"\x05\x02\x00"), Ok(None));
        assert_eq!(
            parse_socks_greeting(b"\x05\x02\x00\x02"),
            Ok(Some((vec![0, 2], 4)))
        );
        assert!(parse_socks_greeting(b"\x04\x01").is_err());
        assert!(parse_socks_greeting(b"\x05\x00").is_err());
        assert_eq!(
            parse_socks_userpass(b"\x01\x06dcjail\x03abcXX"),
            Ok(Some(((b"dcjail".to_vec(), b"abc".to_vec()), 12)))
        );
        assert_eq!(parse_socks_userpass(b"\x01\x06dcjail\x03ab"), Ok(None));
        assert_eq!(
            parse_socks_request(b"\x05\x01\x00\x03\x0bexample.com\x01\xbb"),
            Ok(Some((
                SocksRequest {
                    command: 1,
                    addr: SocksAddr::Name(b"example.com".to_vec()),
                    port: 443
                },
                18
            )))
        );
        assert_eq!(
            parse_socks_request(b"\x05\x01\x00\x01\x7f\x00\x00\x01\x00\x50")
                .map(|r| r.map(|x| x.0.addr)),
            Ok(Some(SocksAddr::V4("127.0.0.1".parse().unwrap())))
        );
        let mut v6 = vec![5, 1, 0, 4];
        v6.extend_from_slice(&"::1".parse::<std::net::Ipv6Addr>().unwrap().octets());
        v6.extend_from_slice(&[0, 80]);
        assert_eq!(
            parse_socks_request(&v6).map(|r| r.map(|x| (x.0.addr, x.1))),
            Ok(Some((SocksAddr::V6("::1".parse().unwrap()), 22)))
        );
        assert!(parse_socks_request(b"\x05\x01\x00\x09\x00").is_err());
        assert!(parse_socks_request(b"\x05\x01\x00\x03\x00\x00\x50").is_err());
        assert_eq!(
            parse_socks_request(b"\x05\x01\x00\x03\x0bexample"),
            Ok(None)
        );
    }

    #[test]
    fn upstream_status_line_parses() {
        assert_eq!(
            parse_response_status(b"HTTP/1.1 200 Connection established\r\n\r\nxx"),
            Ok(Some((200, 39)))
        );
        assert_eq!(parse_response_status(b"HTTP/1.1 407 Auth\r\n"), Ok(None));
        assert!(parse_response_status(b"SSH-2.0\r\n\r\n").is_err());
    }
}
