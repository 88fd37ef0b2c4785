//! The plan card: one JSON line per plan-blocked call, appended in
//! a single write to a file created 0600.

use crate::error::Refusal;
use crate::plan::{absolutize, Facts};
use crate::policy::Policy;
use std::ffi::OsString;
use std::io::Write;

/// Appends the blocked call to the card, when one is set, and hands back the
/// refusal (with a note added when the card could not be written).
pub fn record(policy: &Policy, argv: &[OsString], facts: &Facts, mut refusal: Refusal) -> Refusal {
    let Some(card) = &policy.plan.card else {
        return refusal;
    };
    let base = policy
        .worktree
        .root
        .clone()
        .or_else(|| policy.sandbox.workspace.clone())
        .map(|b| facts.cwd.join(b))
        .unwrap_or_else(|| facts.cwd.clone());
    let result = absolutize(card, &base, facts.home.as_deref())
        .map_err(|r| r.message)
        .and_then(|path| {
            append(&path, &line(policy, argv, facts)).map_err(|e| crate::policy::io_words(&e))
        });
    if let Err(e) = result {
        refusal.message = format!(
            "{} (plan card `{}` not written: {e})",
            refusal.message,
            card.display()
        );
    }
    refusal
}

fn line(policy: &Policy, argv: &[OsString], facts: &Facts) -> String {
    let v = serde_json::json!({
        "time": rfc3339_now(),
        "mode": policy.mode.word(),
        "tool": policy.tool.word(),
        "argv": argv.iter().map(|a| a.to_string_lossy()).collect::<Vec<_>>(),
        "cwd": facts.cwd.to_string_lossy(),
        "paths": policy.paths.iter().map(|p| p.to_string_lossy()).collect::<Vec<_>>(),
    });
    let mut s = v.to_string();
    s.push('\n');
    s
}

fn append(path: &std::path::Path, line: &str) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    // One write: concurrent blocked calls never interleave within a line.
    let n = f.write(line.as_bytes())?;
    if n != line.len() {
        return Err(std::io::Error::other("short write"));
    }
    Ok(())
}

/// Now, as RFC 3339 UTC with seconds.
pub fn rfc3339_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    rfc3339(secs)
}

pub fn rfc3339(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_formats_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_796_000_000), "2026-11-30T00:53:20Z");
    }
}
