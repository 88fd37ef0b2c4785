//! The agent suite's common ground: the real Claude Code and Codex CLIs
//! (pinned in tests/agents/package.json and its lock, installed by
//! scripts/test.sh in target/agents), a scripted model server on loopback
//! (tests/agents/fake_model.py), and a session tree per run: a home, a git
//! project, a folder outside it and, for Codex, its CODEX_HOME. A run's
//! outcome is read where the agent leaves it: on disk, and in the next
//! request it sends the model (the tool results). The test files declare
//! `mod scratch;` next to this one.
#![allow(dead_code)]

use crate::scratch;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The versions tests/agents/package.json pins, and dcjail was verified with.
pub const CLAUDE_VERSION: &str = "2.1.197";
pub const CODEX_VERSION: &str = "0.171.0";

/// The longest one agent session may take (each takes a few seconds).
pub const AGENT_LIMIT: Duration = Duration::from_secs(150);
/// The longest a dcjail subcommand (install, check) or a setup step may take.
pub const STEP_LIMIT: Duration = Duration::from_secs(60);

/// The interpreter of the model server.
const PYTHON: &str = "/usr/bin/python3";

/// A PATH with the system's programs only.
pub const SYS_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// What to run when the agents are missing.
const INSTALL_LINE: &str =
    "scripts/test.sh installs them (npm ci of tests/agents/package-lock.json in target/agents)";

/// The dcjail binary, where every user can run it and landlock accepts it.
pub use crate::scratch::exe as dcjail;

pub fn agents_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agents")
}

/// Where scripts/test.sh installs the pinned agents (outside the sources,
/// gone with `cargo clean`).
pub fn bin_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/agents/node_modules/.bin")
}

pub use crate::scratch::is_root;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Agent {
    Claude,
    Codex,
}

impl Agent {
    fn name(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Codex => "codex",
        }
    }

    fn version(self) -> &'static str {
        match self {
            Agent::Claude => CLAUDE_VERSION,
            Agent::Codex => CODEX_VERSION,
        }
    }

    fn package(self) -> &'static str {
        match self {
            Agent::Claude => "@anthropic-ai/claude-code",
            Agent::Codex => "@openai/codex",
        }
    }
}

/// The agent's executable, checked once: present, the pinned version, and
/// pinned as such in package.json. Anything else fails the test with the
/// line that installs it.
pub fn agent_bin(a: Agent) -> PathBuf {
    static CHECKED: [OnceLock<Result<PathBuf, String>>; 2] = [OnceLock::new(), OnceLock::new()];
    let slot = &CHECKED[a as usize];
    match slot.get_or_init(|| check_agent(a)) {
        Ok(p) => p.clone(),
        Err(e) => panic!("{e}"),
    }
}

fn check_agent(a: Agent) -> Result<PathBuf, String> {
    let pkg = std::fs::read_to_string(agents_dir().join("package.json"))
        .map_err(|e| format!("tests/agents/package.json: {e}"))?;
    let pkg: Value = serde_json::from_str(&pkg).map_err(|e| format!("package.json: {e}"))?;
    let pinned = pkg["dependencies"][a.package()].as_str();
    if pinned != Some(a.version()) {
        return Err(format!(
            "tests/agents/package.json pins {} at {pinned:?}, the tests expect {}",
            a.package(),
            a.version()
        ));
    }
    let bin = bin_dir().join(a.name());
    if !bin.exists() {
        return Err(format!(
            "{} is missing: the agent tests run the real {} {}; {INSTALL_LINE}",
            bin.display(),
            a.package(),
            a.version()
        ));
    }
    // A home of its own, so asking the version touches no real one.
    let home = scratch::base().join("agents-version-home");
    std::fs::create_dir_all(&home).unwrap();
    let mut c = Command::new(&bin);
    c.arg("--version")
        .env_clear()
        .env("PATH", path_env())
        .env("HOME", &home);
    let o = bounded(&mut c, STEP_LIMIT, &format!("{} --version", a.name()));
    let text = String::from_utf8_lossy(&o.stdout);
    if !o.status.success() || !text.split_whitespace().any(|w| w == a.version()) {
        return Err(format!(
            "{} --version printed {:?} (stderr {:?}), not {}: {INSTALL_LINE}",
            bin.display(),
            text.trim(),
            String::from_utf8_lossy(&o.stderr).trim(),
            a.version()
        ));
    }
    Ok(bin)
}

fn python() -> &'static str {
    assert!(
        Path::new(PYTHON).exists(),
        "{PYTHON} is missing: the model server needs it; install with: apt-get install -y python3"
    );
    PYTHON
}

/// The agents' directory first (so `dcjail hook … --check` finds them),
/// then the system's.
pub fn path_env() -> String {
    format!("{}:{SYS_PATH}", bin_dir().display())
}

/// Runs `cmd` (stdin /dev/null, in a process group of its own) for at most
/// `limit`: past it, the whole group is killed and the test fails. Output
/// goes through files, so nothing left running can hold a pipe open; what
/// the command left in its group is killed once it exits.
pub fn bounded(cmd: &mut Command, limit: Duration, what: &str) -> Output {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::SeqCst);
    let dir = scratch::base().join("agents-output");
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(format!("{}-{n}.out", std::process::id()));
    let err = dir.join(format!("{}-{n}.err", std::process::id()));
    cmd.stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .process_group(0);
    // A binary being relinked (dcjail, by a build running next to the
    // tests) is busy for a moment.
    let mut tries = 0;
    let mut child = loop {
        match cmd.spawn() {
            Ok(c) => break c,
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < 50 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => panic!("{what}: cannot start {:?}: {e}", cmd.get_program()),
        }
    };
    let pid = child.id() as libc::pid_t;
    let deadline = Instant::now() + limit;
    let exited = loop {
        if exited_unreaped(pid) {
            break true;
        }
        if Instant::now() >= deadline {
            break false;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // The child is not reaped yet, so its pid still names its group.
    // SAFETY: kill has no memory effects.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    let status = child.wait().unwrap();
    let read = |p: &Path| {
        let b = std::fs::read(p).unwrap_or_default();
        let _ = std::fs::remove_file(p);
        b
    };
    let (stdout, stderr) = (read(&out), read(&err));
    assert!(
        exited,
        "{what}: still running after {limit:?}, killed; stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&stdout),
        String::from_utf8_lossy(&stderr)
    );
    Output {
        status,
        stdout,
        stderr,
    }
}

/// Whether `pid`, a child of this process, has exited (left unreaped).
fn exited_unreaped(pid: libc::pid_t) -> bool {
    // SAFETY: siginfo_t is plain data; waitid writes it.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a siginfo_t.
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    // SAFETY: si_pid is set when waitid returned a child.
    r == 0 && unsafe { info.si_pid() } == pid
}

/// Who runs the agent.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum User {
    /// Whoever runs the tests.
    Invoker,
    /// uid 65534 through setpriv when the tests run as root; the invoker
    /// otherwise (then already unprivileged).
    Unprivileged,
}

impl User {
    fn switches(self) -> bool {
        self == User::Unprivileged && is_root()
    }
}

/// One scripted turn of a Claude Code session.
pub fn bash(command: &str) -> Value {
    json!([{"tool": "Bash", "input": {"command": command, "description": "x"}}])
}

pub fn claude_tool(tool: &str, input: Value) -> Value {
    json!([{"tool": tool, "input": input}])
}

pub fn write_file(path: &Path, content: &str) -> Value {
    claude_tool(
        "Write",
        json!({"file_path": path.to_str().unwrap(), "content": content}),
    )
}

/// One scripted turn of a Codex session.
pub fn exec(cmd: &str, workdir: Option<&Path>) -> Value {
    let mut input = json!({"cmd": cmd});
    if let Some(w) = workdir {
        input["workdir"] = w.to_str().unwrap().into();
    }
    json!([{"tool": "exec_command", "input": input}])
}

/// An apply_patch turn: `body` between the patch's begin and end lines.
pub fn patch(body: &str) -> Value {
    json!([{"tool": "apply_patch", "patch": format!("*** Begin Patch\n{body}*** End Patch\n")}])
}

/// The scripted model server, killed when dropped.
pub struct Model {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Model {
    /// Starts the server for `script` (a list of turns), its files in `dir`.
    pub fn start(dir: &Path, script: &[Value]) -> Model {
        let script_file = dir.join("script.json");
        std::fs::write(&script_file, Value::Array(script.to_vec()).to_string()).unwrap();
        let log = dir.join("requests.jsonl");
        let port_file = dir.join("port");
        let _ = std::fs::remove_file(&port_file);
        let mut child = Command::new(python())
            .arg(agents_dir().join("fake_model.py"))
            .args([&script_file, &log, &port_file])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("start tests/agents/fake_model.py");
        let deadline = Instant::now() + Duration::from_secs(20);
        let port = loop {
            if let Some(p) = std::fs::read_to_string(&port_file)
                .ok()
                .and_then(|t| t.trim().parse().ok())
            {
                break p;
            }
            if let Ok(Some(s)) = child.try_wait() {
                panic!("the model server exited before it listened: {s}");
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the model server did not listen within 20 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        Model { child, port, log }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Every request body the agent sent, as the server logged it.
    pub fn raw_log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn bodies(&self) -> Vec<Value> {
        self.raw_log()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .map(|v| v["body"].clone())
            .collect()
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the agent sent back for one tool call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolResult {
    pub text: String,
    pub is_error: bool,
}

/// The text of a tool result's content: a string, or a list of text blocks.
fn content_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(a) => a
            .iter()
            .map(|b| {
                b["text"]
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or(b.to_string())
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The tool results of a Claude Code session, by the turn they answer
/// (1-based: the server names the calls of turn N `toolu_N_i`).
fn claude_results(m: &Model) -> BTreeMap<String, ToolResult> {
    let mut out = BTreeMap::new();
    for b in m.bodies() {
        for msg in b["messages"].as_array().into_iter().flatten() {
            for c in msg["content"].as_array().into_iter().flatten() {
                if c["type"] != "tool_result" {
                    continue;
                }
                let id = c["tool_use_id"].as_str().unwrap_or("").to_string();
                out.entry(id).or_insert_with(|| ToolResult {
                    text: content_text(&c["content"]),
                    is_error: c["is_error"].as_bool().unwrap_or(false),
                });
            }
        }
    }
    out
}

/// The tool outputs of a Codex session (`call_N_i`).
fn codex_results(m: &Model) -> BTreeMap<String, ToolResult> {
    let mut out = BTreeMap::new();
    for b in m.bodies() {
        for it in b["input"].as_array().into_iter().flatten() {
            if !it["type"].as_str().is_some_and(|t| t.ends_with("_output")) {
                continue;
            }
            let id = it["call_id"].as_str().unwrap_or("").to_string();
            out.entry(id).or_insert_with(|| ToolResult {
                text: content_text(&it["output"]),
                is_error: false,
            });
        }
    }
    out
}

/// A finished session: what the agent printed and what it sent back.
pub struct Ran {
    pub label: String,
    pub output: Output,
    pub results: BTreeMap<String, ToolResult>,
    pub requests: String,
    prefix: &'static str,
}

impl Ran {
    /// The result of turn `n` (1-based); fails the test with the agent's
    /// output when the agent never answered it.
    pub fn turn(&self, n: usize) -> &ToolResult {
        let id = format!("{}{n}_0", self.prefix);
        self.results.get(&id).unwrap_or_else(|| {
            panic!(
                "{}: no tool result for turn {n} ({id}); results: {:#?}\nagent stdout: {}\nagent stderr: {}",
                self.label,
                self.results,
                String::from_utf8_lossy(&self.output.stdout),
                String::from_utf8_lossy(&self.output.stderr)
            )
        })
    }

    /// Turn `n`'s text, which must contain every one of `needles`.
    pub fn says(&self, n: usize, needles: &[&str]) -> &ToolResult {
        let r = self.turn(n);
        for w in needles {
            assert!(
                r.text.contains(w),
                "{}: turn {n}: expected {w:?} in the tool result, got {r:?}",
                self.label
            );
        }
        r
    }
}

/// One session's tree: `home`, the git project `proj`, `outside` (a
/// sibling of the project) and `codexhome`, all under a fresh scratch
/// directory; owned by the user who runs the agent.
pub struct Session {
    pub label: String,
    pub root: PathBuf,
    pub home: PathBuf,
    pub proj: PathBuf,
    pub outside: PathBuf,
    pub codexhome: PathBuf,
    pub user: User,
}

impl Session {
    pub fn new(name: &str, user: User) -> Session {
        let root = scratch::fresh(&format!("agents-{name}"));
        let s = Session {
            label: name.to_string(),
            home: root.join("home"),
            proj: root.join("proj"),
            outside: root.join("outside"),
            codexhome: root.join("codexhome"),
            root,
            user,
        };
        for d in [&s.home, &s.proj, &s.outside, &s.codexhome] {
            std::fs::create_dir_all(d).unwrap();
        }
        let mut git = Command::new("git");
        git.args(["init", "-q"])
            .arg(&s.proj)
            .env("HOME", &s.home)
            .env("GIT_CONFIG_NOSYSTEM", "1");
        let o = bounded(&mut git, STEP_LIMIT, "git init");
        assert!(
            o.status.success(),
            "git init: {}; install git with: apt-get install -y git",
            String::from_utf8_lossy(&o.stderr)
        );
        s
    }

    /// Writes `text` to `rel` (relative to the session's root), making its
    /// directory.
    pub fn put(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p
    }

    /// The tree handed to the user who runs the agent (a no-op unless that
    /// is uid 65534).
    fn hand_over(&self) {
        if !self.user.switches() {
            return;
        }
        for d in [&self.home, &self.proj, &self.outside, &self.codexhome] {
            let mut c = Command::new("chown");
            c.args(["-R", "65534:65534"]).arg(d);
            let o = bounded(&mut c, STEP_LIMIT, "chown");
            assert!(o.status.success(), "chown: {:?}", o);
        }
    }

    /// The command that starts `program` as the session's user.
    fn command(&self, program: &Path) -> Command {
        scratch::user_command(self.user.switches(), program)
    }

    /// `dcjail hook AGENT ARGS` (install, check) as the invoker, with the
    /// session's home.
    pub fn dcjail_hook(&self, agent: &str, args: &[&str]) -> Output {
        let mut c = Command::new(dcjail());
        c.arg("hook")
            .arg(agent)
            .args(args)
            .current_dir(&self.proj)
            .env_clear()
            .env("PATH", path_env())
            .env("HOME", &self.home)
            .env("CODEX_HOME", &self.codexhome);
        bounded(&mut c, STEP_LIMIT, &format!("dcjail hook {agent} {args:?}"))
    }

    /// `dcjail hook claude-code --install` into the project's settings
    /// (with `--policy` when given); must succeed.
    pub fn install_claude(&self, policy: Option<&Path>) {
        let settings = self.claude_settings();
        let mut args = vec!["--install", "--settings", settings.to_str().unwrap()];
        if let Some(p) = policy {
            args.extend(["--policy", p.to_str().unwrap()]);
        }
        let o = self.dcjail_hook("claude-code", &args);
        assert!(
            o.status.success(),
            "{}: dcjail hook claude-code --install: {}",
            self.label,
            String::from_utf8_lossy(&o.stderr)
        );
    }

    pub fn claude_settings(&self) -> PathBuf {
        self.proj.join(".claude/settings.json")
    }

    /// Runs `claude -p go` in the project against a model playing `script`,
    /// in `mode` when given (bypassPermissions also sets IS_SANDBOX=1,
    /// which root needs for it). The project's .claude/settings.json must
    /// exist (with the user's permissions, dcjail's install, or both).
    pub fn run_claude(&self, script: &[Value], mode: Option<&str>) -> Ran {
        let bin = agent_bin(Agent::Claude);
        assert!(
            self.claude_settings().exists(),
            "the test writes the project's settings first"
        );
        let state = json!({
            "projects": {self.proj.to_str().unwrap(): {"hasTrustDialogAccepted": true}},
            "hasCompletedOnboarding": true,
        });
        std::fs::write(self.home.join(".claude.json"), state.to_string()).unwrap();
        let model = Model::start(&self.root, script);
        self.hand_over();
        let mut c = self.command(&bin);
        c.args(["-p", "go", "--output-format", "json"]);
        if let Some(m) = mode {
            c.args(["--permission-mode", m]);
        }
        c.current_dir(&self.proj)
            .env_clear()
            .env("PATH", path_env())
            .env("HOME", &self.home)
            .env("SHELL", "/bin/bash")
            .env("TERM", "dumb")
            .env("LANG", "C.UTF-8")
            .env(
                "ANTHROPIC_BASE_URL",
                format!("http://127.0.0.1:{}", model.port()),
            )
            .env("ANTHROPIC_API_KEY", "k")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_AUTOUPDATER", "1");
        if mode == Some("bypassPermissions") {
            c.env("IS_SANDBOX", "1");
        }
        let output = bounded(&mut c, AGENT_LIMIT, &format!("{}: claude -p", self.label));
        self.finish(&model, output, claude_results(&model), "toolu_")
    }

    /// Writes CODEX_HOME/config.toml for the model server on `port`.
    fn codex_config(&self, port: u16) {
        let text = format!(
            "model = \"gpt-5.5\"\nmodel_provider = \"mock\"\n\n\
             [model_providers.mock]\nname = \"mock\"\n\
             base_url = \"http://127.0.0.1:{port}/v1\"\n\
             wire_api = \"responses\"\nenv_key = \"MOCK_KEY\"\n"
        );
        std::fs::write(self.codex_settings(), text).unwrap();
    }

    pub fn codex_settings(&self) -> PathBuf {
        self.codexhome.join("config.toml")
    }

    /// A Codex session: the model server started, config.toml written,
    /// then `between` (dcjail's install, or nothing), then `codex exec` in
    /// the project.
    pub fn run_codex(&self, script: &[Value], between: impl FnOnce(&Session)) -> Ran {
        let bin = agent_bin(Agent::Codex);
        let model = Model::start(&self.root, script);
        self.codex_config(model.port());
        between(self);
        self.hand_over();
        let mut c = self.command(&bin);
        c.args([
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--sandbox",
            "danger-full-access",
            "go",
        ])
        .current_dir(&self.proj)
        .env_clear()
        .env("PATH", path_env())
        .env("HOME", &self.home)
        .env("CODEX_HOME", &self.codexhome)
        .env("MOCK_KEY", "x")
        .env("TERM", "dumb")
        .env("LANG", "C.UTF-8");
        let output = bounded(&mut c, AGENT_LIMIT, &format!("{}: codex exec", self.label));
        self.finish(&model, output, codex_results(&model), "call_")
    }

    /// `dcjail hook codex --install` into CODEX_HOME/config.toml.
    pub fn install_codex(&self, policy: Option<&Path>) {
        let settings = self.codex_settings();
        let mut args = vec!["--install", "--settings", settings.to_str().unwrap()];
        if let Some(p) = policy {
            args.extend(["--policy", p.to_str().unwrap()]);
        }
        let o = self.dcjail_hook("codex", &args);
        assert!(
            o.status.success(),
            "{}: dcjail hook codex --install: {}",
            self.label,
            String::from_utf8_lossy(&o.stderr)
        );
    }

    fn finish(
        &self,
        model: &Model,
        output: Output,
        results: BTreeMap<String, ToolResult>,
        prefix: &'static str,
    ) -> Ran {
        assert!(
            output.status.success(),
            "{}: the agent failed ({}): stdout: {}\nstderr: {}",
            self.label,
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        Ran {
            label: self.label.clone(),
            output,
            results,
            requests: model.raw_log(),
            prefix,
        }
    }

    /// Removes the session's tree (the tests keep it when they fail).
    pub fn done(self) {
        scratch::remove(&self.root);
    }
}

/// Runs `a` and `b` at once (a session and its twin without dcjail).
pub fn both<A: Send, B: Send>(
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    std::thread::scope(|s| {
        let ha = s.spawn(a);
        let hb = s.spawn(b);
        let rb = hb.join();
        let ra = ha.join();
        match (ra, rb) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => std::panic::resume_unwind(e),
        }
    })
}
