//! `[[sandbox.network.credentials]]`: a secret bound to one destination,
//! added on the wire by the allowlist proxy as one request header, so the
//! command never holds it. Each entry names the host (`domain`, an exact
//! name), optionally the `port`, the `header`, and its `value`, a template
//! taking the secret from dcjail's own environment (`${env:NAME}`) or a
//! file (`${file:/abs/path}`), optionally base64-encoded
//! (`${base64:user:${env:NAME}}`, for `Basic` authentication); an
//! `upstream_ca` file adds roots the proxy trusts for that host, and
//! `plain_http = true` lets it go on plain-HTTP requests too (in clear;
//! off by default, so `http://` to a bound host carries nothing).
//!
//! Owns: the schema, its strict checks, and rendering a template through
//! the lookups it is given. Must never: read the environment or a file
//! itself, or put a secret in any message (only names and paths).

use serde::Deserialize;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Credential {
    pub domain: String,
    #[serde(default)]
    pub port: Option<u16>,
    pub header: String,
    pub value: String,
    #[serde(default)]
    pub upstream_ca: Option<PathBuf>,
    /// Also add it to plain-HTTP requests (sent in clear): off unless said.
    #[serde(default)]
    pub plain_http: bool,
}

/// Where a secret comes from: what `explain` shows and the environment
/// loses; never the secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Env(String),
    File(PathBuf),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Env(n) => write!(f, "${{env:{n}}}"),
            Source::File(p) => write!(f, "${{file:{}}}", p.display()),
        }
    }
}

/// One piece of a value template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    Lit(String),
    Secret(Source),
    Base64(Vec<Part>),
}

/// Headers the proxy itself decides (framing, routing, the connection, its
/// own authentication): never set by a credential.
const RESERVED: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-authorization",
    "proxy-authenticate",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
    "expect",
];

/// Largest secret file read.
pub const MAX_SECRET_FILE: u64 = 64 * 1024;

/// A parsed value template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template(pub Vec<Part>);

impl Template {
    pub fn parse(text: &str) -> Result<Template, String> {
        let parts = parse_parts(text, false)?;
        let t = Template(parts);
        if t.sources().is_empty() {
            return Err("the value names no secret: take it from `${env:NAME}` or `${file:/path}` (a value written out in the policy would be readable by the command)".into());
        }
        Ok(t)
    }

    /// Every secret the template reads, in order.
    pub fn sources(&self) -> Vec<Source> {
        fn walk(parts: &[Part], out: &mut Vec<Source>) {
            for p in parts {
                match p {
                    Part::Lit(_) => {}
                    Part::Secret(s) => out.push(s.clone()),
                    Part::Base64(inner) => walk(inner, out),
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.0, &mut out);
        out
    }

    /// The header value, each secret read through `env` or `file`. An
    /// error names the variable or file, never what it holds.
    pub fn render(
        &self,
        env: &dyn Fn(&str) -> Option<OsString>,
        file: &dyn Fn(&Path) -> std::io::Result<Vec<u8>>,
    ) -> Result<Vec<u8>, String> {
        fn go(
            parts: &[Part],
            env: &dyn Fn(&str) -> Option<OsString>,
            file: &dyn Fn(&Path) -> std::io::Result<Vec<u8>>,
            out: &mut Vec<u8>,
        ) -> Result<(), String> {
            for p in parts {
                match p {
                    Part::Lit(s) => out.extend_from_slice(s.as_bytes()),
                    Part::Secret(s) => out.extend_from_slice(&secret(s, env, file)?),
                    Part::Base64(inner) => {
                        let mut raw = Vec::new();
                        go(inner, env, file, &mut raw)?;
                        out.extend_from_slice(base64(&raw).as_bytes());
                    }
                }
            }
            Ok(())
        }
        let mut out = Vec::new();
        go(&self.0, env, file, &mut out)?;
        Ok(out)
    }
}

fn secret(
    s: &Source,
    env: &dyn Fn(&str) -> Option<OsString>,
    file: &dyn Fn(&Path) -> std::io::Result<Vec<u8>>,
) -> Result<Vec<u8>, String> {
    use std::os::unix::ffi::OsStringExt;
    let mut v = match s {
        Source::Env(n) => env(n)
            .ok_or_else(|| format!("{s}: the variable `{n}` is not set in dcjail's environment"))?
            .into_vec(),
        Source::File(p) => file(p).map_err(|e| {
            format!(
                "{s}: cannot read `{}`: {}",
                p.display(),
                super::io_words(&e)
            )
        })?,
    };
    // A file usually ends with a newline that is no part of the secret.
    if matches!(s, Source::File(_)) {
        while v.last().is_some_and(|c| *c == b'\n' || *c == b'\r') {
            v.pop();
        }
    }
    if v.is_empty() {
        return Err(format!("{s}: the secret is empty"));
    }
    if v.iter().any(|c| matches!(c, b'\r' | b'\n' | 0)) {
        return Err(format!(
            "{s}: the secret holds a line break or NUL byte, which a header value cannot"
        ));
    }
    Ok(v)
}

fn parse_parts(text: &str, in_base64: bool) -> Result<Vec<Part>, String> {
    let mut parts = Vec::new();
    let mut lit = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("${") {
        lit.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let end = closing(after).ok_or("a `${` is not closed by `}`")?;
        let inner = &after[..end];
        rest = &after[end + 1..];
        if !lit.is_empty() {
            parts.push(Part::Lit(std::mem::take(&mut lit)));
        }
        parts.push(reference(inner, in_base64)?);
    }
    lit.push_str(rest);
    if !lit.is_empty() {
        parts.push(Part::Lit(lit));
    }
    for p in &parts {
        if let Part::Lit(l) = p {
            if l.chars().any(|c| c.is_control()) {
                return Err(
                    "the value holds a control character (a line break would end the header)"
                        .into(),
                );
            }
            if l.contains('}') {
                return Err("a `}` without its `${`".into());
            }
        }
    }
    Ok(parts)
}

/// The index of the `}` closing a `${` whose inside starts `s`.
fn closing(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'$' && b.get(i + 1) == Some(&b'{') {
            depth += 1;
            i += 2;
            continue;
        }
        if b[i] == b'}' {
            if depth == 0 {
                return Some(i);
            }
            depth -= 1;
        }
        i += 1;
    }
    None
}

fn reference(inner: &str, in_base64: bool) -> Result<Part, String> {
    let (kind, arg) = inner.split_once(':').ok_or_else(|| {
        format!("`${{{inner}}}` is not `${{env:NAME}}`, `${{file:/path}}` or `${{base64:...}}`")
    })?;
    match kind {
        "env" => {
            let ok = !arg.is_empty()
                && arg.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
                && !arg.as_bytes()[0].is_ascii_digit();
            if !ok {
                return Err(format!(
                    "`${{env:{arg}}}`: `{arg}` is not a variable name (letters, digits, `_`)"
                ));
            }
            Ok(Part::Secret(Source::Env(arg.to_string())))
        }
        "file" => {
            let p = PathBuf::from(arg);
            if !p.is_absolute() {
                return Err(format!("`${{file:{arg}}}`: the path must be absolute"));
            }
            Ok(Part::Secret(Source::File(p)))
        }
        "base64" if !in_base64 => Ok(Part::Base64(parse_parts(arg, true)?)),
        "base64" => Err("`${base64:...}` inside another `${base64:...}`".into()),
        other => Err(format!(
            "`${{{other}:...}}` is not a secret source (use `env`, `file` or `base64`)"
        )),
    }
}

/// Whether `name` is an HTTP header name (RFC 9110 token).
fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c))
}

/// A checked entry: what the proxy and the plan use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    /// Lower-case, no trailing dot.
    pub domain: String,
    pub port: Option<u16>,
    pub header: String,
    pub value: Template,
    pub upstream_ca: Option<PathBuf>,
    pub plain_http: bool,
}

impl Binding {
    /// Whether this binding is for `host:port` (`host` lower-case).
    pub fn applies(&self, host: &str, port: u16) -> bool {
        self.domain == host && self.port.is_none_or(|p| p == port)
    }
}

/// Checks every entry; an error names the field (`credentials[i].header`).
pub fn check(list: &[Credential]) -> Result<Vec<Binding>, String> {
    let mut out: Vec<Binding> = Vec::with_capacity(list.len());
    for (i, c) in list.iter().enumerate() {
        let key = |f: &str| format!("`sandbox.network.credentials[{i}].{f}`");
        let domain = c.domain.trim_end_matches('.').to_ascii_lowercase();
        let rule = crate::net::domain::DomainRule::parse(&domain)
            .map_err(|e| format!("{}: {e}", key("domain")))?;
        match rule.host {
            crate::net::domain::RuleHost::Exact(_) if rule.port.is_none() => {}
            _ => {
                return Err(format!(
                    "{}: `{}` must be one host name, without `*.`, an address or a port (the port has its own field)",
                    key("domain"),
                    crate::error::one_line(&c.domain)
                ))
            }
        }
        if c.port == Some(0) {
            return Err(format!("{}: 0 is not a port", key("port")));
        }
        if !is_token(&c.header) {
            return Err(format!(
                "{}: `{}` is not a header name",
                key("header"),
                crate::error::one_line(&c.header)
            ));
        }
        if RESERVED.contains(&c.header.to_ascii_lowercase().as_str()) {
            return Err(format!(
                "{}: `{}` is set by the proxy itself and cannot carry a credential",
                key("header"),
                c.header
            ));
        }
        let value = Template::parse(&c.value).map_err(|e| format!("{}: {e}", key("value")))?;
        if let Some(ca) = &c.upstream_ca {
            if !ca.is_absolute() {
                return Err(format!(
                    "{}: `{}` must be an absolute path",
                    key("upstream_ca"),
                    crate::error::one_line(&ca.display().to_string())
                ));
            }
        }
        let b = Binding {
            domain,
            port: c.port,
            header: c.header.clone(),
            value,
            upstream_ca: c.upstream_ca.clone(),
            plain_http: c.plain_http,
        };
        if let Some(j) = out.iter().position(|o| {
            o.domain == b.domain && o.port == b.port && o.header.eq_ignore_ascii_case(&b.header)
        }) {
            return Err(format!(
                "{}: the header `{}` for `{}` is already bound by credentials[{j}]",
                key("header"),
                b.header,
                b.domain
            ));
        }
        out.push(b);
    }
    Ok(out)
}

/// Standard base64 (RFC 4648), with padding: `${base64:...}`, and the
/// proxy's `Basic` credentials.
pub fn base64(data: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cred(domain: &str, header: &str, value: &str) -> Credential {
        Credential {
            domain: domain.into(),
            port: None,
            header: header.into(),
            value: value.into(),
            upstream_ca: None,
            plain_http: false,
        }
    }

    #[test]
    fn templates_parse_into_literals_and_sources() {
        let t = Template::parse("Bearer ${env:GH_TOKEN}").unwrap();
        assert_eq!(
            t.0,
            vec![
                Part::Lit("Bearer ".into()),
                Part::Secret(Source::Env("GH_TOKEN".into()))
            ]
        );
        let t = Template::parse("Basic ${base64:x-access-token:${file:/run/tok}}").unwrap();
        assert_eq!(t.sources(), vec![Source::File("/run/tok".into())]);
        for bad in [
            "Bearer literal",
            "${env:}",
            "${env:1A}",
            "${env:A-B}",
            "${file:rel/path}",
            "${cmd:gh auth token}",
            "${env:A",
            "a}b${env:A}",
            "${base64:${base64:${env:A}}}",
            "x\r\n${env:A}",
        ] {
            assert!(Template::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rendering_reads_each_source_and_never_shows_it_in_errors() {
        let env = |n: &str| (n == "T").then(|| OsString::from("s3cr3t"));
        let file = |p: &Path| {
            if p == Path::new("/f") {
                Ok(b"tok\n".to_vec())
            } else {
                Err(std::io::ErrorKind::NotFound.into())
            }
        };
        let r = |v: &str| Template::parse(v).unwrap().render(&env, &file);
        assert_eq!(r("Bearer ${env:T}").unwrap(), b"Bearer s3cr3t");
        assert_eq!(r("${file:/f}").unwrap(), b"tok");
        assert_eq!(
            r("Basic ${base64:u:${env:T}}").unwrap(),
            format!("Basic {}", base64(b"u:s3cr3t")).as_bytes()
        );
        let e = r("${env:MISSING}").unwrap_err();
        assert!(e.contains("MISSING"), "{e}");
        let e = r("${file:/nope}").unwrap_err();
        assert!(e.contains("/nope"), "{e}");
        let bad = |n: &str| (n == "T").then(|| OsString::from("a\r\nX-Evil: 1"));
        let e = Template::parse("${env:T}")
            .unwrap()
            .render(&bad, &file)
            .unwrap_err();
        assert!(e.contains("line break") && !e.contains("Evil"), "{e}");
    }

    #[test]
    fn entries_are_checked_naming_the_field() {
        let ok = check(&[cred("API.Example.com.", "Authorization", "Bearer ${env:T}")]).unwrap();
        assert_eq!(ok[0].domain, "api.example.com");
        assert!(ok[0].applies("api.example.com", 443));
        for (c, field) in [
            (cred("*.example.com", "A", "${env:T}"), "domain"),
            (cred("10.0.0.1", "A", "${env:T}"), "domain"),
            (cred("a.example:443", "A", "${env:T}"), "domain"),
            (cred("a.example", "Bad Header", "${env:T}"), "header"),
            (cred("a.example", "Host", "${env:T}"), "header"),
            (cred("a.example", "A", "plain"), "value"),
        ] {
            let e = check(&[c]).unwrap_err();
            assert!(
                e.contains(&format!("credentials[0].{field}")),
                "{field}: {e}"
            );
        }
        let e = check(&[
            cred("a.example", "X-Key", "${env:A}"),
            cred("a.example", "x-key", "${env:B}"),
        ])
        .unwrap_err();
        assert!(e.contains("credentials[1].header"), "{e}");
    }
}
