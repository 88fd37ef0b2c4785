//! Domain rules of `allow_domains` / `deny_domains`: their syntax, how a
//! destination host is normalized, and how it matches them (deny first, then
//! allow). Pure: no resolution, no I/O — the proxy resolves and then asks
//! [`Rules::address_ok`] about each address it is about to connect to.
//!
//! The one property everything here protects: a name rule is only ever
//! matched by a *name*. Anything that canonicalizes to an IP address
//! (`2852039166`, `0x7f.1`, `0177.0.0.1`, `127.1`, `[::ffff:127.0.0.1]`) is an
//! IP and matches only a rule that names that IP.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

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
        if let Some(rest) = host.strip_prefix("*.") {
            let name = rest.trim_end_matches('.').to_ascii_lowercase();
            validate_name(&name).map_err(|e| format!("domain rule `{text}`: {e}"))?;
            if numeric_last_label(&name) {
                return Err(format!(
                    "domain rule `{text}`: a wildcard applies to names, not to IP addresses"
                ));
            }
            return Ok(DomainRule {
                host: RuleHost::Subdomains(name),
                port,
            });
        }
        let host = Host::parse(host).map_err(|e| format!("domain rule `{text}`: {e}"))?;
        Ok(DomainRule {
            host: match host {
                Host::Name(n) => RuleHost::Exact(n),
                Host::Ip(ip) => RuleHost::Ip(ip),
            },
            port,
        })
    }

    /// Whether a destination (normalized by [`Host::parse`]) on `port`
    /// matches this rule.
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
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Host {
    /// Lower-case, no trailing dot, letters/digits/`-`/`_` labels only.
    Name(String),
    /// IPv4-mapped IPv6 addresses are stored as their IPv4 address.
    Ip(IpAddr),
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(n) => f.write_str(n),
            Host::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
            Host::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

impl Host {
    /// Normalizes a host as a client wrote it (URL authority, CONNECT
    /// target, SOCKS domain): `[v6]`, bare v6, every IPv4 spelling
    /// `inet_aton` accepts, or a DNS name. Anything else — control
    /// characters, `%`, `@`, non-ASCII, a name ending in a numeric label that
    /// is not a valid address — is refused rather than guessed at.
    pub fn parse(text: &str) -> Result<Host, String> {
        if text.is_empty() {
            return Err("empty host".into());
        }
        if let Some(c) = text
            .chars()
            .find(|c| c.is_control() || c.is_whitespace() || !c.is_ascii())
        {
            return Err(format!(
                "host `{}` contains the character {:?}",
                crate::error::one_line(text),
                c
            ));
        }
        if let Some(rest) = text.strip_prefix('[') {
            let inner = rest
                .strip_suffix(']')
                .ok_or_else(|| format!("host `{text}`: unclosed `[`"))?;
            let ip: Ipv6Addr = inner
                .parse()
                .map_err(|_| format!("host `{text}`: `{inner}` is not an IPv6 address"))?;
            return Ok(Host::Ip(canonical_ip(IpAddr::V6(ip))));
        }
        if text.contains(':') {
            let ip: Ipv6Addr = text
                .parse()
                .map_err(|_| format!("host `{text}` is not a name or an IP address"))?;
            return Ok(Host::Ip(canonical_ip(IpAddr::V6(ip))));
        }
        let lower = text.to_ascii_lowercase();
        // One trailing dot is the absolute form of the same name.
        let name = lower.strip_suffix('.').unwrap_or(&lower);
        if let Some(v4) = parse_ipv4_loose(name) {
            return Ok(Host::Ip(IpAddr::V4(v4)));
        }
        validate_name(name).map_err(|e| format!("host `{text}`: {e}"))?;
        if numeric_last_label(name) {
            return Err(format!(
                "host `{text}` looks like an IP address but is not a valid one"
            ));
        }
        Ok(Host::Name(name.to_string()))
    }
}

/// IPv4-mapped IPv6 addresses are the IPv4 host they reach.
pub fn canonical_ip(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        v4 => v4,
    }
}

/// Every spelling `inet_aton(3)` accepts: 1 to 4 parts, each decimal, octal
/// (leading `0`) or hex (`0x`), the last part filling the remaining bytes.
pub fn parse_ipv4_loose(s: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = s.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let mut nums = Vec::with_capacity(parts.len());
    for p in &parts {
        nums.push(parse_number_part(p)?);
    }
    let (last, init) = nums.split_last()?;
    let mut value: u64 = 0;
    for n in init {
        if *n > 255 {
            return None;
        }
        value = (value << 8) | n;
    }
    let rest_bits = 8 * (4 - init.len() as u32);
    if *last >= (1u64 << rest_bits) {
        return None;
    }
    value = (value << rest_bits) | last;
    u32::try_from(value).ok().map(Ipv4Addr::from)
}

fn parse_number_part(p: &str) -> Option<u64> {
    if p.is_empty() || p.len() > 12 {
        return None;
    }
    if let Some(hex) = p.strip_prefix("0x").or_else(|| p.strip_prefix("0X")) {
        if hex.is_empty() {
            return Some(0);
        }
        // from_str_radix alone would also take a leading `+` (`0x+7f`).
        if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        return u64::from_str_radix(hex, 16).ok();
    }
    if p.len() > 1 && p.starts_with('0') {
        if !p[1..].bytes().all(|b| (b'0'..=b'7').contains(&b)) {
            return None;
        }
        return u64::from_str_radix(&p[1..], 8).ok();
    }
    if p.bytes().all(|b| b.is_ascii_digit()) {
        return p.parse().ok();
    }
    None
}

/// A last label made of digits (or `0x…`) is how resolvers and URL parsers
/// decide "this is an address": such a name is never treated as a name.
fn numeric_last_label(name: &str) -> bool {
    let last = name.rsplit('.').next().unwrap_or(name);
    let hex = last
        .strip_prefix("0x")
        .is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit()));
    hex || (!last.is_empty() && last.bytes().all(|b| b.is_ascii_digit()))
}

/// Addresses of cloud metadata services and link-local ranges: a name that
/// resolves to one is refused unless a rule names the address itself.
pub fn is_sensitive_addr(ip: IpAddr) -> bool {
    match canonical_ip(ip) {
        IpAddr::V4(v4) => {
            v4.is_link_local()
                || v4 == Ipv4Addr::new(100, 100, 100, 200) // Alibaba Cloud metadata
                || v4 == Ipv4Addr::new(168, 63, 129, 16) // Azure wire server
                || v4.is_unspecified()
        }
        IpAddr::V6(v6) => {
            (v6.segments()[0] & 0xffc0) == 0xfe80
                || v6 == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) // AWS IMDS v6
                || v6.is_unspecified()
        }
    }
}

/// The usual names of instance metadata services. They are refused by name
/// whatever they resolve to; only a rule naming the address lets them through.
pub const METADATA_NAMES: &[&str] = &[
    "metadata",
    "metadata.google.internal",
    "metadata.goog",
    "instance-data",
    "instance-data.ec2.internal",
    "metadata.azure.internal",
    "metadata.tencentyun.com",
    "metadata.platformequinix.com",
];

/// What the rules say about a destination before any resolution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    /// A `deny_domains` rule matched (it is named in the message).
    Denied(String),
    /// No `allow_domains` rule matched.
    NotAllowed,
}

/// `deny_domains` then `allow_domains`, as the proxy applies them.
#[derive(Clone, Debug, Default)]
pub struct Rules {
    pub allow: Vec<DomainRule>,
    pub deny: Vec<DomainRule>,
}

impl Rules {
    pub fn verdict(&self, host: &Host, port: u16) -> Verdict {
        if let Some(r) = self.deny.iter().find(|r| r.matches(host, port)) {
            return Verdict::Denied(r.to_string());
        }
        if self.allow.iter().any(|r| r.matches(host, port)) {
            Verdict::Allowed
        } else {
            Verdict::NotAllowed
        }
    }

    /// Whether the proxy may connect to `addr`, one of the addresses an
    /// allowed `host` resolved to. IP deny rules apply to resolved addresses
    /// too; metadata names and link-local/metadata addresses need an allow
    /// rule naming the address.
    pub fn address_ok(&self, host: &Host, port: u16, addr: IpAddr) -> bool {
        let ip = Host::Ip(canonical_ip(addr));
        if self.deny.iter().any(|r| r.matches(&ip, port)) {
            return false;
        }
        let metadata_name = matches!(host, Host::Name(n) if METADATA_NAMES.contains(&n.as_str()));
        if metadata_name || is_sensitive_addr(addr) {
            return self.allow.iter().any(|r| r.matches(&ip, port));
        }
        true
    }
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
        Ok(n) if n > 0 && p.bytes().all(|b| b.is_ascii_digit()) => Ok(n),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(allow: &[&str], deny: &[&str]) -> Rules {
        Rules {
            allow: allow
                .iter()
                .map(|r| DomainRule::parse(r).unwrap())
                .collect(),
            deny: deny.iter().map(|r| DomainRule::parse(r).unwrap()).collect(),
        }
    }

    fn allowed(r: &Rules, host: &str, port: u16) -> bool {
        match Host::parse(host) {
            Ok(h) => r.verdict(&h, port) == Verdict::Allowed,
            Err(_) => false,
        }
    }

    #[test]
    fn exact_names_match_case_insensitively_and_with_trailing_dot() {
        let r = rules(&["Example.COM"], &[]);
        assert!(allowed(&r, "example.com", 443));
        assert!(allowed(&r, "EXAMPLE.com", 80));
        assert!(allowed(&r, "example.com.", 80));
        assert!(!allowed(&r, "example.com..", 80));
        assert!(!allowed(&r, "www.example.com", 443));
        assert!(!allowed(&r, "example.com.evil.net", 443));
        assert!(!allowed(&r, "evilexample.com", 443));
    }

    #[test]
    fn wildcard_matches_strict_subdomains_only_never_the_apex() {
        let r = rules(&["*.example.com"], &[]);
        assert!(allowed(&r, "a.example.com", 443));
        assert!(allowed(&r, "a.b.example.com", 443));
        assert!(!allowed(&r, "example.com", 443));
        assert!(!allowed(&r, "badexample.com", 443));
        assert!(!allowed(&r, ".example.com", 443));
    }

    #[test]
    fn port_in_rule_restricts_the_port() {
        let r = rules(&["example.com:443", "*.test.org:8080"], &[]);
        assert!(allowed(&r, "example.com", 443));
        assert!(!allowed(&r, "example.com", 80));
        assert!(allowed(&r, "x.test.org", 8080));
        assert!(!allowed(&r, "x.test.org", 443));
        assert!(DomainRule::parse("example.com:0").is_err());
        assert!(DomainRule::parse("example.com:99999").is_err());
        assert!(DomainRule::parse("example.com:+80").is_err());
    }

    #[test]
    fn deny_is_checked_before_allow() {
        let r = rules(&["*.example.com", "example.com"], &["secret.example.com"]);
        assert!(allowed(&r, "www.example.com", 443));
        assert_eq!(
            r.verdict(&Host::parse("secret.example.com").unwrap(), 443),
            Verdict::Denied("secret.example.com".into())
        );
        let r = rules(&["api.example.com"], &["*.example.com:443"]);
        assert!(!allowed(&r, "api.example.com", 443));
        assert!(allowed(&r, "api.example.com", 80));
    }

    #[test]
    fn numeric_ipv4_spellings_canonicalize_to_the_address() {
        let want = Host::Ip("127.0.0.1".parse().unwrap());
        for s in [
            "127.0.0.1",
            "2130706433",
            "0x7f.1",
            "0177.0.0.1",
            "127.1",
            "127.0.1",
            "0x7f000001",
            "0x7F.0.0.1",
            "017700000001",
            "[::ffff:127.0.0.1]",
            "::ffff:7f00:1",
            "127.0.0.1.",
        ] {
            assert_eq!(Host::parse(s), Ok(want.clone()), "{s}");
        }
        assert_eq!(
            Host::parse("2852039166"),
            Ok(Host::Ip("169.254.169.254".parse().unwrap()))
        );
        // A sign is not a digit: inet_aton refuses these, and so must we
        // (found by the `domain` fuzz target).
        for s in ["0+27.1", "0x+7f.1", "127.0x+0.0.1", "0+177.0.0.1"] {
            assert_eq!(parse_ipv4_loose(s), None, "{s}");
            assert!(Host::parse(s).is_err(), "{s}");
        }
    }

    #[test]
    fn ip_spellings_match_only_rules_naming_that_ip() {
        // A name rule never lets an address through, whatever it spells.
        let r = rules(&["localhost", "*.localhost", "127.0.0.1.nip.io"], &[]);
        for s in [
            "127.0.0.1",
            "2130706433",
            "0x7f.1",
            "0177.0.0.1",
            "127.1",
            "[::1]",
            "[::ffff:127.0.0.1]",
        ] {
            assert!(!allowed(&r, s, 80), "{s}");
        }
        let r = rules(&["127.0.0.1"], &[]);
        for s in [
            "127.0.0.1",
            "2130706433",
            "0x7f.1",
            "0177.0.0.1",
            "127.1",
            "[::ffff:127.0.0.1]",
        ] {
            assert!(allowed(&r, s, 80), "{s}");
        }
        assert!(!allowed(&r, "127.0.0.2", 80));
        assert!(!allowed(&r, "[::1]", 80));
        assert!(!allowed(&r, "localhost", 80));
        // Rules are canonicalized the same way.
        let r = rules(&["0x7f.1:8080"], &[]);
        assert!(allowed(&r, "127.0.0.1", 8080));
        let r = rules(&["[::1]:443"], &[]);
        assert!(allowed(&r, "[::1]", 443));
        assert!(allowed(&r, "::1", 443));
        assert!(!allowed(&r, "[::1]", 80));
    }

    #[test]
    fn malformed_hosts_are_refused_not_guessed() {
        for s in [
            "",
            "exa mple.com",
            "example.com\r\nHost: evil",
            "example.com\0.evil",
            "exam\tple.com",
            "ex%61mple.com",
            "user@example.com",
            "example.com/",
            "ëxample.com",
            "1.2.3.4.5",
            "256.0.0.1",
            "0x100000000",
            "foo.123",
            "foo.0x1f",
            "09.1.2.3",
            "[::1",
            "[zz::1]",
            "a..b",
            "*.example.com",
        ] {
            assert!(Host::parse(s).is_err(), "{s:?}");
        }
        for s in ["exa\nmple.com", "a\u{7f}.com", "*.1.2.3", "*.", "*"] {
            assert!(DomainRule::parse(s).is_err(), "{s:?}");
        }
    }

    #[test]
    fn names_resolving_to_metadata_addresses_need_an_ip_rule() {
        let r = rules(&["*.example.com", "metadata.google.internal"], &[]);
        let h = Host::parse("evil.example.com").unwrap();
        assert!(r.address_ok(&h, 80, "93.184.216.34".parse().unwrap()));
        assert!(r.address_ok(&h, 80, "127.0.0.1".parse().unwrap()));
        assert!(!r.address_ok(&h, 80, "169.254.169.254".parse().unwrap()));
        assert!(!r.address_ok(&h, 80, "169.254.1.1".parse().unwrap()));
        assert!(!r.address_ok(&h, 80, "fe80::1".parse().unwrap()));
        assert!(!r.address_ok(&h, 80, "::ffff:169.254.169.254".parse().unwrap()));
        assert!(!r.address_ok(&h, 80, "fd00:ec2::254".parse().unwrap()));
        let md = Host::parse("metadata.google.internal").unwrap();
        assert_eq!(r.verdict(&md, 80), Verdict::Allowed);
        // Allowed by name, still refused at connect time whatever it resolves to.
        assert!(!r.address_ok(&md, 80, "10.1.2.3".parse().unwrap()));
        // Naming the address is the explicit opt-in.
        let r = rules(&["*.example.com", "169.254.169.254:80"], &[]);
        assert!(r.address_ok(&h, 80, "169.254.169.254".parse().unwrap()));
        assert!(!r.address_ok(&h, 8080, "169.254.169.254".parse().unwrap()));
    }

    #[test]
    fn ip_deny_rules_apply_to_resolved_addresses() {
        let r = rules(&["*.corp.example"], &["10.0.0.1"]);
        let h = Host::parse("db.corp.example").unwrap();
        assert!(!r.address_ok(&h, 5432, "10.0.0.1".parse().unwrap()));
        assert!(r.address_ok(&h, 5432, "10.0.0.2".parse().unwrap()));
    }

    #[test]
    fn rules_display_round_trips() {
        for s in [
            "example.com",
            "*.example.com:443",
            "127.0.0.1:80",
            "[::1]:8080",
        ] {
            let r = DomainRule::parse(s).unwrap();
            assert_eq!(DomainRule::parse(&r.to_string()).unwrap(), r);
        }
    }
}
