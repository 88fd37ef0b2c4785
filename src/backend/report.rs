//! What `doctor` reports, as data: one answer per backend and one check per
//! thing that can stand in a backend's way, each failing check with its fix.
//! `doctor` prints and serializes these; the backends fill them in.

use super::Kind;

/// One backend's answer: whether it enforces the default policy here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackendReport {
    pub kind: Kind,
    pub works: bool,
    pub details: Vec<String>,
    pub fix: Option<String>,
}

/// How a check came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Nothing in the way.
    Ok,
    /// An obstacle: the backends it names do not work here.
    Fail,
    /// A fact worth knowing that stops nothing (running in a container, WSL2).
    Info,
}

impl Status {
    pub fn word(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Fail => "fail",
            Status::Info => "info",
        }
    }
}

/// One thing `doctor` looked at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    /// Stable identifier (`user-namespaces`, `apparmor-userns`, `landlock`…).
    pub id: &'static str,
    pub status: Status,
    /// The backends this check can stop.
    pub backends: Vec<Kind>,
    pub message: String,
    /// What to do about a failing check.
    pub fix: Option<String>,
}

impl Check {
    pub fn new(id: &'static str, status: Status, backends: &[Kind], message: String) -> Check {
        Check {
            id,
            status,
            backends: backends.to_vec(),
            message,
            fix: None,
        }
    }

    pub fn with_fix(mut self, fix: Option<String>) -> Check {
        self.fix = fix;
        self
    }
}

/// Everything `doctor` says about this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    pub checks: Vec<Check>,
    pub backends: Vec<BackendReport>,
}

/// The overall verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overall {
    /// `auto`'s first choice works here.
    Ok,
    /// Only a later choice works: policies that only the first one
    /// enforces are refused.
    Degraded,
    /// No backend works: every sandboxed run is refused.
    Unavailable,
}

impl Overall {
    pub fn word(self) -> &'static str {
        match self {
            Overall::Ok => "ok",
            Overall::Degraded => "degraded",
            Overall::Unavailable => "unavailable",
        }
    }
}

impl Report {
    /// The backend `auto` uses for the default policy: the first of its
    /// candidates that works.
    pub fn auto(&self) -> Option<Kind> {
        super::candidates(crate::policy::BackendChoice::Auto)
            .into_iter()
            .find(|k| self.backends.iter().any(|b| b.kind == *k && b.works))
    }

    pub fn overall(&self) -> Overall {
        let first = super::candidates(crate::policy::BackendChoice::Auto)
            .into_iter()
            .next();
        match self.auto() {
            None => Overall::Unavailable,
            Some(k) if Some(k) == first && self.missing_layers(k).is_empty() => Overall::Ok,
            Some(_) => Overall::Degraded,
        }
    }

    /// The checks that fail for backend `k` although it works: the layers
    /// it runs without (landlock, seccomp user notification).
    pub fn missing_layers(&self, k: Kind) -> Vec<&Check> {
        self.checks
            .iter()
            .filter(|c| c.status == Status::Fail && c.backends.contains(&k))
            .collect()
    }
}
