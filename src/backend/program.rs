//! The stage-2 program as the first stage writes it: the landlock + seccomp
//! layer in `stub_format`'s layout, for the embedded stub (under bwrap),
//! for dcjail re-executed as the second stage, and for the landlock
//! backend's broker. One encoder; the decoder it is checked with is
//! `stub_format::Program::parse`, the one the stub runs.

use std::os::unix::ffi::OsStrExt;

/// The embedded second stage (build.rs compiles `stub/main.rs`); empty
/// where it cannot run, and then dcjail itself is the second stage.
pub const STUB: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/stage2-stub"));

/// A guard as the stub program carries it: the directory by inode.
pub type GuardId = (u64, u64, Vec<u8>);

/// The layer as the second stage executes it (`stub_format`): the same
/// rules, with the seccomp filter already compiled and the guards by inode,
/// so the stage decides nothing. `report` is where the broker writes denial
/// records (`None`: nowhere; only a brokered layer takes one). Checked by
/// the stub's own parser here, so that what the stub would refuse is
/// refused before anything starts.
pub fn encode(
    spec: &crate::backend::landlock::LayerSpec,
    guards: &[GuardId],
    report: Option<i32>,
) -> Result<Vec<u8>, String> {
    encode_compiled(
        spec,
        guards,
        &crate::backend::seccomp::compile(spec.sockets, spec.fs)?,
        report,
    )
}

/// The program's `flags` for a layer: a broker, no landlock, a network
/// namespace of its own.
fn flags_of(spec: &crate::backend::landlock::LayerSpec) -> u32 {
    use crate::inside::stub_format::{BROKER, NO_LANDLOCK, OWN_NETWORK};
    let mut flags = if spec.brokered() { BROKER } else { 0 };
    if spec.without.landlock.is_some() {
        flags |= NO_LANDLOCK;
    }
    if spec.sockets.inet == crate::backend::seccomp::Inet::OwnNamespace {
        flags |= OWN_NETWORK;
    }
    flags
}

/// `encode` with the layer's filter compiled already (`seccomp::compile` of
/// `spec.sockets` and `spec.fs`).
pub fn encode_compiled(
    spec: &crate::backend::landlock::LayerSpec,
    guards: &[GuardId],
    compiled: &crate::backend::seccomp::Program,
    report: Option<i32>,
) -> Result<Vec<u8>, String> {
    use crate::inside::stub_format::{Program, MAGIC, MAX_INSNS, MAX_NAME, MAX_PATH};
    let u32_of = |n: usize, what: &str| {
        u32::try_from(n).map_err(|_| format!("the second stage takes no more than 2^32 {what}"))
    };
    let filters = compiled.raw();
    let mut o = Vec::with_capacity(256 + spec.fs_rules.len() * 48 + guards.len() * 32);
    o.extend_from_slice(MAGIC);
    o.extend_from_slice(&spec.handled_fs.to_le_bytes());
    // LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP.
    let net: u64 = if spec.restrict_tcp { 0b11 } else { 0 };
    o.extend_from_slice(&net.to_le_bytes());
    o.extend_from_slice(&spec.scopes.to_le_bytes());
    o.extend_from_slice(&u32_of(spec.fs_rules.len(), "rules")?.to_le_bytes());
    for r in &spec.fs_rules {
        let p = r.path.as_os_str().as_bytes();
        if p.len() > MAX_PATH {
            return Err(format!(
                "a landlock rule path is longer than {MAX_PATH} bytes: `{}`",
                r.path.display()
            ));
        }
        o.extend_from_slice(&u32_of(p.len(), "bytes")?.to_le_bytes());
        o.extend_from_slice(p);
        o.extend_from_slice(&r.access.to_le_bytes());
    }
    o.extend_from_slice(&u32_of(spec.tcp_connect_ports.len(), "ports")?.to_le_bytes());
    for p in &spec.tcp_connect_ports {
        o.extend_from_slice(&p.to_le_bytes());
    }
    o.extend_from_slice(&u32_of(spec.keep_fds.len(), "descriptors")?.to_le_bytes());
    for fd in &spec.keep_fds {
        o.extend_from_slice(&fd.to_le_bytes());
    }
    o.extend_from_slice(&u32_of(filters.len(), "filters")?.to_le_bytes());
    for f in &filters {
        let n = f.len() / crate::inside::stub_format::INSN;
        if n > MAX_INSNS {
            return Err(format!(
                "a seccomp program has more than {MAX_INSNS} instructions"
            ));
        }
        o.extend_from_slice(&u32_of(n, "instructions")?.to_le_bytes());
        o.extend_from_slice(f);
    }
    o.extend_from_slice(&flags_of(spec).to_le_bytes());
    o.extend_from_slice(&u32_of(guards.len(), "guards")?.to_le_bytes());
    for (dev, ino, name) in guards {
        if name.len() > MAX_NAME {
            return Err(format!(
                "a protected name is longer than {MAX_NAME} bytes: `{}`",
                String::from_utf8_lossy(name)
            ));
        }
        o.extend_from_slice(&dev.to_le_bytes());
        o.extend_from_slice(&ino.to_le_bytes());
        o.extend_from_slice(&u32_of(name.len(), "bytes")?.to_le_bytes());
        o.extend_from_slice(name);
    }
    o.extend_from_slice(&u32_of(spec.unix_sockets.len(), "sockets")?.to_le_bytes());
    for s in &spec.unix_sockets {
        let p = s.as_os_str().as_bytes();
        if p.len() > MAX_PATH || !s.is_absolute() {
            return Err(format!(
                "a unix socket path is not absolute or longer than {MAX_PATH} bytes: `{}`",
                s.display()
            ));
        }
        o.extend_from_slice(&u32_of(p.len(), "bytes")?.to_le_bytes());
        o.extend_from_slice(p);
    }
    o.extend_from_slice(&u32_of(spec.host_roots.len(), "roots")?.to_le_bytes());
    for h in &spec.host_roots {
        let p = h.as_os_str().as_bytes();
        if p.len() > MAX_PATH || !h.is_absolute() {
            return Err(format!(
                "a writable root is not absolute or longer than {MAX_PATH} bytes: `{}`",
                h.display()
            ));
        }
        // Opened by the launch (`set_host_fds`).
        o.extend_from_slice(&(-1i32).to_le_bytes());
        o.extend_from_slice(&u32_of(p.len(), "bytes")?.to_le_bytes());
        o.extend_from_slice(p);
    }
    o.extend_from_slice(&report.unwrap_or(-1).to_le_bytes());
    Program::parse(&o).map_err(|e| format!("the second stage's program: {e}"))?;
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stage2_contract_agrees_with_dcjails_own_names() {
        use crate::error::Reason;
        use crate::inside::stub_format as f;
        assert_eq!(
            f::SHIELDED,
            [libc::SIGINT, libc::SIGQUIT, libc::SIGHUP, libc::SIGTERM]
        );
        assert_eq!(
            f::UNAVAILABLE_STATUS,
            Reason::SandboxUnavailable.exit_code()
        );
        assert_eq!(f::USAGE_STATUS, Reason::UsageError.exit_code());
        assert_eq!(crate::backend::bwrap::SANDBOX_PROXY_PORT, f::PROXY_PORT);
    }

    #[cfg(target_os = "linux")]
    fn spec_for_stub() -> crate::backend::landlock::LayerSpec {
        use crate::backend::landlock::{access, FsRule, LayerSpec};
        use crate::backend::seccomp::{FsRules, Inet, Meta, SocketRules, Unix};
        LayerSpec {
            fs: FsRules {
                meta: Meta::Broker,
                create: true,
                observe: false,
            },
            abi: 6,
            handled_fs: access::READ | access::WRITE,
            fs_rules: vec![
                FsRule {
                    path: "/".into(),
                    access: access::READ,
                },
                FsRule {
                    path: "/work/a b\nc".into(),
                    access: access::READ | access::WRITE,
                },
            ],
            restrict_tcp: true,
            tcp_connect_ports: vec![3128],
            scopes: 3,
            sockets: SocketRules {
                unix: Unix::Named,
                inet: Inet::StreamOnly,
            },
            unix_sockets: vec!["/run/user/0/gnupg/S.gpg-agent".into(), "/r/a b".into()],
            keep_fds: vec![7, 4],
            host_roots: vec!["/work/a b\nc".into(), "/tmp".into()],
            without: Default::default(),
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_program_without_landlock_says_so_and_carries_no_landlock_rule() {
        use crate::inside::stub_format::Program;
        let mut spec = spec_for_stub();
        spec.without.landlock = Some("no landlock here".into());
        // Still carrying rules: refused when encoded (and by the stub).
        let e = encode(&spec, &[], None).unwrap_err();
        assert!(
            e.contains("without landlock carries a landlock rule"),
            "{e}"
        );
        spec.abi = 0;
        spec.handled_fs = 0;
        spec.fs_rules.clear();
        spec.restrict_tcp = false;
        spec.tcp_connect_ports.clear();
        spec.scopes = 0;
        let bytes = encode(&spec, &[], None).unwrap();
        let p = Program::parse(&bytes).unwrap();
        assert!(p.no_landlock());
        assert!(p.broker());
        assert_eq!(p.filters().count(), 1);
        spec.without.landlock = None;
        let p = encode(&spec, &[], None).unwrap();
        assert!(!Program::parse(&p).unwrap().no_landlock());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_stub_program_carries_the_whole_layer_and_the_compiled_filters() {
        use crate::inside::stub_format::Program;
        let spec = spec_for_stub();
        let zone = crate::inside::stub_format::ZONE.to_vec();
        let guards: Vec<GuardId> = vec![
            (5, 77, b".bashrc".to_vec()),
            (5, 78, b"hooks".to_vec()),
            (5, 79, zone),
        ];
        let bytes = encode(&spec, &guards, None).unwrap();
        let p = Program::parse(&bytes).unwrap();
        assert!(p.broker());
        let got: Vec<GuardId> = p.guards().map(|(d, i, n)| (d, i, n.to_vec())).collect();
        assert_eq!(got, guards);
        assert_eq!(p.zones().collect::<Vec<_>>(), vec![(5, 79)]);
        // Only the one mark may hold a slash.
        let bad = encode(&spec, &[(5, 80, b"a/b".to_vec())], None);
        assert!(bad.map_or(true, |b| Program::parse(&b).is_err()));
        assert_eq!(p.handled_fs, spec.handled_fs);
        assert_eq!(p.handled_net, 0b11);
        assert_eq!(p.scoped, 3);
        let rules: Vec<(Vec<u8>, u64)> = p.fs_rules().map(|(a, b)| (a.to_vec(), b)).collect();
        let want: Vec<(Vec<u8>, u64)> = spec
            .fs_rules
            .iter()
            .map(|r| (r.path.as_os_str().as_bytes().to_vec(), r.access))
            .collect();
        assert_eq!(rules, want);
        assert_eq!(p.ports().collect::<Vec<_>>(), vec![3128]);
        assert_eq!(p.keep_fds().collect::<Vec<_>>(), vec![7, 4]);
        let sockets: Vec<&[u8]> = p.sockets().collect();
        assert_eq!(
            sockets,
            vec![&b"/run/user/0/gnupg/S.gpg-agent"[..], &b"/r/a b"[..]]
        );
        // The roots' descriptors are -1 until the launch opens them, and
        // setting them changes nothing else.
        let hosts: Vec<(i32, &[u8])> = p.hosts().collect();
        assert_eq!(hosts, vec![(-1, &b"/work/a b\nc"[..]), (-1, &b"/tmp"[..])]);
        let mut set = bytes.clone();
        crate::inside::stub_format::set_host_fds(&mut set, &[9, 11]);
        let q = Program::parse(&set).unwrap();
        assert_eq!(
            q.hosts().collect::<Vec<_>>(),
            vec![(9, &b"/work/a b\nc"[..]), (11, &b"/tmp"[..])]
        );
        assert_eq!(q.report_fd, p.report_fd);
        assert_eq!(q.sockets().count(), 2);
        // A count that differs sets nothing.
        let mut wrong = bytes.clone();
        crate::inside::stub_format::set_host_fds(&mut wrong, &[9]);
        assert_eq!(wrong, bytes);
        let filters: Vec<Vec<u8>> = p.filters().map(|(_, b)| b.to_vec()).collect();
        let compiled = crate::backend::seccomp::compile(spec.sockets, spec.fs)
            .unwrap()
            .raw();
        assert_eq!(filters, compiled);
        for (n, b) in p.filters() {
            assert_eq!(usize::from(n) * 8, b.len());
        }
        // Without TCP rules no network right is handled.
        let mut open = spec.clone();
        open.restrict_tcp = false;
        open.tcp_connect_ports.clear();
        open.fs = crate::backend::seccomp::FsRules::OPEN;
        open.sockets.unix = crate::backend::seccomp::Unix::Refuse;
        let b = encode(&open, &[], None).unwrap();
        let q = Program::parse(&b).unwrap();
        assert_eq!(q.handled_net, 0);
        assert!(!q.broker());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_report_descriptor_is_encoded_and_checked_with_the_rest() {
        use crate::inside::stub_format::Program;
        let spec = spec_for_stub();
        let none = encode(&spec, &[], None).unwrap();
        assert_eq!(Program::parse(&none).unwrap().report_fd, -1);
        let seven = encode(&spec, &[], Some(7)).unwrap();
        assert_eq!(Program::parse(&seven).unwrap().report_fd, 7);
        // Only a broker writes reports: a program without one that names a
        // report descriptor is refused when it is made, not at launch.
        let mut plain = spec.clone();
        plain.fs = crate::backend::seccomp::FsRules::OPEN;
        plain.sockets.unix = crate::backend::seccomp::Unix::Refuse;
        assert!(encode(&plain, &[], None).is_ok());
        assert!(encode(&plain, &[], Some(7)).is_err());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_stub_parser_refuses_every_truncation_trailing_bytes_and_bad_rules() {
        use crate::inside::stub_format::Program;
        let bytes = encode(&spec_for_stub(), &[(1, 2, b"x".to_vec())], None).unwrap();
        for n in 0..bytes.len() {
            assert!(Program::parse(&bytes[..n]).is_err(), "truncated at {n}");
        }
        let mut t = bytes.clone();
        t.push(0);
        assert!(Program::parse(&t).is_err());
        let mut bad = bytes.clone();
        bad[0] ^= 1;
        assert!(Program::parse(&bad).is_err());
        // What the stub would refuse is refused when the program is made.
        let mut rel = spec_for_stub();
        rel.fs_rules[0].path = "relative".into();
        assert!(encode(&rel, &[], None).is_err());
        let mut wide = spec_for_stub();
        wide.handled_fs = crate::backend::landlock::access::READ;
        assert!(encode(&wide, &[], None).is_err());
        let mut long = spec_for_stub();
        long.fs_rules[0].path = format!("/{}", "x".repeat(5000)).into();
        assert!(encode(&long, &[], None).is_err());
        // A guard must be a plain file name.
        for bad in [&b"a/b"[..], b"", b".", b"..", b"x\0y"] {
            assert!(encode(&spec_for_stub(), &[(1, 2, bad.to_vec())], None).is_err());
        }
    }

    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    #[test]
    fn the_stub_is_embedded_static_and_small() {
        assert!(STUB.starts_with(b"\x7fELF"), "not an ELF binary");
        // Copied into a memfd at every bwrap launch: a bound, not a goal
        // (the broker's shadows and the repository zones took it past 64 KiB).
        assert!(STUB.len() < 80 * 1024, "stub is {} bytes", STUB.len());
        // No PT_INTERP program header: it starts without the dynamic loader.
        let u16_at = |o: usize| u16::from_le_bytes([STUB[o], STUB[o + 1]]) as usize;
        let mut phoff = [0u8; 8];
        phoff.copy_from_slice(&STUB[0x20..0x28]);
        let (phoff, phentsize, phnum) = (
            u64::from_le_bytes(phoff) as usize,
            u16_at(0x36),
            u16_at(0x38),
        );
        assert!(phnum > 0);
        for i in 0..phnum {
            let o = phoff + i * phentsize;
            let kind = u32::from_le_bytes([STUB[o], STUB[o + 1], STUB[o + 2], STUB[o + 3]]);
            assert_ne!(kind, 3, "the stub asks for a program interpreter");
        }
    }
}
