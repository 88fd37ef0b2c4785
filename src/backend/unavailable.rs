//! Why a backend cannot run a plan here, typed: which backend, and what was
//! missing. Every such failure is `sandbox-unavailable` (exit 122): the
//! gate chain said run, this machine cannot hold the whole plan with it.
//! The message is the sentence the refusal prints; the kind says who can
//! fix it (install something, change the host, change the policy).

use super::Kind;
use crate::error::Refusal;

/// What a backend lacks for this plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Missing {
    /// The backend exists only on another operating system.
    Platform,
    /// A program it runs is absent or not trusted (bwrap, sandbox-exec).
    Program(String),
    /// The host stops it: a kernel feature, a switch, an outer sandbox.
    Host(String),
    /// The plan holds a rule this backend cannot express.
    Rule(String),
    /// Setting the launch up failed before anything of the command ran (a
    /// descriptor, a pipe, bwrap building its namespaces).
    Setup(String),
}

/// A backend that cannot run this plan here, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unavailable {
    pub backend: Kind,
    pub missing: Missing,
}

impl Unavailable {
    pub fn new(backend: Kind, missing: Missing) -> Unavailable {
        Unavailable { backend, missing }
    }

    /// The backend is not in this build for this OS.
    pub fn platform(backend: Kind) -> Unavailable {
        Unavailable::new(backend, Missing::Platform)
    }

    /// The sentence the refusal and `explain`'s `passed_over` say.
    pub fn message(&self) -> String {
        match &self.missing {
            Missing::Platform => match self.backend {
                Kind::Seatbelt => "Seatbelt exists only on macOS".to_string(),
                k => format!("the {} backend exists only on Linux", k.name()),
            },
            Missing::Program(m) | Missing::Host(m) | Missing::Rule(m) | Missing::Setup(m) => {
                m.clone()
            }
        }
    }
}

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message())
    }
}

impl From<Unavailable> for String {
    fn from(u: Unavailable) -> String {
        u.message()
    }
}

impl From<Unavailable> for Refusal {
    fn from(u: Unavailable) -> Refusal {
        Refusal::unavailable(u.message())
    }
}

/// `Missing::X` for a `Result<_, String>` of one step, on one backend.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) trait Because<T> {
    fn because(self, backend: Kind, kind: fn(String) -> Missing) -> Result<T, Unavailable>;
}

impl<T> Because<T> for Result<T, String> {
    fn because(self, backend: Kind, kind: fn(String) -> Missing) -> Result<T, Unavailable> {
        self.map_err(|m| Unavailable::new(backend, kind(m)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Reason;

    #[test]
    fn every_missing_piece_is_a_sandbox_unavailable_refusal_naming_it() {
        let r: Refusal = Unavailable::new(Kind::Bwrap, Missing::Program("no bwrap".into())).into();
        assert_eq!(r.reason, Reason::SandboxUnavailable);
        assert_eq!(r.message, "no bwrap");
        assert_eq!(
            Unavailable::platform(Kind::Landlock).message(),
            "the landlock backend exists only on Linux"
        );
        assert_eq!(
            Unavailable::platform(Kind::Seatbelt).to_string(),
            "Seatbelt exists only on macOS"
        );
        let e: Result<(), String> = Err("rule".into());
        assert_eq!(
            e.because(Kind::Landlock, Missing::Rule),
            Err(Unavailable::new(
                Kind::Landlock,
                Missing::Rule("rule".into())
            ))
        );
    }
}
