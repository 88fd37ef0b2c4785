//! The wire between the broker, which sees a refused system call, and
//! dcjail outside the sandbox, which says what refused it and what would
//! allow it (`crate::denials`). Written once and compiled into both: the
//! broker of the embedded second stage has no allocator and no std, so
//! this file uses `core` only.
//!
//! It also holds the tags the seccomp filter puts in the data bits of
//! SECCOMP_RET_USER_NOTIF (which the kernel ignores) when denials are
//! observed, so that the broker knows what the filter meant for a call it
//! hands over: perform it, let the kernel run it, or refuse it.
//!
//! A record is one `write` of at most `MAX_RECORD` bytes (below PIPE_BUF,
//! so records never interleave):
//! ```text
//! u16 len (whole record)  u8 source  u8 flags  i32 nr  i32 errno  u32 pid
//! u64 arg  u32 dropped  u16 named_len  u16 resolved_len  u16 program_len
//! named bytes  resolved bytes  program bytes
//! ```

/// Tag 0 in a notification's data: the broker performs the call.
pub const TAG_BROKER: u16 = 0;
/// Observed only: the layer decides, the kernel runs the call.
pub const TAG_CONTINUE: u16 = 0x8000;
/// Observed, and refused with the errno in the low bits (what the filter
/// answers itself when nothing is observed).
pub const TAG_ERRNO: u16 = 0x4000;

/// Who saw the denial.
pub const SOURCE_BROKER: u8 = 1;
/// The broker predicted that the kernel layer refuses a call it continued.
pub const SOURCE_PREDICTED: u8 = 2;
/// The seccomp filter refuses the call (the broker only answered for it).
pub const SOURCE_FILTER: u8 = 3;

/// `flags`: the named path or the resolved path was cut short.
pub const TRUNCATED: u8 = 1;
/// `flags`: the resolved path is the named one joined to the directory it
/// is relative to, not followed through symlinks.
pub const LEXICAL: u8 = 2;
/// `flags`: `named` holds the raw `sockaddr_in`/`sockaddr_in6` of an
/// internet `connect` (no path), and `arg` the socket's type.
pub const INET: u8 = 4;

pub const HEADER: usize = 34;
pub const MAX_NAMED: usize = 1024;
pub const MAX_RESOLVED: usize = 2048;
pub const MAX_PROGRAM: usize = 128;
pub const MAX_RECORD: usize = HEADER + MAX_NAMED + MAX_RESOLVED + MAX_PROGRAM;
// One write of at most PIPE_BUF bytes is atomic.
const _: () = assert!(MAX_RECORD <= 4096);

/// One denial as the broker saw it.
#[derive(Clone, Copy)]
pub struct Fact<'a> {
    pub source: u8,
    pub flags: u8,
    pub nr: i32,
    pub errno: i32,
    pub pid: u32,
    /// The argument that matters for the rule: open flags, a mode, a
    /// socket family.
    pub arg: u64,
    /// Records lost before this one because the pipe was full.
    pub dropped: u32,
    pub named: &'a [u8],
    pub resolved: &'a [u8],
    pub program: &'a [u8],
}

/// Encodes `f` into `out`, cutting each string to its limit; returns the
/// record's length.
pub fn encode(f: &Fact<'_>, out: &mut [u8; MAX_RECORD]) -> usize {
    let named = &f.named[..f.named.len().min(MAX_NAMED)];
    let resolved = &f.resolved[..f.resolved.len().min(MAX_RESOLVED)];
    let program = &f.program[..f.program.len().min(MAX_PROGRAM)];
    let mut flags = f.flags;
    if named.len() < f.named.len() || resolved.len() < f.resolved.len() {
        flags |= TRUNCATED;
    }
    let len = HEADER + named.len() + resolved.len() + program.len();
    let mut w = 0;
    let mut put = |b: &[u8]| {
        out[w..w + b.len()].copy_from_slice(b);
        w += b.len();
    };
    put(&(len as u16).to_le_bytes());
    put(&[f.source, flags]);
    put(&f.nr.to_le_bytes());
    put(&f.errno.to_le_bytes());
    put(&f.pid.to_le_bytes());
    put(&f.arg.to_le_bytes());
    put(&f.dropped.to_le_bytes());
    put(&(named.len() as u16).to_le_bytes());
    put(&(resolved.len() as u16).to_le_bytes());
    put(&(program.len() as u16).to_le_bytes());
    put(named);
    put(resolved);
    put(program);
    len
}

/// The length of the record at the start of `b`, once its header is there.
/// Reading records is dcjail's half (`denials`); the stub only writes them.
#[cfg(not(dcjail_stub))]
pub fn record_len(b: &[u8]) -> Option<usize> {
    if b.len() < 2 {
        return None;
    }
    Some(u16::from_le_bytes([b[0], b[1]]) as usize)
}

/// Decodes one whole record (`b` is exactly `record_len` bytes).
#[cfg(not(dcjail_stub))]
pub fn decode(b: &[u8]) -> Option<Fact<'_>> {
    if b.len() < HEADER || record_len(b)? != b.len() {
        return None;
    }
    let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]) as usize;
    let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[16..24]);
    let (n, r, p) = (u16_at(28), u16_at(30), u16_at(32));
    if HEADER + n + r + p != b.len() {
        return None;
    }
    Some(Fact {
        source: b[2],
        flags: b[3],
        nr: u32_at(4) as i32,
        errno: u32_at(8) as i32,
        pid: u32_at(12),
        arg: u64::from_le_bytes(a),
        dropped: u32_at(24),
        named: &b[HEADER..HEADER + n],
        resolved: &b[HEADER + n..HEADER + n + r],
        program: &b[HEADER + n + r..],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_comes_back_as_it_was_sent_and_long_paths_are_cut_and_flagged() {
        let long = [b'a'; 3000];
        let f = Fact {
            source: SOURCE_PREDICTED,
            flags: LEXICAL,
            nr: 257,
            errno: 13,
            pid: 42,
            arg: 0o1101,
            dropped: 3,
            named: b"x/y",
            resolved: &long,
            program: b"npm",
        };
        let mut out = [0u8; MAX_RECORD];
        let n = encode(&f, &mut out);
        assert!(n <= MAX_RECORD);
        assert_eq!(record_len(&out[..n]), Some(n));
        let g = decode(&out[..n]).unwrap();
        assert_eq!(
            (g.source, g.nr, g.errno, g.pid),
            (SOURCE_PREDICTED, 257, 13, 42)
        );
        assert_eq!((g.arg, g.dropped), (0o1101, 3));
        assert_eq!(g.flags, LEXICAL | TRUNCATED);
        assert_eq!((g.named, g.program), (&b"x/y"[..], &b"npm"[..]));
        assert_eq!(g.resolved.len(), MAX_RESOLVED);
        assert!(decode(&out[..n - 1]).is_none());
    }
}
