//! The program the embedded second stage (`stub/main.rs`) runs inside
//! bubblewrap: the landlock ruleset, the compiled seccomp filters and the
//! descriptors to keep, all decided by the first stage. The stub only
//! executes it, so it holds no policy of its own.
//!
//! This file is compiled twice: into dcjail (which encodes programs and
//! tests the decoder) and into the stub, which has no allocator and no std.
//! It must therefore use `core` only.
//!
//! Layout: `MAGIC`, then little-endian integers; byte strings and lists are
//! prefixed by a u32 count.
//! ```text
//! u64 handled_fs  u64 handled_net  u64 scoped
//! u32 n  { u32 len  path bytes  u64 access }   filesystem rules
//! u32 n  { u16 port }                          TCP connect ports
//! u32 n  { i32 fd }                            descriptors kept open
//! u32 n  { u32 count  count × 8 bytes }        seccomp programs (sock_filter)
//! u32 flags                                    BROKER: the last program's
//!                                              notifications are served
//! u32 n  { u64 dev  u64 ino  u32 len  name }   names that cannot be created
//!                                              in the directory (dev, ino);
//!                                              the name `ZONE` marks a
//!                                              repository's worktree instead
//! u32 n  { u32 len  path bytes }               unix sockets (or directories
//!                                              of them) the command may
//!                                              connect to
//! u32 n  { i32 fd  u32 len  path bytes }       writable roots as the host
//!                                              sees them: a directory
//!                                              descriptor of the host's
//!                                              mount (-1 until the launch
//!                                              opens it, `set_host_fds`)
//!                                              and the root's path
//! i32 report_fd                                where the broker writes denial
//!                                              records (`denial_wire`); -1: none
//! ```

/// First bytes of a program; the version is the last byte.
pub const MAGIC: &[u8; 12] = b"DCJAIL-STUB\x06";

/// The guard name that no file can have, marking its directory as the top
/// of a repository's worktree found at launch: in it and below it the
/// broker creates no `.git` (a repository made there would be entered by
/// a later `git status` through a gitlink), and moves in no directory from
/// outside every such tree (it could carry one).
pub const ZONE: &[u8] = b"/";

/// Longest rule path the stub accepts (Linux PATH_MAX, NUL excluded).
pub const MAX_PATH: usize = 4095;

/// Most instructions the kernel takes in one seccomp program.
pub const MAX_INSNS: usize = 4096;

/// Bytes of one `struct sock_filter`.
pub const INSN: usize = 8;

/// `flags`: a broker process serves the seccomp notifications of the last
/// program (see `inside::broker`).
pub const BROKER: u32 = 1;

/// `flags`: the command has a network namespace of its own (bwrap with
/// `--net none` or `allowlist`), where loopback is the only interface: a
/// connect that finds no route, or nothing listening on loopback, is
/// dcjail's doing, and the broker records it.
pub const OWN_NETWORK: u32 = 2;

/// `flags`: no landlock layer is applied (this kernel has none, or one too
/// old): the mounts and namespaces around the stub hold what it would, and
/// the first stage refused every policy that needs it. The program then
/// carries no landlock right, rule, port or scope.
pub const NO_LANDLOCK: u32 = 4;

/// Longest file name (Linux NAME_MAX).
pub const MAX_NAME: usize = 255;

/// The hidden subcommand bwrap runs inside the sandbox:
/// `STAGE2 FD IGN ERR STD -- COMMAND...` (FD: the program's memfd; IGN: bit
/// N set when `SHIELDED[N]` was ignored before; ERR: the caller's stderr;
/// STD: bit N set when the caller left fd N closed).
pub const STAGE2: &str = "__stage2";

/// Where the command starts in stage 2's argv (`argv[0]` is the program
/// itself, `argv[1]` is `STAGE2`).
pub const COMMAND_AT: usize = 7;

/// Stage 2's command line before the command, parsed: the one parser the
/// stub and dcjail's own second stage (`exec::stage2`) both use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prologue {
    /// The sealed memfd holding the program.
    pub fd: i32,
    /// Bit N set when `SHIELDED[N]` was ignored before the launch.
    pub ignored: u32,
    /// The caller's stderr.
    pub err: i32,
    /// Bit N set when the caller left standard descriptor N closed.
    pub closed: u8,
}

/// Why a command line is not `STAGE2 FD IGN ERR STD -- COMMAND...`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrologueError {
    /// Not that shape, or a field that is not a number in its range: a
    /// usage-error (`USAGE_STATUS`), as for anyone who typed it by hand.
    Usage,
    /// FD or ERR beyond any descriptor number: sandbox-unavailable.
    BadDescriptor,
}

impl PrologueError {
    /// The words after `dcjail: usage-error: ` or after
    /// `dcjail: sandbox-unavailable: second stage: `.
    pub fn text(self) -> &'static str {
        match self {
            PrologueError::Usage => "`__stage2` is internal to dcjail",
            PrologueError::BadDescriptor => "bad descriptor",
        }
    }
}

impl Prologue {
    /// Parses argv, given as its length and the bytes of argument `i`
    /// (the stub reads them from its initial stack, dcjail from std).
    /// `arg` is called only with `i < argc`.
    pub fn parse<'a>(
        argc: usize,
        arg: impl Fn(usize) -> &'a [u8],
    ) -> Result<Prologue, PrologueError> {
        if argc <= COMMAND_AT || arg(1) != STAGE2.as_bytes() || arg(6) != b"--" {
            return Err(PrologueError::Usage);
        }
        let (Some(fd), Some(ignored), Some(err), Some(closed @ 0..=7)) = (
            parse_u32(arg(2)),
            parse_u32(arg(3)),
            parse_u32(arg(4)),
            parse_u32(arg(5)),
        ) else {
            return Err(PrologueError::Usage);
        };
        let (Ok(fd), Ok(err)) = (i32::try_from(fd), i32::try_from(err)) else {
            return Err(PrologueError::BadDescriptor);
        };
        Ok(Prologue {
            fd,
            ignored,
            err,
            closed: closed as u8,
        })
    }
}

/// A decimal number as the first stage writes one: 1 to 10 ASCII digits
/// and nothing else (no sign, no blank), that fits in a u32.
pub fn parse_u32(s: &[u8]) -> Option<u32> {
    if s.is_empty() || s.len() > 10 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in s {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + u64::from(c - b'0');
    }
    u32::try_from(v).ok()
}

/// A descriptor number as the first stage writes one (`PROXY_FD_VAR`'s
/// value): `parse_u32` within `i32`.
pub fn parse_fd(s: &[u8]) -> Option<i32> {
    parse_u32(s).and_then(|v| i32::try_from(v).ok())
}

/// The name of the sealed memfd that carries the program into stage 2;
/// stage 2 refuses any other descriptor, so a caller who controls only
/// dcjail's argv (and stdin) cannot feed it a layer of their own.
pub const MEMFD_NAME: &str = "dcjail-stage2";

/// What stage 2 writes on bwrap's stderr pipe once it runs, before it puts
/// the caller's stderr back: everything before it is bwrap's own words.
pub const STARTED: &[u8] = b"\0dcjail-stage2-started\0";

/// Environment variable naming stage 2's end of the allowlist proxy's
/// socketpair; set only by the first stage, never passed to the command.
pub const PROXY_FD_VAR: &str = "DCJAIL_STAGE2_PROXY_FD";

/// The proxy's port inside a bwrap network namespace, where every port is
/// free: stage 2 binds it, the layer lets the command connect to it.
pub const PROXY_PORT: u16 = 3128;

/// Signals a terminal or a process group sends to dcjail and bwrap alike
/// (Linux numbers: SIGINT, SIGQUIT, SIGHUP, SIGTERM): bwrap ignores them,
/// dcjail forwards them to the command itself, stage 2 restores them.
pub const SHIELDED: [i32; 4] = [2, 3, 1, 15];

/// The exit status of a second stage that cannot apply the layer
/// (`sandbox-unavailable`, as `error::Reason` says it).
pub const UNAVAILABLE_STATUS: i32 = 122;

/// The exit status of a malformed `STAGE2` command line (`usage-error`).
pub const USAGE_STATUS: i32 = 125;

/// The command was found but could not be executed (as a shell says it).
pub const NOT_EXECUTABLE_STATUS: i32 = 126;

/// The command was not found.
pub const NOT_FOUND_STATUS: i32 = 127;

/// A command killed by signal N exits 128 + N.
pub const SIGNAL_STATUS_BASE: i32 = 128;

/// Sets the descriptors of the program's host roots, in their order
/// (`Program::hosts`): the launch opens them just before it starts bwrap.
/// A program that does not parse, or a count that differs, is left as is
/// (its roots stay -1: no link is made through them). The launch's half:
/// the stub only reads programs.
#[cfg(not(dcjail_stub))]
pub fn set_host_fds(program: &mut [u8], fds: &[i32]) {
    let (at, count) = match Program::parse(program) {
        Ok(p) => (
            p.hosts.bytes.as_ptr() as usize - program.as_ptr() as usize,
            p.hosts.count as usize,
        ),
        Err(_) => return,
    };
    if count != fds.len() {
        return;
    }
    let mut off = at;
    for fd in fds {
        program[off..off + 4].copy_from_slice(&fd.to_le_bytes());
        let n = u32::from_le_bytes([
            program[off + 4],
            program[off + 5],
            program[off + 6],
            program[off + 7],
        ]) as usize;
        off += 8 + n;
    }
}

/// Landlock filesystem rights (the uapi bits), as the program's rules carry
/// them: one list for dcjail, the stub and the broker they share.
pub mod access {
    pub const EXECUTE: u64 = 1 << 0;
    pub const WRITE_FILE: u64 = 1 << 1;
    pub const READ_FILE: u64 = 1 << 2;
    pub const READ_DIR: u64 = 1 << 3;
    pub const REMOVE_DIR: u64 = 1 << 4;
    pub const REMOVE_FILE: u64 = 1 << 5;
    pub const MAKE_CHAR: u64 = 1 << 6;
    pub const MAKE_DIR: u64 = 1 << 7;
    pub const MAKE_REG: u64 = 1 << 8;
    pub const MAKE_SOCK: u64 = 1 << 9;
    pub const MAKE_FIFO: u64 = 1 << 10;
    pub const MAKE_BLOCK: u64 = 1 << 11;
    pub const MAKE_SYM: u64 = 1 << 12;
    pub const REFER: u64 = 1 << 13;
    pub const TRUNCATE: u64 = 1 << 14;
    pub const IOCTL_DEV: u64 = 1 << 15;
    /// Rights that mean something on a non-directory.
    pub const FILE: u64 = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV;
}

/// A program checked whole by `parse`: the iterators below re-read parts
/// already known to be well formed.
pub struct Program<'a> {
    pub handled_fs: u64,
    pub handled_net: u64,
    pub scoped: u64,
    fs: List<'a>,
    ports: List<'a>,
    keep: List<'a>,
    filters: List<'a>,
    pub flags: u32,
    guards: List<'a>,
    sockets: List<'a>,
    hosts: List<'a>,
    /// Where the broker records denials, or -1.
    pub report_fd: i32,
}

#[derive(Clone, Copy)]
struct List<'a> {
    count: u32,
    bytes: &'a [u8],
}

struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], &'static str> {
        if self.b.len() < n {
            return Err("program is truncated");
        }
        let (h, t) = self.b.split_at(n);
        self.b = t;
        Ok(h)
    }
    fn u16(&mut self) -> Result<u16, &'static str> {
        let s = self.take(2)?;
        Ok(u16::from_le_bytes([s[0], s[1]]))
    }
    fn u32(&mut self) -> Result<u32, &'static str> {
        let s = self.take(4)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
    fn u64(&mut self) -> Result<u64, &'static str> {
        let s = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        Ok(u64::from_le_bytes(a))
    }
    /// An absolute path (a length, then its bytes, no NUL); `long` or
    /// `form` when it is not.
    fn path(&mut self, long: &'static str, form: &'static str) -> Result<(), &'static str> {
        let n = self.u32()? as usize;
        if n == 0 || n > MAX_PATH {
            return Err(long);
        }
        let p = self.take(n)?;
        if p[0] != b'/' || p.contains(&0) {
            return Err(form);
        }
        Ok(())
    }
    /// A list whose elements `check` reads one by one; its bytes are kept.
    fn list(
        &mut self,
        mut check: impl FnMut(&mut Reader<'a>) -> Result<(), &'static str>,
    ) -> Result<List<'a>, &'static str> {
        let count = self.u32()?;
        let start = self.b;
        for _ in 0..count {
            check(self)?;
        }
        let used = start.len() - self.b.len();
        Ok(List {
            count,
            bytes: &start[..used],
        })
    }
}

impl<'a> Program<'a> {
    pub fn parse(b: &'a [u8]) -> Result<Program<'a>, &'static str> {
        let mut r = Reader { b };
        if r.take(MAGIC.len())? != MAGIC {
            return Err("not a dcjail stage-2 program");
        }
        let handled_fs = r.u64()?;
        let handled_net = r.u64()?;
        let scoped = r.u64()?;
        let fs = r.list(|r| {
            r.path(
                "rule path length out of range",
                "rule path is not absolute or holds a NUL",
            )?;
            if r.u64()? & !handled_fs != 0 {
                return Err("a rule grants an unhandled right");
            }
            Ok(())
        })?;
        let ports = r.list(|r| r.u16().map(|_| ()))?;
        let keep = r.list(|r| {
            if (r.u32()? as i32) < 0 {
                return Err("negative descriptor");
            }
            Ok(())
        })?;
        let filters = r.list(|r| {
            let n = r.u32()? as usize;
            if n == 0 || n > MAX_INSNS {
                return Err("seccomp program size out of range");
            }
            r.take(n * INSN).map(|_| ())
        })?;
        let flags = r.u32()?;
        if flags & !(BROKER | OWN_NETWORK | NO_LANDLOCK) != 0 {
            return Err("unknown program flags");
        }
        if flags & NO_LANDLOCK != 0
            && (handled_fs | handled_net | scoped != 0 || fs.count != 0 || ports.count != 0)
        {
            return Err("a program without landlock carries a landlock rule");
        }
        if flags & BROKER != 0 && filters.count == 0 {
            return Err("a broker needs a seccomp program");
        }
        let guards = r.list(|r| {
            r.u64()?;
            r.u64()?;
            let n = r.u32()? as usize;
            if n == 0 || n > MAX_NAME {
                return Err("guarded name length out of range");
            }
            let name = r.take(n)?;
            if name != ZONE
                && (name.contains(&0) || name.contains(&b'/') || name == b"." || name == b"..")
            {
                return Err("a guarded name is not a file name");
            }
            Ok(())
        })?;
        let sockets = r.list(|r| {
            r.path(
                "socket path length out of range",
                "socket path is not absolute or holds a NUL",
            )
        })?;
        let hosts = r.list(|r| {
            if (r.u32()? as i32) < -1 {
                return Err("negative descriptor");
            }
            r.path(
                "host root path length out of range",
                "host root path is not absolute or holds a NUL",
            )
        })?;
        let report_fd = r.u32()? as i32;
        if report_fd < -1 || (report_fd >= 0 && flags & BROKER == 0) {
            return Err("a denial report needs a broker and a descriptor");
        }
        if !r.b.is_empty() {
            return Err("trailing bytes after the program");
        }
        Ok(Program {
            handled_fs,
            handled_net,
            scoped,
            fs,
            ports,
            keep,
            filters,
            flags,
            guards,
            sockets,
            hosts,
            report_fd,
        })
    }

    /// Whether a broker serves the last seccomp program's notifications.
    pub fn broker(&self) -> bool {
        self.flags & BROKER != 0
    }

    /// Whether the landlock layer is left out (`NO_LANDLOCK`).
    pub fn no_landlock(&self) -> bool {
        self.flags & NO_LANDLOCK != 0
    }

    /// Whether the command's network is a namespace of its own
    /// (`OWN_NETWORK`).
    pub fn own_network(&self) -> bool {
        self.flags & OWN_NETWORK != 0
    }

    /// `(dev, ino, name)`: `name` cannot be created in the directory.
    pub fn guards(&self) -> impl Iterator<Item = (u64, u64, &'a [u8])> + 'a {
        let mut r = Reader {
            b: self.guards.bytes,
        };
        (0..self.guards.count).map_while(move |_| {
            let dev = r.u64().ok()?;
            let ino = r.u64().ok()?;
            let n = r.u32().ok()? as usize;
            Some((dev, ino, r.take(n).ok()?))
        })
    }

    /// The named unix sockets, or directories of them; no NUL in any.
    pub fn sockets(&self) -> impl Iterator<Item = &'a [u8]> + 'a {
        let mut r = Reader {
            b: self.sockets.bytes,
        };
        (0..self.sockets.count).map_while(move |_| {
            let n = r.u32().ok()? as usize;
            r.take(n).ok()
        })
    }

    /// `(fd, path)` of every writable root as the host's mount holds it:
    /// the broker makes a hard link there that the sandbox's separate
    /// mounts of two roots refuse (EXDEV). `fd` is -1 until set.
    pub fn hosts(&self) -> impl Iterator<Item = (i32, &'a [u8])> + 'a {
        let mut r = Reader {
            b: self.hosts.bytes,
        };
        (0..self.hosts.count).map_while(move |_| {
            let fd = r.u32().ok()? as i32;
            let n = r.u32().ok()? as usize;
            Some((fd, r.take(n).ok()?))
        })
    }

    /// `(dev, ino)` of every directory marked `ZONE`.
    pub fn zones(&self) -> impl Iterator<Item = (u64, u64)> + 'a {
        self.guards()
            .filter(|(_, _, n)| *n == ZONE)
            .map(|(d, i, _)| (d, i))
    }

    /// `(path, access)` per filesystem rule; the path has no NUL.
    pub fn fs_rules(&self) -> impl Iterator<Item = (&'a [u8], u64)> + 'a {
        let mut r = Reader { b: self.fs.bytes };
        (0..self.fs.count).map_while(move |_| {
            let n = r.u32().ok()? as usize;
            let p = r.take(n).ok()?;
            Some((p, r.u64().ok()?))
        })
    }

    pub fn ports(&self) -> impl Iterator<Item = u16> + 'a {
        let mut r = Reader {
            b: self.ports.bytes,
        };
        (0..self.ports.count).map_while(move |_| r.u16().ok())
    }

    pub fn keep_fds(&self) -> impl Iterator<Item = i32> + 'a {
        let mut r = Reader { b: self.keep.bytes };
        (0..self.keep.count).map_while(move |_| r.u32().ok().map(|v| v as i32))
    }

    /// `(instruction count, raw sock_filter bytes)` per seccomp program,
    /// in installation order.
    pub fn filters(&self) -> impl Iterator<Item = (u16, &'a [u8])> + 'a {
        let mut r = Reader {
            b: self.filters.bytes,
        };
        (0..self.filters.count).map_while(move |_| {
            let n = r.u32().ok()? as usize;
            Some((n as u16, r.take(n * INSN).ok()?))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Prologue, PrologueError> {
        Prologue::parse(args.len(), |i| args[i].as_bytes())
    }

    #[test]
    fn the_prologue_is_read_field_by_field() {
        let p = parse(&["dcjail", STAGE2, "5", "9", "7", "3", "--", "true"]);
        assert_eq!(
            p,
            Ok(Prologue {
                fd: 5,
                ignored: 9,
                err: 7,
                closed: 3
            })
        );
        // The command may itself hold "--" and numbers.
        let p = parse(&["x", STAGE2, "0", "0", "2", "7", "--", "--", "1"]);
        assert_eq!(p.map(|p| p.closed), Ok(7));
    }

    #[test]
    fn anything_else_is_a_usage_error() {
        let usage = Err(PrologueError::Usage);
        for args in [
            &["dcjail", STAGE2, "5", "9", "7", "3", "--"][..],
            &["dcjail", STAGE2, "0", "0", "--", "sh"],
            &["dcjail", "__stage3", "5", "9", "7", "3", "--", "true"],
            &["dcjail", STAGE2, "5", "9", "7", "3", "-", "true"],
            &["dcjail", STAGE2, "5", "9", "7", "8", "--", "true"],
            &["dcjail", STAGE2, "+5", "9", "7", "3", "--", "true"],
            &["dcjail", STAGE2, "-1", "9", "7", "3", "--", "true"],
            &["dcjail", STAGE2, "5", " 9", "7", "3", "--", "true"],
            &["dcjail", STAGE2, "5", "", "7", "3", "--", "true"],
            &["dcjail", STAGE2, "5", "9", "4294967296", "3", "--", "true"],
            &["dcjail", STAGE2, "5", "9", "07x", "3", "--", "true"],
        ] {
            assert_eq!(parse(args), usage, "{args:?}");
        }
        assert_eq!(
            PrologueError::Usage.text(),
            "`__stage2` is internal to dcjail"
        );
    }

    #[test]
    fn a_number_no_descriptor_can_have_is_refused_as_such() {
        for args in [
            &["d", STAGE2, "2147483648", "0", "2", "0", "--", "true"][..],
            &["d", STAGE2, "3", "0", "4294967295", "0", "--", "true"],
        ] {
            assert_eq!(parse(args), Err(PrologueError::BadDescriptor), "{args:?}");
        }
        assert_eq!(parse_fd(b"2147483647"), Some(i32::MAX));
        assert_eq!(parse_fd(b"2147483648"), None);
        assert_eq!(parse_fd(b"12"), Some(12));
        assert_eq!(parse_fd(b"+12"), None);
        assert_eq!(parse_fd(b"-1"), None);
        assert_eq!(parse_u32(b"0000000001"), Some(1));
        assert_eq!(parse_u32(b"00000000001"), None);
    }
}
