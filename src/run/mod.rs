//! The pipeline of one call, in the order it runs: load the policy the
//! command line names and merge the overrides (`load`), run the gates and
//! build the plan (`decide_and_plan`), pick the backend (`select`) and
//! launch, trying the next backend candidate when one fails to start
//! (`launch`). `explain` is the same pipeline printing instead of launching;
//! `hook` and `worktree enter` reuse its parts. It owns the order of the
//! steps and never parses flags (that is `cli`) or renders a backend.

mod launch;
pub mod source;

use crate::backend::{self, Choice};
use crate::error::{Reason, Refusal, Result};
use crate::plan::{self, Facts, Plan};
use crate::policy::{Mode, Overrides, Policy};
use serde_json::Value;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The policy file the command line names: `--policy`, else DCJAIL_POLICY
/// (unless the policy comes from `--policy-fd`).
pub fn policy_file(o: &Overrides) -> Option<PathBuf> {
    o.gate.policy.clone().or_else(|| {
        std::env::var_os("DCJAIL_POLICY")
            .filter(|v| !v.is_empty() && o.policy_fd.is_none())
            .map(PathBuf::from)
    })
}

/// Loads the policy `o` names, merges `o` into it and validates the result;
/// gathers the facts of the calling process. With `sources`, also says
/// there where each field came from (for `explain`).
pub fn load(o: &Overrides, sources: Option<&mut Value>) -> Result<(Policy, Facts)> {
    let file = policy_file(o);
    o.check()?;
    let mut policy = source::load_for(file.as_deref(), o)?;
    if let Some(s) = sources {
        *s = crate::explain::sources_json(&policy, o, file.as_deref());
    }
    policy.apply(o);
    policy.validate()?;
    let mut facts = Facts::gather_for(&policy)?;
    facts.note_closed(crate::exec::stdfds::closed());
    Ok((policy, facts))
}

/// Runs `gates` on the policy; a plan-blocked call is appended to the plan
/// card (when one is set) before it is refused.
pub fn gate(
    policy: &Policy,
    argv: &[OsString],
    facts: &Facts,
    gates: impl FnOnce(&Policy) -> Result<()>,
) -> Result<()> {
    match gates(policy) {
        Err(r) if r.reason == Reason::PlanBlocked => {
            Err(crate::card::record(policy, argv, facts, r))
        }
        other => other,
    }
}

/// Everything before backend choice: policy, gates 1–5, plan, pre-check.
pub fn decide_and_plan(o: &Overrides, argv: Vec<OsString>) -> Result<Plan> {
    decide_and_plan_sourced(o, argv, None)
}

/// `decide_and_plan`, also saying in `sources` where each field came from.
fn decide_and_plan_sourced(
    o: &Overrides,
    argv: Vec<OsString>,
    sources: Option<&mut Value>,
) -> Result<Plan> {
    let (policy, facts) = load(o, sources)?;
    gate(&policy, &argv, &facts, crate::decide::gates)?;
    plan::build(&policy, argv, &facts)
}

/// The backend that enforces the whole plan on this machine, or the refusal.
pub fn select(plan: &Plan) -> Result<Choice> {
    backend::select(plan)
}

/// A run: the command's exit status, or the refusal's. With `report`, the
/// run's JSON report is written there when it is over.
pub fn run(
    o: &Overrides,
    report: Option<PathBuf>,
    events: Option<i32>,
    command: Vec<OsString>,
) -> i32 {
    let events = match events.map(crate::denials::events_fd).transpose() {
        Ok(e) => e,
        Err(e) => return refuse(&Refusal::usage(e), report.as_deref()),
    };
    let mut plan = match decide_and_plan(o, command) {
        Ok(p) => p,
        Err(r) => return refuse(&r, report.as_deref()),
    };
    plan.observe = plan.sandboxed && crate::denials::wanted(report.is_some(), events);
    crate::exec::caches::prepare(&mut plan);
    // The recording starts before the backend renders: the broker's report
    // descriptor is an input of the program it encodes.
    let mut session = match observed(&mut plan, events) {
        Ok(s) => s,
        Err(r) => return refuse(&r, report.as_deref()),
    };
    let choice = match select(&plan) {
        Ok(c) => c,
        Err(r) => return refuse(&r, report.as_deref()),
    };
    if !plan.sandboxed && plan.worktree.is_none() && plan.mode == Mode::BypassPermissions {
        eprintln!("dcjail: warning: bypassPermissions with the sandbox off and no worktree: running unprotected");
    }
    let mut run_value = report
        .as_ref()
        .map(|_| crate::explain::run_json(&plan, &choice));
    let live = session.as_ref().and_then(crate::denials::Session::live_fd);
    // A report is written after the command exits, so it needs a parent.
    let (status, denied) = {
        let mut pump = || session.as_mut().is_some_and(|s| s.pump(&plan));
        let side = live.map(|fd| crate::exec::Side {
            fd,
            ready: &mut pump,
        });
        launch::launch(&plan, choice, report.is_some(), side, run_value.as_mut())
    };
    let log = match session {
        Some(s) => {
            let log = s.finish(&plan);
            crate::denials::after_run(&log);
            log
        }
        None => crate::denials::Log::default(),
    };
    if let (Some(path), Some(mut v)) = (report, run_value) {
        v["exit_status"] = status.into();
        v["network_denied"] = denied.into();
        crate::denials::into_report(&log, &mut v);
        crate::explain::write_report(&path, &v);
    }
    status
}

/// The denial recording of a run, when it is wanted and every backend
/// that may be chosen has a broker to record with (the Linux ones); its
/// descriptor goes into the plan (`Plan::report_fd`).
fn observed(plan: &mut Plan, events: Option<i32>) -> Result<Option<crate::denials::Session>> {
    let brokered = backend::candidates(plan.backend)
        .iter()
        .all(|k| matches!(k, backend::Kind::Bwrap | backend::Kind::Landlock));
    if !plan.observe || !brokered || cfg!(not(target_os = "linux")) {
        return Ok(None);
    }
    let s = crate::denials::Session::start(events).map_err(Refusal::unavailable)?;
    plan.report_fd = Some(s.fd());
    Ok(Some(s))
}

/// The refusal's one line on stderr (and in the report); its exit status.
fn refuse(r: &Refusal, report: Option<&Path>) -> i32 {
    eprintln!("{}", r.line());
    if let Some(path) = report {
        crate::explain::write_report(path, &crate::explain::refusal_json(r));
    }
    r.exit_code()
}

/// `dcjail explain`: the decision and the plan as JSON on stdout; exits
/// with the status a real run would have, running nothing.
pub fn explain(o: &Overrides, command: Vec<OsString>) -> i32 {
    let mut sources = Value::Null;
    let (mut value, code) = match decide_and_plan_sourced(o, command, Some(&mut sources)) {
        Err(r) => (crate::explain::refusal_json(&r), r.exit_code()),
        Ok(plan) => match select(&plan) {
            Err(r) => {
                let mut v = crate::explain::refusal_json(&r);
                v["plan"] = crate::explain::plan_json(&plan);
                // Off macOS a seatbelt run is refused, but a reviewer can still
                // read exactly the profile and parameters macOS would run.
                if plan.backend == crate::policy::BackendChoice::Seatbelt {
                    v["seatbelt"] = backend::seatbelt::describe(&plan);
                }
                (v, r.exit_code())
            }
            Ok(choice) => (
                crate::explain::run_json(&plan, &choice),
                crate::error::SUCCESS,
            ),
        },
    };
    if !sources.is_null() {
        value["sources"] = sources;
    }
    crate::error::print_out(&(crate::explain::ordered_pretty(&value) + "\n"));
    code
}
