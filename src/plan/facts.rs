//! Facts: everything read from the calling process that a plan, a backend
//! or `explain` depends on — the working directory, `HOME`, `TMPDIR`, `PATH`,
//! the user ids, what fds 0–2 are, the walk limit and dcjail's own binary.
//! Gathered once, at the edge (`run::load`), so that everything below is a
//! function of its inputs and can be tested with made-up values.
//!
//! Owns: reading those, and nothing else. Must never judge them (the
//! backends decide what a descriptor means for the layer).

use crate::error::{Error, Result};
use crate::policy::{Policy, SandboxMode, Tool};
use std::ffi::OsString;
use std::path::PathBuf;

/// Facts about the calling process the plan is built from; gathered once at
/// the edge so the rest can be tested with made-up values.
#[derive(Clone, Debug, Default)]
pub struct Facts {
    pub cwd: PathBuf,
    pub home: Option<PathBuf>,
    pub tmpdir: Option<PathBuf>,
    /// dcjail's own binary: never writable from inside.
    pub exe: Option<PathBuf>,
    /// `PATH` as dcjail got it (where a trusted bwrap may be found).
    pub path: Option<OsString>,
    /// The real and effective user ids.
    pub uid: u32,
    pub euid: u32,
    /// What fds 0, 1 and 2 held when dcjail started.
    pub stdio: [StdFd; 3],
    /// `DCJAIL_WALK_LIMIT` as set (`walk::limit_of` reads it): kept raw, so
    /// that a bad value refuses only a run that walks, as before.
    pub walk_limit: Option<OsString>,
    /// Where git and the shells look for what they run, as the host's
    /// programs see it: `XDG_CONFIG_HOME`, `GIT_CONFIG_GLOBAL`,
    /// `GIT_CONFIG_SYSTEM` (each `None` when unset or empty).
    pub xdg_config_home: Option<PathBuf>,
    pub git_config_global: Option<PathBuf>,
    pub git_config_system: Option<PathBuf>,
}

/// What a standard descriptor held when dcjail started.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum StdFd {
    /// Closed by the caller (dcjail holds /dev/null there meanwhile; the
    /// command gets it closed again).
    #[default]
    Closed,
    /// A regular file, and whether it is open for writing; when it is not,
    /// its path as `/proc/self/fd` names it (`None` when that cannot be
    /// read, or when it is open for writing: no rule depends on that path,
    /// and a launch does not pay for reading it).
    File {
        path: Option<PathBuf>,
        writing: bool,
    },
    /// A socket: descriptors can arrive over it.
    Socket,
    /// A terminal: its device file under /dev, checked to be that very
    /// device (`None` when none was found).
    Terminal { device: Option<PathBuf> },
    /// Anything else: a pipe, /dev/null, another device.
    Other,
}

/// The variable that bounds the launch-time walks (`walk::LIMIT_ENV`).
pub const WALK_LIMIT_ENV: &str = "DCJAIL_WALK_LIMIT";

/// The standard descriptors' names, by number.
pub const STD_NAMES: [&str; 3] = ["stdin", "stdout", "stderr"];

impl StdFd {
    /// What it is, in a few words, for `explain`.
    pub fn words(&self) -> String {
        match self {
            StdFd::Closed => "closed".into(),
            StdFd::File { writing: true, .. } => "a file open for writing".into(),
            StdFd::File {
                path,
                writing: false,
            } => format!(
                "a file open for reading only ({})",
                path.as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|| "its path could not be read".into())
            ),
            StdFd::Socket => "a socket".into(),
            StdFd::Terminal { device } => format!(
                "a terminal ({})",
                device
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|| "its device was not found".into())
            ),
            StdFd::Other => "a pipe or a device".into(),
        }
    }
}

impl Facts {
    /// `gather`, minus what this policy cannot use: dcjail's own path only
    /// matters when something is writable (it is kept unwritable from
    /// inside), so a read-only or unsandboxed run does not resolve it.
    pub fn gather_for(policy: &Policy) -> Result<Facts> {
        let mut f = Facts::gather_base()?;
        let writable = policy.tool != Tool::Read && policy.sandbox.mode != SandboxMode::ReadOnly;
        if policy.sandbox.enabled && writable {
            f.exe = crate::paths::own_exe();
        }
        Ok(f)
    }

    pub fn gather() -> Result<Facts> {
        let mut f = Facts::gather_base()?;
        f.exe = crate::paths::own_exe();
        Ok(f)
    }

    /// Marks the descriptors the caller left closed (bit N: fd N), which
    /// dcjail's start-up filled with /dev/null (`exec::stdfds`).
    pub fn note_closed(&mut self, mask: u8) {
        for (fd, s) in self.stdio.iter_mut().enumerate() {
            if mask & (1 << fd) != 0 {
                *s = StdFd::Closed;
            }
        }
    }

    fn gather_base() -> Result<Facts> {
        let cwd = std::env::current_dir().map_err(|e| Error::Cwd(crate::policy::io_words(&e)))?;
        let nonempty = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        Ok(Facts {
            cwd,
            home: nonempty("HOME"),
            tmpdir: nonempty("TMPDIR"),
            exe: None,
            path: std::env::var_os("PATH"),
            // SAFETY: getuid and geteuid never fail.
            uid: unsafe { libc::getuid() },
            // SAFETY: as above.
            euid: unsafe { libc::geteuid() },
            stdio: [0, 1, 2].map(std_fd),
            walk_limit: std::env::var_os(WALK_LIMIT_ENV),
            xdg_config_home: nonempty("XDG_CONFIG_HOME"),
            git_config_global: nonempty("GIT_CONFIG_GLOBAL"),
            git_config_system: nonempty("GIT_CONFIG_SYSTEM"),
        })
    }

    /// The host environment the protected-path audit reads, from these
    /// facts (a walk limit that is not a positive number counts as unset
    /// here; the glob walk refuses it where it reads it).
    pub fn host_env(&self) -> crate::paths::HostEnv {
        crate::paths::HostEnv {
            path: self.path.clone(),
            xdg_config_home: self.xdg_config_home.clone(),
            git_config_global: self.git_config_global.clone(),
            git_config_system: self.git_config_system.clone(),
            walk_limit: self
                .walk_limit
                .as_ref()
                .and_then(|v| v.to_str())
                .and_then(|v| v.parse::<usize>().ok())
                .filter(|n| *n > 0),
        }
    }
}

/// What fd `fd` holds now. Three `fstat`s when none is a file or terminal.
fn std_fd(fd: i32) -> StdFd {
    // SAFETY: an all-zero stat is a valid value of the C struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat into a buffer of the right type.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return StdFd::Closed;
    }
    match st.st_mode & libc::S_IFMT {
        libc::S_IFSOCK => StdFd::Socket,
        libc::S_IFREG => {
            // SAFETY: F_GETFL only reads the descriptor's flags.
            let fl = unsafe { libc::fcntl(fd, libc::F_GETFL) };
            let writing = fl >= 0
                && fl & libc::O_PATH == 0
                && matches!(fl & libc::O_ACCMODE, libc::O_WRONLY | libc::O_RDWR);
            StdFd::File {
                path: (!writing)
                    .then(|| std::fs::read_link(format!("/proc/self/fd/{fd}")).ok())
                    .flatten(),
                writing,
            }
        }
        libc::S_IFCHR => {
            // SAFETY: isatty on a descriptor number.
            if unsafe { libc::isatty(fd) } == 1 {
                StdFd::Terminal {
                    device: terminal_path(fd, st.st_rdev),
                }
            } else {
                StdFd::Other
            }
        }
        _ => StdFd::Other,
    }
}

/// The name under /dev of the terminal open on `fd`, checked to be that
/// very device: what `/proc/self/fd` says, or the pseudo-terminal the
/// device number names when /proc is not mounted.
fn terminal_path(fd: i32, rdev: u64) -> Option<PathBuf> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let major = ((rdev >> 8) & 0xfff) | ((rdev >> 32) & !0xfff);
    let minor = (rdev & 0xff) | ((rdev >> 12) & !0xff);
    let by_proc = std::fs::read_link(format!("/proc/self/fd/{fd}")).ok();
    let by_number = (136..=143)
        .contains(&major)
        .then(|| PathBuf::from(format!("/dev/pts/{}", (major - 136) * 256 + minor)));
    by_proc.into_iter().chain(by_number).find(|p| {
        p.starts_with("/dev")
            && std::fs::metadata(p)
                .is_ok_and(|m| m.file_type().is_char_device() && m.rdev() == rdev)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn each_kind_of_descriptor_is_told_apart() {
        let dir = std::env::temp_dir().join(format!("dcjail-facts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("f");
        std::fs::write(&file, "x").unwrap();
        let file = std::fs::canonicalize(&file).unwrap();
        let read = std::fs::File::open(&file).unwrap();
        assert_eq!(
            std_fd(read.as_raw_fd()),
            StdFd::File {
                path: Some(file.clone()),
                writing: false
            }
        );
        let write = std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .unwrap();
        assert_eq!(
            std_fd(write.as_raw_fd()),
            StdFd::File {
                path: None,
                writing: true
            }
        );
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        assert_eq!(std_fd(a.as_raw_fd()), StdFd::Socket);
        let null = std::fs::File::open("/dev/null").unwrap();
        assert_eq!(std_fd(null.as_raw_fd()), StdFd::Other);
        // A number nothing is open on.
        let gone = read.as_raw_fd();
        drop(read);
        assert_eq!(std_fd(gone), StdFd::Closed);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_descriptors_the_caller_left_closed_read_as_closed() {
        let mut f = Facts {
            stdio: [StdFd::Other, StdFd::Socket, StdFd::Other],
            ..Default::default()
        };
        f.note_closed(0b101);
        assert_eq!(f.stdio, [StdFd::Closed, StdFd::Socket, StdFd::Closed]);
    }
}
