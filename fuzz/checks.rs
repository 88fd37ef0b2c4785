//! The fuzz targets' bodies: one function per target, taking the raw input
//! bytes. Shared by the libFuzzer binaries (fuzz/fuzz_targets/*.rs) and by
//! the stable replay test tests/fuzz_props.rs, so an input that once broke
//! an invariant keeps being checked by plain `cargo test`.
//!
//! Beyond "no panic", each target asserts properties a security reviewer
//! cares about: re-parsing is stable, a name rule never matches an address,
//! a parser never claims more bytes than it was given, and the head sent to
//! an origin cannot smuggle a second request. These functions never do I/O.

use dcjail::error::Reason;
use dcjail::net::domain::{DomainRule, Host, RuleHost, Rules, Verdict};
use dcjail::net::parse::{self, ParseError, Target};
use std::net::{IpAddr, Ipv4Addr};

/// Policy text → `policy::parse` → `Policy::validate` → gates 1–4.
pub fn policy(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let p = match dcjail::policy::parse(&text, "fuzz.toml") {
        Ok(p) => p,
        Err(r) => {
            assert_eq!(r.reason, Reason::PolicyError, "{r:?}");
            assert!(!r.message.is_empty());
            assert!(r.message.starts_with("fuzz.toml"), "{:?}", r.message);
            // `fuzz.toml:N:` must name a line the text has.
            if let Some(rest) = r.message.strip_prefix("fuzz.toml:") {
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                if let Ok(line) = digits.parse::<usize>() {
                    let lines = 1 + text.matches('\n').count();
                    assert!(line >= 1 && line <= lines, "line {line} of {lines}");
                }
            }
            assert!(!r.line().contains('\n'), "{:?}", r.line());
            return;
        }
    };
    match p.validate() {
        Ok(()) => {
            assert!(p.version.is_none() || p.version == Some(1));
            let net = &p.sandbox.network;
            for d in net.allow_domains.iter().chain(&net.deny_domains) {
                match DomainRule::parse(d) {
                    Ok(r) => rule_round_trips(&r),
                    Err(e) => panic!("validated policy holds a bad rule {d:?}: {e}"),
                }
            }
        }
        Err(r) => {
            assert_eq!(r.reason, Reason::PolicyError, "{r:?}");
            assert!(!r.line().contains('\n'), "{:?}", r.line());
        }
    }
    use dcjail::policy::{Mode, Tool};
    match dcjail::decide::gates(&p) {
        Ok(()) => {
            assert!(
                !(p.mode == Mode::Plan && p.tool.is_mutating()),
                "plan mode let a {:?} call through",
                p.tool
            );
        }
        Err(r) => {
            assert!(p.mode != Mode::BypassPermissions, "bypass refused: {r:?}");
            assert!(
                !matches!(
                    r.reason,
                    Reason::PolicyError | Reason::UsageError | Reason::SandboxUnavailable
                ),
                "gates 1-4 gave {r:?}"
            );
            if p.mode == Mode::Plan && matches!(p.tool, Tool::Edit | Tool::Write | Tool::Bash) {
                assert_eq!(r.reason, Reason::PlanBlocked);
            }
        }
    }
}

fn rule_round_trips(r: &DomainRule) {
    let shown = r.to_string();
    match DomainRule::parse(&shown) {
        Ok(again) => assert_eq!(&again, r, "rule {shown:?} re-parses differently"),
        Err(e) => panic!("rule's own display {shown:?} does not parse: {e}"),
    }
}

fn host_round_trips(h: &Host) {
    let shown = h.to_string();
    match Host::parse(&shown) {
        Ok(again) => assert_eq!(&again, h, "host {shown:?} re-normalizes differently"),
        Err(e) => panic!("host's own display {shown:?} does not parse: {e}"),
    }
}

/// The libc crate binds neither; every Unix C library has both.
#[cfg(unix)]
mod c_lib {
    extern "C" {
        pub fn inet_aton(cp: *const libc::c_char, inp: *mut libc::in_addr) -> libc::c_int;
        pub fn inet_pton(
            af: libc::c_int,
            src: *const libc::c_char,
            dst: *mut libc::c_void,
        ) -> libc::c_int;
    }
}

/// What the C library makes of `s` as an IPv4 address, if anything. Any
/// string it accepts is an address to some client, so dcjail must never take
/// it for a name.
#[cfg(unix)]
fn inet_aton(s: &str) -> Option<Ipv4Addr> {
    let c = std::ffi::CString::new(s).ok()?;
    let mut a = libc::in_addr { s_addr: 0 };
    // SAFETY: `c` is NUL-terminated and `a` a valid out-parameter.
    let ok = unsafe { c_lib::inet_aton(c.as_ptr(), &mut a) };
    (ok != 0).then(|| Ipv4Addr::from(u32::from_be(a.s_addr)))
}

#[cfg(not(unix))]
fn inet_aton(_: &str) -> Option<Ipv4Addr> {
    None
}

/// What the C library makes of `s` as an IPv6 address, if anything.
#[cfg(unix)]
fn inet_pton6(s: &str) -> Option<std::net::Ipv6Addr> {
    let c = std::ffi::CString::new(s).ok()?;
    let mut a = [0u8; 16];
    // SAFETY: `c` is NUL-terminated; AF_INET6 writes 16 bytes into `a`.
    let ok = unsafe { c_lib::inet_pton(libc::AF_INET6, c.as_ptr(), a.as_mut_ptr().cast()) };
    (ok == 1).then(|| std::net::Ipv6Addr::from(a))
}

#[cfg(not(unix))]
fn inet_pton6(_: &str) -> Option<std::net::Ipv6Addr> {
    None
}

/// Independent statement of "`h` is a strict subdomain of `suffix`".
fn strict_subdomain(h: &str, suffix: &str) -> bool {
    h.strip_suffix(suffix)
        .and_then(|p| p.strip_suffix('.'))
        .is_some_and(|p| !p.is_empty())
}

/// Input: two bytes of port, then lines; each line is tried as a host and
/// as a rule (a leading `!` makes it a deny rule).
pub fn domain(data: &[u8]) {
    let (port, rest) = match data {
        [a, b, rest @ ..] => (u16::from_be_bytes([*a, *b]), rest),
        _ => (443, data),
    };
    let text = String::from_utf8_lossy(rest);
    let mut rules = Rules::default();
    let mut hosts = Vec::new();
    for line in text.split('\n').take(16) {
        let (deny, body) = match line.strip_prefix('!') {
            Some(b) => (true, b),
            None => (false, line),
        };
        for s in [line, body] {
            let host = Host::parse(s);
            if let Ok(h) = &host {
                host_round_trips(h);
            }
            if let Some(v4) = inet_aton(s) {
                match &host {
                    Ok(Host::Ip(IpAddr::V4(got))) => {
                        assert_eq!(*got, v4, "{s:?}: libc reads {v4}, dcjail {got}")
                    }
                    Ok(other) => panic!("{s:?} is {v4} to libc but {other:?} to dcjail"),
                    Err(_) => {}
                }
            }
            // The loose IPv4 reader takes only inet_aton's alphabet, and
            // where the C library reads an address, it reads the same one.
            if let Some(v4) = dcjail::net::domain::parse_ipv4_loose(s) {
                assert!(
                    s.bytes()
                        .all(|b| b.is_ascii_hexdigit() || b"xX.".contains(&b)),
                    "{s:?} read as {v4}"
                );
                if let Some(c) = inet_aton(s) {
                    assert_eq!(c, v4, "{s:?}");
                }
            }
            if let Some(v6) = inet_pton6(s) {
                let want = dcjail::net::domain::canonical_ip(IpAddr::V6(v6));
                match &host {
                    Ok(Host::Ip(got)) => assert_eq!(*got, want, "{s:?}"),
                    Ok(other) => panic!("{s:?} is {v6} to libc but {other:?} to dcjail"),
                    Err(_) => {}
                }
            }
            if let Ok(Host::Name(n)) = &host {
                assert!(inet_aton(n).is_none(), "name {n:?} is an address to libc");
            }
            let rule = DomainRule::parse(s);
            if let Ok(r) = &rule {
                rule_round_trips(r);
                match &r.host {
                    RuleHost::Exact(n) | RuleHost::Subdomains(n) => {
                        assert!(inet_aton(n).is_none(), "name rule {n:?} is an address");
                    }
                    RuleHost::Ip(_) => {}
                }
                // A rule without port or wildcard matches the host it spells.
                if r.port.is_none() && !matches!(r.host, RuleHost::Subdomains(_)) {
                    match Host::parse(s) {
                        Ok(h) => assert!(r.matches(&h, port), "{s:?} does not match itself"),
                        Err(e) => panic!("rule {s:?} parses but its host does not: {e}"),
                    }
                }
            }
        }
        if let Ok(r) = DomainRule::parse(body) {
            if deny {
                rules.deny.push(r);
            } else {
                rules.allow.push(r);
            }
        }
        if let Ok(h) = Host::parse(line) {
            hosts.push(h);
        }
    }
    for h in &hosts {
        for r in rules.allow.iter().chain(&rules.deny) {
            let port_ok = !matches!(r.port, Some(p) if p != port);
            let expected = port_ok
                && match (&r.host, h) {
                    (RuleHost::Exact(a), Host::Name(b)) => a == b,
                    (RuleHost::Subdomains(s), Host::Name(b)) => strict_subdomain(b, s),
                    (RuleHost::Ip(a), Host::Ip(b)) => a == b,
                    _ => false,
                };
            assert_eq!(r.matches(h, port), expected, "rule {r} vs host {h}:{port}");
        }
        let denied_by = rules.deny.iter().find(|r| r.matches(h, port));
        let allowed = rules.allow.iter().any(|r| r.matches(h, port));
        match rules.verdict(h, port) {
            Verdict::Denied(s) => assert_eq!(Some(s), denied_by.map(|r| r.to_string())),
            Verdict::Allowed => assert!(denied_by.is_none() && allowed),
            Verdict::NotAllowed => assert!(denied_by.is_none() && !allowed),
        }
        let addrs: Vec<IpAddr> = match h {
            Host::Ip(ip) => vec![*ip],
            Host::Name(_) => vec![
                IpAddr::V4(Ipv4Addr::new(169, 254, 169, 254)),
                IpAddr::V4(Ipv4Addr::new(93, 184, 216, 34)),
                IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1)),
                IpAddr::V6("::ffff:10.0.0.1".parse().unwrap()),
            ],
        };
        for a in addrs {
            let ok = rules.check_address(h, port, a).is_ok();
            let ip_host = Host::Ip(dcjail::net::domain::canonical_ip(a));
            let ip_named = rules.allow.iter().any(|r| r.matches(&ip_host, port));
            if rules.deny.iter().any(|r| r.matches(&ip_host, port)) {
                assert!(!ok, "{a} is denied by an IP rule but was let through");
            }
            if let (Some(kind), true) = (dcjail::net::domain::classify_addr(a), ok) {
                let exact = rules
                    .allow
                    .iter()
                    .any(|r| matches!(r.host, RuleHost::Exact(_)) && r.matches(h, port));
                assert!(
                    ip_named || (kind.name_rule_suffices() && exact),
                    "{kind:?} {a} reached for {h}:{port} without an exact rule naming it"
                );
            }
        }
    }
}

/// Input: an HTTP proxy request head (plus whatever follows it).
pub fn http_request(data: &[u8]) {
    let got = parse::parse_request(data);
    // The upstream status-line parser reads the same kind of bytes.
    if let Ok(Some((_, n))) = parse::parse_response_status(data) {
        assert!(n <= data.len() && data[..n].ends_with(b"\r\n\r\n"));
    }
    let (req, n) = match got {
        Ok(Some(x)) => x,
        Ok(None) => {
            assert!(data.len() < parse::MAX_HEAD);
            return;
        }
        Err(ParseError::TooLarge) | Err(ParseError::Malformed(_)) => return,
    };
    assert!(
        n <= data.len() && n <= parse::MAX_HEAD,
        "took {n} of {}",
        data.len()
    );
    assert!(data[..n].ends_with(b"\r\n\r\n"));
    // The head alone parses to the same request; its strict prefixes ask
    // for more bytes, so the proxy never acts on half a head.
    assert_eq!(parse::parse_request(&data[..n]), Ok(Some((req.clone(), n))));
    for cut in [0, n / 2, n - 1] {
        assert_eq!(parse::parse_request(&data[..cut]), Ok(None), "prefix {cut}");
    }
    assert!(req.headers.len() <= parse::MAX_HEADERS);
    assert!(req.version == "HTTP/1.1" || req.version == "HTTP/1.0");
    let host = req.target.host();
    assert!(req.target.port() != 0);
    assert!(!host.contains([' ', '\r', '\n', '\0']), "{host:?}");
    if matches!(req.target, Target::Absolute { .. }) {
        // The URI was cut at these; finding one means it was misread.
        assert!(!host.contains(['/', '?', '#', '@']), "{host:?}");
    }
    // Whatever the request line held, the proxy only goes on with a host
    // that normalizes to a plain name or an address.
    if let Ok(h) = Host::parse(host) {
        host_round_trips(&h);
        if let Host::Name(n) = &h {
            assert!(n
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)));
        }
    }
    let head = parse::origin_head(&req, &[]);
    match &req.target {
        Target::Authority { .. } => assert!(head.is_empty()),
        Target::Absolute { path, .. } => {
            assert!(path.starts_with('/') && !path.contains('#'));
            // Exactly one head: its only blank line is its end, so nothing
            // the client sent can start a second request to the origin.
            let end = head.windows(4).position(|w| w == b"\r\n\r\n");
            assert_eq!(
                end,
                Some(head.len() - 4),
                "{:?}",
                String::from_utf8_lossy(&head)
            );
            assert!(!head[..head.len() - 2]
                .windows(2)
                .any(|w| w[0] == b'\n' && w[1] == b'\n'));
            let text = String::from_utf8_lossy(&head).to_ascii_lowercase();
            let lines: Vec<&str> = text.split("\r\n").collect();
            for hop in ["proxy-authorization:", "proxy-connection:", "upgrade:"] {
                assert!(!lines.iter().any(|l| l.starts_with(hop)), "{hop} forwarded");
            }
            // The origin is told the host the rules were checked against.
            let hosts: Vec<&&str> = lines.iter().filter(|l| l.starts_with("host:")).collect();
            assert_eq!(hosts.len(), 1);
            let want = match (host.contains(':'), req.target.port()) {
                (true, 80) => format!("host: [{host}]"),
                (true, p) => format!("host: [{host}]:{p}"),
                (false, 80) => format!("host: {host}"),
                (false, p) => format!("host: {host}:{p}"),
            };
            assert_eq!(*hosts[0], want.to_ascii_lowercase());
            // The request line is `METHOD PATH VERSION`, nothing more.
            assert_eq!(lines[0].matches(' ').count(), 2, "{:?}", lines[0]);
            assert!(text.ends_with("connection: close\r\n\r\n"));
        }
    }
}

/// Input: a SOCKS5 conversation from the client side, parsed the way the
/// proxy does: greeting, optional username/password, request.
pub fn socks(data: &[u8]) {
    type Step = fn(&[u8]) -> Option<usize>;
    let steps: [Step; 3] = [
        |b| {
            consumed(
                b,
                parse::parse_socks_greeting(b),
                parse::parse_socks_greeting,
            )
        },
        |b| {
            consumed(
                b,
                parse::parse_socks_userpass(b),
                parse::parse_socks_userpass,
            )
        },
        |b| consumed(b, parse::parse_socks_request(b), parse::parse_socks_request),
    ];
    // Each parser alone on the whole input, then as a conversation.
    for s in &steps {
        s(data);
    }
    let mut at = 0;
    for s in &steps {
        match s(&data[at..]) {
            Some(n) => at += n,
            None => break,
        }
    }
    if let Ok(Some((req, _))) = parse::parse_socks_request(data) {
        if let parse::SocksAddr::Name(n) = &req.addr {
            assert!(!n.is_empty() && n.len() <= 255);
            if let Ok(s) = std::str::from_utf8(n) {
                if let Ok(h) = Host::parse(s) {
                    host_round_trips(&h);
                }
            }
        }
    }
}

/// What every SOCKS parser returns.
type Parsed<T> = Result<Option<(T, usize)>, ParseError>;

/// Checks one SOCKS parse: a complete message took at most the input, is
/// the same when cut to its length, and every strict prefix of it asks for
/// more (so the proxy neither acts early nor reads past the message).
fn consumed<T: PartialEq + std::fmt::Debug>(
    buf: &[u8],
    got: Parsed<T>,
    again: fn(&[u8]) -> Parsed<T>,
) -> Option<usize> {
    let (msg, n) = got.ok()??;
    assert!(n > 0 && n <= buf.len(), "took {n} of {}", buf.len());
    assert_eq!(again(&buf[..n]), Ok(Some((msg, n))));
    for cut in 0..n {
        assert_eq!(again(&buf[..cut]), Ok(None), "prefix {cut} of {n}");
    }
    Some(n)
}

/// The embedded second stage's program (`inside::stub_format`), parsed by
/// dcjail before launch and by the stub inside the sandbox. Whatever it
/// accepts is canonical: re-encoding what the iterators yield gives back
/// the very input, every path is absolute, NUL-free and short enough for
/// the stub's buffer, every right is handled, every filter is whole, every
/// guarded name is a file name (or the zone mark), only known flags are
/// set, and a broker has a filter to serve and a denial report a broker.
pub fn stub_program(data: &[u8]) {
    use dcjail::inside::stub_format::{
        Program, BROKER, INSN, MAGIC, MAX_INSNS, MAX_NAME, MAX_PATH, NO_LANDLOCK, OWN_NETWORK, ZONE,
    };
    let Ok(p) = Program::parse(data) else {
        return;
    };
    let mut out = MAGIC.to_vec();
    let put_u32 = |out: &mut Vec<u8>, n: usize| out.extend_from_slice(&(n as u32).to_le_bytes());
    let path_ok = |path: &[u8]| {
        assert!(path.first() == Some(&b'/'), "relative path accepted");
        assert!(!path.contains(&0), "NUL in a path accepted");
        assert!(path.len() <= MAX_PATH, "path longer than the stub's buffer");
    };
    out.extend_from_slice(&p.handled_fs.to_le_bytes());
    out.extend_from_slice(&p.handled_net.to_le_bytes());
    out.extend_from_slice(&p.scoped.to_le_bytes());
    let rules: Vec<(&[u8], u64)> = p.fs_rules().collect();
    put_u32(&mut out, rules.len());
    for (path, access) in &rules {
        path_ok(path);
        assert_eq!(access & !p.handled_fs, 0, "unhandled right accepted");
        put_u32(&mut out, path.len());
        out.extend_from_slice(path);
        out.extend_from_slice(&access.to_le_bytes());
    }
    let ports: Vec<u16> = p.ports().collect();
    put_u32(&mut out, ports.len());
    for port in &ports {
        out.extend_from_slice(&port.to_le_bytes());
    }
    let keep: Vec<i32> = p.keep_fds().collect();
    put_u32(&mut out, keep.len());
    for fd in &keep {
        assert!(*fd >= 0, "negative descriptor accepted");
        out.extend_from_slice(&fd.to_le_bytes());
    }
    let filters: Vec<(u16, &[u8])> = p.filters().collect();
    put_u32(&mut out, filters.len());
    for (n, insns) in &filters {
        let n = usize::from(*n);
        assert!((1..=MAX_INSNS).contains(&n), "filter of {n} instructions");
        assert_eq!(insns.len(), n * INSN, "filter cut short");
        put_u32(&mut out, n);
        out.extend_from_slice(insns);
    }
    assert_eq!(
        p.flags & !(BROKER | OWN_NETWORK | NO_LANDLOCK),
        0,
        "unknown flag accepted"
    );
    assert!(
        !p.no_landlock()
            || (p.handled_fs | p.handled_net | p.scoped == 0
                && rules.is_empty()
                && ports.is_empty()),
        "a program without landlock carries a landlock rule"
    );
    assert!(
        !p.broker() || !filters.is_empty(),
        "a broker without a filter"
    );
    out.extend_from_slice(&p.flags.to_le_bytes());
    let guards: Vec<(u64, u64, &[u8])> = p.guards().collect();
    put_u32(&mut out, guards.len());
    for (dev, ino, name) in &guards {
        assert!((1..=MAX_NAME).contains(&name.len()), "guarded name length");
        assert!(
            *name == ZONE
                || !(name.contains(&0) || name.contains(&b'/') || *name == b"." || *name == b".."),
            "a guarded name that is no file name accepted"
        );
        out.extend_from_slice(&dev.to_le_bytes());
        out.extend_from_slice(&ino.to_le_bytes());
        put_u32(&mut out, name.len());
        out.extend_from_slice(name);
    }
    let sockets: Vec<&[u8]> = p.sockets().collect();
    put_u32(&mut out, sockets.len());
    for s in &sockets {
        path_ok(s);
        put_u32(&mut out, s.len());
        out.extend_from_slice(s);
    }
    let hosts: Vec<(i32, &[u8])> = p.hosts().collect();
    put_u32(&mut out, hosts.len());
    for (fd, path) in &hosts {
        assert!(*fd >= -1, "negative host root descriptor accepted");
        path_ok(path);
        out.extend_from_slice(&fd.to_le_bytes());
        put_u32(&mut out, path.len());
        out.extend_from_slice(path);
    }
    assert!(
        p.report_fd == -1 || (p.report_fd >= 0 && p.broker()),
        "a denial report without a broker accepted"
    );
    out.extend_from_slice(&p.report_fd.to_le_bytes());
    assert_eq!(out, data, "accepted input is not canonical");
}

/// Another tool's settings → `import::convert` in each format → the TOML
/// `dcjail import` prints → `policy::parse`: exactly the imported policy
/// again, or a one-line policy or usage error.
pub fn settings(data: &[u8]) {
    use dcjail::policy::PolicyFormat;
    let text = String::from_utf8_lossy(data);
    for f in [
        PolicyFormat::Srt,
        PolicyFormat::ClaudeCode,
        PolicyFormat::Codex,
    ] {
        match dcjail::import::convert(f, &text, "fuzz", None) {
            Ok(imp) => {
                let toml = dcjail::import::to_toml(&imp, "fuzz");
                let back = dcjail::policy::parse(&toml, "fuzz.toml")
                    .unwrap_or_else(|r| panic!("{f}: printed TOML does not parse: {r:?}\n{toml}"));
                let mut want = imp.policy.clone();
                want.origins.clear();
                assert_eq!(back, want, "{f}: {toml}");
            }
            Err(r) => {
                assert!(
                    matches!(r.reason, Reason::PolicyError | Reason::UsageError),
                    "{f}: {r:?}"
                );
                assert!(!r.line().contains('\n'), "{:?}", r.line());
            }
        }
    }
}

/// Hook input text: the lone-surrogate repair leaves alone whatever
/// serde_json accepts; and any string, quoted for the shell, reads back as
/// itself the way a POSIX shell reads a word.
pub fn hook_input(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let repaired = dcjail::hook::repair_surrogates(&text);
    if serde_json::from_str::<serde_json::Value>(&text).is_ok() {
        assert_eq!(&*repaired, &*text, "the repair changed valid JSON");
    }
    let _ = serde_json::from_str::<serde_json::Value>(&repaired);
    let word = dcjail::hook::quote(&text);
    assert_eq!(unquote(&word).as_deref(), Some(&*text), "{word:?}");
}

/// One shell word made of single-quoted runs and `\'`, read as sh does;
/// `None` when it holds anything else (an unquoted character would be
/// subject to expansion).
fn unquote(w: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = w.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => loop {
                match chars.next()? {
                    '\'' => break,
                    c => out.push(c),
                }
            },
            '\\' => out.push(chars.next().filter(|c| *c == '\'')?),
            _ => return None,
        }
    }
    Some(out)
}
