//! Other tools' sandbox settings as a dcjail policy: Anthropic's sandbox
//! runtime (`srt`) settings JSON, the `sandbox` block (and the Read, Edit and
//! WebFetch permission rules the sandbox is built from) of a Claude Code
//! `settings.json`, and the sandbox keys of a Codex `config.toml`. One file
//! per source tool; this one holds what they share: the strict reader that
//! makes every key either honoured or an error naming it, and the TOML that
//! `dcjail import` prints.
//!
//! It converts text it is given and never decides; only `main` (`dcjail
//! import`) reads the one file named on its command line.

mod claude_code;
mod codex;
mod srt;

use crate::error::{Refusal, Result};
use crate::fields::FieldValue;
use crate::policy::{Approval, Origin, Outcome, Policy, PolicyFormat};
use serde_json::{Map, Value};
use std::path::Path;

/// The tools whose settings can be imported.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Source {
    /// Anthropic's sandbox runtime settings JSON (~/.srt-settings.json)
    Srt,
    /// Claude Code's settings.json (its `sandbox` block and Read/Edit/WebFetch rules)
    ClaudeCode,
    /// Codex's config.toml (sandbox_mode, [sandbox_workspace_write])
    Codex,
}

impl Source {
    pub fn format(self) -> PolicyFormat {
        match self {
            Source::Srt => PolicyFormat::Srt,
            Source::ClaudeCode => PolicyFormat::ClaudeCode,
            Source::Codex => PolicyFormat::Codex,
        }
    }
}

/// dcjail import: print the dcjail policy (TOML) equivalent to another tool's settings.
#[derive(clap::Parser, Debug)]
#[command(
    name = "dcjail import",
    about = "dcjail import: print the dcjail policy (TOML) equivalent to another tool's settings",
    after_help = "A setting dcjail cannot honour is an error naming it (exit 125), never dropped. `dcjail --policy-format TOOL --policy FILE` reads the same file directly."
)]
pub struct ImportCli {
    /// The tool the settings are for: srt, claude-code, codex
    #[arg(value_name = "TOOL")]
    pub tool: Source,
    /// Its settings file
    #[arg(value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    pub file: std::path::PathBuf,
}

pub fn command() -> clap::Command {
    <ImportCli as clap::CommandFactory>::command()
}

/// `dcjail import TOOL FILE`: the TOML on stdout, exit 0; or one line, 125.
pub fn main(args: &[std::ffi::OsString]) -> i32 {
    let mut a = vec![std::ffi::OsString::from("dcjail import")];
    a.extend(args.iter().cloned());
    let cli: ImportCli = match crate::usage::parse(a) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let format = cli.tool.format();
    let name = cli.file.display().to_string();
    let imported = crate::policy::read_policy_file(&cli.file)
        .and_then(|text| convert(format, &text, &name, Some(&cli.file)));
    match imported {
        Ok(imp) => {
            let header = format!(
                "dcjail policy imported from {format} settings {name}\nby `dcjail import {format}`; each imported line says which setting it came from."
            );
            crate::error::print_out(&to_toml(&imp, &header));
            crate::error::SUCCESS
        }
        Err(r) => {
            eprintln!("{}", r.line());
            r.exit_code()
        }
    }
}

/// A converted file: the policy, and what only a hook can use.
#[derive(Clone, Debug)]
pub struct Imported {
    pub policy: Policy,
    /// Claude Code's `sandbox.autoAllowBashIfSandboxed`: whether a hook
    /// approves the sandboxed call itself (`true`, the default) or lets the
    /// user confirm it.
    pub auto_allow: Option<bool>,
}

/// Converts `text` (a file named `name`, at `path` when it is one) from
/// another tool's format. The result starts from dcjail's embedded default
/// (the call is taken as approved, as with no policy file): the other
/// tools' files describe the sandbox, not a permission decision.
pub fn convert(
    format: PolicyFormat,
    text: &str,
    name: &str,
    path: Option<&Path>,
) -> Result<Imported> {
    let mut imp = Imported {
        policy: base_policy(),
        auto_allow: None,
    };
    let cx = Cx {
        format,
        name,
        text,
        path,
    };
    match format {
        PolicyFormat::Dcjail => {
            return Err(Refusal::usage(
                "dcjail's own format needs no import; use --policy FILE",
            ))
        }
        PolicyFormat::Srt => srt::convert(&cx, &mut imp)?,
        PolicyFormat::ClaudeCode => claude_code::convert(&cx, &mut imp)?,
        PolicyFormat::Codex => codex::convert(&cx, &mut imp)?,
    }
    imp.policy.validate()?;
    Ok(imp)
}

fn base_policy() -> Policy {
    let mut p = Policy {
        version: Some(1),
        ..Policy::default()
    };
    p.permission.outcome = Outcome::Allow;
    p.permission.approval = Approval::Granted;
    p
}

/// What every converter needs to word its errors and its origins.
pub(crate) struct Cx<'a> {
    pub format: PolicyFormat,
    pub name: &'a str,
    pub text: &'a str,
    pub path: Option<&'a Path>,
}

impl Cx<'_> {
    /// `name:line: key `k`: msg`, the line found where the key is written.
    pub fn err(&self, key: &str, msg: impl AsRef<str>) -> Refusal {
        let msg = crate::error::one_line(msg.as_ref());
        match self.line_of(key) {
            Some(l) => Refusal::policy(format!("{}:{l}: key `{key}`: {msg}", self.name)),
            None => Refusal::policy(format!("{}: key `{key}`: {msg}", self.name)),
        }
    }

    /// The first line where the last part of `key` is written as a key
    /// (`"name"` in JSON, `name =` or `[name]` in TOML).
    fn line_of(&self, key: &str) -> Option<usize> {
        // A TOML table written under its whole name (`[profiles.p.x]`).
        let header = format!("[{key}]");
        if let Some(i) = self.text.lines().position(|l| l.trim() == header) {
            return Some(i + 1);
        }
        let last = key.rsplit('.').next().unwrap_or(key);
        let last = last.split('[').next().unwrap_or(last);
        let json = format!("\"{last}\"");
        self.text
            .lines()
            .position(|l| {
                let t = l.trim_start();
                t.contains(&json)
                    || t.starts_with(&format!("{last} "))
                    || t.starts_with(&format!("{last}="))
                    || t.starts_with(&format!("[{last}]"))
                    || t.ends_with(&format!(".{last}]"))
            })
            .map(|i| i + 1)
    }

    /// Records that `field` came from the other tool's `key`.
    pub fn origin(&self, imp: &mut Imported, field: &str, key: &str) {
        let from = format!("{} {}: {key}", self.format, self.name);
        if !imp
            .policy
            .origins
            .iter()
            .any(|o| o.field == field && o.from == from)
        {
            imp.policy.origins.push(Origin {
                field: field.to_string(),
                from,
            });
        }
    }

    /// Parses the whole text as one JSON object.
    pub fn json_object(&self) -> Result<Map<String, Value>> {
        match serde_json::from_str::<Value>(self.text) {
            Ok(Value::Object(m)) => Ok(m),
            Ok(_) => Err(Refusal::policy(format!(
                "{}: a {} settings file is one JSON object",
                self.name, self.format
            ))),
            Err(e) => {
                let full = e.to_string();
                let suffix = format!(" at line {} column {}", e.line(), e.column());
                let msg = full.strip_suffix(&suffix).unwrap_or(&full);
                Err(Refusal::policy(format!(
                    "{}:{}: not valid JSON: {}",
                    self.name,
                    e.line(),
                    crate::error::one_line(msg)
                )))
            }
        }
    }
}

/// A JSON object read strictly: every key must be taken by the converter
/// or [`Obj::finish`] refuses naming the first one left.
pub(crate) struct Obj<'a> {
    map: &'a Map<String, Value>,
    /// Dotted path of this object in the file (`network`), empty at the top.
    at: String,
    taken: Vec<&'a str>,
}

impl<'a> Obj<'a> {
    pub fn new(map: &'a Map<String, Value>, at: &str) -> Obj<'a> {
        Obj {
            map,
            at: at.to_string(),
            taken: Vec::new(),
        }
    }

    pub fn key(&self, k: &str) -> String {
        if self.at.is_empty() {
            k.to_string()
        } else {
            format!("{}.{k}", self.at)
        }
    }

    /// The value of `k`, marking it as honoured; `null` reads as absent.
    pub fn take(&mut self, k: &str) -> Option<&'a Value> {
        let (name, v) = self.map.get_key_value(k)?;
        self.taken.push(name.as_str());
        (!v.is_null()).then_some(v)
    }

    pub fn object(&mut self, cx: &Cx, k: &str) -> Result<Option<Obj<'a>>> {
        match self.take(k) {
            None => Ok(None),
            Some(Value::Object(m)) => Ok(Some(Obj::new(m, &self.key(k)))),
            Some(_) => Err(cx.err(&self.key(k), "expected an object")),
        }
    }

    pub fn strings(&mut self, cx: &Cx, k: &str) -> Result<Vec<String>> {
        match self.take(k) {
            None => Ok(Vec::new()),
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s.clone()),
                    _ => Err(cx.err(&self.key(k), "expected a list of strings")),
                })
                .collect(),
            Some(_) => Err(cx.err(&self.key(k), "expected a list of strings")),
        }
    }

    pub fn bool(&mut self, cx: &Cx, k: &str) -> Result<Option<bool>> {
        match self.take(k) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(cx.err(&self.key(k), "expected true or false")),
        }
    }

    /// A switch dcjail can only honour in one position (`false` for a
    /// weakening): the other one is an error that says why.
    pub fn only(&mut self, cx: &Cx, k: &str, ok: bool, why: &str) -> Result<()> {
        match self.bool(cx, k)? {
            Some(b) if b != ok => Err(cx.err(&self.key(k), why)),
            _ => Ok(()),
        }
    }

    /// A list or object dcjail can only honour empty.
    pub fn empty(&mut self, cx: &Cx, k: &str, why: &str) -> Result<()> {
        match self.take(k) {
            None => Ok(()),
            Some(Value::Array(a)) if a.is_empty() => Ok(()),
            Some(Value::Object(m)) if m.is_empty() => Ok(()),
            Some(_) => Err(cx.err(&self.key(k), why)),
        }
    }

    /// Refuses the first key nobody took.
    pub fn finish(self, cx: &Cx, reads: &str) -> Result<()> {
        match self.map.keys().find(|k| !self.taken.contains(&k.as_str())) {
            None => Ok(()),
            Some(k) => Err(cx.err(
                &self.key(k),
                format!(
                    "dcjail cannot honour this {} setting (it reads: {reads})",
                    cx.format
                ),
            )),
        }
    }
}

/// Whether a written path has glob characters.
pub(crate) fn is_glob(s: &str) -> bool {
    s.contains(['*', '?', '[', '{'])
}

/// The dcjail policy of `imp` as TOML: every field that differs from the
/// schema default, each imported one followed by the setting it came from.
pub fn to_toml(imp: &Imported, header: &str) -> String {
    let p = &imp.policy;
    let defaults = Policy::default().fields();
    let mut out = String::new();
    for l in header.lines() {
        // A comment may hold no control character but tab.
        out.push_str(&format!("# {}\n", crate::error::one_line(l)));
    }
    let mut table = "";
    for ((field, value), (_, default)) in p.fields().into_iter().zip(defaults) {
        if value == FieldValue::Absent || (value == default && field != "sandbox.mode") {
            continue;
        }
        let (t, key) = match field.rsplit_once('.') {
            Some((t, k)) => (t, k),
            None => ("", field),
        };
        if t != table {
            out.push_str(&format!("\n[{t}]\n"));
            table = t;
        }
        // The value is printed whole: `toml_value` escapes every character
        // a terminal would not show, and cutting it to a line's length
        // would leave a string without its closing quote. Only the comment
        // of where it came from is cut (it ends at the line's end anyway).
        out.push_str(&format!("{key} = {}", toml_value(&value)));
        let from: Vec<&str> = p
            .origins
            .iter()
            .filter(|o| o.field == field)
            .map(|o| o.from.as_str())
            .collect();
        if !from.is_empty() {
            let from = format!("from {}", from.join("; "));
            out.push_str(&format!("  # {}", crate::error::one_line(&from)));
        }
        out.push('\n');
    }
    out
}

fn toml_value(v: &FieldValue) -> String {
    match v {
        FieldValue::Absent => String::new(),
        FieldValue::Str(s) => toml_string(s),
        FieldValue::Int(i) => i.to_string(),
        FieldValue::Bool(b) => b.to_string(),
        FieldValue::List(l) => format!(
            "[{}]",
            l.iter()
                .map(|s| toml_string(s))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A TOML basic string: quote, backslash and control characters escaped.
pub fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            // Also what a terminal would not show as it is (bidi controls,
            // zero-width and format characters): TOML's own escapes, so the
            // line stays valid TOML after `one_line`, which has nothing
            // left to escape in it.
            c if c.is_control() || crate::error::hidden(c) => {
                let u = c as u32;
                if u <= 0xFFFF {
                    out.push_str(&format!("\\u{u:04X}"));
                } else {
                    out.push_str(&format!("\\U{u:08X}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `allowAllUnixSockets` (refused: it would include the user's tmux server)
/// and `allowUnixSockets` (each named socket kept), as srt and Claude
/// Code's sandbox both write them.
pub(crate) fn unix_sockets(cx: &Cx, imp: &mut Imported, net: &mut Obj) -> crate::error::Result<()> {
    if net.bool(cx, "allowAllUnixSockets")? == Some(true) {
        return Err(cx.err(
            &net.key("allowAllUnixSockets"),
            "dcjail reaches only the unix sockets a policy names (every socket would include \
             the user's tmux server, which runs commands outside the sandbox); list them in \
             allowUnixSockets instead",
        ));
    }
    let key = net.key("allowUnixSockets");
    for p in net.strings(cx, "allowUnixSockets")? {
        let p = std::path::PathBuf::from(p);
        let list = &mut imp.policy.sandbox.network.allow_unix_sockets;
        if !list.contains(&p) {
            list.push(p);
        }
        cx.origin(imp, "sandbox.network.allow_unix_sockets", &key);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_output_parses_back_to_the_same_policy() {
        let mut imp = Imported {
            policy: base_policy(),
            auto_allow: None,
        };
        imp.policy.sandbox.filesystem.deny_read =
            vec!["~/.ssh".into(), "a\"b\\c\nd\u{7f}".into(), "**/.env".into()];
        imp.policy.sandbox.network.allow_domains = vec!["*.example.com:443".into()];
        imp.policy.sandbox.network.mode = crate::policy::NetMode::Allowlist;
        imp.policy.sandbox.mode = crate::policy::SandboxMode::WorkspaceWrite;
        imp.policy.origins.push(Origin {
            field: "sandbox.filesystem.deny_read".into(),
            from: "srt x.json: filesystem.denyRead\nnewline".into(),
        });
        let text = to_toml(&imp, "imported\nfrom a\rtest\u{7}");
        let back = crate::policy::parse(&text, "t").unwrap();
        let mut want = imp.policy.clone();
        want.origins.clear();
        assert_eq!(back, want, "{text}");
    }

    #[test]
    fn srt_denying_every_domain_imports_as_no_network_and_reads_back_so() {
        let json = r#"{"network": {"allowedDomains": ["a.example"], "deniedDomains": ["*"]}}"#;
        let imp = convert(PolicyFormat::Srt, json, "s.json", None).unwrap();
        assert_eq!(
            imp.policy.sandbox.network.mode,
            crate::policy::NetMode::None
        );
        assert!(imp.policy.sandbox.network.allow_domains.is_empty());
        let back = crate::policy::parse(&to_toml(&imp, "t"), "t").unwrap();
        assert_eq!(back.sandbox.network, imp.policy.sandbox.network);
    }
}

#[cfg(test)]
mod every_char {
    use super::toml_string;

    /// Every Unicode scalar value, printed by `toml_string`, parses back
    /// (with the same TOML parser the policy loader uses) to itself.
    #[test]
    fn every_character_round_trips_through_toml() {
        let chars: Vec<char> = (0u32..0x11_0000).filter_map(char::from_u32).collect();
        // One key per block of 4096 characters: one parse, and a failure
        // still names the block it is in.
        let blocks: Vec<String> = chars.chunks(4096).map(|b| b.iter().collect()).collect();
        let doc: String = blocks
            .iter()
            .enumerate()
            .map(|(i, b)| format!("k{i} = {}\n", toml_string(b)))
            .collect();
        let t: toml::Table = toml::from_str(&doc).unwrap();
        for (i, b) in blocks.iter().enumerate() {
            let got = t.get(&format!("k{i}")).and_then(|v| v.as_str());
            assert_eq!(got, Some(b.as_str()), "block {i}");
        }
    }

    /// A value longer than a terminal line is printed whole (the fuzz
    /// smoke found a list of paths cut to one line's length, its string
    /// left open), and parses back to the same policy.
    #[test]
    fn a_value_longer_than_a_line_is_printed_whole() {
        use super::{base_policy, to_toml, Imported};
        let mut imp = Imported {
            policy: base_policy(),
            auto_allow: None,
        };
        let long: Vec<std::path::PathBuf> = (0..200)
            .map(|i| format!("/very/long/path/{i}\u{202e}").into())
            .collect();
        imp.policy.sandbox.filesystem.deny_write = long.clone();
        let toml = to_toml(&imp, "t");
        let back = crate::policy::parse(&toml, "t.toml").unwrap();
        assert_eq!(back.sandbox.filesystem.deny_write, long);
        assert!(toml
            .lines()
            .all(|l| l.chars().all(|c| !crate::error::hidden(c))));
    }
}
