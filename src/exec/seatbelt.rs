//! Starting the Seatbelt launch (macOS): `sandbox-exec` by absolute path,
//! with the profile and parameters `backend::seatbelt` rendered.

use crate::backend::seatbelt::Rendered;
use crate::plan::Plan;
#[cfg(target_os = "macos")]
use crate::policy::NetMode;

/// Execs sandbox-exec by absolute path (macOS only); returns only on failure.
/// dcjail stays as the parent when something must outlive the exec: the
/// allowlist proxy, a timeout, or a report written after the command
/// (`keep_parent`).
#[cfg(target_os = "macos")]
pub fn launch(plan: &Plan, r: &Rendered, envp: &[std::ffi::CString], keep_parent: bool) -> i32 {
    let refuse = |m: String| {
        let r = crate::error::Refusal::unavailable(m);
        eprintln!("{}", r.line());
        r.exit_code()
    };
    let argv = match r.argv(&plan.argv).and_then(|a| super::c_argv(&a)) {
        Ok(a) => a,
        Err(e) => return refuse(e),
    };
    // argv[0] contains a `/`: exec_command execs it as it is, no PATH search.
    let proxy = plan.effective_net() == NetMode::Allowlist;
    if plan.timeout.is_none() && !proxy && !keep_parent {
        return super::exec_command(&argv, envp, None);
    }
    super::supervise(plan.timeout, || super::exec_command(&argv, envp, None))
}

/// Elsewhere there is nothing to exec; `prepare` never yields a Seatbelt
/// launch off macOS, so reaching this is refused, not attempted.
#[cfg(not(target_os = "macos"))]
pub fn launch(_plan: &Plan, _r: &Rendered, _envp: &[std::ffi::CString], _keep_parent: bool) -> i32 {
    let r = crate::error::Refusal::unavailable("Seatbelt exists only on macOS");
    eprintln!("{}", r.line());
    r.exit_code()
}
