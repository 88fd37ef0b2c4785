//! The denial report: what the sandbox refused while the command ran, and
//! what would have allowed it. The broker (`inside::broker_observe`)
//! sends raw facts over a pipe (`inside::denial_wire`); dcjail reads them
//! (its supervisor polls the pipe while the command runs for `--events FD`,
//! else once it is done), judges each against the plan (`classify`), streams it to the
//! events descriptor, and keeps a bounded log (`summary`) for `--report`
//! and the terminal's summary line. `advice` turns a report into the smallest
//! policy change (`dcjail explain --denials`).
//!
//! It owns nothing the sandbox enforces: it only reads what the broker
//! saw. It starts no thread. Off (no report, no events, no terminal on
//! stderr) it makes no pipe and changes nothing in the launch.

pub mod advice;
pub mod classify;
pub mod narrow;
pub mod network;
pub mod summary;

use crate::inside::denial_wire as wire;
use crate::plan::Plan;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::PathBuf;

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

/// The recording of one run: the pipe the broker writes to, read on
/// dcjail's own thread (no thread is started): while the command runs when
/// `--events` streams the records (the supervisor polls the pipe beside its
/// signals), and once it is done for the report and the summary line. The
/// records are judged against the run's plan, which the caller passes in.
pub struct Session {
    write: OwnedFd,
    read: OwnedFd,
    home: Option<PathBuf>,
    events: Option<RawFd>,
    buf: Vec<u8>,
    log: Log,
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .and_then(|h| std::fs::canonicalize(h).ok())
}

impl Session {
    /// Makes the pipe. The write end is inherited by the second stage (it
    /// must survive bwrap's exec) and never reaches the command: the layer
    /// closes every descriptor it does not keep.
    pub fn start(events: Option<RawFd>) -> Result<Session, String> {
        let (read, write) = pipe()?;
        // SAFETY: fcntl on our own descriptors. A larger pipe drops less
        // when many denials come at once; its size is best effort.
        unsafe {
            libc::fcntl(write.as_raw_fd(), libc::F_SETFD, 0);
            #[cfg(target_os = "linux")]
            libc::fcntl(write.as_raw_fd(), libc::F_SETPIPE_SZ, 1 << 20);
        }
        Ok(Session {
            write,
            read,
            home: events.and_then(|_| home()),
            events,
            buf: Vec::new(),
            log: Log::default(),
        })
    }

    /// The descriptor the broker writes to.
    pub fn fd(&self) -> RawFd {
        self.write.as_raw_fd()
    }

    /// The descriptor to poll while the command runs: only when the
    /// records are streamed (`--events`); otherwise they wait in the pipe
    /// (1 MiB, thousands of records) until the command is done.
    pub fn live_fd(&self) -> Option<RawFd> {
        self.events.map(|_| self.read.as_raw_fd())
    }

    /// Takes what the pipe holds now (it never blocks). False at the pipe's
    /// end, which is then no longer to be polled: an ended pipe is always
    /// readable.
    pub fn pump(&mut self, plan: &Plan) -> bool {
        let mut chunk = [0u8; 1 << 14];
        loop {
            // SAFETY: a buffer of chunk.len() bytes.
            let n = unsafe {
                libc::read(
                    self.read.as_raw_fd(),
                    chunk.as_mut_ptr().cast(),
                    chunk.len(),
                )
            };
            if n == 0 {
                return false;
            }
            if n < 0 {
                match std::io::Error::last_os_error().raw_os_error() {
                    Some(libc::EINTR) => continue,
                    // Nothing more for now; any other error ends the polling.
                    e => return e == Some(libc::EAGAIN),
                }
            }
            self.buf.extend_from_slice(&chunk[..n as usize]);
            take_records(
                &mut self.buf,
                plan,
                self.home.as_deref(),
                self.events,
                &mut self.log,
            );
        }
    }

    /// Reads what is left and returns the run's log. Everything the broker
    /// recorded is in the pipe by now: it writes a record before it answers
    /// the call, and the call returns before the command can exit. (A fork
    /// of dcjail, the landlock watcher, may still hold the write end: the
    /// pipe is drained, not read to its end.)
    pub fn finish(mut self, plan: &Plan) -> Log {
        if self.home.is_none() {
            self.home = home();
        }
        self.pump(plan);
        self.log
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
            if network::not_ours(&f) {
                at += len;
                continue;
            }
            let d = classify::classify(plan, &f, home);
            if let Some(fd) = events {
                // Its names may hold anything: as JSON escapes, so a terminal
                // on the descriptor shows them as they are.
                let mut line =
                    crate::error::json_for_terminal(&summary::denial_json(&d, 1, home).to_string());
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
            eprintln!("{}", crate::error::one_line(&line));
        }
    }
}

/// The report's `denials` (bounded), with the counts of what is not listed.
pub fn into_report(log: &Log, v: &mut serde_json::Value) {
    v["denials"] = log.json(home().as_deref());
    v["denials_total"] = log.total().into();
    v["denials_unlisted"] = log.unlisted.into();
    v["denials_dropped"] = log.dropped.into();
    v["launch_checks"] = log.checks_json(home().as_deref());
    v["launch_checks_total"] = log.checks_total().into();
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

// Denials are recorded on Linux only (the pipe is not made elsewhere).
#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn plan() -> Plan {
        let facts = crate::plan::Facts {
            cwd: std::path::PathBuf::from("/"),
            home: None,
            tmpdir: None,
            exe: None,
            ..Default::default()
        };
        let policy = crate::policy::Policy::default();
        crate::plan::build(&policy, vec!["true".into()], &facts).unwrap()
    }

    fn send(fd: RawFd, named: &[u8]) {
        let f = wire::Fact {
            source: wire::SOURCE_PREDICTED,
            flags: 0,
            nr: libc::SYS_openat as i32,
            errno: libc::EACCES,
            pid: 7,
            arg: (libc::O_WRONLY | libc::O_CREAT) as u64,
            dropped: 0,
            named,
            resolved: named,
            program: b"sh",
        };
        let mut out = [0u8; wire::MAX_RECORD];
        let n = wire::encode(&f, &mut out);
        // SAFETY: n bytes of a valid buffer.
        let wrote = unsafe { libc::write(fd, out.as_ptr().cast(), n) };
        assert_eq!(wrote, n as isize);
    }

    #[test]
    fn records_are_streamed_as_they_come_and_kept_for_the_end() {
        let (events_r, events_w) = pipe().unwrap();
        let plan = plan();
        let mut s = Session::start(Some(events_w.as_raw_fd())).unwrap();
        let live = s.live_fd().unwrap();
        // Nothing yet: the pump returns at once, still to be polled.
        assert!(s.pump(&plan));
        send(s.fd(), b"/etc/one");
        assert!(s.pump(&plan));
        let mut buf = [0u8; 4096];
        // SAFETY: a buffer of 4096 bytes.
        let n = unsafe { libc::read(events_r.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        let line = String::from_utf8_lossy(&buf[..n.max(0) as usize]).to_string();
        assert!(line.contains("/etc/one") && line.ends_with('\n'), "{line}");
        send(s.fd(), b"/etc/two");
        assert_ne!(live, -1);
        let log = s.finish(&plan);
        assert_eq!(log.total(), 2);
    }

    #[test]
    fn without_events_nothing_is_polled_and_the_end_reads_all() {
        let plan = plan();
        let mut s = Session::start(None).unwrap();
        assert_eq!(s.live_fd(), None);
        for i in 0..50 {
            send(s.fd(), format!("/etc/f{i}").as_bytes());
        }
        assert!(s.pump(&plan));
        assert_eq!(s.finish(&plan).total(), 50);
    }

    #[test]
    fn an_ended_pipe_is_said_once_so_it_is_not_polled_for_ever() {
        let plan = plan();
        let mut s = Session::start(None).unwrap();
        // The only writer gone (what a lost broker and dcjail's own drop
        // would leave).
        drop(std::mem::replace(&mut s.write, pipe().unwrap().1));
        assert!(!s.pump(&plan), "the pipe's end must stop the polling");
    }
}
