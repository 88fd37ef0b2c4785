//! `dcjail doctor`: what this machine can enforce, backend by backend, and
//! why not. Exit 0 when some backend enforces the default policy, else 122.

use crate::backend::{self, Kind};
use serde_json::json;

pub fn doctor(as_json: bool) -> i32 {
    let report = backend::doctor_report();
    let ok = report.iter().any(|r| r.works);
    if as_json {
        let v = json!({
            "ok": ok,
            "backends": report.iter().map(|r| json!({
                "backend": r.kind.name(),
                "works": r.works,
                "details": r.details,
                "fix": r.fix,
            })).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    } else {
        for r in &report {
            println!(
                "{}: {}",
                r.kind.name(),
                if r.works { "works" } else { "does not work" }
            );
            for d in &r.details {
                println!("  {d}");
            }
            if let Some(f) = &r.fix {
                println!("  fix: {f}");
            }
        }
        println!(
            "{}",
            if ok {
                "dcjail can enforce the default policy here."
            } else {
                "dcjail cannot enforce the default policy here: sandboxed runs will be refused (exit 122)."
            }
        );
    }
    if ok {
        0
    } else {
        122
    }
}

/// One backend's answer.
pub struct BackendReport {
    pub kind: Kind,
    pub works: bool,
    pub details: Vec<String>,
    pub fix: Option<String>,
}
