//! The binary's entry point. It is a C `main` rather than Rust's, because
//! dcjail starts on every call a coding agent makes (twice under bwrap):
//! Rust's runtime start-up reads /proc/self/maps to place a stack guard and
//! installs stack-overflow handlers, which costs more than everything dcjail
//! decides. What dcjail relies on from that start-up is done here instead:
//! fds 0–2 are never left closed while dcjail runs (`exec::stdfds`: the
//! command gets them closed again), and SIGPIPE is ignored (a proxy thread
//! writing to a closed socket must get EPIPE, not kill the supervisor).
// The unit-test harness (`cargo test --all-targets` builds one for this
// binary too) brings its own `main`.
#![cfg_attr(not(test), no_main)]

/// Taken from the C runtime byte-exact, so it does not depend on how std
/// captures argv on this platform (without Rust's `main` some do not).
///
/// # Safety
/// Called by the C runtime with `argc` valid C strings in `argv`.
#[cfg(not(test))]
#[no_mangle]
pub unsafe extern "C" fn main(argc: libc::c_int, argv: *const *const libc::c_char) -> libc::c_int {
    use std::ffi::{CStr, OsString};
    use std::os::unix::ffi::OsStringExt;
    let mut args = Vec::with_capacity(usize::try_from(argc).unwrap_or(0));
    for i in 0..usize::try_from(argc).unwrap_or(0) {
        // SAFETY: the C runtime passes `argc` valid NUL-terminated strings.
        let p = unsafe { *argv.add(i) };
        if p.is_null() {
            break;
        }
        // SAFETY: as above.
        let a = unsafe { CStr::from_ptr(p) };
        args.push(OsString::from_vec(a.to_bytes().to_vec()));
    }
    dcjail::exec::stdfds::guard();
    // SAFETY: setting one signal disposition; single-threaded here.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    std::process::exit(dcjail::cli::main_with(args));
}
