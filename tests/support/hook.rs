//! What tests/hook.rs, tests/hook_prefix.rs and tests/hook_files.rs share:
//! the hook inputs (tests/fixtures/hooks/), running `dcjail hook AGENT`,
//! dcjail as Claude Code's shell prefix, and the shell as the agent runs it,
//! each as root or as uid 65534, in an environment cleared of every
//! variable the agents or dcjail read (the suite may itself run inside an
//! agent's session).
//!
//! The crate that includes this declares `mod scratch` (support/scratch.rs).
#![allow(dead_code)]

use crate::scratch;
use serde_json::Value;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The variables the agents and dcjail read, removed from every process a
/// test starts unless the test sets them.
const CLEARED: &[&str] = &[
    "CLAUDE_CODE_SHELL_PREFIX",
    "CLAUDE_CODE_EXECPATH",
    "CLAUDE_PROJECT_DIR",
    "CLAUDE_CODE_SHELL",
    "CLAUDE_CONFIG_DIR",
    "DCJAIL",
    "DCJAIL_BACKEND",
    "DCJAIL_POLICY",
    "DCJAIL_POLICY_FORMAT",
];

pub use crate::scratch::exe as bin;

pub fn fixture(name: &str) -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hooks")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// A fixture with its placeholders filled: the call is made in `cwd`, and
/// `@COMMAND@` / `@PATH@` in its tool input become `value`.
pub fn payload(name: &str, cwd: &Path, value: &str) -> Value {
    let mut v = fixture(name);
    v["cwd"] = cwd.to_str().unwrap().into();
    for (_, f) in v["tool_input"].as_object_mut().unwrap().iter_mut() {
        if f == "@COMMAND@" || f == "@PATH@" {
            *f = value.into();
        }
    }
    v
}

/// A command with the agents' and dcjail's variables cleared and bash as
/// the user's shell.
pub fn command(program: &str, dir: &Path) -> Command {
    let mut c = Command::new(program);
    c.current_dir(dir).env("SHELL", "/bin/bash");
    for v in CLEARED {
        c.env_remove(v);
    }
    // Codex's own rules (`$CODEX_HOME/rules`) of whoever runs the suite
    // stay out of it.
    c.env("CODEX_HOME", scratch::base().join("no-codex-home"));
    c
}

/// `c`, run by `setpriv` as uid/gid 65534, with its directory and
/// environment kept.
pub fn as_nobody(c: &mut Command) {
    let mut n = Command::new("setpriv");
    n.args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
        .arg(c.get_program())
        .args(c.get_args());
    if let Some(d) = c.get_current_dir() {
        n.current_dir(d);
    }
    for (k, v) in c.get_envs() {
        match v {
            Some(v) => n.env(k, v),
            None => n.env_remove(k),
        };
    }
    *c = n;
}

pub fn run(mut c: Command, nobody: bool, input: &[u8]) -> Output {
    if nobody {
        as_nobody(&mut c);
    }
    let mut child = c
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A process that refuses its flags exits before it reads.
    let _ = child.stdin.take().unwrap().write_all(input);
    child.wait_with_output().unwrap()
}

/// One `dcjail hook AGENT ARGS` process, started in `dir` (the agent starts
/// Codex's hooks in the session's directory).
pub struct Hook<'a> {
    pub agent: &'a str,
    pub dir: &'a Path,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub nobody: bool,
}

impl<'a> Hook<'a> {
    /// A Codex hook whose session root is `dir`.
    pub fn codex(dir: &'a Path) -> Self {
        Hook {
            agent: "codex",
            dir,
            args: Vec::new(),
            env: Vec::new(),
            nobody: false,
        }
    }

    /// A Claude Code hook of a session in `project`, as Claude Code starts
    /// it: `CLAUDE_PROJECT_DIR` set and the shell prefix dcjail.
    pub fn claude(project: &'a Path) -> Self {
        Hook {
            agent: "claude-code",
            dir: project,
            args: Vec::new(),
            env: vec![
                ("CLAUDE_PROJECT_DIR".into(), project.display().to_string()),
                ("CLAUDE_CODE_SHELL_PREFIX".into(), bin().into()),
            ],
            nobody: false,
        }
    }

    pub fn arg(mut self, a: impl AsRef<str>) -> Self {
        self.args.push(a.as_ref().to_string());
        self
    }

    pub fn policy(self, p: &Path) -> Self {
        self.arg("--policy").arg(p.to_str().unwrap())
    }

    pub fn env(mut self, k: &str, v: impl AsRef<str>) -> Self {
        self.env.retain(|(n, _)| n != k);
        self.env.push((k.into(), v.as_ref().to_string()));
        self
    }

    pub fn unset(mut self, k: &str) -> Self {
        self.env.retain(|(n, _)| n != k);
        self
    }

    pub fn nobody(mut self, yes: bool) -> Self {
        self.nobody = yes;
        self
    }

    pub fn raw(&self, input: &[u8]) -> Output {
        let mut c = command(bin(), self.dir);
        c.arg("hook").arg(self.agent).args(&self.args);
        for (k, v) in &self.env {
            c.env(k, v);
        }
        run(c, self.nobody, input)
    }

    pub fn call(&self, input: &Value) -> Output {
        self.raw(input.to_string().as_bytes())
    }
}

/// The decision JSON a hook printed (exit 0, nothing on stderr).
pub fn decision(o: &Output) -> Value {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "hook failed: {err}");
    assert!(o.stderr.is_empty(), "hook wrote to stderr: {err}");
    let text = String::from_utf8(o.stdout.clone()).unwrap();
    assert_eq!(text.lines().count(), 1, "one JSON line, got {text:?}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        v["hookSpecificOutput"]["hookEventName"], "PreToolUse",
        "{v}"
    );
    v
}

/// No opinion: exit 0, no output at all.
pub fn no_opinion(o: &Output, what: &str) {
    assert_eq!(
        o.status.code(),
        Some(0),
        "{what}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        o.stdout.is_empty(),
        "{what}: expected no opinion, got {}",
        out(o)
    );
    assert!(
        o.stderr.is_empty(),
        "{what}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The reason of the agent's deny the hook answered (no updatedInput).
pub fn denied(o: &Output, what: &str) -> String {
    let d = decision(o);
    let h = &d["hookSpecificOutput"];
    assert_eq!(h["permissionDecision"], "deny", "{what}: {d}");
    assert!(h.get("updatedInput").is_none(), "{what}: {d}");
    let reason = h["permissionDecisionReason"].as_str().unwrap().to_string();
    assert!(reason.starts_with("dcjail: "), "{what}: {reason}");
    assert_eq!(reason.lines().count(), 1, "{what}: {reason}");
    reason
}

/// The command of an "allow" that rewrites a Codex shell call.
pub fn wrapped(d: &Value) -> String {
    let h = &d["hookSpecificOutput"];
    assert_eq!(h["permissionDecision"], "allow", "{d}");
    h["updatedInput"]["command"]
        .as_str()
        .unwrap_or_else(|| panic!("no updatedInput.command in {d}"))
        .to_string()
}

/// Runs `cmd` the way an agent runs its shell call: `argv… cmd` in `dir`.
pub fn shell(dir: &Path, argv: &[&str], cmd: &str, nobody: bool) -> Output {
    let mut c = command(argv[0], dir);
    c.args(&argv[1..]).arg(cmd);
    run(c, nobody, b"")
}

pub fn bash(dir: &Path, cmd: &str) -> Output {
    shell(dir, &["bash", "-c"], cmd, false)
}

/// dcjail as Claude Code runs its shell prefix for a Bash call: the line as
/// its one argument, in `dir`, the prefix variable naming dcjail and the
/// session's project in `CLAUDE_PROJECT_DIR`; `env` adds to that.
pub fn prefix(
    dir: &Path,
    project: &Path,
    line: &str,
    env: &[(&str, &str)],
    nobody: bool,
) -> Output {
    let mut c = command(bin(), dir);
    c.arg(line)
        .env("CLAUDE_CODE_SHELL_PREFIX", bin())
        .env("CLAUDE_PROJECT_DIR", project);
    for (k, v) in env {
        c.env(k, v);
    }
    run(c, nobody, b"")
}

pub fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Shell lines no quoting may change: Codex's rewrite and Claude Code's
/// shell prefix must each run them exactly as the shell does.
pub fn adversarial() -> Vec<String> {
    vec![
        r#"printf '%s\n' "it's" 'a "quoted" word' ''"#.into(),
        "echo $(echo sub) `echo tick` $((6 * 7))".into(),
        "cat <<'EOF'\nline one\n  $HOME and $(id) stay literal\nEOF".into(),
        "printf '%s|' a\\ b 'c  d' \"e\tf\"; echo".into(),
        r#"echo "backslash \ and \\n and \$HOME""#.into(),
        r#"x='single '\''inner'\'' quote'; echo "$x""#.into(),
        "echo \"héllo ✓ 日本 \u{1f600}\"".into(),
        "echo '!!' \"!$\" ; echo '#not a comment' # a comment".into(),
        "for i in 1 2 3; do printf '%s' \"$i\"; done; echo".into(),
        "printf %s $'a\\tb\\x27c'; echo".into(),
        "echo a\r\necho b\n\n".into(),
        "echo '''''' \"\"\"\" '\\'".into(),
        "set -- one 'two three'; printf '<%s>' \"$@\"; echo \" $#\"".into(),
        "false || echo or; true && echo and; (exit 3); echo status=$?".into(),
        "echo unbalanced '".into(),
        "echo partial; exit 7".into(),
        format!("printf '%s' '{}'; echo", "A".repeat(60_000)),
    ]
}

/// zsh's path; missing, `scratch::need` fails the test (or, without
/// DCJAIL_TEST_REQUIRE=1, says so and the zsh half is skipped: `None`).
pub fn zsh() -> Option<String> {
    if !scratch::need("zsh") {
        return None;
    }
    let o = Command::new("sh")
        .args(["-c", "command -v zsh"])
        .output()
        .unwrap();
    let path = String::from_utf8_lossy(&o.stdout).trim().to_string();
    assert!(
        o.status.success() && Path::new(&path).is_absolute(),
        "command -v zsh: {path}"
    );
    Some(path)
}

/// A session's project (`ws`, a git repository whose `.git/hooks`, like the
/// rest, uid 65534 may write) and an "outside" directory beside it.
pub struct Tree {
    pub root: PathBuf,
    pub ws: PathBuf,
    pub sub: PathBuf,
    pub outside: PathBuf,
}

impl Tree {
    pub fn new(name: &str) -> Tree {
        let root = scratch::fresh(name);
        let ws = root.join("ws");
        let sub = ws.join("sub");
        let outside = root.join("outside");
        for d in [&root, &ws, &sub, &outside] {
            std::fs::create_dir_all(d).unwrap();
            open(d, 0o777);
        }
        let git = Command::new("git")
            .args(["init", "-q", "."])
            .current_dir(&ws)
            .env_remove("GIT_DIR")
            .output()
            .expect("git");
        assert!(git.status.success(), "git init: {git:?}");
        let hooks = ws.join(".git/hooks");
        std::fs::create_dir_all(&hooks).unwrap();
        open(&hooks, 0o777);
        std::fs::write(hooks.join("pre-commit"), "#!/bin/sh\nexit 0\n").unwrap();
        open(&hooks.join("pre-commit"), 0o777);
        open(&ws.join(".git/config"), 0o666);
        Tree {
            root,
            ws,
            sub,
            outside,
        }
    }

    /// A file `name` beside the project (mode 0644).
    pub fn policy(&self, name: &str, text: &str) -> PathBuf {
        let p = self.root.join(name);
        std::fs::write(&p, text).unwrap();
        open(&p, 0o644);
        p
    }

    pub fn pre_commit(&self) -> String {
        std::fs::read_to_string(self.ws.join(".git/hooks/pre-commit")).unwrap()
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        scratch::remove(&self.root);
    }
}

pub fn open(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

pub const WORKSPACE_WRITE: &str = "[sandbox]\nmode = \"workspace-write\"\n";
