//! Domain rules of `allow_domains` / `deny_domains`: their syntax and how a
//! destination host matches them. Pure: no resolution, no I/O.

use std::fmt;
use std::net::IpAddr;

/// One parsed rule: `example.com`, `*.example.com` (strict subdomains only),
/// an IP literal, each with an optional `:port`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DomainRule {
    pub host: RuleHost,
    pub port: Option<u16>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RuleHost {
    /// Exact name, lower-case, without a trailing dot.
    Exact(String),
    /// `*.suffix`: any strict subdomain of `suffix`.
    Subdomains(String),
    Ip(IpAddr),
}

impl fmt::Display for DomainRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            RuleHost::Exact(h) => f.write_str(h)?,
            RuleHost::Subdomains(h) => write!(f, "*.{h}")?,
            RuleHost::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]")?,
            RuleHost::Ip(ip) => write!(f, "{ip}")?,
        }
        if let Some(p) = self.port {
            write!(f, ":{p}")?;
        }
        Ok(())
    }
}

impl DomainRule {
    pub fn parse(text: &str) -> Result<DomainRule, String> {
        if text.is_empty() {
            return Err("empty domain rule".into());
        }
        if text.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(format!(
                "domain rule `{}` contains a space or control character",
                crate::error::one_line(text)
            ));
        }
        let (host, port) = split_port(text)?;
        if let Some(rest) = host.strip_prefix('[') {
            let inner = rest
                .strip_suffix(']')
                .ok_or_else(|| format!("domain rule `{text}`: unclosed `[`"))?;
            let ip: std::net::Ipv6Addr = inner
                .parse()
                .map_err(|_| format!("domain rule `{text}`: `{inner}` is not an IPv6 address"))?;
            return Ok(DomainRule {
                host: RuleHost::Ip(IpAddr::V6(ip)),
                port,
            });
        }
        if let Ok(ip) = host.parse::<IpAddr>() {
            return Ok(DomainRule {
                host: RuleHost::Ip(ip),
                port,
            });
        }
        let lower = host.trim_end_matches('.').to_ascii_lowercase();
        let (wild, name) = match lower.strip_prefix("*.") {
            Some(n) => (true, n.to_string()),
            None => (false, lower.clone()),
        };
        validate_name(&name).map_err(|e| format!("domain rule `{text}`: {e}"))?;
        Ok(DomainRule {
            host: if wild {
                RuleHost::Subdomains(name)
            } else {
                RuleHost::Exact(name)
            },
            port,
        })
    }

    /// Whether a destination (already normalized: lower-case name without a
    /// trailing dot, or an IP) on `port` matches this rule.
    pub fn matches(&self, host: &Host, port: u16) -> bool {
        if self.port.is_some_and(|p| p != port) {
            return false;
        }
        match (&self.host, host) {
            (RuleHost::Exact(r), Host::Name(h)) => r == h,
            (RuleHost::Subdomains(r), Host::Name(h)) => {
                h.len() > r.len() + 1
                    && h.ends_with(r.as_str())
                    && h.as_bytes()[h.len() - r.len() - 1] == b'.'
            }
            (RuleHost::Ip(r), Host::Ip(h)) => r == h,
            _ => false,
        }
    }
}

/// A destination host as the proxy sees it, normalized.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Host {
    Name(String),
    Ip(IpAddr),
}

fn split_port(text: &str) -> Result<(&str, Option<u16>), String> {
    // `[v6]:port`, bare v6 (several colons, no port), or `name:port`.
    if text.starts_with('[') {
        if let Some(i) = text.rfind("]:") {
            return Ok((&text[..=i], Some(parse_port(text, &text[i + 2..])?)));
        }
        return Ok((text, None));
    }
    match text.matches(':').count() {
        0 => Ok((text, None)),
        1 => {
            let i = text.rfind(':').unwrap_or(text.len());
            Ok((&text[..i], Some(parse_port(text, &text[i + 1..])?)))
        }
        _ => Ok((text, None)),
    }
}

fn parse_port(rule: &str, p: &str) -> Result<u16, String> {
    match p.parse::<u16>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!(
            "domain rule `{rule}`: `{p}` is not a port (1-65535)"
        )),
    }
}

fn validate_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 253 {
        return Err("not a domain name".into());
    }
    for label in name.split('.') {
        if label.is_empty() || label.len() > 63 {
            return Err("empty or over-long label".into());
        }
        if !label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(format!(
                "label `{label}` has characters outside a-z, 0-9, `-`, `_` (wildcards only as a leading `*.`)"
            ));
        }
    }
    Ok(())
}
