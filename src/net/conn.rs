//! Byte streams the proxy and the bridge move data between: TCP and
//! unix-domain sockets behind one trait, listeners and endpoints of either
//! kind, and the bidirectional relay. Owns no policy: it never decides
//! whether a connection may be made, only how bytes flow once it was.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

/// Relay buffer per direction where bytes are copied through user space
/// (no splice(2): another OS, or descriptors it cannot serve).
const RELAY_BUF: usize = 256 * 1024;
/// Stack of relay and handler threads: they keep their buffers on the heap.
pub const THREAD_STACK: usize = 128 * 1024;

/// A connected byte stream.
pub trait Conn: Read + Write + AsRawFd + Send + 'static {
    fn try_clone_conn(&self) -> io::Result<Box<dyn Conn>>;
    fn shutdown_conn(&self, how: Shutdown);
    fn set_read_timeout_conn(&self, t: Option<Duration>) -> io::Result<()>;
    fn set_write_timeout_conn(&self, t: Option<Duration>) -> io::Result<()>;
}

impl Conn for TcpStream {
    fn try_clone_conn(&self) -> io::Result<Box<dyn Conn>> {
        Ok(Box::new(self.try_clone()?))
    }
    fn shutdown_conn(&self, how: Shutdown) {
        let _ = self.shutdown(how);
    }
    fn set_read_timeout_conn(&self, t: Option<Duration>) -> io::Result<()> {
        self.set_read_timeout(t)
    }
    fn set_write_timeout_conn(&self, t: Option<Duration>) -> io::Result<()> {
        self.set_write_timeout(t)
    }
}

impl Conn for UnixStream {
    fn try_clone_conn(&self) -> io::Result<Box<dyn Conn>> {
        Ok(Box::new(self.try_clone()?))
    }
    fn shutdown_conn(&self, how: Shutdown) {
        let _ = self.shutdown(how);
    }
    fn set_read_timeout_conn(&self, t: Option<Duration>) -> io::Result<()> {
        self.set_read_timeout(t)
    }
    fn set_write_timeout_conn(&self, t: Option<Duration>) -> io::Result<()> {
        self.set_write_timeout(t)
    }
}

/// A listening socket of either kind.
pub enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener),
}

impl Listener {
    pub fn accept(&self) -> io::Result<Box<dyn Conn>> {
        match self {
            Listener::Tcp(l) => {
                let (s, _) = l.accept()?;
                let _ = s.set_nodelay(true);
                Ok(Box::new(s))
            }
            Listener::Unix(l) => {
                let (s, _) = l.accept()?;
                Ok(Box::new(s))
            }
        }
    }
}

/// Where a bridge forwards to.
#[derive(Clone, Debug)]
pub enum Endpoint {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

impl Endpoint {
    pub fn connect(&self) -> io::Result<Box<dyn Conn>> {
        match self {
            Endpoint::Tcp(a) => {
                let s = TcpStream::connect_timeout(a, Duration::from_secs(10))?;
                let _ = s.set_nodelay(true);
                Ok(Box::new(s))
            }
            Endpoint::Unix(p) => Ok(Box::new(UnixStream::connect(p)?)),
        }
    }
}

/// Copies both directions until both ends are done. Each direction
/// half-closes its destination at EOF so request/response protocols finish;
/// an error on either side tears both down so the other thread unblocks.
pub fn relay(a: Box<dyn Conn>, b: Box<dyn Conn>) {
    let (Ok(a2), Ok(b2)) = (a.try_clone_conn(), b.try_clone_conn()) else {
        a.shutdown_conn(Shutdown::Both);
        b.shutdown_conn(Shutdown::Both);
        return;
    };
    let back = thread::Builder::new()
        .name("dcjail-relay".into())
        .stack_size(THREAD_STACK)
        .spawn(move || pump(b2, a2));
    match back {
        Ok(h) => {
            pump(a, b);
            let _ = h.join();
        }
        Err(_) => {
            a.shutdown_conn(Shutdown::Both);
            b.shutdown_conn(Shutdown::Both);
        }
    }
}

/// One direction: in the kernel where it can (Linux, splice through a
/// pipe), by copying otherwise; EOF half-closes `to`, an error tears both
/// down, the same either way.
fn pump(from: Box<dyn Conn>, to: Box<dyn Conn>) {
    #[cfg(target_os = "linux")]
    let Some((from, to)) = spliced(from, to) else {
        return;
    };
    copy(from, to)
}

/// The kernel path; gives the pair back when splice cannot serve it.
#[cfg(target_os = "linux")]
fn spliced(from: Box<dyn Conn>, mut to: Box<dyn Conn>) -> Option<(Box<dyn Conn>, Box<dyn Conn>)> {
    use super::splice::{pump, Ended};
    match pump(from.as_raw_fd(), to.as_raw_fd()) {
        Ended::Eof => to.shutdown_conn(Shutdown::Write),
        Ended::Failed => {
            from.shutdown_conn(Shutdown::Both);
            to.shutdown_conn(Shutdown::Both);
        }
        Ended::Unsupported { pending } => {
            if to.write_all(&pending).is_ok() {
                return Some((from, to));
            }
            from.shutdown_conn(Shutdown::Both);
            to.shutdown_conn(Shutdown::Both);
        }
    }
    None
}

fn copy(mut from: Box<dyn Conn>, mut to: Box<dyn Conn>) {
    let mut buf = vec![0u8; RELAY_BUF];
    loop {
        match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    from.shutdown_conn(Shutdown::Both);
                    to.shutdown_conn(Shutdown::Both);
                    return;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => {
                from.shutdown_conn(Shutdown::Both);
                to.shutdown_conn(Shutdown::Both);
                return;
            }
        }
    }
    to.shutdown_conn(Shutdown::Write);
}

/// Counts live connections so a flood cannot grow threads without bound.
#[derive(Clone, Debug)]
pub struct Limit {
    active: Arc<AtomicUsize>,
    max: usize,
}

/// Held for the life of one connection.
pub struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Limit {
    pub fn new(max: usize) -> Limit {
        Limit {
            active: Arc::new(AtomicUsize::new(0)),
            max,
        }
    }

    /// A slot, or `None` when `max` connections are already live.
    pub fn take(&self) -> Option<Slot> {
        let prev = self.active.fetch_add(1, Ordering::AcqRel);
        if prev >= self.max {
            self.active.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        Some(Slot(self.active.clone()))
    }

    pub fn active(&self) -> usize {
        self.active.load(Ordering::Acquire)
    }
}

/// Accepts forever, running `handle` on a thread per connection while a
/// slot is free; over the limit a connection is closed at once.
pub fn accept_loop<F>(listener: Listener, limit: Limit, handle: F)
where
    F: Fn(Box<dyn Conn>) + Send + Sync + 'static,
{
    let handle = Arc::new(handle);
    loop {
        let conn = match listener.accept() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => {
                // EMFILE and friends: back off instead of spinning.
                thread::sleep(Duration::from_millis(20));
                continue;
            }
        };
        let Some(slot) = limit.take() else {
            conn.shutdown_conn(Shutdown::Both);
            continue;
        };
        let h = handle.clone();
        let spawned = thread::Builder::new()
            .name("dcjail-conn".into())
            .stack_size(THREAD_STACK)
            .spawn(move || {
                let _slot = slot;
                h(conn);
            });
        if spawned.is_err() {
            thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The bridge: every connection accepted on `listener` is forwarded, byte
/// for byte, to `target`. Inside a network namespace it listens on loopback
/// and forwards to the proxy's unix socket outside (or the converse).
pub fn bridge(listener: Listener, target: Endpoint, max: usize) {
    accept_loop(listener, Limit::new(max), move |client| {
        match target.connect() {
            Ok(up) => relay(client, up),
            Err(_) => client.shutdown_conn(Shutdown::Both),
        }
    });
}

/// [`bridge`] on a background thread.
pub fn spawn_bridge(
    listener: Listener,
    target: Endpoint,
    max: usize,
) -> io::Result<thread::JoinHandle<()>> {
    thread::Builder::new()
        .name("dcjail-bridge".into())
        .stack_size(THREAD_STACK)
        .spawn(move || bridge(listener, target, max))
}
