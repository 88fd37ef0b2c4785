//! The resolved policy: the typed schema of the policy file, its closed
//! vocabularies, the built-in defaults, the embedded default profile,
//! reading a policy (a TOML or JSON file, an inherited descriptor; another
//! tool's settings are converted by `import`, chosen in `run::source`) and
//! merging command-line overrides. It never decides and never touches the
//! filesystem beyond reading the one policy it is given.

pub mod creds;
pub mod env;
mod overrides;

pub use overrides::{GateArgs, Overrides, NEXT_DISPLAY_ORDER};

use crate::error::{Refusal, Result};
use serde::{Deserialize, Deserializer};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Largest policy file accepted; anything bigger is refused rather than parsed.
pub const MAX_POLICY_BYTES: u64 = 8 * 1024 * 1024;

/// Largest `sandbox.timeout`: beyond it a deadline cannot be represented.
pub use crate::duration::MAX_TIMEOUT_SECS;

/// The embedded default policy, used when no policy file is given.
pub const DEFAULT_PROFILE: &str = include_str!("../../profiles/default.toml");

/// `profiles/default.toml` built in code: parsing TOML was a measurable part
/// of every start with no policy file. The profile stays the source of
/// truth; a test holds this equal to parsing it.
fn embedded_built() -> Policy {
    let mut p = Policy {
        version: Some(1),
        mode: Mode::Default,
        tool: Tool::Bash,
        ..Policy::default()
    };
    p.permission.outcome = Outcome::Allow;
    p.permission.approval = Approval::Granted;
    p.sandbox.enabled = true;
    p.sandbox.mode = SandboxMode::ReadOnly;
    p.sandbox.backend = BackendChoice::Auto;
    p.sandbox.network.mode = NetMode::None;
    p
}

#[cfg(test)]
#[test]
fn the_built_embedded_policy_is_the_profile_parsed() {
    let parsed = parse(DEFAULT_PROFILE, "<embedded profiles/default.toml>").unwrap();
    assert_eq!(embedded_built(), parsed);
}

/// "`x` is not one of: a, b, c" — the message every vocabulary error uses.
pub fn vocab_error(got: &str, words: &[&str]) -> String {
    format!(
        "`{}` is not one of: {}",
        crate::error::one_line(got),
        words.join(", ")
    )
}

macro_rules! vocab {
    ($(#[$m:meta])* $name:ident { $($var:ident = $word:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name { $($var),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$var),+];
            pub const WORDS: &'static [&'static str] = &[$($word),+];

            pub fn word(self) -> &'static str {
                match self { $($name::$var => $word),+ }
            }

            pub fn from_word(s: &str) -> Option<Self> {
                match s { $($word => Some($name::$var),)+ _ => None }
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> std::result::Result<Self, String> {
                Self::from_word(s).ok_or_else(|| vocab_error(s, Self::WORDS))
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.word())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                Self::from_word(&s).ok_or_else(|| serde::de::Error::custom(vocab_error(&s, Self::WORDS)))
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                s.serialize_str(self.word())
            }
        }
    };
}

vocab!(
    /// The agent's mode (`mode`).
    Mode {
        Default = "default",
        AcceptEdits = "acceptEdits",
        Plan = "plan",
        Auto = "auto",
        DontAsk = "dontAsk",
        BypassPermissions = "bypassPermissions",
    }
);

vocab!(
    /// The kind of call this launch is (`tool`).
    Tool {
        Read = "read",
        Edit = "edit",
        Write = "write",
        Bash = "bash",
        Net = "net",
    }
);

vocab!(
    /// What the caller's permission rules said.
    Outcome {
        Allow = "allow",
        Ask = "ask",
        Deny = "deny",
    }
);

vocab!(
    /// The user's answer, when one was asked.
    Approval {
        None = "none",
        Granted = "granted",
        Rejected = "rejected",
    }
);

vocab!(
    /// The auto-mode classifier's verdict.
    Verdict {
        Allow = "allow",
        SoftDeny = "soft_deny",
        HardDeny = "hard_deny",
    }
);

vocab!(
    /// How much of the filesystem the command may write.
    SandboxMode {
        ReadOnly = "read-only",
        WorkspaceWrite = "workspace-write",
        DangerFullAccess = "danger-full-access",
    }
);

vocab!(
    /// Which sandbox backend to use.
    BackendChoice {
        Auto = "auto",
        Bwrap = "bwrap",
        Landlock = "landlock",
        Seatbelt = "seatbelt",
    }
);

vocab!(
    /// What network the command gets.
    NetMode {
        None = "none",
        Allowlist = "allowlist",
        Full = "full",
    }
);

vocab!(
    /// How a policy file is read: dcjail's own schema (TOML or JSON), or
    /// another tool's settings converted by `import`.
    PolicyFormat {
        Dcjail = "dcjail",
        Srt = "srt",
        ClaudeCode = "claude-code",
        Codex = "codex",
    }
);

impl Tool {
    /// Calls that change files or run arbitrary code.
    pub fn is_mutating(self) -> bool {
        matches!(self, Tool::Edit | Tool::Write | Tool::Bash)
    }
}

/// The whole policy, after defaults, file and overrides.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Policy {
    pub version: Option<i64>,
    pub mode: Mode,
    pub tool: Tool,
    pub paths: Vec<PathBuf>,
    pub permission: Permission,
    pub classifier: Classifier,
    pub worktree: WorktreeSection,
    pub plan: PlanSection,
    pub sandbox: Sandbox,
    /// The file this policy came from, if any; it is protected from writes.
    #[serde(skip)]
    pub source: Option<PathBuf>,
    /// What messages call a policy read from no file (`<descriptor 3>`).
    #[serde(skip)]
    pub label: Option<String>,
    /// For an imported file: which setting of the other tool each field
    /// came from (`explain` prints them under `sources`).
    #[serde(skip)]
    pub origins: Vec<Origin>,
}

/// Where one field of the policy came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    /// The dotted dcjail field, `sandbox.filesystem.deny_read`.
    pub field: String,
    /// The other tool's setting, `srt settings.json: filesystem.denyRead`.
    pub from: String,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Permission {
    pub outcome: Outcome,
    pub rule: String,
    pub approval: Approval,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Classifier {
    #[serde(deserialize_with = "empty_is_none")]
    pub verdict: Option<Verdict>,
    pub reason: String,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct WorktreeSection {
    #[serde(deserialize_with = "empty_path_is_none")]
    pub root: Option<PathBuf>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PlanSection {
    #[serde(deserialize_with = "empty_path_is_none")]
    pub card: Option<PathBuf>,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Sandbox {
    pub enabled: bool,
    pub mode: SandboxMode,
    pub backend: BackendChoice,
    #[serde(deserialize_with = "empty_path_is_none")]
    pub workspace: Option<PathBuf>,
    /// Zero means none.
    #[serde(deserialize_with = "crate::duration::deserialize")]
    pub timeout: Duration,
    pub filesystem: Filesystem,
    pub network: Network,
    pub env: env::Env,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Filesystem {
    pub allow_read: Vec<PathBuf>,
    pub deny_read: Vec<PathBuf>,
    pub allow_write: Vec<PathBuf>,
    pub deny_write: Vec<PathBuf>,
    pub protect_defaults: bool,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(try_from = "NetworkTable")]
pub struct Network {
    pub mode: NetMode,
    pub allow_domains: Vec<String>,
    pub deny_domains: Vec<String>,
    /// Unix sockets outside the run's own the command may connect to: each
    /// a socket, or a directory whose sockets all are.
    pub allow_unix_sockets: Vec<PathBuf>,
    /// Secrets the proxy adds to requests to one destination each.
    pub credentials: Vec<creds::Credential>,
}

/// `allow_unix_sockets` as written: a list of paths, or the `false` of the
/// field's first form (nothing named). Its `true` meant every socket the
/// command could see, the user's tmux server among them; it is refused
/// rather than read as something else.
#[derive(Deserialize)]
#[serde(untagged)]
enum UnixSockets {
    Named(Vec<PathBuf>),
    Flag(bool),
}

impl Default for UnixSockets {
    fn default() -> Self {
        UnixSockets::Named(Vec::new())
    }
}

/// `[sandbox.network]` as written, before `mode` is resolved: naming a
/// domain to allow means the allowlist, as `--allow-domain` does on the
/// command line, so a table with `allow_domains` and no `mode` is an
/// allowlist, and one that says `mode = "none"` beside them contradicts
/// itself (the command-line `--net none --allow-domain D` is refused too).
#[derive(Deserialize)]
#[serde(deny_unknown_fields, default)]
struct NetworkTable {
    mode: Option<NetMode>,
    allow_domains: Vec<String>,
    deny_domains: Vec<String>,
    allow_unix_sockets: UnixSockets,
    credentials: Vec<creds::Credential>,
}

impl Default for NetworkTable {
    fn default() -> Self {
        let n = Network::default();
        NetworkTable {
            mode: None,
            allow_domains: n.allow_domains,
            deny_domains: n.deny_domains,
            allow_unix_sockets: UnixSockets::Named(n.allow_unix_sockets),
            credentials: n.credentials,
        }
    }
}

/// Why `allow_unix_sockets = true` is refused, and what to write instead.
pub const UNIX_SOCKETS_TRUE: &str = "`allow_unix_sockets = true` (every unix socket the command can see) is no longer accepted: name the sockets it may reach, each a socket or a directory of them, e.g. `allow_unix_sockets = [\"~/.gnupg/S.gpg-agent\"]` (a socket the command binds itself needs no name); naming a socket lets the command drive the program behind it, and a terminal multiplexer's (tmux, screen) runs commands outside the sandbox";

impl TryFrom<NetworkTable> for Network {
    type Error = String;
    fn try_from(t: NetworkTable) -> std::result::Result<Network, String> {
        let allows = !t.allow_domains.is_empty();
        let mode = match t.mode {
            Some(NetMode::None) if allows => {
                return Err(format!(
                    "`mode = \"none\"` with `allow_domains = [{}]`: naming a domain to allow needs `mode = \"allowlist\"` (or no `mode`, which then means the allowlist); remove the domains for no network",
                    t.allow_domains
                        .iter()
                        .map(|d| format!("\"{}\"", crate::error::one_line(d)))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            }
            Some(m) => m,
            None if allows => NetMode::Allowlist,
            None => NetMode::None,
        };
        let allow_unix_sockets = match t.allow_unix_sockets {
            UnixSockets::Named(v) => v,
            UnixSockets::Flag(false) => Vec::new(),
            UnixSockets::Flag(true) => return Err(UNIX_SOCKETS_TRUE.to_string()),
        };
        Ok(Network {
            mode,
            allow_domains: t.allow_domains,
            deny_domains: t.deny_domains,
            allow_unix_sockets,
            credentials: t.credentials,
        })
    }
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            version: None,
            mode: Mode::Default,
            tool: Tool::Bash,
            paths: Vec::new(),
            permission: Permission::default(),
            classifier: Classifier::default(),
            worktree: WorktreeSection::default(),
            plan: PlanSection::default(),
            sandbox: Sandbox::default(),
            source: None,
            label: None,
            origins: Vec::new(),
        }
    }
}

impl Default for Permission {
    fn default() -> Self {
        Permission {
            outcome: Outcome::Allow,
            rule: String::new(),
            approval: Approval::None,
        }
    }
}

impl Default for Sandbox {
    fn default() -> Self {
        Sandbox {
            enabled: true,
            mode: SandboxMode::ReadOnly,
            backend: BackendChoice::Auto,
            workspace: None,
            timeout: Duration::ZERO,
            filesystem: Filesystem::default(),
            network: Network::default(),
            env: env::Env::default(),
        }
    }
}

impl Default for Filesystem {
    fn default() -> Self {
        Filesystem {
            allow_read: Vec::new(),
            deny_read: Vec::new(),
            allow_write: Vec::new(),
            deny_write: Vec::new(),
            protect_defaults: true,
        }
    }
}

impl Default for Network {
    fn default() -> Self {
        Network {
            mode: NetMode::None,
            allow_domains: Vec::new(),
            deny_domains: Vec::new(),
            allow_unix_sockets: Vec::new(),
            credentials: Vec::new(),
        }
    }
}

fn empty_is_none<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Verdict>, D::Error> {
    let s = String::deserialize(d)?;
    if s.is_empty() {
        return Ok(None);
    }
    Verdict::from_word(&s)
        .map(Some)
        .ok_or_else(|| serde::de::Error::custom(vocab_error(&s, Verdict::WORDS)))
}

fn empty_path_is_none<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<PathBuf>, D::Error> {
    let s = String::deserialize(d)?;
    Ok(if s.is_empty() {
        None
    } else {
        Some(PathBuf::from(s))
    })
}

impl Policy {
    /// The embedded default policy (`profiles/default.toml`).
    pub fn embedded() -> Result<Policy> {
        Ok(embedded_built())
    }

    /// Checks what the schema alone cannot: the version and the domain rules.
    pub fn validate(&self) -> Result<()> {
        if let Some(v) = self.version {
            if v != 1 {
                return Err(Refusal::policy(format!(
                    "{}: `version` is {v}; the only accepted version is 1",
                    self.source_name()
                )));
            }
        }
        if self.sandbox.timeout > Duration::from_secs(MAX_TIMEOUT_SECS) {
            return Err(Refusal::policy(format!(
                "{}: `sandbox.timeout` is {} seconds; the largest accepted is {MAX_TIMEOUT_SECS} (ten years)",
                self.source_name(),
                self.sandbox.timeout.as_secs()
            )));
        }
        let net = &self.sandbox.network;
        for (key, list) in [
            ("sandbox.network.allow_domains", &net.allow_domains),
            ("sandbox.network.deny_domains", &net.deny_domains),
        ] {
            for d in list {
                crate::net::domain::DomainRule::parse(d).map_err(|e| {
                    Refusal::policy(format!("{}: `{key}`: {e}", self.source_name()))
                })?;
            }
        }
        // `full` hands the command the host's network directly: there is no
        // proxy to check a name against, so a denied domain would stay
        // reachable. Refused rather than run with a rule that does nothing.
        // (A read call gets no network, and with the sandbox off no rule is
        // enforced at all.)
        let full = net.mode == NetMode::Full && self.sandbox.enabled && self.tool != Tool::Read;
        if let (true, Some(d)) = (full, net.deny_domains.first()) {
            return Err(Refusal::policy(format!(
                "{}: `sandbox.network.deny_domains` (`{}`) with network `full` (`--net full`): `full` gives the command the host's network with no proxy, so a denied domain cannot be kept out; use `--net allowlist` with `--allow-domain` for the domains it needs (denied domains are checked first), or remove the denied domains",
                self.source_name(),
                crate::error::one_line(d)
            )));
        }
        self.validate_credentials()
    }

    /// Each credential is well formed and bound to a destination the
    /// allowlist allows: the proxy adds it only on the way there, so a
    /// binding the rules refuse, or a network with no proxy, would be a
    /// credential that silently does nothing.
    fn validate_credentials(&self) -> Result<()> {
        let net = &self.sandbox.network;
        let bound = creds::check(&net.credentials)
            .map_err(|e| Refusal::policy(format!("{}: {e}", self.source_name())))?;
        if bound.is_empty() || !self.sandbox.enabled || self.tool == Tool::Read {
            return Ok(());
        }
        if net.mode != NetMode::Allowlist {
            return Err(Refusal::policy(format!(
                "{}: `sandbox.network.credentials` with network `{}`: credentials are added by the allowlist proxy; use `mode = \"allowlist\"` (`--net allowlist`) with the bound domains in `allow_domains`",
                self.source_name(),
                net.mode.word()
            )));
        }
        let parse = |l: &[String]| -> Vec<crate::net::domain::DomainRule> {
            l.iter()
                .filter_map(|d| crate::net::domain::DomainRule::parse(d).ok())
                .collect()
        };
        let rules = crate::net::domain::Rules {
            allow: parse(&net.allow_domains),
            deny: parse(&net.deny_domains),
        };
        for (i, b) in bound.iter().enumerate() {
            let host = crate::net::domain::Host::Name(b.domain.clone());
            let port = b.port.unwrap_or(443);
            if rules.verdict(&host, port) != crate::net::domain::Verdict::Allowed {
                return Err(Refusal::policy(format!(
                    "{}: `sandbox.network.credentials[{i}].domain`: `{}` port {port} is not allowed by `sandbox.network.allow_domains` (or is denied): a credential is only added on the way to an allowed destination; allow it (`--allow-domain {}`)",
                    self.source_name(),
                    b.domain,
                    b.domain
                )));
            }
        }
        Ok(())
    }

    fn source_name(&self) -> String {
        self.named_source().unwrap_or_else(|| "policy".to_string())
    }

    /// The policy file or descriptor this policy was read from; None for
    /// the embedded default.
    pub fn named_source(&self) -> Option<String> {
        match (&self.source, &self.label) {
            (Some(p), _) => Some(p.display().to_string()),
            (None, Some(l)) => Some(l.clone()),
            (None, None) => None,
        }
    }
}

/// Opens the policy file refusing anything but a regular file (a FIFO would
/// block, a directory is a mistake), and refusing one that is too large.
pub fn read_policy_file(path: &Path) -> Result<String> {
    use std::io::Read;
    #[cfg(unix)]
    use std::os::unix::fs::OpenOptionsExt;
    let name = path.display();
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    opts.custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC);
    let mut f = opts.open(path).map_err(|e| {
        Refusal::policy(format!("{name}: cannot read policy file: {}", io_words(&e)))
    })?;
    let meta = f.metadata().map_err(|e| {
        Refusal::policy(format!("{name}: cannot read policy file: {}", io_words(&e)))
    })?;
    if !meta.is_file() {
        return Err(Refusal::policy(format!(
            "{name}: the policy must be a regular file, not a {}",
            file_kind(&meta)
        )));
    }
    if meta.len() > MAX_POLICY_BYTES {
        return Err(Refusal::policy(format!(
            "{name}: policy file is {} bytes; the limit is {MAX_POLICY_BYTES}",
            meta.len()
        )));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    (&mut f)
        .take(MAX_POLICY_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| {
            Refusal::policy(format!("{name}: cannot read policy file: {}", io_words(&e)))
        })?;
    if bytes.len() as u64 > MAX_POLICY_BYTES {
        return Err(Refusal::policy(format!(
            "{name}: policy file is larger than the limit of {MAX_POLICY_BYTES} bytes"
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = 1 + e.as_bytes()[..at].iter().filter(|b| **b == b'\n').count();
        Refusal::policy(format!("{name}:{line}: policy file is not valid UTF-8"))
    })
}

/// Reads the policy from an inherited descriptor to its end, then closes
/// it, so the command never inherits it. 0, 1 and 2 are the command's own
/// stdin, stdout and stderr and are refused.
pub fn read_policy_fd(fd: u32, name: &str) -> Result<String> {
    use std::io::Read;
    use std::os::unix::io::FromRawFd;
    let raw = match i32::try_from(fd) {
        Ok(r) if r > 2 => r,
        _ => {
            return Err(Refusal::usage(format!(
                "--policy-fd {fd}: descriptors 0, 1 and 2 are the command's own; pass the policy on 3 or above"
            )))
        }
    };
    // SAFETY: F_GETFD only asks whether the number is an open descriptor.
    if unsafe { libc::fcntl(raw, libc::F_GETFD) } == -1 {
        return Err(Refusal::policy(format!(
            "{name}: cannot read policy: descriptor {fd} is not open"
        )));
    }
    // SAFETY: the descriptor is open, inherited for this purpose alone, and
    // owned here from now on: it is closed when `f` drops.
    let f = unsafe { std::fs::File::from_raw_fd(raw) };
    let meta = f
        .metadata()
        .map_err(|e| Refusal::policy(format!("{name}: cannot read policy: {}", io_words(&e))))?;
    if meta.is_dir() {
        return Err(Refusal::policy(format!(
            "{name}: the policy must be a file or a pipe, not a directory"
        )));
    }
    let mut bytes = Vec::new();
    (&f).take(MAX_POLICY_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Refusal::policy(format!("{name}: cannot read policy: {}", io_words(&e))))?;
    if bytes.len() as u64 > MAX_POLICY_BYTES {
        return Err(Refusal::policy(format!(
            "{name}: policy is larger than the limit of {MAX_POLICY_BYTES} bytes"
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = 1 + e.as_bytes()[..at].iter().filter(|b| **b == b'\n').count();
        Refusal::policy(format!("{name}:{line}: policy is not valid UTF-8"))
    })
}

fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_fifo() {
            return "FIFO";
        }
        if t.is_socket() {
            return "socket";
        }
        if t.is_block_device() || t.is_char_device() {
            return "device";
        }
    }
    if meta.is_dir() {
        "directory"
    } else {
        "special file"
    }
}

/// An I/O error in words, without Rust's "(os error N)" noise.
pub fn io_words(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Parses policy text; errors name the file, the line, the key and, for a
/// vocabulary, the accepted words.
pub fn parse(text: &str, name: &str) -> Result<Policy> {
    toml::from_str::<Policy>(text).map_err(|e| {
        let msg = crate::error::one_line(e.message());
        match e.span() {
            Some(span) => {
                let (line, key) = locate(text, span.start);
                match key {
                    Some(k) if !msg.contains(&format!("`{k}`")) => {
                        Refusal::policy(format!("{name}:{line}: key `{k}`: {msg}"))
                    }
                    _ => Refusal::policy(format!("{name}:{line}: {msg}")),
                }
            }
            None => Refusal::policy(format!("{name}: {msg}")),
        }
    })
}

/// Policy text in dcjail's own schema: JSON when its first character
/// (after white space) is `{`, which no TOML document can start with, and
/// TOML otherwise. Other tools' formats are read by `run::source`.
pub fn from_dcjail_text(text: &str, name: &str) -> Result<Policy> {
    if text.trim_start().starts_with('{') {
        parse_json(text, name)
    } else {
        parse(text, name)
    }
}

/// Parses a JSON policy (the TOML schema, the same keys); errors name the
/// file, the line, the dotted key and, for a vocabulary, the accepted words.
pub fn parse_json(text: &str, name: &str) -> Result<Policy> {
    serde_json::from_str::<Policy>(text).map_err(|e| {
        let full = e.to_string();
        // serde_json appends the position; the line is said up front instead.
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        let msg = crate::error::one_line(full.strip_suffix(&suffix).unwrap_or(&full));
        if e.line() == 0 {
            return Refusal::policy(format!("{name}: {msg}"));
        }
        let offset = json_offset(text, e.line(), e.column());
        match json_key_at(text, offset) {
            Some(k) if !msg.contains(&format!("`{k}`")) => {
                Refusal::policy(format!("{name}:{}: key `{k}`: {msg}", e.line()))
            }
            _ => Refusal::policy(format!("{name}:{}: {msg}", e.line())),
        }
    })
}

/// The byte offset of serde_json's 1-based line and column.
fn json_offset(text: &str, line: usize, column: usize) -> usize {
    let start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    (start + column.saturating_sub(1)).min(text.len())
}

/// The dotted key whose value is being read at `offset` of a JSON document
/// (`sandbox.network.mode`), by following objects and keys up to there.
pub fn json_key_at(text: &str, offset: usize) -> Option<String> {
    struct Frame {
        object: bool,
        key: Option<String>,
        want_key: bool,
    }
    let bytes = text.as_bytes();
    let end = offset.min(bytes.len());
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = 0;
    while i < end {
        match bytes[i] {
            b'"' => {
                let mut j = i + 1;
                let mut s = Vec::new();
                while j < bytes.len() && bytes[j] != b'"' {
                    if bytes[j] == b'\\' {
                        j += 1;
                    }
                    if let Some(b) = bytes.get(j) {
                        s.push(*b);
                    }
                    j += 1;
                }
                if let Some(f) = stack.last_mut() {
                    if f.object && f.want_key {
                        f.key = Some(String::from_utf8_lossy(&s).into_owned());
                        f.want_key = false;
                    }
                }
                i = j;
            }
            b'{' | b'[' => stack.push(Frame {
                object: bytes[i] == b'{',
                key: None,
                want_key: bytes[i] == b'{',
            }),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => {
                if let Some(f) = stack.last_mut() {
                    f.want_key = f.object;
                    f.key = None;
                }
            }
            _ => {}
        }
        i += 1;
    }
    let keys: Vec<&str> = stack
        .iter()
        .filter(|f| f.object)
        .filter_map(|f| f.key.as_deref())
        .collect();
    (!keys.is_empty()).then(|| keys.join("."))
}

/// The 1-based line of a byte offset and the dotted key written on that line
/// (with its enclosing `[table]`), so an error can say which key is wrong.
fn locate(text: &str, offset: usize) -> (usize, Option<String>) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line_no = 1 + before.matches('\n').count();
    let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
    let line_end = text[line_start..]
        .find('\n')
        .map(|i| line_start + i)
        .unwrap_or(text.len());
    let line = text[line_start..line_end].trim();
    let mut table = String::new();
    for l in text[..line_start].lines() {
        let l = l.trim();
        if l.starts_with('[') && !l.starts_with("[[") {
            if let Some(end) = l.find(']') {
                table = l[1..end].trim().to_string();
            }
        }
    }
    if line.starts_with('[') {
        let inner = line.trim_start_matches('[');
        let t = inner.split(']').next().unwrap_or("").trim();
        return (line_no, (!t.is_empty()).then(|| t.to_string()));
    }
    let key = line
        .split('=')
        .next()
        .map(str::trim)
        .filter(|k| !k.is_empty() && !k.starts_with('#') && line.contains('='));
    let key = key.map(|k| {
        let k = k.trim_matches('"');
        if table.is_empty() {
            k.to_string()
        } else {
            format!("{table}.{k}")
        }
    });
    (line_no, key)
}

/// Turns an OS string from the command line into a policy path unchanged.
pub fn os_path(s: OsString) -> PathBuf {
    PathBuf::from(s)
}

#[cfg(test)]
mod network_tests {
    use super::*;

    fn with(mode: NetMode, deny: &[&str]) -> Policy {
        let mut p = embedded_built();
        p.sandbox.network.mode = mode;
        p.sandbox.network.deny_domains = deny.iter().map(|d| d.to_string()).collect();
        p
    }

    #[test]
    fn denied_domains_with_the_full_network_are_refused_naming_both() {
        let r = with(NetMode::Full, &["evil.example"])
            .validate()
            .unwrap_err();
        assert_eq!(r.reason, crate::error::Reason::PolicyError);
        assert_eq!(r.exit_code(), 125);
        for part in ["deny_domains", "evil.example", "`--net full`", "allowlist"] {
            assert!(r.message.contains(part), "{part}: {}", r.message);
        }
        // Controls: each half alone, and the allowlist that enforces them.
        assert!(with(NetMode::Full, &[]).validate().is_ok());
        assert!(with(NetMode::Allowlist, &["evil.example"])
            .validate()
            .is_ok());
        assert!(with(NetMode::None, &["evil.example"]).validate().is_ok());
        // A read call gets no network at all; a sandbox turned off enforces
        // no rule of any kind.
        let mut p = with(NetMode::Full, &["evil.example"]);
        p.tool = Tool::Read;
        assert!(p.validate().is_ok());
        let mut p = with(NetMode::Full, &["evil.example"]);
        p.sandbox.enabled = false;
        assert!(p.validate().is_ok());
    }
}

#[cfg(test)]
mod json_tests {
    use super::*;

    #[test]
    fn the_key_at_an_offset_follows_objects_and_resets_after_a_comma() {
        let t = r#"{"a": 1, "sandbox": {"network": {"mode": "x"}, "b": [1, {"c": 2}]}}"#;
        let at = |needle: &str| json_key_at(t, t.find(needle).unwrap() + needle.len());
        assert_eq!(at(r#""x""#).as_deref(), Some("sandbox.network.mode"));
        assert_eq!(at(r#""c": 2"#).as_deref(), Some("sandbox.b.c"));
        assert_eq!(at("1,").as_deref(), None);
        assert_eq!(at(r#""a": 1"#).as_deref(), Some("a"));
        let esc = r#"{"k\"ey": "v"}"#;
        assert_eq!(json_key_at(esc, esc.len() - 1).as_deref(), Some("k\"ey"));
    }

    #[test]
    fn a_json_policy_parses_to_what_the_same_toml_parses_to() {
        let toml = "mode = \"plan\"\n[sandbox.network]\nmode = \"allowlist\"\nallow_domains = [\"a.example\"]\n";
        let json = r#"{"mode": "plan", "sandbox": {"network": {"mode": "allowlist", "allow_domains": ["a.example"]}}}"#;
        assert_eq!(parse(toml, "t").unwrap(), parse_json(json, "j").unwrap());
        assert_eq!(
            from_dcjail_text(json, "j").unwrap(),
            parse(toml, "t").unwrap()
        );
    }
}
