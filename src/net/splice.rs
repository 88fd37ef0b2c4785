//! One direction of the relay moved inside the kernel: splice(2) from the
//! source socket into a pipe and from the pipe into the destination socket,
//! so the bytes are never copied into (or out of) dcjail's memory. Owns no
//! policy and no shutdown decisions: it reports how the direction ended and
//! the caller ([`super::conn`]) half-closes or tears down as it does for a
//! plain copy.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Pipe capacity a bulk transfer grows its pipe to: measured on loopback,
/// a 64 KiB pipe costs about a quarter more CPU per byte than this, and a
/// larger one gains nothing. Pipe pages count against a per-user limit
/// (`fs.pipe-user-pages-soft`, shared with every other pipe of the user),
/// so only a direction that fills its pipe grows it; when the kernel says
/// no, the default size still works, with more calls.
const BULK_PIPE: libc::c_int = 256 * 1024;

/// How one direction ended.
pub enum Ended {
    /// The source reached end of file; everything read was delivered.
    Eof,
    /// Reading or writing failed; the connection is broken.
    Failed,
    /// splice(2) cannot serve these descriptors. Nothing was lost: `pending`
    /// holds bytes already taken from the source but not yet delivered, for
    /// the caller to write before it continues by copying.
    Unsupported { pending: Vec<u8> },
}

struct Pipe {
    r: OwnedFd,
    w: OwnedFd,
    /// Its capacity in bytes, what one splice call asks for.
    size: usize,
}

impl Pipe {
    fn new() -> io::Result<Pipe> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: pipe2 writes two descriptors into a valid array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both descriptors were just created and are owned here.
        let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let mut p = Pipe { r, w, size: 0 };
        p.size = p.capacity();
        Ok(p)
    }

    fn capacity(&self) -> usize {
        // SAFETY: fcntl on a descriptor we own.
        let n = unsafe { libc::fcntl(self.w.as_raw_fd(), libc::F_GETPIPE_SZ) };
        usize::try_from(n).unwrap_or(0).max(4096)
    }

    /// Asks for [`BULK_PIPE`] once; keeps what it has when refused.
    fn grow(&mut self) {
        // SAFETY: fcntl on a descriptor we own; failure changes nothing.
        unsafe { libc::fcntl(self.w.as_raw_fd(), libc::F_SETPIPE_SZ, BULK_PIPE) };
        self.size = self.capacity();
    }
}

fn splice(from: RawFd, to: RawFd, len: usize) -> io::Result<usize> {
    loop {
        // SAFETY: plain descriptors, no offsets (both ends are sockets or pipes).
        let n = unsafe {
            libc::splice(
                from,
                std::ptr::null_mut(),
                to,
                std::ptr::null_mut(),
                len,
                libc::SPLICE_F_MOVE,
            )
        };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// The errors that mean "splice does not do this pair", not "the connection
/// broke".
fn unsupported(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::ENOSYS))
}

/// Moves bytes from `from` to `to` until end of file or an error.
pub fn pump(from: RawFd, to: RawFd) -> Ended {
    let Ok(mut pipe) = Pipe::new() else {
        return Ended::Unsupported {
            pending: Vec::new(),
        };
    };
    let mut grown = false;
    loop {
        let got = match splice(from, pipe.w.as_raw_fd(), pipe.size) {
            Ok(0) => return Ended::Eof,
            Ok(n) => n,
            Err(e) if unsupported(&e) => {
                return Ended::Unsupported {
                    pending: Vec::new(),
                }
            }
            Err(_) => return Ended::Failed,
        };
        if got >= pipe.size && !grown {
            grown = true;
            pipe.grow();
        }
        let mut left = got;
        while left > 0 {
            match splice(pipe.r.as_raw_fd(), to, left) {
                Ok(0) => return Ended::Failed,
                Ok(n) => left -= n,
                Err(e) if unsupported(&e) => return drain(&pipe, left),
                Err(_) => return Ended::Failed,
            }
        }
    }
}

/// Reads back what is still in the pipe, for the caller to deliver.
fn drain(pipe: &Pipe, mut left: usize) -> Ended {
    let mut pending = vec![0u8; left];
    let mut at = 0;
    while left > 0 {
        // SAFETY: reading into the unfilled tail of a buffer we own.
        let n = unsafe { libc::read(pipe.r.as_raw_fd(), pending[at..].as_mut_ptr().cast(), left) };
        match n {
            n if n > 0 => {
                at += n as usize;
                left -= n as usize;
            }
            _ if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => {}
            _ => return Ended::Failed,
        }
    }
    Ended::Unsupported { pending }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;

    #[test]
    fn pumps_until_eof_and_delivers_everything() {
        let (mut a, b) = UnixStream::pair().unwrap();
        let (c, mut d) = UnixStream::pair().unwrap();
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        let d2 = data.clone();
        let w = std::thread::spawn(move || {
            a.write_all(&d2).unwrap();
        });
        let p = std::thread::spawn(move || {
            let r = pump(b.as_raw_fd(), c.as_raw_fd());
            drop(c);
            matches!(r, Ended::Eof)
        });
        let mut got = Vec::new();
        d.read_to_end(&mut got).unwrap();
        w.join().unwrap();
        assert!(p.join().unwrap());
        assert!(got == data);
    }

    /// splice(2) refuses to write to an O_APPEND file: the bytes already
    /// taken from the source come back for the copying fallback.
    #[test]
    fn a_destination_splice_cannot_serve_gives_the_taken_bytes_back() {
        // SAFETY: a fresh memfd, owned below.
        let fd = unsafe { libc::memfd_create(c"dcjail-splice-test".as_ptr(), libc::MFD_CLOEXEC) };
        assert!(fd >= 0);
        // SAFETY: the memfd just made, owned here only.
        let _mem = unsafe { OwnedFd::from_raw_fd(fd) };
        let append = std::fs::OpenOptions::new()
            .append(true)
            .open(format!("/proc/self/fd/{fd}"))
            .unwrap();
        let (mut a, b) = UnixStream::pair().unwrap();
        a.write_all(b"taken, not lost").unwrap();
        match pump(b.as_raw_fd(), append.as_raw_fd()) {
            Ended::Unsupported { pending } => assert_eq!(pending, b"taken, not lost"),
            _ => panic!("expected the fallback"),
        }
    }

    #[test]
    fn a_broken_destination_fails() {
        let (mut a, b) = UnixStream::pair().unwrap();
        let (c, d) = UnixStream::pair().unwrap();
        drop(d);
        a.write_all(b"nobody reads this").unwrap();
        assert!(matches!(pump(b.as_raw_fd(), c.as_raw_fd()), Ended::Failed));
    }
}
