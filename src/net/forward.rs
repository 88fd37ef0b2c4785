//! One plain-HTTP request through the proxy (`GET http://host/path`): its
//! head in origin form, exactly its body, the origin's response with
//! `Connection: close` — and nothing else. A client connection carries one
//! request: what the client sends after that request's body (a pipelined
//! request, or a second one on a kept-open connection) is read and thrown
//! away, never forwarded, so no request reaches an origin without its own
//! check, and no request's `Proxy-Authorization` (the run's secret) reaches
//! one at all. Clients see `Connection: close` and open a new connection,
//! through the proxy and its checks, for their next request.

use super::conn::Conn;
use super::parse::{self, Framing, ParseError, Request, MAX_HEAD, MAX_HEADERS};
use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::thread;
use std::time::Duration;

/// Bytes read ahead from one side.
const BUF: usize = 64 * 1024;

/// A connection with the bytes already read from it but not yet used
/// (a proxied socket, or the command's side of a terminated TLS stream).
pub(super) struct Source<R: Read = Box<dyn Conn>> {
    conn: R,
    /// Zeroed once; the bytes read are `buf[pos..len]`.
    buf: Vec<u8>,
    pos: usize,
    len: usize,
}

impl<R: Read> Source<R> {
    pub(super) fn new(conn: R, pending: Vec<u8>) -> Source<R> {
        let len = pending.len();
        let mut buf = pending;
        buf.resize(len + BUF, 0);
        Source {
            conn,
            buf,
            pos: 0,
            len,
        }
    }

    fn unread(&self) -> &[u8] {
        &self.buf[self.pos..self.len]
    }

    /// Reads more (into the buffer's free end, the unread bytes moved to
    /// its front first, never zeroed again); `Ok(false)` at EOF.
    fn fill(&mut self) -> io::Result<bool> {
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.len, 0);
            self.len -= self.pos;
            self.pos = 0;
        }
        if self.buf.len() - self.len < BUF {
            self.buf.resize(self.len + BUF, 0);
        }
        loop {
            match self.conn.read(&mut self.buf[self.len..]) {
                Ok(n) => {
                    self.len += n;
                    return Ok(n > 0);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    pub(super) fn unread_bytes(&self) -> &[u8] {
        self.unread()
    }

    /// Marks `n` unread bytes as used.
    pub(super) fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.len);
    }

    /// Reads more; `Ok(false)` at EOF.
    pub(super) fn more(&mut self) -> io::Result<bool> {
        self.fill()
    }

    /// One line without its CRLF; an error past `max` bytes or at EOF.
    fn line(&mut self, max: usize) -> io::Result<Vec<u8>> {
        loop {
            if let Some(i) = self.unread().windows(2).position(|w| w == b"\r\n") {
                if i > max {
                    break;
                }
                let line = self.unread()[..i].to_vec();
                self.pos += i + 2;
                return Ok(line);
            }
            if self.unread().len() > max + 1 {
                break;
            }
            if !self.fill()? {
                return Err(eof());
            }
        }
        Err(io::Error::new(io::ErrorKind::InvalidData, "line too long"))
    }

    /// Copies exactly `n` bytes to `to`.
    fn copy_exact(&mut self, mut n: u64, to: &mut dyn Write) -> io::Result<()> {
        while n > 0 {
            if self.unread().is_empty() && !self.fill()? {
                return Err(eof());
            }
            let avail = self.unread();
            let take = avail.len().min(usize::try_from(n).unwrap_or(usize::MAX));
            to.write_all(&avail[..take])?;
            self.pos += take;
            n -= take as u64;
        }
        Ok(())
    }

    /// Copies everything up to EOF to `to`.
    pub(super) fn copy_to_eof(&mut self, to: &mut dyn Write) -> io::Result<()> {
        loop {
            if !self.unread().is_empty() {
                to.write_all(self.unread())?;
                self.pos = self.len;
            }
            if !self.fill()? {
                return Ok(());
            }
        }
    }

    /// Reads one response head.
    fn response(&mut self) -> Result<parse::Response, String> {
        loop {
            match parse::parse_response(self.unread()) {
                Ok(Some((r, n))) => {
                    self.pos += n;
                    return Ok(r);
                }
                Ok(None) => match self.fill() {
                    Ok(true) => {}
                    Ok(false) => return Err("the origin closed without a response".into()),
                    Err(e) => return Err(format!("reading the response: {e}")),
                },
                Err(ParseError::TooLarge) => return Err("response head too large".into()),
                Err(ParseError::Malformed(why)) => return Err(format!("bad response: {why}")),
            }
        }
    }
}

fn eof() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "connection closed mid-message",
    )
}

fn invalid(e: ParseError) -> io::Error {
    let why = match e {
        ParseError::TooLarge => "too large",
        ParseError::Malformed(w) => w,
    };
    io::Error::new(io::ErrorKind::InvalidData, why)
}

/// Copies one body, framed by `framing`, from `from` to `to`: exactly its
/// bytes, no more. A chunked body passes chunk by chunk, each size line
/// checked; trailers are dropped.
pub(super) fn body<R: Read>(
    from: &mut Source<R>,
    framing: Framing,
    to: &mut dyn Write,
) -> io::Result<()> {
    match framing {
        Framing::Empty => Ok(()),
        Framing::Length(n) => from.copy_exact(n, to),
        Framing::UntilClose => from.copy_to_eof(to),
        Framing::Chunked => loop {
            let line = from.line(parse::MAX_CHUNK_LINE)?;
            let size = parse::parse_chunk_size(&line).map_err(invalid)?;
            to.write_all(&line)?;
            to.write_all(b"\r\n")?;
            if size == 0 {
                for _ in 0..=MAX_HEADERS {
                    if from.line(MAX_HEAD)?.is_empty() {
                        return to.write_all(b"\r\n");
                    }
                }
                return Err(invalid(ParseError::TooLarge));
            }
            from.copy_exact(size, to)?;
            if !from.line(0)?.is_empty() {
                return Err(invalid(ParseError::Malformed("chunk not ended by CRLF")));
            }
            to.write_all(b"\r\n")?;
        },
    }
}

/// What became of the response.
enum Answered {
    /// Passed on whole.
    Done,
    /// Nothing reached the client yet: the proxy may still answer 502.
    Nothing(String),
    /// Failed part-way: the client sees the connection close early.
    Broken,
}

fn response(upstream: &mut Source, client: &mut Box<dyn Conn>, head_request: bool) -> Answered {
    let mut sent = false;
    // Interim responses (100 Continue, 103) come before the final one.
    for _ in 0..16 {
        let resp = match upstream.response() {
            Ok(r) => r,
            Err(why) if !sent => return Answered::Nothing(why),
            Err(_) => return Answered::Broken,
        };
        let framing = match parse::response_framing(&resp, head_request) {
            Ok(f) => f,
            Err(_) if !sent => return Answered::Nothing("bad Content-Length".into()),
            Err(_) => return Answered::Broken,
        };
        if client
            .write_all(&parse::client_head(&resp, framing))
            .is_err()
        {
            return Answered::Broken;
        }
        sent = true;
        if (100..200).contains(&resp.code) && resp.code != 101 {
            continue;
        }
        if resp.code == 101 {
            // No `Upgrade` was forwarded, so no switch was asked for: what
            // follows is passed on until the origin closes, one way only.
            return match upstream.copy_to_eof(client) {
                Ok(()) => Answered::Done,
                Err(_) => Answered::Broken,
            };
        }
        return match body(upstream, framing, client) {
            Ok(()) => Answered::Done,
            Err(_) => Answered::Broken,
        };
    }
    Answered::Broken
}

/// Forwards `req` (its head already checked, the destination allowed and
/// connected as `upstream`) and its body, then passes the response back and
/// closes both. `pending`: what the client sent after the head.
pub fn one_request(
    mut client: Box<dyn Conn>,
    upstream: Box<dyn Conn>,
    req: &Request,
    framing: Framing,
    pending: Vec<u8>,
    inject: &[(String, Vec<u8>)],
    on_502: impl FnOnce(&mut Box<dyn Conn>, &str),
) {
    let close = |client: &mut Box<dyn Conn>, upstream: &dyn Conn| {
        upstream.shutdown_conn(Shutdown::Both);
        client.shutdown_conn(Shutdown::Write);
        drain(client);
        client.shutdown_conn(Shutdown::Both);
    };
    let (Ok(up_w), Ok(client_r)) = (upstream.try_clone_conn(), client.try_clone_conn()) else {
        return close(&mut client, upstream.as_ref());
    };
    let mut up_w = up_w;
    if up_w.write_all(&parse::origin_head(req, inject)).is_err() {
        on_502(&mut client, "the origin closed the connection");
        return close(&mut client, upstream.as_ref());
    }
    // The body goes up on its own thread while the response comes back, so
    // `Expect: 100-continue` and early answers work.
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let sender = if framing == Framing::Empty {
        None
    } else {
        let spawned = thread::Builder::new()
            .name("dcjail-body".into())
            .stack_size(super::conn::THREAD_STACK)
            .spawn(move || {
                let mut from = Source::new(client_r, pending);
                if body(&mut from, framing, &mut up_w).is_err() {
                    // A broken body must not leave the origin waiting.
                    up_w.shutdown_conn(Shutdown::Both);
                }
                let _ = done_tx.send(());
            });
        match spawned {
            Ok(h) => Some(h),
            Err(_) => return close(&mut client, upstream.as_ref()),
        }
    };
    let up_r = match upstream.try_clone_conn() {
        Ok(c) => c,
        Err(_) => return close(&mut client, upstream.as_ref()),
    };
    let mut from = Source::new(up_r, Vec::new());
    let head_request = req.method == "HEAD";
    if let Answered::Nothing(why) = response(&mut from, &mut client, head_request) {
        on_502(&mut client, &why);
    }
    // An origin may answer before it has read the body: the body still goes
    // up whole before the connections close, unless the client stalls past
    // the grace (closing then ends the body's thread).
    if sender.is_some() {
        let _ = done_rx.recv_timeout(BODY_GRACE);
    }
    close(&mut client, upstream.as_ref());
    if let Some(h) = sender {
        let _ = h.join();
    }
}

/// How long the rest of a request body may take to go up once the
/// response has been passed back.
const BODY_GRACE: Duration = Duration::from_secs(5);

/// Reads and drops what the client still sends, briefly, so closing does
/// not turn into a reset that eats the end of the response.
pub(super) fn drain(client: &mut Box<dyn Conn>) {
    let _ = client.set_read_timeout_conn(Some(Duration::from_millis(200)));
    let mut sink = [0u8; 4096];
    for _ in 0..16 {
        match client.read(&mut sink) {
            Ok(n) if n > 0 => {}
            _ => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixStream;

    /// `input` read through a [`Source`] as a body of `framing`.
    fn framed(input: &[u8], framing: Framing) -> (io::Result<()>, Vec<u8>, Vec<u8>) {
        let (mut a, b) = UnixStream::pair().unwrap();
        a.write_all(input).unwrap();
        a.shutdown(Shutdown::Write).unwrap();
        let mut src = Source::new(Box::new(b), Vec::new());
        let mut out = Vec::new();
        let r = body(&mut src, framing, &mut out);
        let mut rest = src.unread().to_vec();
        let _ = src.conn.read_to_end(&mut rest);
        (r, out, rest)
    }

    #[test]
    fn a_length_body_stops_at_its_length() {
        let (r, out, rest) = framed(
            b"abcdeGET http://evil/ HTTP/1.1\r\n\r\n",
            Framing::Length(5),
        );
        assert!(r.is_ok());
        assert_eq!(out, b"abcde");
        assert!(rest.starts_with(b"GET http://evil/"));
        let (r, _, _) = framed(b"abc", Framing::Length(5));
        assert!(r.is_err());
    }

    #[test]
    fn a_chunked_body_stops_at_its_last_chunk_and_drops_trailers() {
        let (r, out, rest) = framed(
            b"5;x=y\r\nhello\r\n0\r\nX-Trailer: 1\r\n\r\nGET http://evil/ HTTP/1.1\r\n\r\n",
            Framing::Chunked,
        );
        assert!(r.is_ok());
        assert_eq!(out, b"5;x=y\r\nhello\r\n0\r\n\r\n");
        assert!(rest.starts_with(b"GET http://evil/"));
        for bad in [
            &b"5\r\nhelloXX0\r\n\r\n"[..],
            b"zz\r\n",
            b"5\r\nhel",
            b"0\r\n",
        ] {
            assert!(framed(bad, Framing::Chunked).0.is_err(), "{bad:?}");
        }
    }

    #[test]
    fn an_empty_body_takes_nothing() {
        let (r, out, rest) = framed(b"GET http://evil/ HTTP/1.1\r\n\r\n", Framing::Empty);
        assert!(r.is_ok());
        assert!(out.is_empty());
        assert!(rest.starts_with(b"GET"));
    }
}
