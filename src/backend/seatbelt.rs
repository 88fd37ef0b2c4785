//! The Seatbelt (macOS) backend: renders the `/usr/bin/sandbox-exec` launch
//! (profile text plus `-D NAME=value` parameters) from a `Plan`.
//!
//! Owns: the translation of the plan's filesystem and network rules into SBPL,
//! glob → regex conversion, and the `/var` → `/private/var` firmlink mapping.
//! The fixed profile text lives in `profiles/seatbelt/*.sbpl`; the rules
//! generated here name paths only as `(param "NAME")`.
//!
//! Must never: paste a path, a glob or any other caller-controlled byte into
//! the profile text (the profile is a function of the plan's *shape* only;
//! the tests check this with adversarial paths); read the filesystem (the
//! renderer is pure and compiled and golden-tested on every OS); exec anything
//! except on macOS, by absolute path.

use crate::plan::{PathRule, Plan};
use crate::policy::NetMode;
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// Run by absolute path, never looked up on PATH.
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

const BASE: &str = include_str!("../../profiles/seatbelt/base.sbpl");
const TRUST: &str = include_str!("../../profiles/seatbelt/trust.sbpl");
const NETWORK_FULL: &str = include_str!("../../profiles/seatbelt/network.sbpl");
const TAIL: &str = include_str!("../../profiles/seatbelt/tail.sbpl");
const UNIX_SOCKETS: &str = include_str!("../../profiles/seatbelt/unix-sockets.sbpl");
const ALLOWLIST: &str = include_str!("../../profiles/seatbelt/allowlist.sbpl");

/// The parameter naming the proxy's endpoint, `localhost:<port>`.
pub const PROXY_PARAM: &str = "PROXY";

/// A rendered launch: the profile and the parameters it references.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rendered {
    pub profile: String,
    /// In the order they are passed; names are `[A-Z0-9_]+`, values are the
    /// bytes of a path (or a regex built from one), never re-encoded.
    pub params: Vec<(String, OsString)>,
    /// The plan needs the allowlist proxy but no port was given (`explain`
    /// renders before any proxy exists): `argv` refuses until one is.
    pub proxy_pending: bool,
}

impl Rendered {
    /// The full argv: `sandbox-exec -p PROFILE -D NAME=value … -- COMMAND…`.
    /// `-D` and its value are two elements so that a value starting with `-`
    /// or containing `=`, spaces or newlines stays one optarg.
    pub fn argv(&self, command: &[OsString]) -> Result<Vec<OsString>, String> {
        if self.proxy_pending {
            return Err("the network allowlist needs the proxy's port before launch".into());
        }
        let mut out: Vec<OsString> = vec![
            SANDBOX_EXEC.into(),
            "-p".into(),
            self.profile.clone().into(),
        ];
        for (name, value) in &self.params {
            let mut kv = name.clone().into_bytes();
            kv.push(b'=');
            kv.extend_from_slice(value.as_bytes());
            out.push("-D".into());
            out.push(OsString::from_vec(kv));
        }
        out.push("--".into());
        out.extend(command.iter().cloned());
        Ok(out)
    }

    /// Fills in the proxy's endpoint once the allowlist proxy listens. The
    /// profile text does not change: the port travels as the `PROXY`
    /// parameter, so what `explain` showed is exactly what runs.
    pub fn with_proxy_port(mut self, port: u16) -> Rendered {
        if self.proxy_pending {
            self.params
                .push((PROXY_PARAM.into(), format!("localhost:{port}").into()));
            self.proxy_pending = false;
        }
        self
    }

    /// What `explain` shows: the argv, the profile and the parameters.
    /// Non-UTF-8 bytes are shown lossily, with the exact bytes in hex.
    pub fn to_json(&self, command: &[OsString]) -> serde_json::Value {
        let params: Vec<serde_json::Value> = self
            .params
            .iter()
            .map(|(n, v)| {
                let mut o = serde_json::json!({ "name": n, "value": v.to_string_lossy() });
                if v.to_str().is_none() {
                    o["value_hex"] = hex(v.as_bytes()).into();
                }
                o
            })
            .collect();
        let argv = match self.argv(command) {
            Ok(a) => a,
            Err(_) => {
                // Show what will run, with the one value only launch knows.
                let mut r = self.clone();
                r.proxy_pending = false;
                r.params
                    .push((PROXY_PARAM.into(), "localhost:<proxy port>".into()));
                r.argv(command).unwrap_or_default()
            }
        };
        let mut v = serde_json::json!({
            "argv": argv.iter().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>(),
            "profile": self.profile,
            "params": params,
        });
        if self.proxy_pending {
            v["pending"] = serde_json::json!({
                PROXY_PARAM: "localhost:<port of dcjail's proxy, chosen at launch>"
            });
        }
        v
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// `explain --backend seatbelt` on any OS: the launch macOS would run.
pub fn describe(plan: &Plan) -> serde_json::Value {
    match render(plan, None) {
        Ok(r) => r.to_json(&plan.argv),
        Err(e) => serde_json::json!({ "error": e }),
    }
}

/// The parameters, named by what they are for, deduplicated by value.
#[derive(Default)]
struct Params {
    list: Vec<(String, OsString)>,
    /// (prefix, value) → name, so one path used twice is passed once.
    seen: Vec<(&'static str, OsString, String)>,
}

impl Params {
    fn add(&mut self, prefix: &'static str, value: OsString) -> String {
        if let Some((_, _, name)) = self
            .seen
            .iter()
            .find(|(p, v, _)| *p == prefix && *v == value)
        {
            return name.clone();
        }
        let n = self.seen.iter().filter(|(p, _, _)| *p == prefix).count();
        let name = format!("{prefix}_{n}");
        self.seen.push((prefix, value.clone(), name.clone()));
        self.list.push((name.clone(), value));
        name
    }

    /// A parameter the fixed profile text names itself (`PROXY`).
    fn add_named(&mut self, name: &str, value: OsString) {
        self.list.push((name.to_string(), value));
    }
}

/// Appends one of the fixed profile files, set off by a blank line.
fn include(p: &mut String, text: &str) {
    p.push('\n');
    p.push_str(text);
}

/// `(param "NAME")`: the only way a plan's value appears in the profile.
fn param(name: &str) -> String {
    format!("(param \"{name}\")")
}

/// macOS exposes `/var`, `/tmp` and `/etc` as symlinks into `/private`, and
/// Seatbelt matches the resolved path: a rule on `/tmp/x` would never match.
/// The plan is canonical on macOS already; this keeps made-up plans (tests,
/// `explain` on Linux) showing what macOS would enforce.
pub fn canonical(p: &Path) -> PathBuf {
    for top in ["/var", "/tmp", "/etc"] {
        if p.starts_with(top) {
            let mut out = PathBuf::from("/private");
            out.push(p.strip_prefix("/").unwrap_or(p));
            return out;
        }
    }
    p.to_path_buf()
}

fn canonical_glob(g: &str) -> String {
    for top in ["/var", "/tmp", "/etc"] {
        if g == top || g.strip_prefix(top).is_some_and(|r| r.starts_with('/')) {
            return format!("/private{g}");
        }
    }
    g.to_string()
}

/// Regex metacharacters of the POSIX-style engine Seatbelt uses; each is
/// escaped with a backslash (the form Apple's profiles use, e.g. `\.`).
const REGEX_META: &[u8] = b".^$*+?()[]{}|\\";

/// The regex text matching `bytes` literally. With `fold`, ASCII letters
/// match either case: the default macOS volume is case-insensitive, so a
/// deny on `.git/hooks` must also catch `.GIT/Hooks`. Other bytes (UTF-8
/// sequences included) are copied as they are: the regex travels as a
/// parameter value, so no string quoting applies to it.
fn regex_literal(bytes: &[u8], fold: bool, out: &mut Vec<u8>) {
    for &b in bytes {
        if fold && b.is_ascii_alphabetic() {
            out.extend_from_slice(&[b'[', b.to_ascii_lowercase(), b.to_ascii_uppercase(), b']']);
        } else if REGEX_META.contains(&b) {
            out.extend_from_slice(&[b'\\', b]);
        } else {
            out.push(b);
        }
    }
}

/// `^PATH(/.*)?$` (the path and everything under it) or `^PATH$`, with
/// case folding: the extra case-insensitive net behind the exact
/// `literal`/`subpath` rules of a denial.
fn folded_regex(p: &Path, with_children: bool) -> OsString {
    let mut out = vec![b'^'];
    regex_literal(p.as_os_str().as_bytes(), true, &mut out);
    if with_children {
        out.extend_from_slice(b"(/.*)?");
    }
    out.push(b'$');
    OsString::from_vec(out)
}

/// Whether a glob's regex must err toward matching more (a denial) or
/// toward matching less (a re-allowance): an ambiguity never widens access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lean {
    Deny,
    Allow,
}

/// Converts a plan glob (globset syntax, `literal_separator`, absolute or
/// `**`-led) to an anchored regex matching the paths the glob covers and
/// everything under them, as `PathRule::covers` does.
///
/// Refused, rather than guessed: control characters, U+FFFD (the plan holds
/// globs as lossy UTF-8, so it may stand for bytes we no longer know),
/// non-ASCII or `/`, `\`, `[`, `]` inside a `[...]` class, unbalanced
/// brackets or braces.
pub fn glob_regex(glob: &str, lean: Lean) -> Result<OsString, String> {
    glob_regex_bytes(glob, lean)
        .map(OsString::from_vec)
        .map_err(|why| {
            format!(
                "glob `{}` cannot be expressed as a Seatbelt rule: {why}",
                crate::error::one_line(glob)
            )
        })
}

/// `glob_regex`, its refusal said as the reason alone.
fn glob_regex_bytes(glob: &str, lean: Lean) -> Result<Vec<u8>, &'static str> {
    if glob.chars().any(|c| c.is_control()) {
        return Err("it contains a control character");
    }
    if glob.contains('\u{fffd}') {
        return Err("it contains bytes that are not UTF-8");
    }
    let g = canonical_glob(glob);
    let fold = lean == Lean::Deny;
    let chars: Vec<char> = g.chars().collect();
    let mut out: Vec<u8> = vec![b'^'];
    let mut depth = 0usize;
    let mut i = 0;
    while i < chars.len() {
        let mut buf = [0u8; 4];
        match chars[i] {
            '*' => {
                i += star(&chars, i, &mut out);
                continue;
            }
            '?' => out.extend_from_slice(match lean {
                // One character is one to four bytes in UTF-8; whether the
                // engine counts bytes or characters, a denial still covers it.
                Lean::Deny => b"([^/]|[^/][^/]|[^/][^/][^/]|[^/][^/][^/][^/])",
                Lean::Allow => b"[^/]",
            }),
            '[' if chars.get(i + 2) == Some(&']') && !matches!(chars[i + 1], '!' | '^') => {
                // `[x]` is one literal character: globset::escape writes
                // metacharacters of the workspace path this way.
                regex_literal(
                    chars[i + 1].encode_utf8(&mut buf).as_bytes(),
                    fold,
                    &mut out,
                );
                i += 3;
                continue;
            }
            '[' => {
                i = class(&chars, i, fold, &mut out)?;
                continue;
            }
            '{' => {
                depth += 1;
                out.push(b'(');
            }
            '}' => {
                if depth == 0 {
                    return Err("a `}` has no `{`");
                }
                depth -= 1;
                out.push(b')');
            }
            ',' if depth > 0 => out.push(b'|'),
            '\\' => {
                let Some(&next) = chars.get(i + 1) else {
                    return Err("it ends with a lone `\\`");
                };
                regex_literal(next.encode_utf8(&mut buf).as_bytes(), fold, &mut out);
                i += 2;
                continue;
            }
            ']' => return Err("a `]` has no `[`"),
            other => regex_literal(other.encode_utf8(&mut buf).as_bytes(), fold, &mut out),
        }
        i += 1;
    }
    if depth != 0 {
        return Err("a `{` is not closed");
    }
    out.extend_from_slice(b"(/.*)?$");
    Ok(out)
}

/// The regex of the `*` or `**` at `chars[i]`; returns how many
/// characters it took.
fn star(chars: &[char], i: usize, out: &mut Vec<u8>) -> usize {
    let double = chars.get(i + 1) == Some(&'*');
    let starts_component = i == 0 || chars[i - 1] == '/';
    let after = if double { chars.get(i + 2) } else { None };
    if double && starts_component && after == Some(&'/') {
        // `**/`: zero or more whole components.
        out.extend_from_slice(b"(.*/)?");
        return 3;
    }
    if double && starts_component && after.is_none() {
        // Trailing `/**`: everything below.
        out.extend_from_slice(b".*");
        return 2;
    }
    out.extend_from_slice(b"[^/]*");
    if double {
        2
    } else {
        1
    }
}

/// The regex of the `[...]` class starting at `chars[i]`; returns the index
/// after its `]`.
fn class(chars: &[char], i: usize, fold: bool, out: &mut Vec<u8>) -> Result<usize, &'static str> {
    let mut j = i + 1;
    let negated = matches!(chars.get(j), Some('!') | Some('^'));
    if negated {
        j += 1;
    }
    let start = j;
    while j < chars.len() && chars[j] != ']' {
        j += 1;
    }
    if j >= chars.len() || j == start {
        return Err("a `[` class is not closed or is empty");
    }
    let body: Vec<char> = chars[start..j].to_vec();
    if body
        .iter()
        .any(|c| !c.is_ascii() || matches!(c, '/' | '\\' | '[' | ']' | '^'))
    {
        return Err("a `[` class may hold only ASCII other than / \\ [ ] ^");
    }
    out.push(b'[');
    if negated {
        // A class never matches the separator (literal_separator).
        out.extend_from_slice(b"^/");
    }
    // A leading `-` would read as a range after `^/`: move it last.
    let (dash, items): (Vec<char>, Vec<char>) = if body.first() == Some(&'-') {
        (vec!['-'], body[1..].to_vec())
    } else {
        (Vec::new(), body)
    };
    class_items(&items, fold && !negated, out);
    out.extend(dash.iter().map(|c| *c as u8));
    out.push(b']');
    Ok(j + 1)
}

/// A class's characters and ranges; with `fold`, each letter's other case
/// too (a denial covers what a case-insensitive filesystem would match).
fn class_items(items: &[char], fold: bool, out: &mut Vec<u8>) {
    let mut extra = Vec::new();
    let mut k = 0;
    while k < items.len() {
        let a = items[k];
        if items.get(k + 1) == Some(&'-') && k + 2 < items.len() {
            let b = items[k + 2];
            out.extend_from_slice(&[a as u8, b'-', b as u8]);
            if fold && a.is_ascii_alphabetic() && b.is_ascii_alphabetic() {
                let (fa, fb) = (swap_case(a), swap_case(b));
                if fa <= fb {
                    extra.extend_from_slice(&[fa as u8, b'-', fb as u8]);
                }
            }
            k += 3;
        } else {
            out.push(a as u8);
            if fold && a.is_ascii_alphabetic() {
                extra.push(swap_case(a) as u8);
            }
            k += 1;
        }
    }
    out.extend_from_slice(&extra);
}

fn swap_case(c: char) -> char {
    if c.is_ascii_lowercase() {
        c.to_ascii_uppercase()
    } else {
        c.to_ascii_lowercase()
    }
}

/// The directory a glob is anchored in: its components before the first one
/// holding a glob character (`/w/conf/*.key` → `/w/conf`); `None` for `**/…`.
fn glob_literal_dir(glob: &str) -> Option<PathBuf> {
    let g = canonical_glob(glob);
    if !g.starts_with('/') {
        return None;
    }
    let mut dir = PathBuf::from("/");
    for comp in g.split('/').filter(|c| !c.is_empty()) {
        if comp.contains(['*', '?', '[', '{', '\\']) {
            break;
        }
        dir.push(comp);
    }
    (dir != Path::new("/")).then_some(dir)
}

/// Renders the Seatbelt launch for `plan`. `proxy_port` is the port of
/// dcjail's allowlist proxy, known only once it listens; without it an
/// allowlist plan renders with `proxy_pending` set.
pub fn render(plan: &Plan, proxy_port: Option<u16>) -> Result<Rendered, String> {
    if !plan.sandboxed {
        return Err("the sandbox is off; there is no Seatbelt profile to render".into());
    }
    let mut params = Params::default();
    let mut p = String::with_capacity(BASE.len() + TAIL.len() + 4096);
    p.push_str(BASE);
    p.push_str("\n;;; ---- generated by dcjail from the plan ----\n");
    read_rules(plan, &mut params, &mut p)?;
    write_rules(plan, &mut params, &mut p)?;
    let proxy_pending = net_rules(plan, proxy_port, &mut params, &mut p);
    unix_rules(plan, &mut params, &mut p);
    include(&mut p, TAIL);
    Ok(Rendered {
        profile: p,
        params: params.list,
        proxy_pending,
    })
}

/// Reads are allowed everywhere but `deny_read`, with `allow_read`
/// re-opened inside it. Exec and executable mapping follow reads, so a
/// binary under `deny_read` cannot be run to get at it. Written as two
/// allows (no deny), so the result does not depend on rule order.
fn read_rules(plan: &Plan, params: &mut Params, p: &mut String) -> Result<(), String> {
    const OPS: &str = "file-read* file-map-executable process-exec*";
    let mut not = Vec::new();
    for rule in &plan.fs.deny_read {
        match rule {
            PathRule::Literal(path) => {
                let path = canonical(path);
                let n = params.add("NOREAD", path.clone().into_os_string());
                not.push(format!("(require-not (subpath {}))", param(&n)));
                let n = params.add("NOREAD_CI", folded_regex(&path, true));
                not.push(format!("(require-not (regex {}))", param(&n)));
            }
            PathRule::Glob(g) => {
                let n = params.add("NOREAD_GLOB", glob_regex(&g.pattern, Lean::Deny)?);
                not.push(format!("(require-not (regex {}))", param(&n)));
            }
        }
    }
    p.push_str(";; Reads (and exec): everything but deny_read.\n");
    if !not.is_empty() {
        p.push_str(&format!(
            "(allow {OPS}\n    (require-all\n        {}))\n",
            not.join("\n        ")
        ));
    } else {
        p.push_str(&format!("(allow {OPS})\n"));
    }
    let mut re = Vec::new();
    for rule in &plan.fs.allow_read {
        match rule {
            PathRule::Literal(path) => {
                let n = params.add("READ", canonical(path).into_os_string());
                re.push(format!("(subpath {})", param(&n)));
            }
            PathRule::Glob(g) => {
                let n = params.add("READ_GLOB", glob_regex(&g.pattern, Lean::Allow)?);
                re.push(format!("(regex {})", param(&n)));
            }
        }
    }
    if !re.is_empty() {
        p.push_str(";; allow_read re-opens paths inside deny_read (exact case only).\n");
        p.push_str(&format!("(allow {OPS}\n    {})\n", re.join("\n    ")));
    }
    Ok(())
}

/// Writes only inside the writable roots, never in a protected path,
/// `deny_write` or `deny_read` path — neither the path itself (`literal`,
/// so a missing one cannot be created) nor anything under it (`subpath`).
///
/// Renaming a directory moves everything under it without a check on the
/// moved names, so `mv .git g; edit g/hooks/x; mv g .git` would get around a
/// path rule. The roots themselves and every ancestor of a protected or
/// denied path inside a root are therefore kept as they are (`literal`):
/// no rename, removal, creation or chmod of those directories. Denied reads
/// are kept unwritable for the same reason: renaming a secret out of its
/// name would make it readable.
fn write_rules(plan: &Plan, params: &mut Params, p: &mut String) -> Result<(), String> {
    if plan.fs.writable.is_empty() {
        p.push_str(";; Writes: none (read-only); only the devices of the base profile.\n");
        return Ok(());
    }
    let roots: Vec<PathBuf> = plan.fs.writable.iter().map(|r| canonical(r)).collect();
    let mut guarded: Vec<PathBuf> = Vec::new(); // denied with everything below
    let mut globs: Vec<&str> = Vec::new();
    let literal_rules = plan.fs.deny_write.iter().chain(plan.fs.deny_read.iter());
    for path in plan.fs.protected.iter() {
        guarded.push(canonical(path));
    }
    for rule in literal_rules {
        match rule {
            PathRule::Literal(path) => guarded.push(canonical(path)),
            PathRule::Glob(g) => globs.push(&g.pattern),
        }
    }
    // The held home directory: unwritable in the first block, with
    // everything below it; the roots strictly inside it are opened again
    // by a second block that does not hold it (allow rules add up).
    let held: Vec<PathBuf> = plan.fs.held.iter().map(|h| canonical(h)).collect();
    let mut all = guarded.clone();
    all.extend(held.iter().cloned());
    p.push_str(
        ";; Writes: inside the writable roots only; never a protected, deny_write or\n\
         ;; deny_read path (nor creating one); roots and ancestors of those keep their names.\n",
    );
    allow_block(&roots, all, &globs, params, p)?;
    let inner: Vec<PathBuf> = roots
        .iter()
        .filter(|r| held.iter().any(|h| r.starts_with(h) && *r != h))
        .cloned()
        .collect();
    if !inner.is_empty() {
        p.push_str(";; The writable roots inside the home directory, which stays read-only.\n");
        allow_block(&inner, guarded, &globs, params, p)?;
    }
    Ok(())
}

/// One `(allow file-write* …)` over `roots`, minus `guarded` (with what is
/// below) and `globs`, keeping the names of the roots and of the ancestors
/// of what is guarded.
fn allow_block(
    roots: &[PathBuf],
    mut guarded: Vec<PathBuf>,
    globs: &[&str],
    params: &mut Params,
    p: &mut String,
) -> Result<(), String> {
    let mut globs: Vec<&str> = globs.to_vec();
    // Directories that must keep their name: the roots, the ancestors (inside
    // a root) of each guarded path and of each glob's fixed directory, and
    // that directory itself.
    let glob_dirs: Vec<PathBuf> = globs.iter().filter_map(|g| glob_literal_dir(g)).collect();
    let inside = |d: &Path| roots.iter().any(|r| d.starts_with(r));
    let mut kept: Vec<PathBuf> = roots.to_vec();
    for a in guarded.iter().chain(glob_dirs.iter()) {
        kept.extend(
            a.ancestors()
                .skip(1)
                .filter(|d| inside(d))
                .map(Path::to_path_buf),
        );
    }
    kept.extend(glob_dirs.iter().filter(|d| inside(d)).cloned());
    dedup(&mut kept);
    dedup(&mut guarded);
    globs.sort_unstable();
    globs.dedup();

    let mut any = Vec::new();
    for r in roots {
        let n = params.add("WRITABLE", r.clone().into_os_string());
        any.push(format!("(subpath {})", param(&n)));
    }
    let mut not = Vec::new();
    for k in &kept {
        let n = params.add("KEEP", k.clone().into_os_string());
        not.push(format!("(require-not (literal {}))", param(&n)));
        let n = params.add("KEEP_CI", folded_regex(k, false));
        not.push(format!("(require-not (regex {}))", param(&n)));
    }
    for g in &guarded {
        let n = params.add("NOWRITE", g.clone().into_os_string());
        not.push(format!("(require-not (literal {}))", param(&n)));
        not.push(format!("(require-not (subpath {}))", param(&n)));
        let n = params.add("NOWRITE_CI", folded_regex(g, true));
        not.push(format!("(require-not (regex {}))", param(&n)));
    }
    for g in &globs {
        let n = params.add("NOWRITE_GLOB", glob_regex(g, Lean::Deny)?);
        not.push(format!("(require-not (regex {}))", param(&n)));
    }
    p.push_str(&format!(
        "(allow file-write*\n    (require-all\n        (require-any\n            {})",
        any.join("\n            ")
    ));
    for n in &not {
        p.push_str("\n        ");
        p.push_str(n);
    }
    p.push_str("))\n");
    Ok(())
}

fn dedup(v: &mut Vec<PathBuf>) {
    let mut seen: Vec<PathBuf> = Vec::new();
    v.retain(|x| {
        let dup = seen.contains(x);
        if !dup {
            seen.push(x.clone());
        }
        !dup
    });
}

/// The network. `none`: no rule at all (`deny default` holds).
/// `allowlist`: one outbound TCP endpoint, dcjail's proxy on loopback.
/// `full`: the network profile. Unix sockets follow (`unix_rules`).
/// Returns whether the proxy port is pending.
fn net_rules(plan: &Plan, proxy_port: Option<u16>, params: &mut Params, p: &mut String) -> bool {
    let mode = plan.effective_net();
    let mut pending = false;
    match mode {
        NetMode::None => p.push_str(";; Network: none.\n"),
        NetMode::Allowlist => {
            include(p, TRUST);
            match proxy_port {
                Some(port) => {
                    params.add_named(PROXY_PARAM, format!("localhost:{port}").into());
                }
                None => pending = true,
            }
            include(p, ALLOWLIST);
        }
        NetMode::Full => {
            include(p, TRUST);
            include(p, NETWORK_FULL);
        }
    }
    pending
}

/// Unix sockets, in every network mode and after its rules: bound in the
/// writable roots, reached in the workspace roots and where the policy
/// names a socket or a directory of them.
fn unix_rules(plan: &Plan, params: &mut Params, p: &mut String) {
    include(p, UNIX_SOCKETS);
    let mut bind = Vec::new();
    for r in &plan.fs.writable {
        let n = params.add("WRITABLE", canonical(r).into_os_string());
        bind.push(format!("(local unix-socket (subpath {}))", param(&n)));
    }
    let mut reach = Vec::new();
    if plan.fs.access != crate::policy::SandboxMode::ReadOnly {
        let roots = std::iter::once(&plan.workspace).chain(plan.worktree.iter());
        for r in roots {
            let n = params.add("WRITABLE", canonical(r).into_os_string());
            reach.push(format!("(remote unix-socket (subpath {}))", param(&n)));
        }
    }
    for s in &plan.net.allow_unix_sockets {
        let n = params.add("UNIX_SOCKET", canonical(s).into_os_string());
        reach.push(format!("(remote unix-socket (subpath {}))", param(&n)));
    }
    if !bind.is_empty() {
        p.push_str(&format!(
            "(allow network-bind network-inbound\n    {})\n",
            bind.join("\n    ")
        ));
    }
    if !reach.is_empty() {
        p.push_str(&format!(
            "(allow network-outbound\n    {})\n",
            reach.join("\n    ")
        ));
    }
}

#[cfg(target_os = "macos")]
pub use super::host::already_sandboxed;

/// macOS: probes what the backend needs and renders the launch.
#[cfg(target_os = "macos")]
pub fn prepare(plan: &Plan) -> Result<Rendered, super::Unavailable> {
    use super::{Kind, Missing, Unavailable};
    if already_sandboxed() {
        return Err(Unavailable::new(Kind::Seatbelt, Missing::Host("dcjail is already running inside a Seatbelt sandbox, and sandbox-exec cannot apply a profile inside another (sandbox_apply fails); run dcjail outside the sandbox".into())));
    }
    if !Path::new(SANDBOX_EXEC).is_file() {
        return Err(Unavailable::new(
            Kind::Seatbelt,
            Missing::Program(format!("{SANDBOX_EXEC} is missing")),
        ));
    }
    // An allowlist renders with the proxy's port pending: `exec::start_net`
    // starts the proxy at launch and fills it in (`with_proxy_port`);
    // without it `argv` refuses, so nothing runs with the port unset.
    render(plan, None).map_err(|m| Unavailable::new(Kind::Seatbelt, Missing::Rule(m)))
}

/// `dcjail doctor` on macOS: Seatbelt works when sandbox-exec is where it
/// must be and dcjail is not already inside a sandbox.
#[cfg(target_os = "macos")]
pub fn doctor_report() -> super::report::Report {
    use super::report::{BackendReport, Check, Report, Status};
    use super::Kind;
    let only = [Kind::Seatbelt];
    let mut checks = Vec::new();
    let mut details = Vec::new();
    let mut fix = None;
    let present = Path::new(SANDBOX_EXEC).is_file();
    if present {
        details.push(format!("{SANDBOX_EXEC} is present"));
        checks.push(Check::new(
            "sandbox-exec",
            Status::Ok,
            &only,
            format!("{SANDBOX_EXEC} is present"),
        ));
    } else {
        details.push(format!("{SANDBOX_EXEC} is missing"));
        checks.push(
            Check::new(
                "sandbox-exec",
                Status::Fail,
                &only,
                format!("{SANDBOX_EXEC} is missing"),
            )
            .with_fix(Some(
                "a macOS install provides it; restore the system".into(),
            )),
        );
    }
    let nested = already_sandboxed();
    if nested {
        let m = "dcjail is already inside a Seatbelt sandbox; profiles cannot nest".to_string();
        details.push(m.clone());
        let f = "run dcjail outside any sandbox-exec or app sandbox".to_string();
        fix = Some(f.clone());
        checks.push(Check::new("nested-sandbox", Status::Fail, &only, m).with_fix(Some(f)));
    } else {
        checks.push(Check::new(
            "nested-sandbox",
            Status::Ok,
            &only,
            "dcjail is not inside another Seatbelt sandbox".into(),
        ));
    }
    details.push(
        "network allowlist: through dcjail's proxy, the profile allowing only localhost:<its port>"
            .into(),
    );
    Report {
        checks,
        backends: vec![BackendReport {
            kind: Kind::Seatbelt,
            works: present && !nested,
            details,
            fix,
        }],
    }
}
