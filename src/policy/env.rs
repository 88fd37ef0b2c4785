//! `[sandbox.env]`: what of dcjail's own environment the command inherits.
//! By default every variable whose name looks like a credential is removed
//! (`CREDENTIALS`: the usual suffixes and the well-known names of cloud
//! providers, code hosts, package registries and model APIs); `pass` keeps
//! names that would be removed, `deny` removes more and beats `pass`.
//! Names only: no value is ever read here, and nothing is printed but names.
//!
//! Owns: the section's schema, the built-in list, and matching a name.
//! Must never: read a value, or decide what dcjail itself sets
//! (`DCJAIL*`, the proxy's variables), which the command always gets.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Env {
    /// Remove the variables whose names look like credentials.
    pub scrub_credentials: bool,
    /// Names or globs kept even when they look like credentials.
    pub pass: Vec<String>,
    /// Names or globs removed (beats `pass`).
    pub deny: Vec<String>,
}

impl Default for Env {
    fn default() -> Self {
        Env {
            scrub_credentials: true,
            pass: Vec::new(),
            deny: Vec::new(),
        }
    }
}

/// Names that look like credentials, matched without regard to case.
pub const CREDENTIALS: &[&str] = &[
    // The usual shapes.
    "*_TOKEN",
    "*_TOKEN_*",
    "*_SECRET",
    "*_SECRET_*",
    "SECRET_*",
    "*_KEY",
    "*_KEY_ID",
    "*PASSWORD*",
    "*PASSWD*",
    "*PASSPHRASE*",
    "*_CREDENTIALS",
    "*_AUTH",
    // Well-known names the shapes miss.
    "GOOGLE_APPLICATION_CREDENTIALS",
    "DOCKER_AUTH_CONFIG",
    "NPM_CONFIG__AUTH",
    "*_PAT",
    "KUBECONFIG_DATA",
];

/// Why a name is removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Removed {
    /// It matches `deny`.
    Denied,
    /// It looks like a credential and `pass` does not keep it.
    Credential,
    /// A credential of `sandbox.network.credentials` reads it.
    Bound,
}

impl Removed {
    pub fn word(self) -> &'static str {
        match self {
            Removed::Denied => "deny",
            Removed::Credential => "looks like a credential",
            Removed::Bound => "read by sandbox.network.credentials",
        }
    }
}

/// The section, compiled.
#[derive(Clone, Debug)]
pub struct EnvRules {
    scrub: bool,
    credentials: GlobSet,
    pass: GlobSet,
    deny: GlobSet,
    /// Read by a credential the proxy adds: always removed.
    bound: Vec<String>,
}

impl EnvRules {
    /// Compiles the section; a bad pattern is named with its key.
    pub fn new(e: &Env) -> Result<EnvRules, String> {
        let builtin: Vec<String> = CREDENTIALS.iter().map(|s| s.to_string()).collect();
        Ok(EnvRules {
            scrub: e.scrub_credentials,
            credentials: set(&builtin, "built-in")?,
            pass: set(&e.pass, "sandbox.env.pass")?,
            deny: set(&e.deny, "sandbox.env.deny")?,
            bound: Vec::new(),
        })
    }

    /// These exact names removed too, whatever `pass` says.
    pub fn with_bound(mut self, names: Vec<String>) -> EnvRules {
        self.bound = names;
        self
    }

    /// Whether (and why) the variable `name` is kept from the command.
    pub fn removes(&self, name: &str) -> Option<Removed> {
        if self.bound.iter().any(|b| b == name) {
            return Some(Removed::Bound);
        }
        if self.deny.is_match(name) {
            return Some(Removed::Denied);
        }
        if self.scrub && self.credentials.is_match(name) && !self.pass.is_match(name) {
            return Some(Removed::Credential);
        }
        None
    }
}

fn set(patterns: &[String], key: &str) -> Result<GlobSet, String> {
    let mut b = GlobSetBuilder::new();
    for p in patterns {
        if p.is_empty() || p.contains(['=', '\0', '/']) || p.chars().any(char::is_whitespace) {
            return Err(format!(
                "{key}: `{}` is not a variable name or a glob of names (no `=`, `/`, blank or empty)",
                crate::error::one_line(p)
            ));
        }
        let g = GlobBuilder::new(p)
            .case_insensitive(true)
            .literal_separator(false)
            .build()
            .map_err(|e| format!("{key}: `{}`: {e}", crate::error::one_line(p)))?;
        b.add(g);
    }
    b.build().map_err(|e| format!("{key}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(pass: &[&str], deny: &[&str]) -> EnvRules {
        EnvRules::new(&Env {
            scrub_credentials: true,
            pass: pass.iter().map(|s| s.to_string()).collect(),
            deny: deny.iter().map(|s| s.to_string()).collect(),
        })
        .unwrap()
    }

    /// The table docs/policy.md prints: names in, what happens to each.
    pub const TABLE: &[(&str, bool)] = &[
        ("AWS_ACCESS_KEY_ID", true),
        ("AWS_SECRET_ACCESS_KEY", true),
        ("AWS_SESSION_TOKEN", true),
        ("GITHUB_TOKEN", true),
        ("GH_TOKEN", true),
        ("NPM_TOKEN", true),
        ("NODE_AUTH_TOKEN", true),
        ("CARGO_REGISTRY_TOKEN", true),
        ("CARGO_REGISTRIES_MY_TOKEN", true),
        ("TWINE_PASSWORD", true),
        ("PYPI_TOKEN", true),
        ("POETRY_PYPI_TOKEN_PYPI", true),
        ("ANTHROPIC_API_KEY", true),
        ("OPENAI_API_KEY", true),
        ("HF_TOKEN", true),
        ("AZURE_CLIENT_SECRET", true),
        ("GOOGLE_APPLICATION_CREDENTIALS", true),
        ("DOCKER_PASSWORD", true),
        ("SECRET_KEY_BASE", true),
        ("GITHUB_PAT", true),
        ("github_token", true),
        ("PATH", false),
        ("HOME", false),
        ("PWD", false),
        ("SSH_AUTH_SOCK", false),
        ("GPG_TTY", false),
        ("TOKENIZERS_PARALLELISM", false),
        ("KEYTIMEOUT", false),
        ("CARGO_HOME", false),
        ("HTTPS_PROXY", false),
        ("LANG", false),
        ("TERM", false),
    ];

    #[test]
    fn credentials_by_name_and_everything_else_kept() {
        let r = rules(&[], &[]);
        for (name, removed) in TABLE {
            assert_eq!(r.removes(name).is_some(), *removed, "{name}");
        }
    }

    #[test]
    fn pass_keeps_and_deny_beats_pass() {
        let r = rules(&["GITHUB_TOKEN", "NPM_*"], &["NPM_TOKEN", "MY_*"]);
        assert_eq!(r.removes("GITHUB_TOKEN"), None);
        assert_eq!(r.removes("NPM_CONFIG_TOKEN"), None);
        assert_eq!(r.removes("NPM_TOKEN"), Some(Removed::Denied));
        assert_eq!(r.removes("MY_VAR"), Some(Removed::Denied));
        assert_eq!(r.removes("AWS_SESSION_TOKEN"), Some(Removed::Credential));
    }

    #[test]
    fn scrub_off_keeps_credentials_but_not_deny() {
        let r = EnvRules::new(&Env {
            scrub_credentials: false,
            pass: vec![],
            deny: vec!["X".into()],
        })
        .unwrap();
        assert_eq!(r.removes("GITHUB_TOKEN"), None);
        assert_eq!(r.removes("X"), Some(Removed::Denied));
    }

    #[test]
    fn bad_patterns_are_named() {
        for bad in ["", "A=B", "a b", "x/y", "[abc"] {
            let e = EnvRules::new(&Env {
                scrub_credentials: true,
                pass: vec![bad.into()],
                deny: vec![],
            })
            .unwrap_err();
            assert!(e.starts_with("sandbox.env.pass"), "{bad}: {e}");
        }
    }
}
