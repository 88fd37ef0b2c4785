//! The seeds of `corpus/stub_program/`, written by dcjail's one encoder of
//! the second stage's program (`backend::program::encode`), so they are in
//! the format the stub reads today: `cargo run --example stub_corpus`
//! rewrites them after a format change, and `tests/fuzz_props.rs` fails
//! until it has. `seed-*` files are layers the encoder makes (the parser
//! must accept them); `reject-*` files are the same programs cut short,
//! with a byte too many, or of the previous version (it must refuse them).
//! Shared by the example and the test; no I/O here.

use dcjail::backend::landlock::{access, scope, FsRule, LayerSpec};
use dcjail::backend::program::{encode, GuardId};
use dcjail::backend::seccomp::{FsRules, Inet, Meta, SocketRules, Unix};
use dcjail::inside::stub_format::{MAGIC, MAX_NAME, ZONE};

/// One corpus file: its name, its bytes, whether the parser must accept it.
pub struct Seed {
    pub name: String,
    pub bytes: Vec<u8>,
    pub accepted: bool,
}

fn rule(path: &str, access: u64) -> FsRule {
    FsRule {
        path: path.into(),
        access,
    }
}

/// A layer as `bwrap` or `landlock` renders one for `mode`; the others
/// start from it.
fn base(fs: FsRules, inet: Inet, unix: Unix) -> LayerSpec {
    LayerSpec {
        abi: 6,
        handled_fs: access::READ | access::WRITE,
        fs_rules: vec![rule("/", access::READ)],
        restrict_tcp: false,
        tcp_connect_ports: Vec::new(),
        scopes: 0,
        sockets: SocketRules { unix, inet },
        unix_sockets: Vec::new(),
        fs,
        keep_fds: Vec::new(),
        host_roots: Vec::new(),
        without: Default::default(),
    }
}

/// The layers (with their guards and report descriptor) the seeds encode:
/// one per shape of the format a launch produces.
fn layers() -> Vec<(LayerSpec, Vec<GuardId>, Option<i32>)> {
    let broker = FsRules {
        meta: Meta::Broker,
        create: true,
        observe: false,
    };
    let refuse = FsRules {
        meta: Meta::Refuse,
        create: false,
        observe: false,
    };
    let zone = || (64769, 2, ZONE.to_vec());
    // danger-full-access with a network of its own: nothing handled.
    let mut open = base(FsRules::OPEN, Inet::OwnNamespace, Unix::Refuse);
    open.handled_fs = 0;
    open.fs_rules.clear();
    // read-only, no network.
    let read_only = base(refuse, Inet::Deny, Unix::Refuse);
    // workspace-write: the broker, guards, a zone, the host roots.
    let mut ww = base(broker, Inet::Deny, Unix::Refuse);
    ww.fs_rules
        .push(rule("/work", access::READ | access::WRITE));
    ww.host_roots = vec!["/work".into(), "/tmp".into()];
    let ww_guards = vec![
        (64769, 2, b".bashrc".to_vec()),
        (64769, 7, b"hooks".to_vec()),
        zone(),
    ];
    // The allowlist proxy: TCP handled, one port, scoped signals.
    let mut proxy = ww.clone();
    proxy.restrict_tcp = true;
    proxy.tcp_connect_ports = vec![3128];
    proxy.scopes = scope::ABSTRACT_UNIX_SOCKET | scope::SIGNAL;
    proxy.sockets.inet = Inet::StreamOnly;
    // Named unix sockets and kept descriptors.
    let mut sockets = ww.clone();
    sockets.sockets.unix = Unix::Named;
    sockets.unix_sockets = vec!["/run/user/0/gnupg/S.gpg-agent".into(), "/r/a b".into()];
    sockets.keep_fds = vec![3, 9];
    // Denials observed under read-only, reported on a descriptor.
    let observe = base(
        FsRules {
            observe: true,
            ..refuse
        },
        Inet::OwnNamespace,
        Unix::Refuse,
    );
    // Odd bytes: a newline and a blank in paths, the longest name.
    let mut odd = ww.clone();
    odd.fs_rules
        .push(rule("/work/a b\nc", access::READ | access::WRITE));
    odd.host_roots.push("/work/a b\nc".into());
    let long = vec![b'n'; MAX_NAME];
    // Without landlock (bwrap's mounts alone): no landlock right or rule.
    let mut no_landlock = base(broker, Inet::OwnNamespace, Unix::Named);
    no_landlock.abi = 0;
    no_landlock.handled_fs = 0;
    no_landlock.fs_rules.clear();
    no_landlock.without.landlock = Some("no landlock here".into());
    vec![
        (no_landlock, ww_guards.clone(), None),
        (open, Vec::new(), None),
        (read_only, Vec::new(), None),
        (ww.clone(), ww_guards.clone(), None),
        (ww, ww_guards.clone(), Some(5)),
        (proxy, ww_guards.clone(), Some(5)),
        (sockets, ww_guards, None),
        (observe, Vec::new(), Some(7)),
        (odd, vec![(1, 1, long), zone()], Some(4)),
    ]
}

/// Every seed, accepted ones first; an `Err` when the encoder refuses a
/// layer (the format changed under this list).
pub fn stub_program() -> Result<Vec<Seed>, String> {
    let mut out = Vec::new();
    let mut programs = Vec::new();
    for (i, (spec, guards, report)) in layers().into_iter().enumerate() {
        let bytes = encode(&spec, &guards, report).map_err(|e| format!("layer {i}: {e}"))?;
        out.push(Seed {
            name: format!("seed-{i:02}"),
            bytes: bytes.clone(),
            accepted: true,
        });
        programs.push(bytes);
    }
    let mut rejects: Vec<Vec<u8>> = Vec::new();
    for p in programs.iter().take(3) {
        // Cut short, one byte too many, the previous version.
        rejects.push(p[..p.len() - 1].to_vec());
        let mut more = p.clone();
        more.push(0);
        rejects.push(more);
        let mut old = p.clone();
        old[MAGIC.len() - 1] -= 1;
        rejects.push(old);
    }
    for (i, bytes) in rejects.into_iter().enumerate() {
        out.push(Seed {
            name: format!("reject-{i:02}"),
            bytes,
            accepted: false,
        });
    }
    Ok(out)
}
