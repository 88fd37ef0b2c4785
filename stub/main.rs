//! dcjail's embedded second stage: what bubblewrap runs inside the sandbox
//! instead of a second copy of dcjail. It applies the landlock ruleset, the
//! capability drop, no_new_privs, the seccomp filters and the descriptor
//! cleanup that the first stage computed (`src/inside/stub_format.rs`),
//! then execs the command with execvp semantics.
//!
//! Why a separate, libc-free binary: every launch under bwrap starts it, and
//! a glibc process spends most of its start-up in the dynamic loader and in
//! CPU feature detection (each CPUID traps to the hypervisor on a VM) — more
//! than the whole layer costs. This one is a few kilobytes, statically
//! linked, with no allocator; build.rs compiles it and dcjail carries it
//! inside its own binary, so nothing on disk can be swapped for it.
//!
//! It decides nothing: any malformed input or failed step ends it with the
//! refusal line and status of `dcjail` (122), before the command runs.
//! Command-line shape, same as dcjail's own second stage:
//! `STUB __stage2 FD IGN ERR STD -- COMMAND...` (STD: bit N set when the
//! caller left fd N closed; it is closed again right before the execve).
#![no_std]
#![no_main]

#[path = "../src/inside/stub_format.rs"]
mod stub_format;

use core::arch::global_asm;
use stage2::c_path;
use stub_format::{
    parse_fd, Program, Prologue, PrologueError, COMMAND_AT, MEMFD_NAME, NOT_EXECUTABLE_STATUS,
    NOT_FOUND_STATUS, PROXY_FD_VAR, PROXY_PORT, SHIELDED, STARTED, UNAVAILABLE_STATUS,
    USAGE_STATUS,
};
use sys::digits;

#[cfg(target_arch = "x86_64")]
global_asm!(
    ".globl _start",
    "_start:",
    "xor ebp, ebp",
    "mov rdi, rsp",
    "and rsp, -16",
    "call {main}",
    "ud2",
    main = sym stub_main,
);

#[cfg(target_arch = "aarch64")]
global_asm!(
    ".globl _start",
    "_start:",
    "mov x29, #0",
    "mov x30, #0",
    "mov x0, sp",
    "bl {main}",
    "brk #0",
    main = sym stub_main,
);

#[path = "../src/inside/broker/mod.rs"]
mod broker;
#[path = "../src/inside/denial_wire.rs"]
mod denial_wire;
#[path = "../src/inside/stage2.rs"]
mod stage2;
#[path = "../src/inside/sys.rs"]
mod sys;

const EINTR: i32 = 4;
const ENOENT: i32 = 2;
const EACCES: i32 = 13;
const ENOEXEC: i32 = 8;
const ENOTDIR: i32 = 20;
const ENAMETOOLONG: i32 = 36;
const ELOOP: i32 = 40;

const AT_FDCWD: usize = -100isize as usize;
const AT_EMPTY_PATH: usize = 0x1000;
const S_IFMT: u32 = 0o170000;
const S_IFSOCK: u32 = 0o140000;

const SIGPIPE: usize = 13;

/// A line built on the stack; what does not fit is dropped (it only ever
/// holds a message).
struct Line {
    buf: [u8; 2048],
    len: usize,
}

impl Line {
    fn new() -> Line {
        Line {
            buf: [0; 2048],
            len: 0,
        }
    }
    fn push(&mut self, b: &[u8]) -> &mut Line {
        let n = b.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&b[..n]);
        self.len += n;
        self
    }
    fn num(&mut self, v: u64) -> &mut Line {
        self.push(digits(v, &mut [0; 20]))
    }
    /// `bytes` as dcjail prints a name: invalid UTF-8 as U+FFFD, control
    /// characters escaped, so the message stays one line (error::one_line).
    fn escaped(&mut self, bytes: &[u8]) -> &mut Line {
        for chunk in bytes.utf8_chunks() {
            for c in chunk.valid().chars() {
                match c {
                    '\n' => self.push(b"\\n"),
                    '\r' => self.push(b"\\r"),
                    '\t' => self.push(b"\\t"),
                    c if c.is_control() => {
                        self.push(b"\\u{");
                        let v = c as u32;
                        let mut started = false;
                        for shift in (0..8).rev() {
                            let h = ((v >> (shift * 4)) & 0xf) as u8;
                            if h != 0 || started || shift == 0 {
                                started = true;
                                self.push(&[b"0123456789abcdef"[h as usize]]);
                            }
                        }
                        self.push(b"}")
                    }
                    c => {
                        let mut u = [0u8; 4];
                        self.push(c.encode_utf8(&mut u).as_bytes())
                    }
                };
            }
            if !chunk.invalid().is_empty() {
                self.push("\u{fffd}".as_bytes());
            }
        }
        self
    }
    fn errno(&mut self, e: i32) -> &mut Line {
        match strerror(e) {
            Some(t) => self.push(t.as_bytes()),
            None => self.push(b"os error ").num(e as u64),
        }
    }
    fn print(&mut self) {
        self.push(b"\n");
        sys::write_all(2, &self.buf[..self.len]);
    }
}

/// glibc's wording for what execve and the layer can fail with, as dcjail
/// prints it elsewhere (policy::io_words).
fn strerror(e: i32) -> Option<&'static str> {
    Some(match e {
        1 => "Operation not permitted",
        2 => "No such file or directory",
        4 => "Interrupted system call",
        5 => "Input/output error",
        7 => "Argument list too long",
        8 => "Exec format error",
        9 => "Bad file descriptor",
        11 => "Resource temporarily unavailable",
        12 => "Cannot allocate memory",
        13 => "Permission denied",
        14 => "Bad address",
        20 => "Not a directory",
        21 => "Is a directory",
        22 => "Invalid argument",
        23 => "Too many open files in system",
        24 => "Too many open files",
        26 => "Text file busy",
        36 => "File name too long",
        38 => "Function not implemented",
        40 => "Too many levels of symbolic links",
        80 => "Accessing a corrupted shared library",
        95 => "Operation not supported",
        98 => "Address already in use",
        _ => return None,
    })
}

/// Prints the refusal and ends the stub, as dcjail's second stage does.
fn refuse(what: &[u8], e: Option<i32>) -> ! {
    let mut l = Line::new();
    l.push(b"dcjail: sandbox-unavailable: second stage: ")
        .push(what);
    if let Some(e) = e {
        l.push(b": ").errno(e);
    }
    l.print();
    sys::exit(UNAVAILABLE_STATUS)
}

/// The compiler lowers copies, fills, comparisons and string scans to these
/// C functions; without libc the stub brings its own. Volatile accesses keep
/// the compiler from recognising each loop as the very call it implements.
mod mem {
    use core::ptr::{read_volatile, write_volatile};

    /// # Safety
    /// As C's memcpy.
    #[no_mangle]
    unsafe extern "C" fn memcpy(d: *mut u8, s: *const u8, n: usize) -> *mut u8 {
        // SAFETY: the caller's ranges are valid and do not overlap.
        unsafe {
            for i in 0..n {
                write_volatile(d.add(i), read_volatile(s.add(i)));
            }
        }
        d
    }

    /// # Safety
    /// As C's memmove.
    #[no_mangle]
    unsafe extern "C" fn memmove(d: *mut u8, s: *const u8, n: usize) -> *mut u8 {
        // SAFETY: the caller's ranges are valid; copying away from the
        // overlap keeps the source intact.
        unsafe {
            if (d as usize) < (s as usize) {
                for i in 0..n {
                    write_volatile(d.add(i), read_volatile(s.add(i)));
                }
            } else {
                for i in (0..n).rev() {
                    write_volatile(d.add(i), read_volatile(s.add(i)));
                }
            }
        }
        d
    }

    /// # Safety
    /// As C's memset.
    #[no_mangle]
    unsafe extern "C" fn memset(d: *mut u8, c: i32, n: usize) -> *mut u8 {
        // SAFETY: the caller's range is valid.
        unsafe {
            for i in 0..n {
                write_volatile(d.add(i), c as u8);
            }
        }
        d
    }

    /// # Safety
    /// As C's memcmp.
    #[no_mangle]
    unsafe extern "C" fn memcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
        // SAFETY: the caller's ranges are valid.
        unsafe {
            for i in 0..n {
                let (x, y) = (read_volatile(a.add(i)), read_volatile(b.add(i)));
                if x != y {
                    return i32::from(x) - i32::from(y);
                }
            }
        }
        0
    }

    /// # Safety
    /// As C's bcmp.
    #[no_mangle]
    unsafe extern "C" fn bcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
        // SAFETY: as memcmp.
        unsafe { memcmp(a, b, n) }
    }

    /// # Safety
    /// As C's strlen.
    #[no_mangle]
    unsafe extern "C" fn strlen(s: *const u8) -> usize {
        let mut n = 0;
        // SAFETY: the caller's string is NUL-terminated.
        unsafe {
            while read_volatile(s.add(n)) != 0 {
                n += 1;
            }
        }
        n
    }

    /// The prebuilt `core` refers to the unwinder's personality routine;
    /// with panic=abort nothing ever unwinds into it.
    #[no_mangle]
    extern "C" fn rust_eh_personality() {}
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    refuse(b"internal error", None)
}

/// The NUL-terminated string at `p`, without its NUL.
///
/// # Safety
/// `p` points to a NUL-terminated string that outlives the result.
unsafe fn cstr<'a>(p: *const u8) -> &'a [u8] {
    let mut n = 0;
    // SAFETY: the caller vouches for the terminator.
    unsafe {
        while *p.add(n) != 0 {
            n += 1;
        }
        core::slice::from_raw_parts(p, n)
    }
}

/// Reads the program from descriptor `fd`, which must be the sealed memfd
/// the first stage made: nothing a caller passes through argv or stdin
/// qualifies. The pages are never unmapped (this process execs soon).
fn read_program(fd: i32) -> &'static [u8] {
    let mut link = [0u8; 64];
    let mut path = [0u8; 32];
    let Some(p) = c_path(
        &mut path,
        &[b"/proc/self/fd/", digits(fd as u64, &mut [0; 20])],
    ) else {
        refuse(b"bad descriptor", None)
    };
    // SAFETY: NUL-terminated path, buffer of link.len() bytes.
    let n = unsafe {
        sys::call(
            sys::nr::READLINKAT,
            &[
                AT_FDCWD,
                p.as_ptr() as usize,
                link.as_mut_ptr() as usize,
                link.len(),
            ],
        )
    };
    match n {
        Ok(n)
            if link[..n]
                .strip_prefix(b"/memfd:")
                .is_some_and(|r| r.starts_with(MEMFD_NAME.as_bytes())) => {}
        Ok(_) => refuse(b"the descriptor is not dcjail's layer", None),
        Err(e) => refuse(b"the layer's descriptor", Some(e)),
    }
    const F_GET_SEALS: usize = 1034;
    // F_SEAL_SEAL, F_SEAL_SHRINK, F_SEAL_GROW, F_SEAL_WRITE.
    const ALL: usize = 0x1 | 0x2 | 0x4 | 0x8;
    // SAFETY: fcntl on a descriptor number.
    match unsafe { sys::call(sys::nr::FCNTL, &[fd as usize, F_GET_SEALS]) } {
        Ok(s) if s & ALL == ALL => {}
        _ => refuse(b"the layer's descriptor is not sealed", None),
    }
    let mut st = [0u8; 256];
    // SAFETY: empty path with AT_EMPTY_PATH; statx writes at most 256 bytes.
    if let Err(e) = unsafe {
        sys::call(
            sys::nr::STATX,
            &[
                fd as usize,
                c"".as_ptr() as usize,
                AT_EMPTY_PATH,
                0x200,
                st.as_mut_ptr() as usize,
            ],
        )
    } {
        refuse(b"the layer's descriptor", Some(e));
    }
    // struct statx: stx_size is the u64 at offset 40 (STATX_SIZE = 0x200).
    let mut sz = [0u8; 8];
    sz.copy_from_slice(&st[40..48]);
    let size = u64::from_ne_bytes(sz) as usize;
    if size == 0 || size > 64 << 20 {
        refuse(b"the layer has an impossible size", None);
    }
    const PROT_RW: usize = 0x3;
    const MAP_PRIVATE_ANON: usize = 0x02 | 0x20;
    // SAFETY: a fresh anonymous mapping.
    let base = match unsafe {
        sys::call(
            sys::nr::MMAP,
            &[0, size, PROT_RW, MAP_PRIVATE_ANON, usize::MAX],
        )
    } {
        Ok(b) => b as *mut u8,
        Err(e) => refuse(b"memory for the layer", Some(e)),
    };
    let mut off = 0;
    while off < size {
        // SAFETY: within the mapping of `size` bytes.
        match unsafe {
            sys::call(
                sys::nr::PREAD64,
                &[fd as usize, base as usize + off, size - off, off],
            )
        } {
            Ok(0) => refuse(b"reading the layer: short read", None),
            Ok(n) => off += n,
            Err(EINTR) => {}
            Err(e) => refuse(b"reading the layer", Some(e)),
        }
    }
    sys::close(fd);
    // SAFETY: `size` bytes just written, mapped for the rest of the process.
    unsafe { core::slice::from_raw_parts(base, size) }
}

/// Resets a signal to its default action.
fn default_signal(sig: usize) {
    // struct sigaction as the kernel takes it: all zero is SIG_DFL, no
    // flags, empty mask, on every architecture.
    let act = [0usize; 4];
    // SAFETY: a valid sigaction and the kernel's sigset size.
    let _ = unsafe { sys::call(sys::nr::RT_SIGACTION, &[sig, act.as_ptr() as usize, 0, 8]) };
}

/// Binds the proxy's listener inside the network namespace and hands it to
/// the proxy outside over `chan` (net::session::send_listener).
fn send_listener(chan: i32) {
    match sys::stat(chan as usize, b"\0", AT_EMPTY_PATH).map(|s| s.mode & S_IFMT) {
        Ok(S_IFSOCK) => {}
        _ => refuse(b"the proxy channel is not dcjail's", None),
    }
    const AF_INET: usize = 2;
    const SOCK_STREAM_CLOEXEC: usize = 1 | 0o2000000;
    // SAFETY: plain socket creation.
    let l = match unsafe { sys::call(sys::nr::SOCKET, &[AF_INET, SOCK_STREAM_CLOEXEC]) } {
        Ok(fd) => fd,
        Err(e) => refuse(b"cannot listen on 127.0.0.1:3128 inside", Some(e)),
    };
    let one: i32 = 1;
    const SOL_SOCKET: usize = 1;
    const SO_REUSEADDR: usize = 2;
    // sockaddr_in: family, port (big-endian), 127.0.0.1, padding.
    let mut addr = [0u8; 16];
    addr[..2].copy_from_slice(&(AF_INET as u16).to_ne_bytes());
    addr[2..4].copy_from_slice(&PROXY_PORT.to_be_bytes());
    addr[4..8].copy_from_slice(&[127, 0, 0, 1]);
    // SAFETY: valid option and address buffers of the sizes given.
    let bound = unsafe {
        sys::call(
            sys::nr::SETSOCKOPT,
            &[l, SOL_SOCKET, SO_REUSEADDR, &one as *const i32 as usize, 4],
        )
        .and_then(|_| sys::call(sys::nr::BIND, &[l, addr.as_ptr() as usize, 16]))
        .and_then(|_| sys::call(sys::nr::LISTEN, &[l, 128]))
    };
    if let Err(e) = bound {
        refuse(b"cannot listen on 127.0.0.1:3128 inside", Some(e));
    }
    // One SCM_RIGHTS message carrying the listener, with the byte "L".
    if let Err(e) = stage2::send_fd_tagged(chan, l as i32, b"L") {
        refuse(b"handing the proxy socket out", Some(e));
    }
    sys::close(l as i32);
    sys::close(chan);
}

/// execve; on ENOEXEC the file goes to /bin/sh, as execvp does. `argv[0]`
/// and the slot before it are borrowed for the shell's arguments and put
/// back. Returns the errno.
///
/// # Safety
/// `argv` has a writable slot before it; `argv` and `envp` are
/// NULL-terminated arrays of C strings.
unsafe fn try_exec(path: &[u8], argv: *mut *const u8, envp: *const *const u8) -> i32 {
    // SAFETY: NUL-terminated path and arrays, as the caller vouches.
    let e = match unsafe {
        sys::call(
            sys::nr::EXECVE,
            &[path.as_ptr() as usize, argv as usize, envp as usize],
        )
    } {
        Err(e) => e,
        Ok(_) => EACCES,
    };
    if e != ENOEXEC {
        return e;
    }
    let sh = c"/bin/sh";
    // SAFETY: the slot before argv and argv[0] are ours to borrow.
    unsafe {
        let before = argv.sub(1);
        let (saved_before, saved_0) = (*before, *argv);
        *before = sh.as_ptr().cast();
        *argv = path.as_ptr();
        let r = sys::call(
            sys::nr::EXECVE,
            &[sh.as_ptr() as usize, before as usize, envp as usize],
        );
        *before = saved_before;
        *argv = saved_0;
        match r {
            Err(e) => e,
            Ok(_) => EACCES,
        }
    }
}

/// exec.rs exec_command: a name with a `/` as it is, else each PATH entry;
/// returns the status to exit with (126 found but not executable, 127 not
/// found) after saying why.
///
/// # Safety
/// As for `try_exec`.
unsafe fn exec_command(argv: *mut *const u8, envp: *const *const u8, path_var: &[u8]) -> i32 {
    // SAFETY: argv[0] is a C string (checked non-null by the caller).
    let name = unsafe { cstr(*argv) };
    if name.is_empty() {
        Line::new().push(b"dcjail: empty command name").print();
        return NOT_FOUND_STATUS;
    }
    let mut saw_eacces = false;
    let mut last = ENOENT;
    let mut buf = [0u8; 4097];
    if name.contains(&b'/') {
        last = match c_path(&mut buf, &[name]) {
            // SAFETY: as the caller vouches.
            Some(c) => unsafe { try_exec(c, argv, envp) },
            None => ENAMETOOLONG,
        };
        saw_eacces = last == EACCES;
    } else {
        for dir in path_var.split(|b| *b == b':') {
            let dir: &[u8] = if dir.is_empty() { b"." } else { dir };
            let e = match c_path(&mut buf, &[dir, b"/", name]) {
                // SAFETY: as the caller vouches.
                Some(c) => unsafe { try_exec(c, argv, envp) },
                None => ENAMETOOLONG,
            };
            match e {
                EACCES => saw_eacces = true,
                ENOENT | ENOTDIR | ENAMETOOLONG | ELOOP => {}
                other => {
                    // A real failure of a file that exists: report it, as execvp does.
                    last = other;
                    break;
                }
            }
        }
    }
    let mut l = Line::new();
    l.push(b"dcjail: ").escaped(name).push(b": ");
    if saw_eacces || (last != ENOENT && last != ENOTDIR) {
        l.errno(if saw_eacces { EACCES } else { last }).print();
        NOT_EXECUTABLE_STATUS
    } else {
        l.push(b"command not found").print();
        NOT_FOUND_STATUS
    }
}

/// Closes fd N for each bit N of `closed` (exec.rs stdfds).
fn close_standard(closed: u8) {
    for fd in 0..3 {
        if closed & (1 << fd) != 0 {
            sys::close(fd);
        }
    }
}

/// # Safety
/// Called once from `_start` with the initial stack pointer.
unsafe extern "C" fn stub_main(sp: *const usize) -> ! {
    // SAFETY: the kernel's initial stack: argc, argv..., NULL, envp..., NULL.
    let (argc, argv, envp) = unsafe {
        let argc = *sp;
        let argv = sp.add(1) as *mut *const u8;
        (argc, argv, argv.add(argc + 1))
    };
    // SAFETY: argv has argc valid C strings, and Prologue::parse asks only
    // for i < argc.
    let arg = |i: usize| unsafe { cstr(*argv.add(i)) };
    let p = match Prologue::parse(argc, arg) {
        Ok(p) => p,
        Err(PrologueError::Usage) => {
            Line::new()
                .push(b"dcjail: usage-error: ")
                .push(PrologueError::Usage.text().as_bytes())
                .print();
            sys::exit(USAGE_STATUS)
        }
        Err(e) => refuse(e.text().as_bytes(), None),
    };
    let bytes = read_program(p.fd);
    let program = match Program::parse(bytes) {
        Ok(p) => p,
        Err(e) => refuse(e.as_bytes(), None),
    };
    for (i, s) in SHIELDED.iter().enumerate() {
        if p.ignored & (1 << i) == 0 {
            default_signal(*s as usize);
        }
    }
    // dcjail ignores SIGPIPE and an ignored signal survives execve: the
    // command must start with it at its default.
    default_signal(SIGPIPE);
    // From here on the caller's stderr is fd 2 again; bwrap's pipe hears
    // only that we started.
    sys::write_all(2, STARTED);
    // SAFETY: dup3 on descriptor numbers given by the first stage.
    if p.err > 2 && unsafe { sys::call(sys::nr::DUP3, &[p.err as usize, 2]) } == Ok(2) {
        sys::close(p.err);
    }
    // The environment: the proxy channel's variable is taken out (in
    // place: the array is ours), PATH is looked up.
    let mut proxy: Option<&[u8]> = None;
    let mut path_var: &[u8] = b"/usr/local/bin:/usr/bin:/bin";
    // SAFETY: envp is the NULL-terminated array on our stack.
    unsafe {
        let mut r = envp;
        let mut w = envp;
        while !(*r).is_null() {
            let e = cstr(*r);
            if let Some(v) = e
                .strip_prefix(PROXY_FD_VAR.as_bytes())
                .and_then(|r| r.strip_prefix(b"="))
            {
                proxy = Some(v);
            } else {
                if let Some(v) = e.strip_prefix(b"PATH=") {
                    path_var = v;
                }
                *w = *r;
                w = w.add(1);
            }
            r = r.add(1);
        }
        *w = core::ptr::null();
    }
    if let Some(v) = proxy {
        match parse_fd(v) {
            Some(fd) => send_listener(fd),
            None => refuse(b"bad proxy channel", None),
        }
    }
    // SAFETY: argv[COMMAND_AT..] is the command, NULL-terminated, with
    // the "--" before it free to borrow. The standard descriptors the caller left
    // closed are closed last, after everything the layer opened.
    let mut exec = || unsafe {
        close_standard(p.closed);
        exec_command(argv.add(COMMAND_AT), envp, path_var)
    };
    match stage2::run(&program, &mut exec) {
        Ok(code) => sys::exit(code),
        Err(f) => {
            let mut l = Line::new();
            l.push(f.what);
            if let Some(p) = f.path {
                l.escaped(p);
            }
            let what = l.buf;
            let n = l.len;
            refuse(&what[..n], f.errno)
        }
    }
}
