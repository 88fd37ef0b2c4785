//! Domain rules of `allow_domains` / `deny_domains`: their syntax, how a
//! destination host is normalized, and how it matches them (deny first, then
//! allow). Pure: no resolution, no I/O — the proxy resolves and then asks
//! [`Rules::check_address`] about each address it is about to connect to.
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

/// Why an address is not an ordinary public destination. A name that
/// resolves to one is refused unless the allowlist is explicit about it
/// ([`Rules::check_address`]): some kinds need a rule naming the address,
/// the others accept an exact name rule too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddrKind {
    /// 127.0.0.0/8, ::1: this host's own services.
    Loopback,
    /// 10/8, 172.16/12, 192.168/16, fc00::/7 (unique local), fec0::/10
    /// (site-local), 64:ff9b:1::/48 (local-use NAT64).
    Private,
    /// 100.64.0.0/10, carrier-grade NAT and many VPN and cluster overlays.
    Shared,
    /// 224.0.0.0/4, ff00::/8.
    Multicast,
    /// 240.0.0.0/4, the limited broadcast address among them.
    Reserved,
    /// 0.0.0.0/8, `::`: a connection to it reaches this host.
    Unspecified,
    /// 169.254.0.0/16, fe80::/10.
    LinkLocal,
    /// Instance metadata and platform endpoints outside the link-local range.
    Metadata,
}

impl AddrKind {
    /// How the denial line names it.
    pub fn describe(self) -> &'static str {
        match self {
            AddrKind::Loopback => "a loopback address",
            AddrKind::Private => "a private-network address",
            AddrKind::Shared => "a shared (carrier-grade NAT) address",
            AddrKind::Multicast => "a multicast address",
            AddrKind::Reserved => "a reserved address",
            AddrKind::Unspecified => "an unspecified address (it reaches this host)",
            AddrKind::LinkLocal => "a link-local address",
            AddrKind::Metadata => "a cloud metadata address",
        }
    }

    /// Whether an exact name rule is explicit enough. Metadata, link-local
    /// and unspecified answers are where cloud credentials and sinkholed
    /// names lead: only a rule naming the address reaches them.
    pub fn name_rule_suffices(self) -> bool {
        !matches!(
            self,
            AddrKind::LinkLocal | AddrKind::Metadata | AddrKind::Unspecified
        )
    }
}

/// The kind of a non-public address, or `None` for an ordinary one. IPv6
/// forms that carry an IPv4 address (mapped, compatible, SIIT-translated,
/// NAT64 `64:ff9b::/96`, 6to4, a Teredo client) are classified by that
/// address, since a translator on the way may deliver them to it.
pub fn classify_addr(ip: IpAddr) -> Option<AddrKind> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(v4: Ipv4Addr) -> Option<AddrKind> {
    let kind = match v4.octets() {
        // AWS/GCP/Azure/OpenStack, Alibaba Cloud, Azure wire server.
        [169, 254, 169, 254] | [100, 100, 100, 200] | [168, 63, 129, 16] => AddrKind::Metadata,
        [0, ..] => AddrKind::Unspecified,
        [127, ..] => AddrKind::Loopback,
        [10, ..] | [192, 168, ..] | [172, 16..=31, ..] => AddrKind::Private,
        [100, 64..=127, ..] => AddrKind::Shared,
        [169, 254, ..] => AddrKind::LinkLocal,
        [224..=239, ..] => AddrKind::Multicast,
        [240..=255, ..] => AddrKind::Reserved,
        _ => return None,
    };
    Some(kind)
}

fn classify_v6(v6: Ipv6Addr) -> Option<AddrKind> {
    classify_v6_native(v6).or_else(|| embedded_v4(v6).and_then(classify_v4))
}

/// Ranges of IPv6 itself, before any IPv4 address it may carry.
fn classify_v6_native(v6: Ipv6Addr) -> Option<AddrKind> {
    if v6.is_unspecified() {
        return Some(AddrKind::Unspecified);
    }
    if v6.is_loopback() {
        return Some(AddrKind::Loopback);
    }
    // AWS instance metadata over IPv6.
    if v6 == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
        return Some(AddrKind::Metadata);
    }
    let s = v6.segments();
    match s[0] {
        0xfe80..=0xfebf => return Some(AddrKind::LinkLocal),
        0xfec0..=0xfeff | 0xfc00..=0xfdff => return Some(AddrKind::Private),
        0xff00..=0xffff => return Some(AddrKind::Multicast),
        _ => {}
    }
    if s[0..3] == [0x64, 0xff9b, 1] {
        return Some(AddrKind::Private);
    }
    None
}

/// The IPv4 address an IPv6 address carries: IPv4-compatible `::a.b.c.d`,
/// mapped `::ffff:a.b.c.d`, SIIT `::ffff:0:a.b.c.d`, NAT64 `64:ff9b::/96`,
/// 6to4 `2002:AABB:CCDD::/48`, or a Teredo client (`2001:0::/32`, the last
/// 32 bits inverted).
pub fn embedded_v4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = v6.segments();
    let v4 = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    let zero = |r: std::ops::Range<usize>| s[r].iter().all(|x| *x == 0);
    if (zero(0..5) && matches!(s[5], 0 | 0xffff)) || (zero(0..4) && s[4] == 0xffff && s[5] == 0) {
        return Some(v4(s[6], s[7]));
    }
    if s[0..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some(v4(s[6], s[7]));
    }
    if s[0] == 0x2002 {
        return Some(v4(s[1], s[2]));
    }
    if s[0] == 0x2001 && s[1] == 0 {
        return Some(Ipv4Addr::from(!u32::from(v4(s[6], s[7]))));
    }
    None
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
    /// allowed `host` resolved to; `Err` says why not, for the denial line.
    /// IP deny rules apply to resolved addresses too. A rule naming the
    /// address allows it; otherwise a metadata name is refused whatever it
    /// resolves to, and a non-public address ([`classify_addr`]) needs the
    /// host named by an exact rule — a wildcard is not explicit enough, as
    /// whoever runs DNS under it chooses the answers — or, for the kinds
    /// [`AddrKind::name_rule_suffices`] excludes, the address itself.
    pub fn check_address(&self, host: &Host, port: u16, addr: IpAddr) -> Result<(), String> {
        let ip = Host::Ip(canonical_ip(addr));
        if let Some(r) = self.deny.iter().find(|r| r.matches(&ip, port)) {
            return Err(format!(
                "resolves to {ip}, which matches sandbox.network.deny_domains rule `{r}`"
            ));
        }
        if self.allow.iter().any(|r| r.matches(&ip, port)) {
            return Ok(());
        }
        if matches!(host, Host::Name(n) if METADATA_NAMES.contains(&n.as_str())) {
            return Err(format!(
                "a cloud metadata name (it resolves to {ip}); only a rule naming {ip} in sandbox.network.allow_domains allows it"
            ));
        }
        let Some(kind) = classify_addr(canonical_ip(addr)) else {
            return Ok(());
        };
        let exact = self
            .allow
            .iter()
            .any(|r| matches!(r.host, RuleHost::Exact(_)) && r.matches(host, port));
        if kind.name_rule_suffices() && exact {
            return Ok(());
        }
        let what = match canonical_ip(addr) {
            IpAddr::V6(v6) if classify_v6_native(v6).is_none() => match embedded_v4(v6) {
                Some(v4) => format!("an IPv6 form of {v4}, {}", kind.describe()),
                None => kind.describe().to_string(),
            },
            _ => kind.describe().to_string(),
        };
        Err(if kind.name_rule_suffices() {
            format!("resolves to {ip}, {what}; name {host} or {ip} in sandbox.network.allow_domains to allow it")
        } else {
            format!("resolves to {ip}, {what}; only a rule naming {ip} in sandbox.network.allow_domains allows it")
        })
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

    fn ok(r: &Rules, host: &str, port: u16, addr: &str) -> Result<(), String> {
        r.check_address(&Host::parse(host).unwrap(), port, addr.parse().unwrap())
    }

    #[test]
    fn names_resolving_to_metadata_addresses_need_an_ip_rule() {
        let r = rules(&["*.example.com", "metadata.google.internal"], &[]);
        let h = "evil.example.com";
        assert!(ok(&r, h, 80, "93.184.216.34").is_ok());
        for a in [
            "169.254.169.254",
            "169.254.1.1",
            "fe80::1",
            "::ffff:169.254.169.254",
            "fd00:ec2::254",
            "100.100.100.200",
            "0.0.0.0",
            "::",
        ] {
            assert!(ok(&r, h, 80, a).is_err(), "{a}");
        }
        let md = Host::parse("metadata.google.internal").unwrap();
        assert_eq!(r.verdict(&md, 80), Verdict::Allowed);
        // Allowed by name, still refused at connect time whatever it resolves to.
        let why = ok(&r, "metadata.google.internal", 80, "10.1.2.3").unwrap_err();
        assert!(
            why.contains("metadata name") && why.contains("10.1.2.3"),
            "{why}"
        );
        // An exact name rule is not explicit enough for these kinds...
        let r = rules(&["imds.example.com"], &[]);
        let why = ok(&r, "imds.example.com", 80, "169.254.169.254").unwrap_err();
        assert!(why.contains("only a rule naming 169.254.169.254"), "{why}");
        // ...naming the address is the opt-in.
        let r = rules(&["*.example.com", "169.254.169.254:80"], &[]);
        assert!(ok(&r, h, 80, "169.254.169.254").is_ok());
        assert!(ok(&r, h, 8080, "169.254.169.254").is_err());
    }

    #[test]
    fn a_wildcard_name_resolving_to_a_private_address_is_refused() {
        let r = rules(&["*.example.com"], &[]);
        for a in [
            "127.0.0.1",
            "127.0.1.1",
            "::1",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "100.64.0.1",
            "100.127.255.255",
            "fc00::1",
            "fd12:3456::1",
            "fec0::1",
            "224.0.0.1",
            "ff02::1",
            "255.255.255.255",
            "240.0.0.1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "::ffff:0:192.168.0.1",
            "64:ff9b::7f00:1",
            "64:ff9b:1::a00:1",
            "2002:7f00:1::1",
            "2002:c0a8:101::",
        ] {
            let why = ok(&r, "evil.example.com", 443, a).unwrap_err();
            assert!(why.starts_with("resolves to "), "{a}: {why}");
            assert!(why.contains("name evil.example.com or"), "{a}: {why}");
        }
        // Teredo: the client address is the last 32 bits, inverted.
        let teredo_loopback = Ipv6Addr::from((0x2001_u128 << 112) | u128::from(!0x7f00_0001_u32));
        assert!(r
            .check_address(
                &Host::parse("t.example.com").unwrap(),
                1,
                teredo_loopback.into()
            )
            .is_err());
        let why = ok(&r, "a.example.com", 80, "127.0.0.1").unwrap_err();
        assert_eq!(
            why,
            "resolves to 127.0.0.1, a loopback address; name a.example.com or 127.0.0.1 in sandbox.network.allow_domains to allow it"
        );
        let why = ok(&r, "a.example.com", 80, "2002:7f00:1::1").unwrap_err();
        assert!(
            why.contains("an IPv6 form of 127.0.0.1, a loopback address"),
            "{why}"
        );
        let why = ok(&r, "a.example.com", 80, "::1").unwrap_err();
        assert!(why.contains("[::1], a loopback address;"), "{why}");
        // Just outside each range: ordinary destinations.
        for a in [
            "8.8.8.8",
            "11.0.0.1",
            "126.255.255.255",
            "128.0.0.1",
            "172.15.255.255",
            "172.32.0.0",
            "192.167.255.255",
            "192.169.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "169.253.255.255",
            "223.255.255.255",
            "1.0.0.0",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
            "fbff::1",
            "fe7f::1",
        ] {
            assert!(ok(&r, "a.example.com", 80, a).is_ok(), "{a}");
        }
    }

    #[test]
    fn an_exact_name_or_the_address_allows_a_private_answer() {
        let r = rules(&["*.example.com", "db.example.com:5432", "10.9.9.9"], &[]);
        assert!(ok(&r, "db.example.com", 5432, "10.0.0.5").is_ok());
        // The exact rule is for another port: only the wildcard matched.
        assert!(ok(&r, "db.example.com", 80, "10.0.0.5").is_err());
        assert!(ok(&r, "other.example.com", 80, "10.9.9.9").is_ok());
        assert!(ok(&r, "other.example.com", 80, "::ffff:10.9.9.9").is_ok());
        assert!(ok(&r, "other.example.com", 80, "10.9.9.8").is_err());
        let r = rules(&["localhost", "[::1]"], &[]);
        assert!(ok(&r, "localhost", 8080, "127.0.0.1").is_ok());
        assert!(ok(&r, "localhost", 8080, "::1").is_ok());
        // An IP literal is allowed only by a rule naming it, so it passes.
        assert!(ok(&r, "[::1]", 22, "::1").is_ok());
    }

    #[test]
    fn ip_deny_rules_apply_to_resolved_addresses() {
        let r = rules(&["*.corp.example", "10.0.0.1"], &["10.0.0.1"]);
        let why = ok(&r, "db.corp.example", 5432, "10.0.0.1").unwrap_err();
        assert!(why.contains("deny_domains rule `10.0.0.1`"), "{why}");
        let r = rules(&["db.corp.example"], &["10.0.0.1"]);
        assert!(ok(&r, "db.corp.example", 5432, "10.0.0.1").is_err());
        assert!(ok(&r, "db.corp.example", 5432, "10.0.0.2").is_ok());
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
