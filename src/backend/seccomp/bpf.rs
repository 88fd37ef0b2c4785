//! The classic-BPF assembler behind `compile`: opcodes, labels resolved to
//! jumps (with trampolines for far ones), one block per table entry, a
//! binary search over syscall numbers, and the peephole that drops loads
//! the accumulator already holds.

use super::*;

// Classic BPF, as seccomp runs it.
pub(super) const LD_W_ABS: u16 = 0x20; // BPF_LD (0) | BPF_W (0) | BPF_ABS
pub(super) const AND_K: u16 = 0x04 | 0x50; // BPF_ALU | BPF_AND | BPF_K
pub(super) const JEQ_K: u16 = 0x05 | 0x10; // BPF_JMP | BPF_JEQ | BPF_K
pub(super) const JGE_K: u16 = 0x05 | 0x30; // BPF_JMP | BPF_JGE | BPF_K
pub(super) const JGT_K: u16 = 0x05 | 0x20; // BPF_JMP | BPF_JGT | BPF_K
pub(super) const JSET_K: u16 = 0x05 | 0x40; // BPF_JMP | BPF_JSET | BPF_K
pub(super) const JA: u16 = 0x05; // BPF_JMP | BPF_JA
pub(super) const RET_K: u16 = 0x06; // BPF_RET | BPF_K
pub(super) const RET_KILL_PROCESS: u32 = 0x8000_0000;
pub(super) const RET_ERRNO: u32 = 0x0005_0000;
pub(super) const RET_ALLOW: u32 = 0x7fff_0000;
pub(super) const RET_USER_NOTIF: u32 = 0x7fc0_0000;
/// `struct seccomp_data`: nr, arch, then the arguments from offset 16.
pub(super) const DATA_NR: u32 = 0;
pub(super) const DATA_ARCH: u32 = 4;
pub(super) const DATA_ARGS: u32 = 16;

pub(super) type Label = usize;

/// An instruction before jump offsets are known.
#[derive(Clone, Copy)]
pub(super) enum Op {
    Stmt(u16, u32),
    /// A conditional jump: code, constant, where to go when true / false.
    Jump(u16, u32, Label, Label),
    Here(Label),
}

/// Lays out `ops`: labels become forward offsets. A conditional jump
/// reaches at most 255 instructions; one that would reach further becomes
/// `jcond 0, 1; ja true; ja false` (32-bit offsets), until all fit.
pub(super) fn assemble(ops: &[Op], labels: usize) -> Result<Vec<libc::sock_filter>, String> {
    let mut wide = vec![false; ops.len()];
    loop {
        let mut at = vec![usize::MAX; labels];
        let mut pos = Vec::with_capacity(ops.len());
        let mut n = 0usize;
        for (i, op) in ops.iter().enumerate() {
            pos.push(n);
            match op {
                Op::Here(l) => at[*l] = n,
                Op::Stmt(..) => n += 1,
                Op::Jump(..) => n += if wide[i] { 3 } else { 1 },
            }
        }
        let off = |from: usize, to: Label| -> Result<usize, String> {
            let t = at[to];
            if t == usize::MAX || t < from {
                return Err("seccomp filter: a jump goes backwards or nowhere".into());
            }
            Ok(t - from)
        };
        let mut grew = false;
        for (i, op) in ops.iter().enumerate() {
            if let Op::Jump(_, _, t, f) = *op {
                if !wide[i] && (off(pos[i] + 1, t)? > 255 || off(pos[i] + 1, f)? > 255) {
                    wide[i] = true;
                    grew = true;
                }
            }
        }
        if grew {
            continue;
        }
        if n > 4096 {
            return Err(format!(
                "seccomp filter: {n} instructions, the kernel takes 4096"
            ));
        }
        let ins = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
        let mut out = Vec::with_capacity(n);
        for (i, op) in ops.iter().enumerate() {
            match *op {
                Op::Here(_) => {}
                Op::Stmt(code, k) => out.push(ins(code, 0, 0, k)),
                Op::Jump(code, k, t, f) if !wide[i] => {
                    let (jt, jf) = (off(pos[i] + 1, t)?, off(pos[i] + 1, f)?);
                    out.push(ins(code, jt as u8, jf as u8, k));
                }
                Op::Jump(code, k, t, f) => {
                    out.push(ins(code, 0, 1, k));
                    let to = |from, l| {
                        off(from, l).and_then(|o| u32::try_from(o).map_err(|e| e.to_string()))
                    };
                    out.push(ins(JA, 0, 0, to(pos[i] + 2, t)?));
                    out.push(ins(JA, 0, 0, to(pos[i] + 3, f)?));
                }
            }
        }
        return Ok(out);
    }
}

/// The low 32 bits of a constant the filter compares against.
pub(super) fn dword(v: u64) -> Result<u32, String> {
    u32::try_from(v).map_err(|_| format!("seccomp filter: constant {v:#x} is wider than 32 bits"))
}

pub(super) fn ret(a: Action) -> u32 {
    match a {
        Action::Allow => RET_ALLOW,
        Action::Errno(e) => RET_ERRNO | (e as u32 & 0xffff),
        Action::Broker => RET_USER_NOTIF | u32::from(crate::inside::denial_wire::TAG_BROKER),
        Action::Notify(tag) => RET_USER_NOTIF | u32::from(tag),
    }
}

/// Emits the tests of one conjunction: jumps to `pass` when every
/// comparison holds, to `fail` otherwise. A bit test (JSET) leaves the
/// argument in the accumulator, so the next test of the same argument needs
/// no new load (see `drop_reloads`).
pub(super) fn conjunction(
    conj: &[Cmp],
    pass: Label,
    fail: Label,
    ops: &mut Vec<Op>,
    label: &mut dyn FnMut() -> Label,
) -> Result<(), String> {
    for (i, c) in conj.iter().enumerate() {
        let a = match *c {
            Cmp::Eq(a, _) | Cmp::Ne(a, _) | Cmp::Masked(a, _, _) => a,
        };
        if a > 5 {
            return Err(format!("seccomp filter: no argument {a}"));
        }
        let cont = if i + 1 == conj.len() { pass } else { label() };
        // The low half of the argument (little-endian targets only).
        ops.push(Op::Stmt(LD_W_ABS, DATA_ARGS + 8 * u32::from(a)));
        let test = match *c {
            Cmp::Eq(_, v) => Op::Jump(JEQ_K, dword(v)?, cont, fail),
            Cmp::Ne(_, v) => Op::Jump(JEQ_K, dword(v)?, fail, cont),
            // No bit of the mask set.
            Cmp::Masked(_, m, 0) => Op::Jump(JSET_K, dword(m)?, fail, cont),
            // The one bit of the mask set.
            Cmp::Masked(_, m, v) if v == m && m.is_power_of_two() => {
                Op::Jump(JSET_K, dword(m)?, cont, fail)
            }
            Cmp::Masked(_, m, v) => {
                ops.push(Op::Stmt(AND_K, dword(m)?));
                Op::Jump(JEQ_K, dword(v)?, cont, fail)
            }
        };
        ops.push(test);
        if cont != pass {
            ops.push(Op::Here(cont));
        }
    }
    if conj.is_empty() {
        return Err("seccomp filter: a rule without a condition".into());
    }
    Ok(())
}

/// The label of the shared return of `action` in `pool`, made on first use;
/// `flush_returns` emits them.
pub(super) fn return_to(
    action: Action,
    pool: &mut Vec<(Action, Label)>,
    label: &mut dyn FnMut() -> Label,
) -> Label {
    if let Some((_, l)) = pool.iter().find(|(a, _)| *a == action) {
        return *l;
    }
    let l = label();
    pool.push((action, l));
    l
}

pub(super) fn flush_returns(pool: Vec<(Action, Label)>, ops: &mut Vec<Op>) {
    for (action, l) in pool {
        ops.push(Op::Here(l));
        ops.push(Op::Stmt(RET_K, ret(action)));
    }
}

/// Emits the answer for one table entry: its short path to Allow, then the
/// action of the first rule whose conjunction holds, else its default.
/// Ends in a return on every path; the rules' answers jump to the returns
/// of `pool`.
pub(super) fn entry_block(
    e: &Entry,
    pool: &mut Vec<(Action, Label)>,
    ops: &mut Vec<Op>,
    label: &mut dyn FnMut() -> Label,
) -> Result<(), String> {
    if !e.allow.is_empty() {
        let no = label();
        let yes = return_to(Action::Allow, pool, label);
        conjunction(&e.allow, yes, no, ops, label)?;
        ops.push(Op::Here(no));
    }
    for (conj, action) in &e.rules {
        let fail = label();
        let hit = return_to(*action, pool, label);
        conjunction(conj, hit, fail, ops, label)?;
        ops.push(Op::Here(fail));
    }
    ops.push(Op::Stmt(RET_K, ret(e.default)));
    Ok(())
}

/// What the search tells apart: a run of consecutive syscall numbers that
/// all get one answer whatever their arguments (`ptrace`, the mount
/// family…), or one entry with rules of its own.
pub(super) enum Item<'a> {
    Always { lo: u32, hi: u32, action: Action },
    Rules(&'a Entry),
}

impl Item<'_> {
    fn lo(&self) -> Result<u32, String> {
        match self {
            Item::Always { lo, .. } => Ok(*lo),
            Item::Rules(e) => dword(e.nr as u64),
        }
    }
}

/// The entries, sorted by number, with consecutive numbers that have the
/// same constant answer merged into one run.
pub(super) fn items<'a>(entries: &[&'a Entry]) -> Result<Vec<Item<'a>>, String> {
    let mut out: Vec<Item<'a>> = Vec::new();
    for e in entries {
        let nr = dword(e.nr as u64)?;
        if !e.allow.is_empty() || !e.rules.is_empty() {
            out.push(Item::Rules(e));
            continue;
        }
        match out.last_mut() {
            Some(Item::Always { hi, action, .. })
                if *action == e.default && hi.checked_add(1) == Some(nr) =>
            {
                *hi = nr
            }
            _ => out.push(Item::Always {
                lo: nr,
                hi: nr,
                action: e.default,
            }),
        }
    }
    Ok(out)
}

/// A binary search over the sorted syscall numbers: the kernel checks
/// every syscall number against the filter when it is attached (to cache
/// those always allowed), and a search costs a few steps where a chain
/// costs one per rule. Small ranges end in a chain, each rule's block
/// inline after its own test; the chain's constant answers share one
/// return each, after its final Allow. The accumulator holds the syscall
/// number throughout (only the blocks load arguments, and they end in a
/// return), so no path that reaches Allow here ever loads an argument:
/// what the kernel needs to cache it.
pub(super) fn search(
    items: &[Item<'_>],
    ops: &mut Vec<Op>,
    label: &mut dyn FnMut() -> Label,
) -> Result<(), String> {
    if items.len() > 4 {
        let mid = items.len() / 2;
        let (lo, hi) = (label(), label());
        ops.push(Op::Jump(JGE_K, items[mid].lo()?, hi, lo));
        ops.push(Op::Here(lo));
        search(&items[..mid], ops, label)?;
        ops.push(Op::Here(hi));
        return search(&items[mid..], ops, label);
    }
    let mut shared: Vec<(Action, Label)> = Vec::new();
    for it in items {
        let next = label();
        match it {
            Item::Always { lo, hi, action } => {
                let to = return_to(*action, &mut shared, label);
                if lo == hi {
                    ops.push(Op::Jump(JEQ_K, *lo, to, next));
                } else {
                    let within = label();
                    ops.push(Op::Jump(JGE_K, *lo, within, next));
                    ops.push(Op::Here(within));
                    ops.push(Op::Jump(JGT_K, *hi, next, to));
                }
            }
            Item::Rules(e) => {
                let hit = label();
                ops.push(Op::Jump(JEQ_K, dword(e.nr as u64)?, hit, next));
                ops.push(Op::Here(hit));
                entry_block(e, &mut shared, ops, label)?;
            }
        }
        ops.push(Op::Here(next));
    }
    ops.push(Op::Stmt(RET_K, RET_ALLOW));
    flush_returns(shared, ops);
    Ok(())
}

/// Drops every load of a word the accumulator already holds on all paths
/// that reach it (a rule chain tests one argument again and again). Jumps
/// only go forward, so one pass in order sees every way into a label before
/// the label itself.
pub(super) fn drop_reloads(ops: Vec<Op>, labels: usize) -> Vec<Op> {
    /// What the accumulator holds: a word of seccomp_data, or nothing known.
    type Acc = Option<u32>;
    // Per label: what every jump seen so far leaves in the accumulator
    // (None: no jump yet; Some(None): they disagree or it is unknown).
    let mut into: Vec<Option<Acc>> = vec![None; labels];
    let meet = |slot: &mut Option<Acc>, acc: Acc| {
        *slot = Some(match *slot {
            None => acc,
            Some(a) if a == acc => a,
            Some(_) => None,
        })
    };
    let mut out = Vec::with_capacity(ops.len());
    // `None`: this point cannot be reached by falling through.
    let mut acc: Option<Acc> = Some(None);
    for op in ops {
        match op {
            Op::Here(l) => {
                let mut here = into[l];
                if let Some(a) = acc {
                    meet(&mut here, a);
                }
                acc = Some(here.unwrap_or(None));
                out.push(op);
            }
            Op::Stmt(LD_W_ABS, k) => {
                if acc != Some(Some(k)) {
                    out.push(op);
                }
                acc = Some(Some(k));
            }
            Op::Stmt(RET_K, _) => {
                out.push(op);
                acc = None;
            }
            Op::Stmt(..) => {
                out.push(op);
                acc = Some(None);
            }
            Op::Jump(_, _, t, f) => {
                let a = acc.unwrap_or(None);
                meet(&mut into[t], a);
                meet(&mut into[f], a);
                out.push(op);
                acc = None;
            }
        }
    }
    out
}
