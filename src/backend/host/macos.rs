//! The one question the Seatbelt backend asks macOS itself: whether this
//! process runs under a profile already.

/// Whether this process already runs under a Seatbelt profile. A profile
/// cannot be applied on top of another: sandbox-exec would fail in
/// `sandbox_apply` after dcjail had already decided to run.
pub fn already_sandboxed() -> bool {
    extern "C" {
        // libsystem_sandbox (part of libSystem): with no operation and no
        // filter (SANDBOX_FILTER_NONE = 0) it answers "is pid sandboxed".
        fn sandbox_check(
            pid: libc::pid_t,
            operation: *const libc::c_char,
            filter_type: libc::c_int,
            ...
        ) -> libc::c_int;
    }
    // SAFETY: a query about our own pid with a NULL operation; no pointer is
    // dereferenced and no variadic argument is read for SANDBOX_FILTER_NONE.
    unsafe { sandbox_check(libc::getpid(), std::ptr::null(), 0) > 0 }
}
