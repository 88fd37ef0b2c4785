//! Replays the committed fuzz corpus (fuzz/corpus/<target>/*) through the
//! same checks the libFuzzer targets run (fuzz/checks.rs), on the stable
//! toolchain, so every input that once found a bug stays fixed under plain
//! `cargo test`. A short seeded mutation pass over the corpus follows, so a
//! machine without cargo-fuzz still explores a little past the corpus.

#[path = "../fuzz/checks.rs"]
mod checks;
#[path = "../fuzz/seeds.rs"]
mod seeds;

use std::path::PathBuf;

type Check = fn(&[u8]);

const TARGETS: &[(&str, Check)] = &[
    ("policy", checks::policy),
    ("domain", checks::domain),
    ("http_request", checks::http_request),
    ("socks", checks::socks),
    ("stub_program", checks::stub_program),
    ("settings", checks::settings),
    ("hook_input", checks::hook_input),
];

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut out: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            let p = e.unwrap().path();
            let b = std::fs::read(&p).unwrap();
            (p, b)
        })
        .collect();
    out.sort();
    out
}

fn replay(target: &str) {
    let (_, check) = TARGETS.iter().find(|(n, _)| *n == target).unwrap();
    let files = corpus(target);
    assert!(
        files.len() >= 10,
        "{target}: only {} corpus files; the corpus is missing",
        files.len()
    );
    for (path, bytes) in &files {
        let r = std::panic::catch_unwind(|| check(bytes));
        assert!(r.is_ok(), "{target}: {} breaks a check", path.display());
    }
}

/// xorshift64: deterministic, so a failure here reproduces exactly.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const INTERESTING: &[&[u8]] = &[
    b"\r\n",
    b"\r\n\r\n",
    b"\n",
    b"\0",
    b":",
    b"[",
    b"]",
    b".",
    b"*.",
    b"0x",
    b"@",
    b"%",
    b"\xff",
    b"=",
    b"\"",
    b"[sandbox.network]\n",
    b"allow_domains = [\"",
    b"::ffff:",
    b"127.1",
    b"\x05",
    b"\x03",
];

fn mutate(rng: &mut Rng, base: &[u8], other: &[u8]) -> Vec<u8> {
    let mut v = base.to_vec();
    for _ in 0..=rng.below(4) {
        let at = rng.below(v.len() + 1);
        match rng.below(6) {
            0 if at < v.len() => v[at] = rng.next() as u8,
            1 => v.insert(at, rng.next() as u8),
            2 if at < v.len() => {
                let end = (at + 1 + rng.below(8)).min(v.len());
                v.drain(at..end);
            }
            3 => {
                let tok = INTERESTING[rng.below(INTERESTING.len())];
                v.splice(at..at, tok.iter().copied());
            }
            4 if !other.is_empty() => {
                let s = rng.below(other.len());
                let e = (s + 1 + rng.below(32)).min(other.len());
                v.splice(at..at, other[s..e].iter().copied());
            }
            _ if at < v.len() => v.truncate(at),
            _ => {}
        }
    }
    v
}

fn mutations(target: &str, rounds: usize) {
    let (_, check) = TARGETS.iter().find(|(n, _)| *n == target).unwrap();
    let files = corpus(target);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ target.len() as u64);
    for i in 0..rounds {
        let base = &files[rng.below(files.len())].1;
        let other = &files[rng.below(files.len())].1;
        let input = mutate(&mut rng, base, other);
        let r = std::panic::catch_unwind(|| check(&input));
        assert!(
            r.is_ok(),
            "{target}: mutation {i} breaks a check; input {:?}",
            String::from_utf8_lossy(&input)
        );
    }
}

#[test]
fn policy_corpus_replays_clean() {
    replay("policy");
}

#[test]
fn domain_corpus_replays_clean() {
    replay("domain");
}

#[test]
fn http_request_corpus_replays_clean() {
    replay("http_request");
}

#[test]
fn socks_corpus_replays_clean() {
    replay("socks");
}

#[test]
fn policy_mutations_keep_invariants() {
    mutations("policy", 3000);
}

#[test]
fn domain_mutations_keep_invariants() {
    mutations("domain", 5000);
}

#[test]
fn http_request_mutations_keep_invariants() {
    mutations("http_request", 5000);
}

#[test]
fn socks_mutations_keep_invariants() {
    mutations("socks", 5000);
}

#[test]
fn stub_program_corpus_replays_clean() {
    replay("stub_program");
}

#[test]
fn stub_program_seeds_are_in_the_format_the_stub_reads() {
    use dcjail::inside::stub_format::Program;
    // Each committed seed is accepted (reject-*: refused) by the parser the
    // stub runs, so the replay above checks real programs, not inputs
    // refused at their first bytes.
    let files = corpus("stub_program");
    let (mut accepted, mut refused) = (0, 0);
    for (path, bytes) in &files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("seed-") {
            assert!(
                Program::parse(bytes).is_ok(),
                "{name} is not a program the stub reads; run `cargo run --example stub_corpus`"
            );
            accepted += 1;
        } else if name.starts_with("reject-") {
            assert!(Program::parse(bytes).is_err(), "{name} is accepted");
            refused += 1;
        }
    }
    assert!(
        accepted >= 8 && refused >= 3,
        "{accepted} seeds, {refused} rejects"
    );
    // And they are exactly what the encoder writes today (the filters are
    // compiled for x86_64, where they were written).
    if cfg!(target_arch = "x86_64") {
        let want = seeds::stub_program().unwrap();
        for s in &want {
            let got = files
                .iter()
                .find(|(p, _)| p.file_name().is_some_and(|n| *n == *s.name));
            assert!(
                got.is_some_and(|(_, b)| *b == s.bytes),
                "fuzz/corpus/stub_program/{} is not what the encoder writes; run `cargo run --example stub_corpus`",
                s.name
            );
            assert_eq!(Program::parse(&s.bytes).is_ok(), s.accepted, "{}", s.name);
        }
        assert_eq!(accepted + refused, want.len(), "stale seed files");
    }
}

#[test]
fn stub_program_mutations_keep_invariants() {
    mutations("stub_program", 5000);
}

#[test]
fn settings_corpus_replays_clean() {
    replay("settings");
}

#[test]
fn settings_mutations_keep_invariants() {
    mutations("settings", 2000);
}

#[test]
fn hook_input_corpus_replays_clean() {
    replay("hook_input");
}

#[test]
fn hook_input_mutations_keep_invariants() {
    mutations("hook_input", 5000);
}
