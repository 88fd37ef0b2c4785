//! `dcjail doctor`: what this machine can enforce, backend by backend, every
//! obstacle with its fix, and an overall status. Exit 0 when some backend
//! enforces the default policy, else 122.
//!
//! `--json` is for agents, to show the user what to do before the first
//! refused call. Its shape is versioned by [`SCHEMA`]: a field is only ever
//! added within a version; renaming or removing one makes a new version.

pub use crate::backend::report::{BackendReport, Check, Overall, Report, Status};
use crate::error::Reason;
use serde_json::{json, Value};

/// The version of the `--json` document.
pub const SCHEMA: u32 = 1;

pub fn doctor(as_json: bool) -> i32 {
    let report = crate::backend::doctor_report();
    if as_json {
        crate::error::print_out(
            &(serde_json::to_string_pretty(&to_json(&report)).unwrap_or_default() + "\n"),
        );
    } else {
        crate::error::print_out(&to_text(&report));
    }
    exit_status(&report)
}

/// 0 when some backend enforces the default policy here, else 122.
pub fn exit_status(r: &Report) -> i32 {
    if r.auto().is_some() {
        0
    } else {
        Reason::SandboxUnavailable.exit_code()
    }
}

fn kinds(v: &[crate::backend::Kind]) -> Vec<&'static str> {
    v.iter().map(|k| k.name()).collect()
}

/// The `--json` document (schema [`SCHEMA`]).
pub fn to_json(r: &Report) -> Value {
    json!({
        "schema": SCHEMA,
        "status": r.overall().word(),
        "ok": r.auto().is_some(),
        "auto": r.auto().map(|k| k.name()),
        "exit_status": exit_status(r),
        "os": std::env::consts::OS,
        "summary": summary(r),
        "checks": r.checks.iter().map(|c| json!({
            "id": c.id,
            "status": c.status.word(),
            "backends": kinds(&c.backends),
            "message": c.message,
            "fix": c.fix,
        })).collect::<Vec<_>>(),
        "backends": r.backends.iter().map(|b| json!({
            "backend": b.kind.name(),
            "works": b.works,
            "details": b.details,
            "fix": b.fix,
        })).collect::<Vec<_>>(),
    })
}

/// One sentence on what the status means for the caller.
pub fn summary(r: &Report) -> String {
    match (r.overall(), r.auto()) {
        (Overall::Ok, Some(k)) => format!(
            "dcjail's first choice of backend works here: `auto` uses {}.",
            k.name()
        ),
        (Overall::Degraded, Some(k)) if !r.missing_layers(k).is_empty() => format!(
            "dcjail runs here with {}, without {}: the policies it can hold run, and every feature that needs a missing layer is refused (exit 122) naming the feature and what to change; the details above say which.",
            k.name(),
            r.missing_layers(k)
                .iter()
                .map(|c| c.id)
                .collect::<Vec<_>>()
                .join(" and ")
        ),
        (Overall::Degraded, Some(k)) => format!(
            "dcjail can enforce the default policy here with {}, but not every policy: what only {} enforces is refused (exit 122) until the obstacles below are fixed.",
            k.name(),
            crate::backend::candidates(crate::policy::BackendChoice::Auto)
                .first()
                .map(|k| k.name())
                .unwrap_or("another backend")
        ),
        _ => "dcjail cannot enforce the default policy here: sandboxed runs will be refused (exit 122) until an obstacle below is fixed.".into(),
    }
}

/// The human-readable report.
pub fn to_text(r: &Report) -> String {
    let mut o = String::new();
    for b in &r.backends {
        o.push_str(&format!(
            "{}: {}\n",
            b.kind.name(),
            if b.works { "works" } else { "does not work" }
        ));
        for d in &b.details {
            o.push_str(&format!("  {}\n", crate::error::one_line(d)));
        }
        if let Some(f) = &b.fix {
            o.push_str(&format!("  fix: {}\n", crate::error::one_line(f)));
        }
    }
    let notes: Vec<&Check> = r.checks.iter().filter(|c| c.status != Status::Ok).collect();
    if !notes.is_empty() {
        o.push_str("obstacles and notes:\n");
        for c in notes {
            o.push_str(&format!(
                "  {} ({}): {}\n",
                c.id,
                c.status.word(),
                crate::error::one_line(&c.message)
            ));
            if let Some(f) = &c.fix {
                o.push_str(&format!("    fix: {}\n", crate::error::one_line(f)));
            }
        }
    }
    o.push_str(&format!("status: {}\n", r.overall().word()));
    o.push_str(&summary(r));
    o.push('\n');
    o
}
