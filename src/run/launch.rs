//! Starting the command under the chosen backend: a loop over backend
//! candidates. When a backend fails to start (bwrap cannot make its
//! namespaces, say), the backend says which candidate comes next and the
//! loop tries it; a candidate that cannot enforce the whole plan ends the
//! loop with a refusal, never a weaker launch. Such a change of backend is
//! never silent: a warning on stderr names both backends and why, and the
//! report (`--report`) is the new backend's, with the failed one under
//! `passed_over`.

use crate::backend::{self, Choice, Launch};
use crate::error::{Error, Refusal};
use crate::plan::Plan;
use std::ffi::CString;

/// How one attempt ended.
enum Attempt {
    /// The command ran (or a refusal was said): its exit status.
    Done(i32),
    /// This backend could not start the command; the next candidate may.
    // Only bwrap (Linux) hands over to a next candidate.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    Failed(crate::backend::Unavailable),
}

/// Starts the command as the chosen backend says; returns only on failure
/// or, when supervising, with the command's status and the destinations
/// the allowlist proxy refused. `report` is the run's report so far,
/// rewritten for the backend that runs when the first one could not start.
pub(super) fn launch(
    plan: &Plan,
    mut choice: Choice,
    keep_parent: bool,
    mut side: Option<crate::exec::Side<'_>>,
    mut report: Option<&mut serde_json::Value>,
) -> (i32, Vec<String>) {
    let argv = match crate::exec::c_argv(&plan.argv) {
        Ok(a) => a,
        Err(e) => return (say(&Error::CommandArg(e).into()), Vec::new()),
    };
    if let Err(e) = crate::exec::enter_cwd(&plan.cwd) {
        return (say(&Error::StartDir(e).into()), Vec::new());
    }
    // The secrets are read once, before anything starts; a missing one
    // refuses the run naming the variable or file. Only an allowlist has a
    // proxy to add them (the policy refuses credentials with any other).
    let creds = if plan.effective_net() == crate::policy::NetMode::Allowlist {
        match crate::net::creds::prepare(&plan.net.credentials) {
            Ok(c) => c,
            Err(e) => return (say(&Error::Credential(e).into()), Vec::new()),
        }
    } else {
        None
    };
    let mut denied = Vec::new();
    loop {
        let net = match crate::exec::start_net(plan, &mut choice.launch, creds.as_ref()) {
            Ok(n) => n,
            Err(e) => return (say(&Error::Network(e).into()), denied),
        };
        let mut envp = crate::net::strip_internal(
            crate::exec::environment(plan, choice.backend_name(), &net.env),
            &net,
        );
        // Whatever name a secret hides under in dcjail's environment, its
        // value never reaches the command's.
        if let Some(c) = &creds {
            envp.retain(|e| {
                let b = e.as_bytes();
                let v = b.iter().position(|c| *c == b'=').map_or(b, |i| &b[i + 1..]);
                !c.injector.leaks_in(v)
            });
        }
        let globs = choice.globs.take();
        let attempt = attempt(
            plan,
            choice.launch,
            &argv,
            &envp,
            keep_parent,
            side.as_mut(),
        );
        denied.append(&mut net.finish());
        match attempt {
            Attempt::Done(status) => return (status, denied),
            Attempt::Failed(why) => {
                let failed = format!("{}: {}", why.backend.name(), why.message());
                match backend::fallback(plan, globs, why) {
                    Ok(next) => {
                        eprintln!(
                            "dcjail: warning: {}",
                            crate::error::one_line(&format!(
                                "the backend could not start the sandbox here ({failed}); the \
                                 command runs under the {} backend instead, which holds this \
                                 whole policy (`dcjail doctor` says what to change)",
                                next.backend_name()
                            ))
                        );
                        if let Some(v) = report.as_deref_mut() {
                            *v = crate::explain::run_json(plan, &next);
                        }
                        choice = next;
                    }
                    Err(r) => return (say(&r), denied),
                }
            }
        }
    }
}

/// One backend's launch of the command.
fn attempt(
    plan: &Plan,
    launch: Launch,
    argv: &[CString],
    envp: &[CString],
    keep_parent: bool,
    side: Option<&mut crate::exec::Side<'_>>,
) -> Attempt {
    #[cfg(not(target_os = "linux"))]
    let _ = side;
    #[cfg(target_os = "linux")]
    let side = side.map(|s| crate::exec::Side {
        fd: s.fd,
        ready: &mut *s.ready,
    });
    let path_var = std::env::var_os("PATH");
    let status = match launch {
        Launch::Unsandboxed if plan.timeout.is_none() && !keep_parent => {
            crate::exec::exec_command(argv, envp, path_var.as_deref())
        }
        Launch::Unsandboxed => crate::exec::supervise(plan.timeout, || {
            crate::exec::exec_command(argv, envp, path_var.as_deref())
        }),
        #[cfg(target_os = "linux")]
        Launch::Bwrap(l) => {
            let mut side = side;
            let mut tries = 0;
            loop {
                let s = side.as_mut().map(|s| crate::exec::Side {
                    fd: s.fd,
                    ready: &mut *s.ready,
                });
                match crate::exec::bwrap::launch(plan, &l, argv, envp, s) {
                    Ok(status) => break status,
                    // A path held in place vanished between bwrap's look
                    // and its mount (another process removing a repository
                    // under /tmp): nothing of the command ran, and the next
                    // try skips what is gone (`--bind-try`).
                    Err(e) if tries < 6 && vanished_while_mounting(&e) => tries += 1,
                    Err(e) => return Attempt::Failed(e),
                }
            }
        }
        #[cfg(not(target_os = "linux"))]
        Launch::Bwrap(_) => say(&Error::NotOnThisOs {
            backend: "bwrap",
            os: "Linux",
        }
        .into()),
        #[cfg(target_os = "linux")]
        Launch::Landlock(spec) => landlock(plan, &spec, argv, envp, side),
        Launch::Seatbelt(r) => crate::exec::seatbelt::launch(plan, &r, envp, keep_parent),
    };
    Attempt::Done(status)
}

/// Whether bwrap failed at a bind mount: what it was about to mount can
/// be removed meanwhile (it then says "No such file", "Unable to find … in
/// mount table" or "Unable to remount"). A mount that fails for good fails
/// again on the last try, and that refusal is the one shown.
#[cfg(target_os = "linux")]
fn vanished_while_mounting(e: &crate::backend::Unavailable) -> bool {
    matches!(&e.missing, crate::backend::Missing::Setup(s) if s.at_bind_mount())
}

/// The landlock launch: the layer encoded as the second stage's program
/// and applied in the child by the second stage's own sequence
/// (`inside::stage2`: ruleset, no_new_privs, capabilities, restrict_self,
/// seccomp, descriptors), supervised; the broker serves the same program
/// when the rules need one.
#[cfg(target_os = "linux")]
fn landlock(
    plan: &Plan,
    spec: &crate::backend::landlock::LayerSpec,
    argv: &[CString],
    envp: &[CString],
    side: Option<crate::exec::Side<'_>>,
) -> i32 {
    use crate::inside::{stage2, stub_format::Program};
    let path_var = std::env::var_os("PATH");
    // Compiled once, here: the command installs it and the broker reads it.
    let filter = match crate::backend::seccomp::compile(spec.sockets, spec.fs) {
        Ok(f) => f,
        Err(e) => return say(&Refusal::unavailable(e)),
    };
    let report = plan.report_fd.filter(|_| spec.brokered());
    let bytes = match crate::backend::program::encode_compiled(spec, &[], &filter, report) {
        Ok(p) => p,
        Err(e) => return say(&Error::BrokerProgram(e).into()),
    };
    let program = match Program::parse(&bytes) {
        Ok(p) => p,
        Err(e) => return say(&Error::BrokerProgram(e.to_string()).into()),
    };
    if program.broker() {
        if let Err(f) = stage2::scope_broker(&program) {
            return say(&Refusal::unavailable(crate::exec::fail_text(&f)));
        }
    }
    let apply = |keep: Option<i32>| {
        use std::os::fd::{FromRawFd, OwnedFd};
        let text = |f: stage2::Fail<'_>| crate::exec::fail_text(&f);
        let listener = stage2::apply(&program, program.broker()).map_err(text)?;
        // The channel to the broker and the listener stay open until the
        // listener is handed over; both close on exec.
        stage2::close_fds_but(&program, &[keep.unwrap_or(-1), listener.unwrap_or(-1)])
            .map_err(text)?;
        // SAFETY: the listener is a descriptor seccomp just made for us.
        Ok(listener.map(|l| unsafe { OwnedFd::from_raw_fd(l) }))
    };
    let exec = || crate::exec::exec_command(argv, envp, path_var.as_deref());
    crate::exec::supervise_watched(
        plan.timeout,
        crate::exec::WatchedStart {
            fence: spec.scopes & crate::backend::landlock::scope::SIGNAL != 0,
            apply: &apply,
            exec: &exec,
        },
        program.broker().then_some(bytes.as_slice()),
        side,
    )
}

/// The refusal's one line on stderr; its exit status.
fn say(r: &Refusal) -> i32 {
    eprintln!("{}", r.line());
    r.exit_code()
}
