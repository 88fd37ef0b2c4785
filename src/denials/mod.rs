//! The denial report: what the sandbox refused while the command ran, and
//! what would have allowed it. The broker (`backend::broker_observe`)
//! sends raw facts over a pipe (`backend::denial_wire`); dcjail reads them
//! (a thread while the command runs for `--events FD`, else once it is
//! done), judges each against the plan (`classify`), streams it to the
//! events descriptor, and keeps a bounded log (`summary`) for `--report`
//! and the terminal's summary line. `advice` turns a report into the smallest
//! policy change (`dcjail explain --denials`).
//!
//! It owns nothing the sandbox enforces: it only reads what the broker
//! saw. Off (no report, no events, no terminal on stderr) it makes no
//! pipe, no thread and changes nothing in the launch.

pub mod advice;
pub mod classify;
pub mod summary;

use crate::backend::denial_wire as wire;
use crate::plan::Plan;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::thread::JoinHandle;

pub use summary::Log;

/// Whether denials are recorded for this run.
pub fn wanted(report: bool, events: Option<RawFd>) -> bool {
    // SAFETY: isatty only queries the descriptor.
    report || events.is_some() || unsafe { libc::isatty(2) } == 1
}

/// Whether stderr is a terminal (the summary line goes there).
pub fn stderr_is_terminal() -> bool {
    // SAFETY: isatty only queries the descriptor.
    unsafe { libc::isatty(2) == 1 }
}

/// The recording of one run: the pipe the broker writes to, and who
/// reads it.
pub struct Session {
    write: OwnedFd,
    /// Written to tell the reader that the run is over.
    stop: OwnedFd,
    reader: Reader,
}

enum Reader {
    /// `--events`: a thread judges and streams each denial as it comes.
    Thread(JoinHandle<Log>),
    /// Otherwise the pipe (1 MiB, thousands of records) is read once the
    /// command is done: no thread on the launch path.
    AtExit(Box<(Plan, OwnedFd, OwnedFd)>),
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .and_then(|h| std::fs::canonicalize(h).ok())
}

impl Session {
    /// Makes the pipe and, for `--events`, starts the reader. The write end
    /// is inherited by the second stage (it must survive bwrap's exec) and
    /// never reaches the command: the layer closes every descriptor it
    /// does not keep.
    pub fn start(plan: &Plan, events: Option<RawFd>) -> Result<Session, String> {
        let (read, write) = pipe()?;
        let (stop_r, stop) = pipe()?;
        // SAFETY: fcntl on our own descriptors. A larger pipe drops less
        // when many denials come at once; its size is best effort.
        unsafe {
            libc::fcntl(write.as_raw_fd(), libc::F_SETFD, 0);
            #[cfg(target_os = "linux")]
            libc::fcntl(write.as_raw_fd(), libc::F_SETPIPE_SZ, 1 << 20);
        }
        let plan = plan.clone();
        let Some(events) = events else {
            return Ok(Session {
                write,
                stop,
                reader: Reader::AtExit(Box::new((plan, read, stop_r))),
            });
        };
        // The reader gets no signal: dcjail's supervisor takes them all.
        // SAFETY: a full set, applied and restored around the spawn.
        let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
        let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
        unsafe {
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        }
        // Read here, not in the thread: dcjail forks (the landlock watcher)
        // while the thread runs, and a fork taken while it held the
        // environment's lock would leave that lock held in the child.
        let home = home();
        let reader = std::thread::Builder::new()
            .name("dcjail-denials".into())
            .spawn(move || read_loop(&plan, home.as_deref(), &read, Some(events), &stop_r));
        // SAFETY: restoring the mask saved above.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
        let reader = reader.map_err(|e| format!("cannot start the denial reader: {e}"))?;
        Ok(Session {
            write,
            stop,
            reader: Reader::Thread(reader),
        })
    }

    /// The descriptor the broker writes to.
    pub fn fd(&self) -> RawFd {
        self.write.as_raw_fd()
    }

    /// Reads what is left and returns the run's log.
    pub fn finish(self) -> Log {
        // A byte, not the close: a fork of dcjail (the landlock watcher)
        // may still hold this end. The byte first: the reader wakes once.
        // SAFETY: one byte from a valid buffer.
        unsafe { libc::write(self.stop.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
        drop(self.write);
        match self.reader {
            Reader::Thread(t) => t.join().unwrap_or_default(),
            Reader::AtExit(b) => read_loop(&b.0, home().as_deref(), &b.1, None, &b.2),
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn pipe() -> Result<(OwnedFd, OwnedFd), String> {
    Err("denials are recorded on Linux only".into())
}

#[cfg(target_os = "linux")]
fn pipe() -> Result<(OwnedFd, OwnedFd), String> {
    let mut fds = [0i32; 2];
    // SAFETY: an array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
        return Err(format!(
            "cannot make the denial report's pipe: {}",
            std::io::Error::last_os_error()
        ));
    }
    use std::os::fd::FromRawFd;
    // SAFETY: two fresh descriptors, ours.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn read_loop(
    plan: &Plan,
    home: Option<&std::path::Path>,
    read: &OwnedFd,
    events: Option<RawFd>,
    stop: &OwnedFd,
) -> Log {
    let mut log = Log::default();
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 16);
    let mut chunk = vec![0u8; 1 << 16];
    // Once every writer is gone the pipe polls readable for ever (its end):
    // from then on only the stop byte is waited for, or this thread would
    // spin through its time slice while dcjail's own thread, about to write
    // that byte, waits for the CPU.
    let mut open = true;
    loop {
        let mut pfd = [read, stop].map(|f| libc::pollfd {
            fd: f.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        });
        if !open {
            pfd[0].fd = -1;
        }
        // SAFETY: two valid pollfds (a negative fd is skipped).
        unsafe { libc::poll(pfd.as_mut_ptr(), 2, -1) };
        // The run is over: what the broker wrote before is in the pipe.
        let stopping = pfd[1].revents != 0;
        while open {
            // SAFETY: a buffer of chunk.len() bytes.
            let n = unsafe { libc::read(read.as_raw_fd(), chunk.as_mut_ptr().cast(), chunk.len()) };
            if n == 0 {
                open = false;
            }
            if n <= 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n as usize]);
            take_records(&mut buf, plan, home, events, &mut log);
        }
        if stopping {
            return log;
        }
    }
}

fn take_records(
    buf: &mut Vec<u8>,
    plan: &Plan,
    home: Option<&std::path::Path>,
    events: Option<RawFd>,
    log: &mut Log,
) {
    let mut at = 0;
    while let Some(len) = wire::record_len(&buf[at..]) {
        if len < wire::HEADER || buf.len() - at < len {
            if len < wire::HEADER {
                // Not a record: nothing after it can be trusted to align.
                at = buf.len();
            }
            break;
        }
        if let Some(f) = wire::decode(&buf[at..at + len]) {
            log.dropped += u64::from(f.dropped);
            let d = classify::classify(plan, &f, home);
            if let Some(fd) = events {
                let mut line = summary::denial_json(&d, 1, home).to_string();
                line.push('\n');
                write_all(fd, line.as_bytes());
            }
            log.add(d);
        }
        at += len;
    }
    buf.drain(..at);
}

fn write_all(fd: RawFd, mut b: &[u8]) {
    while !b.is_empty() {
        // SAFETY: a buffer of b.len() bytes.
        let n = unsafe { libc::write(fd, b.as_ptr().cast(), b.len()) };
        if n <= 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        b = &b[n as usize..];
    }
}

/// With a terminal on stderr, the one summary line (never on stdout).
pub fn after_run(log: &Log) {
    if stderr_is_terminal() {
        if let Some(line) = log.line(home().as_deref()) {
            eprintln!("{line}");
        }
    }
}

/// The report's `denials` (bounded), with the counts of what is not listed.
pub fn into_report(log: &Log, v: &mut serde_json::Value) {
    v["denials"] = log.json(home().as_deref());
    v["denials_total"] = log.total().into();
    v["denials_unlisted"] = log.unlisted.into();
    v["denials_dropped"] = log.dropped.into();
}

/// Checks an `--events` descriptor: open for writing.
pub fn events_fd(fd: RawFd) -> Result<RawFd, String> {
    // SAFETY: fcntl queries and sets flags of a descriptor number.
    let fl = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if fd < 0 || fl < 0 {
        return Err(format!("--events {fd}: not an open descriptor"));
    }
    if fl & libc::O_ACCMODE == libc::O_RDONLY {
        return Err(format!("--events {fd}: not open for writing"));
    }
    // Nothing else dcjail starts gets it (the layers close it for the
    // command anyway); a standard descriptor stays the command's own.
    if fd > 2 {
        // SAFETY: as above.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    Ok(fd)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread_cpu_ns(t: libc::pthread_t) -> u128 {
        let mut id: libc::clockid_t = 0;
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a live thread's clock, read into a local timespec.
        unsafe {
            assert_eq!(libc::pthread_getcpuclockid(t, &mut id), 0);
            assert_eq!(libc::clock_gettime(id, &mut ts), 0);
        }
        ts.tv_sec as u128 * 1_000_000_000 + ts.tv_nsec as u128
    }

    #[test]
    fn the_reader_sleeps_once_every_writer_is_gone_until_the_stop_byte() {
        use std::os::unix::thread::JoinHandleExt;
        let (read, write) = pipe().unwrap();
        let (stop_r, stop) = pipe().unwrap();
        // Every writer gone, the stop byte not yet written: the moment at
        // the end of a run, made long here.
        drop(write);
        let facts = crate::plan::Facts {
            cwd: std::path::PathBuf::from("/"),
            home: None,
            tmpdir: None,
            exe: None,
        };
        let policy = crate::policy::Policy::default();
        let plan = crate::plan::build(&policy, vec!["true".into()], &facts).unwrap();
        let t = std::thread::spawn(move || read_loop(&plan, None, &read, None, &stop_r));
        std::thread::sleep(std::time::Duration::from_millis(300));
        let used = thread_cpu_ns(t.as_pthread_t());
        // Spinning on the pipe's end would take most of the 300 ms.
        assert!(
            used < 30_000_000,
            "the reader used {used} ns of CPU while waiting"
        );
        // SAFETY: one byte from a valid buffer.
        unsafe { libc::write(stop.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
        let log = t.join().unwrap();
        assert_eq!(log.total(), 0);
    }
}
