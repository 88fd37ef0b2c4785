//! What dcjail's layer costs per system call, measured from inside: run it
//! bare, under raw bwrap and under each dcjail backend, and compare.
//! For `scripts/bench.sh` and docs/benchmarks.md:
//!
//!     syscall_bench calls [N]      per-call ns of getppid, fcntl, fstatat,
//!                                  open+close of a directory, and
//!                                  open(O_CREAT)+close+unlink in the cwd
//!     syscall_bench attach [N]     µs to install dcjail's seccomp filter
//!                                  (each mode) and a one-instruction one,
//!                                  each in a fresh child (median of N)
//!
//! `calls` prints `name ns` lines (best of 5 rounds); `attach` prints
//! `filter instructions median_us`.

use std::ffi::CString;
use std::time::Instant;

fn best_ns(rounds: usize, n: usize, mut f: impl FnMut()) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..rounds {
        let t = Instant::now();
        for _ in 0..n {
            f();
        }
        best = best.min(t.elapsed().as_secs_f64() * 1e9 / n as f64);
    }
    best
}

fn calls(n: usize) {
    let dir = CString::new("/usr/share").unwrap_or_default();
    let name = CString::new(format!(".syscall-bench-{}", std::process::id())).unwrap_or_default();
    // SAFETY: plain syscalls on valid C strings and buffers.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        let rows: [(&str, f64); 5] = [
            (
                "getppid",
                best_ns(5, n, || {
                    libc::getppid();
                }),
            ),
            (
                "fcntl",
                best_ns(5, n, || {
                    libc::fcntl(0, libc::F_GETFD);
                }),
            ),
            (
                "fstatat",
                best_ns(5, n, || {
                    libc::fstatat(libc::AT_FDCWD, dir.as_ptr(), &mut st, 0);
                }),
            ),
            (
                "open_close_dir",
                best_ns(5, n / 4, || {
                    let fd = libc::open(dir.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY);
                    libc::close(fd);
                }),
            ),
            (
                "create_close_unlink",
                best_ns(3, (n / 100).max(10), || {
                    let fd = libc::open(
                        name.as_ptr(),
                        libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL,
                        0o644,
                    );
                    if fd >= 0 {
                        libc::close(fd);
                    }
                    libc::unlink(name.as_ptr());
                }),
            ),
        ];
        for (k, v) in rows {
            println!("{k} {v:.0}");
        }
    }
}

/// Installs `prog` in a fresh child and returns the µs the install took.
#[cfg(target_os = "linux")]
fn attach_once(install: &dyn Fn() -> Result<(), String>) -> Option<f64> {
    let mut pipe = [0i32; 2];
    // SAFETY: plain pipe/fork/wait; the child only installs, writes, exits.
    unsafe {
        if libc::pipe(pipe.as_mut_ptr()) != 0 {
            return None;
        }
        let pid = libc::fork();
        if pid == 0 {
            libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
            let t = Instant::now();
            let ok = install().is_ok();
            let us = t.elapsed().as_secs_f64() * 1e6;
            let v: f64 = if ok { us } else { -1.0 };
            libc::write(pipe[1], (&v as *const f64).cast(), 8);
            libc::_exit(0);
        }
        libc::close(pipe[1]);
        let mut v = 0f64;
        let n = libc::read(pipe[0], (&mut v as *mut f64).cast(), 8);
        libc::close(pipe[0]);
        let mut ws = 0;
        libc::waitpid(pid, &mut ws, 0);
        (n == 8 && v >= 0.0).then_some(v)
    }
}

#[cfg(target_os = "linux")]
fn attach(n: usize) {
    use dcjail::backend::seccomp::{self, FsRules, Inet, Meta, SocketRules, Unix};
    let none = SocketRules {
        unix: Unix::Named,
        inet: Inet::Deny,
    };
    let modes = [
        ("danger-full-access", FsRules::OPEN),
        (
            "read-only",
            FsRules {
                meta: Meta::Refuse,
                create: false,
                observe: false,
            },
        ),
        (
            "workspace-write",
            FsRules {
                meta: Meta::Broker,
                create: true,
                observe: false,
            },
        ),
    ];
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    };
    let trivial = || -> Result<(), String> {
        let mut f = [libc::sock_filter {
            code: 0x06,
            jt: 0,
            jf: 0,
            k: 0x7fff_0000,
        }];
        let p = libc::sock_fprog {
            len: 1,
            filter: f.as_mut_ptr(),
        };
        // SAFETY: a one-instruction program that outlives the call.
        let r = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0,
                &p as *const libc::sock_fprog,
            )
        };
        (r == 0).then_some(()).ok_or_else(|| "seccomp".to_string())
    };
    let t: Vec<f64> = (0..n).filter_map(|_| attach_once(&trivial)).collect();
    println!("one-instruction 1 {:.1}", median(t));
    for (name, fs) in modes {
        let Ok(prog) = seccomp::compile(none, fs) else {
            eprintln!("syscall_bench: cannot compile the {name} filter");
            std::process::exit(1);
        };
        // The filters as the second stage installs them (inside::stage2):
        // the last one with a listener when the rules hand calls to a broker.
        let raw = prog.raw();
        let install = || -> Result<(), String> {
            for (i, f) in raw.iter().enumerate() {
                let p = libc::sock_fprog {
                    len: (f.len() / 8) as u16,
                    filter: f.as_ptr().cast_mut().cast(),
                };
                let flags: libc::c_ulong = if fs.brokered() && i + 1 == raw.len() {
                    (1 << 3) | (1 << 5)
                } else {
                    0
                };
                // SAFETY: a sock_fprog pointing at the program's bytes,
                // which outlive the call.
                let r = unsafe {
                    libc::syscall(
                        libc::SYS_seccomp,
                        libc::SECCOMP_SET_MODE_FILTER,
                        flags,
                        &p as *const libc::sock_fprog,
                    )
                };
                if r < 0 {
                    return Err("seccomp".into());
                }
                if flags != 0 {
                    // SAFETY: the listener just made, ours to close.
                    unsafe { libc::close(r as i32) };
                }
            }
            Ok(())
        };
        let t: Vec<f64> = (0..n).filter_map(|_| attach_once(&install)).collect();
        println!("{name} {} {:.1}", prog.len(), median(t));
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n = |d: usize| args.get(1).and_then(|a| a.parse().ok()).unwrap_or(d);
    match args.first().map(String::as_str) {
        Some("calls") => calls(n(200_000)),
        #[cfg(target_os = "linux")]
        Some("attach") => attach(n(51)),
        _ => {
            eprintln!("usage: syscall_bench calls [N] | attach [N]");
            std::process::exit(2);
        }
    }
}
