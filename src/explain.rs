//! `dcjail explain` and `--report`: the decision and the enforcement plan as
//! JSON. It runs nothing and exits with the status a real run would have.

use crate::backend::{self, Choice};
use crate::cli::PolicyArgs;
use crate::error::Refusal;
use crate::plan::{PathRule, Plan};
use serde_json::{json, Value};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The pipeline `explain` runs: `decide_and_plan`, also filling `sources`.
pub type DecideSourced =
    fn(&PolicyArgs, Vec<OsString>, Option<&mut Value>) -> Result<Plan, Refusal>;

pub fn explain(pa: &PolicyArgs, command: Vec<OsString>, decide_and_plan: DecideSourced) -> i32 {
    let mut sources = Value::Null;
    let (mut value, code) = match decide_and_plan(pa, command, Some(&mut sources)) {
        Err(r) => (refusal_json(&r), r.exit_code()),
        Ok(plan) => match backend::select(&plan) {
            Err(r) => {
                let mut v = refusal_json(&r);
                v["plan"] = plan_json(&plan);
                // Off macOS a seatbelt run is refused, but a reviewer can still
                // read exactly the profile and parameters macOS would run.
                if plan.backend == crate::policy::BackendChoice::Seatbelt {
                    v["seatbelt"] = backend::seatbelt::describe(&plan);
                }
                (v, r.exit_code())
            }
            Ok(choice) => (run_json(&plan, &choice), 0),
        },
    };
    if !sources.is_null() {
        value["sources"] = sources;
    }
    println!(
        "{}",
        serde_json::to_string_pretty(&value).unwrap_or_default()
    );
    code
}

/// `sources`: for each policy field, where its value came from: an option,
/// an imported setting of another tool, the policy file (or descriptor, or
/// the embedded profile), or `default`.
pub fn sources_json(
    policy: &crate::policy::Policy,
    o: &crate::policy::Overrides,
    file: Option<&Path>,
) -> Value {
    let imported = o
        .policy_format
        .filter(|f| *f != crate::policy::PolicyFormat::Dcjail)
        .map(|f| format!("{f} import (dcjail's default: the call is taken as approved)"));
    let from = match (imported, file, o.policy_fd) {
        (Some(i), _, _) => i,
        (None, Some(f), _) => format!("policy file {}", f.display()),
        (None, None, Some(n)) => format!("policy descriptor {n}"),
        (None, None, None) => "embedded profile profiles/default.toml".to_string(),
    };
    let mut m = serde_json::Map::new();
    for (field, src) in policy.sources(o, &from) {
        m.insert(field.to_string(), Value::String(src));
    }
    Value::Object(m)
}

pub fn refusal_json(r: &Refusal) -> Value {
    json!({
        "decision": r.reason.decision(),
        "reason": r.reason.word(),
        "gate": r.gate.map(|g| g.word()),
        "message": r.message,
        "exit_status": r.exit_code(),
        "backend": Value::Null,
        "plan": Value::Null,
    })
}

pub fn run_json(plan: &Plan, choice: &Choice) -> Value {
    let mut v = json!({
        "decision": "run",
        "reason": Value::Null,
        "gate": Value::Null,
        "message": if plan.sandboxed { format!("runs under the {} backend", choice.backend_name()) } else { "runs unsandboxed (sandbox.enabled = false)".to_string() },
        "exit_status": 0,
        "backend": choice.kind.map(|k| k.name()),
        "passed_over": choice.passed_over.iter().map(|(k, why)| json!({"backend": k.name(), "why": why})).collect::<Vec<_>>(),
        "plan": plan_json(plan),
        "launch": backend::describe(plan, choice),
    });
    v["plan"]["filesystem"]["glob_walk"] =
        crate::walk::describe(choice.globs.as_ref(), choice.kind.map(|k| k.name()));
    v["plan"]["filesystem"]["hard_links"] = match &choice.links {
        Some(l) => l.describe(),
        None => Value::Null,
    };
    v
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

fn paths(v: &[PathBuf]) -> Vec<String> {
    v.iter().map(|p| s(p)).collect()
}

fn rules(v: &[PathRule]) -> Vec<String> {
    v.iter()
        .map(|r| match r {
            PathRule::Literal(p) => s(p),
            PathRule::Glob(g) => g.pattern.clone(),
        })
        .collect()
}

pub fn plan_json(plan: &Plan) -> Value {
    json!({
        "argv": plan.argv.iter().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>(),
        "cwd": s(&plan.cwd),
        "workspace": s(&plan.workspace),
        "worktree": plan.worktree.as_deref().map(s),
        "mode": plan.mode.word(),
        "tool": plan.tool.word(),
        "sandboxed": plan.sandboxed,
        "filesystem": {
            "access": plan.fs.access.word(),
            "writable": paths(&plan.fs.writable),
            "deny_read": rules(&plan.fs.deny_read),
            "allow_read": rules(&plan.fs.allow_read),
            "deny_write": rules(&plan.fs.deny_write),
            "protected": paths(&plan.fs.protected),
        },
        "network": {
            "mode": plan.effective_net().word(),
            "allow_domains": plan.net.allow.iter().map(|d| d.to_string()).collect::<Vec<_>>(),
            "deny_domains": plan.net.deny.iter().map(|d| d.to_string()).collect::<Vec<_>>(),
            "allow_unix_sockets": plan.net.allow_unix_sockets,
        },
        "timeout": plan.timeout.map(|t| t.as_secs()),
    })
}

/// Writes a run report; a failure is said on stderr, never fatal.
pub fn write_report(path: &Path, v: &Value) {
    let text = serde_json::to_string_pretty(v).unwrap_or_default() + "\n";
    if let Err(e) = std::fs::write(path, text) {
        eprintln!(
            "dcjail: warning: cannot write report `{}`: {}",
            path.display(),
            crate::policy::io_words(&e)
        );
    }
}
