//! Where the policy comes from: the file or inherited descriptor the
//! command line names, read in the format it names (dcjail's own schema, or
//! another tool's settings through `import`), else the embedded default.

use crate::error::{Refusal, Result};
use crate::policy::{Overrides, Policy, PolicyFormat};
use std::path::Path;

/// Loads the policy the command line names: the file, or the inherited
/// descriptor of `--policy-fd`, read as `--policy-format` says (dcjail's
/// own schema by default, TOML or JSON), else the embedded default.
pub fn load_for(file: Option<&Path>, o: &Overrides) -> Result<Policy> {
    let format = o.policy_format.unwrap_or(PolicyFormat::Dcjail);
    match (file, o.policy_fd) {
        (Some(_), Some(fd)) => Err(Refusal::usage(format!(
            "--policy-fd {fd} and a policy file both name the policy; give one"
        ))),
        (None, None) if format != PolicyFormat::Dcjail => Err(Refusal::usage(format!(
            "--policy-format {format} needs a policy: --policy FILE, --policy-fd N or DCJAIL_POLICY"
        ))),
        (None, None) => Policy::embedded(),
        (Some(path), None) => {
            let text = crate::policy::read_policy_file(path)?;
            let mut p = from_text(&text, &path.display().to_string(), format, Some(path))?;
            p.source = Some(path.to_path_buf());
            Ok(p)
        }
        (None, Some(fd)) => {
            let name = format!("<descriptor {fd}>");
            let text = crate::policy::read_policy_fd(fd, &name)?;
            let mut p = from_text(&text, &name, format, None)?;
            p.label = Some(name);
            Ok(p)
        }
    }
}

/// Policy text in `format`: dcjail's own schema (TOML or JSON), or other
/// tools' settings through `import`.
pub fn from_text(
    text: &str,
    name: &str,
    format: PolicyFormat,
    path: Option<&Path>,
) -> Result<Policy> {
    match format {
        PolicyFormat::Dcjail => crate::policy::from_dcjail_text(text, name),
        other => crate::import::convert(other, text, name, path).map(|i| i.policy),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dcjail_text_is_json_or_toml_by_its_first_character() {
        let toml = "mode = \"plan\"\n[sandbox.network]\nmode = \"allowlist\"\nallow_domains = [\"a.example\"]\n";
        let json = r#"{"mode": "plan", "sandbox": {"network": {"mode": "allowlist", "allow_domains": ["a.example"]}}}"#;
        assert_eq!(
            from_text(json, "j", PolicyFormat::Dcjail, None).unwrap(),
            crate::policy::parse(toml, "t").unwrap()
        );
    }
}
