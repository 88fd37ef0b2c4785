//! Where one HTTP message ends: the framing of a request body (refused
//! where the proxy and an origin could read it differently), of a response
//! body, the response head passed back with `Connection: close`, and chunk
//! sizes. The proxy forwards one request per client connection by these,
//! and nothing after it. Pure.

use super::parse::{
    parse_header, parse_response_status, strip_cr, trim, ParseError, Request, MAX_HEADERS,
};

/// How a message body is delimited (RFC 9112 §6.3). The proxy forwards a
/// plain-HTTP request's body by this and nothing after it, so whatever the
/// client sends next never reaches the origin unchecked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// No body.
    Empty,
    /// Exactly this many bytes.
    Length(u64),
    /// `Transfer-Encoding: chunked`: chunks up to the zero-size one.
    Chunked,
    /// Until the sender closes (responses only).
    UntilClose,
}

/// A request body this proxy will not forward: the status to answer with
/// (400 or 501) and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BodyRefused {
    pub code: u16,
    pub why: &'static str,
}

/// Every value of the headers called `name`, each comma-separated list item
/// trimmed.
fn header_values<'a>(
    headers: &'a [(String, Vec<u8>)],
    name: &'a str,
) -> impl Iterator<Item = &'a [u8]> + 'a {
    headers
        .iter()
        .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
        .flat_map(|(_, v)| v.split(|b| *b == b','))
        .map(trim)
}

/// One `Content-Length`: present and equal everywhere, or an error.
fn content_length(headers: &[(String, Vec<u8>)]) -> Result<Option<u64>, &'static str> {
    let mut len = None;
    for v in header_values(headers, "content-length") {
        if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
            return Err("bad Content-Length");
        }
        let n = std::str::from_utf8(v)
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
            .ok_or("bad Content-Length")?;
        if len.is_some_and(|l| l != n) {
            return Err("conflicting Content-Length headers");
        }
        len = Some(n);
    }
    Ok(len)
}

/// The request body's framing. Refused, before anything is forwarded: a
/// `Transfer-Encoding` other than exactly `chunked` (501), one beside a
/// `Content-Length` or on HTTP/1.0, and a bad or conflicting
/// `Content-Length` (400) — each a way for the proxy and the origin to see
/// a different end of the request.
pub fn request_framing(req: &Request) -> Result<Framing, BodyRefused> {
    let bad = |why| BodyRefused { code: 400, why };
    let codings: Vec<&[u8]> = header_values(&req.headers, "transfer-encoding").collect();
    let length = content_length(&req.headers).map_err(bad)?;
    if codings.is_empty() {
        return Ok(match length {
            None | Some(0) => Framing::Empty,
            Some(n) => Framing::Length(n),
        });
    }
    if length.is_some() {
        return Err(bad("both Transfer-Encoding and Content-Length"));
    }
    if req.version == "HTTP/1.0" {
        return Err(bad("Transfer-Encoding in an HTTP/1.0 request"));
    }
    if codings.len() == 1 && codings[0].eq_ignore_ascii_case(b"chunked") {
        return Ok(Framing::Chunked);
    }
    Err(BodyRefused {
        code: 501,
        why: "only `Transfer-Encoding: chunked` request bodies are forwarded",
    })
}

/// An origin's response head.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    pub code: u16,
    /// The status line as sent, without its CRLF.
    pub status_line: Vec<u8>,
    pub headers: Vec<(String, Vec<u8>)>,
}

/// Parses a response head. `Ok(None)`: incomplete.
pub fn parse_response(buf: &[u8]) -> Result<Option<(Response, usize)>, ParseError> {
    let Some((code, used)) = parse_response_status(buf)? else {
        return Ok(None);
    };
    let head = &buf[..used - 3];
    let mut lines = head.split(|b| *b == b'\n');
    let status_line = strip_cr(lines.next().unwrap_or_default())?.to_vec();
    let mut headers = Vec::new();
    for line in lines {
        if headers.len() >= MAX_HEADERS {
            return Err(ParseError::TooLarge);
        }
        headers.push(parse_header(strip_cr(line)?)?);
    }
    Ok(Some((
        Response {
            code,
            status_line,
            headers,
        },
        used,
    )))
}

/// The response body's framing (RFC 9112 §6.3); `head_request`: it answers
/// a HEAD, so it has no body whatever its headers say.
pub fn response_framing(resp: &Response, head_request: bool) -> Result<Framing, ParseError> {
    if head_request || (100..200).contains(&resp.code) || resp.code == 204 || resp.code == 304 {
        return Ok(Framing::Empty);
    }
    if let Some(last) = header_values(&resp.headers, "transfer-encoding").last() {
        return Ok(if last.eq_ignore_ascii_case(b"chunked") {
            Framing::Chunked
        } else {
            Framing::UntilClose
        });
    }
    match content_length(&resp.headers).map_err(ParseError::Malformed)? {
        Some(n) => Ok(Framing::Length(n)),
        None => Ok(Framing::UntilClose),
    }
}

/// The response head passed to the client: the origin's, with the
/// connection's own headers replaced by `Connection: close` — the proxy
/// serves one request per client connection — and a `Content-Length` beside
/// chunked framing dropped.
pub fn client_head(resp: &Response, framing: Framing) -> Vec<u8> {
    let named: Vec<String> = header_values(&resp.headers, "connection")
        .map(|v| String::from_utf8_lossy(v).to_ascii_lowercase())
        .collect();
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(&resp.status_line);
    out.extend_from_slice(b"\r\n");
    for (n, v) in &resp.headers {
        let lower = n.to_ascii_lowercase();
        let drop = matches!(
            lower.as_str(),
            "connection" | "keep-alive" | "proxy-connection"
        ) || named.contains(&lower)
            || (framing == Framing::Chunked && lower == "content-length");
        if drop {
            continue;
        }
        out.extend_from_slice(n.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(v);
        out.extend_from_slice(b"\r\n");
    }
    // An interim (1xx) response says nothing about the connection.
    if !(100..200).contains(&resp.code) {
        out.extend_from_slice(b"Connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// Longest chunk-size line (size and extensions) accepted.
pub const MAX_CHUNK_LINE: usize = 4096;

/// A chunk-size line without its CRLF: hex size, then optional
/// `;extension`s of visible characters.
pub fn parse_chunk_size(line: &[u8]) -> Result<u64, ParseError> {
    let bad = ParseError::Malformed("bad chunk size line");
    if line.len() > MAX_CHUNK_LINE {
        return Err(ParseError::TooLarge);
    }
    let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    if digits == 0 || digits > 16 {
        return Err(bad);
    }
    let rest = &line[digits..];
    let ext_ok = rest
        .iter()
        .all(|b| b.is_ascii_graphic() || *b == b' ' || *b == b'\t');
    if !ext_ok || !(rest.is_empty() || trim(rest).first() == Some(&b';')) {
        return Err(bad);
    }
    let text = std::str::from_utf8(&line[..digits]).map_err(|_| bad.clone())?;
    u64::from_str_radix(text, 16).map_err(|_| bad)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::parse::parse_request;

    fn req(s: &str) -> Result<Option<(Request, usize)>, ParseError> {
        parse_request(s.as_bytes())
    }

    #[test]
    fn request_bodies_are_framed_or_refused_before_forwarding() {
        let f = |s: &str| request_framing(&req(s).unwrap().unwrap().0);
        assert_eq!(f("GET http://x/ HTTP/1.1\r\n\r\n"), Ok(Framing::Empty));
        assert_eq!(
            f("POST http://x/ HTTP/1.1\r\nContent-Length: 12\r\n\r\n"),
            Ok(Framing::Length(12))
        );
        assert_eq!(
            f("POST http://x/ HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n"),
            Ok(Framing::Length(3))
        );
        assert_eq!(
            f("POST http://x/ HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n"),
            Ok(Framing::Chunked)
        );
        for (s, code) in [
            ("POST http://x/ HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", 400),
            ("POST http://x/ HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400),
            ("POST http://x/ HTTP/1.1\r\nContent-Length: 1e3\r\n\r\n", 400),
            ("POST http://x/ HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", 400),
            ("POST http://x/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", 400),
            ("POST http://x/ HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
            ("POST http://x/ HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501),
            ("POST http://x/ HTTP/1.1\r\nTransfer-Encoding: xchunked\r\n\r\n", 501),
        ] {
            assert_eq!(f(s).map_err(|e| e.code), Err(code), "{s}");
        }
    }

    #[test]
    fn responses_are_framed_and_passed_on_with_connection_close() {
        let r = |s: &str| parse_response(s.as_bytes()).unwrap().unwrap();
        let (resp, n) = r("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: timeout=5\r\nETag: \"a\"\r\n\r\nhello");
        assert_eq!(n, 113, "the head ends before the body `hello`");
        assert_eq!(response_framing(&resp, false), Ok(Framing::Length(5)));
        assert_eq!(response_framing(&resp, true), Ok(Framing::Empty));
        assert_eq!(
            String::from_utf8(client_head(&resp, Framing::Length(5))).unwrap(),
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nETag: \"a\"\r\nConnection: close\r\n\r\n"
        );
        let (resp, _) =
            r("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n");
        assert_eq!(response_framing(&resp, false), Ok(Framing::Chunked));
        assert_eq!(
            String::from_utf8(client_head(&resp, Framing::Chunked)).unwrap(),
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        );
        let (resp, _) = r("HTTP/1.0 200 OK\r\n\r\n");
        assert_eq!(response_framing(&resp, false), Ok(Framing::UntilClose));
        for code in ["204 No Content", "304 Not Modified", "100 Continue"] {
            let (resp, _) = r(&format!("HTTP/1.1 {code}\r\nContent-Length: 9\r\n\r\n"));
            assert_eq!(response_framing(&resp, false), Ok(Framing::Empty));
        }
        let (resp, _) = r("HTTP/1.1 100 Continue\r\n\r\n");
        assert_eq!(
            client_head(&resp, Framing::Empty),
            b"HTTP/1.1 100 Continue\r\n\r\n"
        );
        let (resp, _) = r("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n");
        assert!(response_framing(&resp, false).is_err());
        assert_eq!(parse_response(b"HTTP/1.1 200 OK\r\nX: 1\r\n"), Ok(None));
        assert!(parse_response(b"HTTP/1.1 200 OK\r\nX 1\r\n\r\n").is_err());
    }

    #[test]
    fn chunk_size_lines_parse_strictly() {
        assert_eq!(parse_chunk_size(b"1a"), Ok(26));
        assert_eq!(parse_chunk_size(b"0"), Ok(0));
        assert_eq!(parse_chunk_size(b"10;name=value"), Ok(16));
        assert_eq!(parse_chunk_size(b"10 ;x"), Ok(16));
        for bad in [
            &b""[..],
            b"x",
            b"-1",
            b"10 junk",
            b"1\r",
            b"11111111111111111",
        ] {
            assert!(parse_chunk_size(bad).is_err(), "{bad:?}");
        }
    }
}
