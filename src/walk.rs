//! Glob expansion at launch: finds the existing files and directories that the
//! globs of `deny_read` / `deny_write` / `allow_read` match, so that backends
//! which only understand literal paths (bind mounts, landlock rules) can be
//! given them. `backend::select` calls `expand_plan` once, after the gate
//! chain said run, and only when a glob is present and a Linux backend is a
//! candidate (Seatbelt matches globs itself, as regexes).
//!
//! The walk is bounded and fast: it reads directories with `getdents` only
//! (no `stat` per entry), several at once (`pool`), and a directory with no
//! subdirectory not at all when every glob ends in a literal name (the
//! name is looked up instead, `Walk::look_up`); it walks every glob of the
//! plan in one pass, starts an
//! anchored glob at its literal prefix and stops at the depth the glob can
//! reach, walks the policy's roots only for unanchored `**/…` globs, never
//! descends into a symlink (so loops cost nothing) nor into `/proc`, `/sys`
//! or `/dev`, and does not descend into a directory that already matched a
//! glob of every list being looked for (a rule on a directory covers what is
//! in it). With no glob it touches nothing at all.
//!
//! Roots of an unanchored glob (`**/.env`, "every root the policy grants",
//! see `walk_roots`): the workspace, the worktree root and every writable
//! root (`allow_write`, `/tmp`, `$TMPDIR` in workspace-write), but never `/`.
//! A read-only plan grants reads of the whole filesystem, yet `**/.env` is
//! taken to mean the project's `.env` files, not a search of the disk: its
//! roots are the workspace and the worktree. The same holds for
//! danger-full-access (whose writable root is `/`). The git metadata a linked
//! worktree is granted (objects, refs, logs of the main repository) holds
//! only git-named files and is not walked. A glob that must reach elsewhere
//! is written anchored (`/srv/**/.env`, `~/**/*.pem`) and walks its prefix.
//!
//! What it does not walk, and says so (`Cover::skipped`, in `explain`): a
//! directory the invoking user cannot list (the command, running as that
//! user, cannot list it either; when it can be entered, the names a glob
//! spells out — the `.env` of `**/.env` — are looked up in it by name), and
//! other users' entries in a world-writable directory (`/tmp`,
//! `/var/tmp`): those are not this user's files, and they must never make
//! this user's runs refuse (a landlock run refuses a `deny_read` match inside
//! a writable root).
//!
//! What it must never do: return fewer paths than the globs match under the
//! walked roots, but for the above, without saying so. Hitting the entry
//! bound, or a directory that fails to list for another reason, is an `Err`;
//! the caller refuses with 122. Paths are returned as found (a matching
//! symlink is returned as the link, not its target): `expand_plan` resolves
//! them for the backends. A directory reached only through a symlink is not
//! walked: files created there, or later anywhere, are not covered by this
//! expansion. Every other name (hard link) of a denied file is found by
//! `links`.

mod links;
mod pool;

pub use links::{hard_links, Linked, Links};

use crate::error::Refusal;
use crate::plan::{resolve_lenient, Glob, PathRule, Plan};
use globset::{Candidate, GlobBuilder, GlobSet, GlobSetBuilder};
use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Default bound on directory entries examined per launch.
pub const DEFAULT_LIMIT: usize = 1_000_000;

/// Environment variable that sets the bound (a positive integer). Any bound
/// is safe: the walk either covers everything the globs match or refuses,
/// so a small one only makes dcjail refuse sooner (tests use it).
pub const LIMIT_ENV: &str = "DCJAIL_WALK_LIMIT";

/// Pseudo filesystems that are never entered: they are huge or infinite,
/// and walking them has side effects on some kernels.
const PSEUDO: &[&str] = &["/proc", "/sys", "/dev"];

/// Compiles a pattern with the options `plan` uses for policy globs
/// (`/` is not matched by `*`, backslash escapes), for tests and benches.
pub fn compile(pattern: &str) -> Result<Glob, String> {
    let matcher = GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| format!("bad glob `{pattern}`: {}", e.kind()))?
        .compile_matcher();
    Ok(Glob {
        pattern: pattern.to_string(),
        written: pattern.to_string(),
        matcher,
    })
}

/// The filesystem list a glob comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum List {
    DenyRead,
    AllowRead,
    DenyWrite,
}

impl List {
    pub fn key(self) -> &'static str {
        match self {
            List::DenyRead => "deny_read",
            List::AllowRead => "allow_read",
            List::DenyWrite => "deny_write",
        }
    }

    fn bit(self) -> u8 {
        match self {
            List::DenyRead => 1,
            List::AllowRead => 2,
            List::DenyWrite => 4,
        }
    }
}

/// What one glob covered at launch.
#[derive(Clone, Debug, PartialEq)]
pub struct Covered {
    pub list: List,
    pub written: String,
    pub pattern: String,
    /// The existing paths it matches, resolved, sorted. A path inside a
    /// directory matched by a glob of the same list is not repeated.
    pub paths: Vec<PathBuf>,
}

/// The result of the launch-time walk for a plan with globs.
#[derive(Clone, Debug, PartialEq)]
pub struct Cover {
    /// Where unanchored globs were looked for.
    pub roots: Vec<PathBuf>,
    pub limit: usize,
    /// Directory entries examined.
    pub entries: usize,
    pub globs: Vec<Covered>,
    pub skipped: Skipped,
}

/// What a walk leaves out, and `explain` lists.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Skipped {
    /// Directories this user may enter but not list: only the names a glob
    /// spells out (the `.env` of `**/.env`) were looked up in them.
    pub unlisted: Vec<PathBuf>,
    /// Entries of other users in world-writable directories
    /// (`/tmp`, `/var/tmp`), which are not walked: not this user's files.
    pub foreign: usize,
}

impl Cover {
    /// The paths the globs of one list cover, sorted, without duplicates.
    pub fn paths(&self, list: List) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = self
            .globs
            .iter()
            .filter(|c| c.list == list)
            .flat_map(|c| c.paths.iter().cloned())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// `plan` with every glob rule replaced by the literal paths it matched:
    /// what backends that only understand literal paths are given.
    pub fn literal_plan(&self, plan: &Plan) -> Plan {
        let mut p = plan.clone();
        for (list, rules) in [
            (List::DenyRead, &mut p.fs.deny_read),
            (List::AllowRead, &mut p.fs.allow_read),
            (List::DenyWrite, &mut p.fs.deny_write),
        ] {
            rules.retain(|r| matches!(r, PathRule::Literal(_)));
            for path in self.paths(list) {
                if !rules.iter().any(|r| r.literal() == Some(path.as_path())) {
                    rules.push(PathRule::Literal(path));
                }
            }
        }
        p
    }
}

/// Whether any filesystem rule of the plan is a glob (a few comparisons:
/// this is all a launch without globs pays).
pub fn has_globs(plan: &Plan) -> bool {
    [&plan.fs.deny_read, &plan.fs.allow_read, &plan.fs.deny_write]
        .iter()
        .any(|l| l.iter().any(|r| matches!(r, PathRule::Glob(_))))
}

/// The bound from `DCJAIL_WALK_LIMIT`, or `DEFAULT_LIMIT`.
pub fn limit_from_env() -> Result<usize, Refusal> {
    match std::env::var_os(LIMIT_ENV) {
        None => Ok(DEFAULT_LIMIT),
        Some(v) if v.is_empty() => Ok(DEFAULT_LIMIT),
        Some(v) => v
            .to_str()
            .and_then(|s| s.parse::<usize>().ok())
            .filter(|n| *n > 0)
            .ok_or_else(|| {
                Refusal::policy(format!(
                    "{LIMIT_ENV} must be a positive number of directory entries, not `{}`",
                    v.to_string_lossy()
                ))
            }),
    }
}

/// The roots an unanchored glob is looked for under (see the module doc):
/// the workspace, the worktree, the writable roots but `/` and the main
/// repository's git metadata granted to a linked worktree.
pub fn walk_roots(plan: &Plan) -> Vec<PathBuf> {
    let mut roots = vec![plan.workspace.clone()];
    roots.extend(plan.worktree.iter().cloned());
    let git_meta: Vec<PathBuf> = roots
        .iter()
        .flat_map(|r| crate::plan::git_dirs(&r.join(".git")))
        .collect();
    for w in &plan.fs.writable {
        let inside_git = git_meta.iter().any(|g| w.starts_with(g));
        if w.as_path() != Path::new("/") && !inside_git && !roots.contains(w) {
            roots.push(w.clone());
        }
    }
    roots
}

/// Expands the glob rules of `plan` under `walk_roots(plan)` in one walk.
/// `None` when the plan has no glob: then nothing is read. A walk that
/// cannot be completed is a `sandbox-unavailable` refusal (122): the rule
/// would otherwise cover less than it says.
///
/// Matches are resolved (symlinks followed) for the deny lists, so the file
/// a `.env` link reaches is what gets denied. A symlink matched by an
/// `allow_read` glob is dropped instead: following it would re-open whatever
/// it points at, and a link left in the workspace by an earlier run could
/// point into a denied tree.
pub fn expand_plan(plan: &Plan, limit: usize) -> Result<Option<Cover>, Refusal> {
    if !has_globs(plan) {
        return Ok(None);
    }
    let mut globs: Vec<(&Glob, List)> = Vec::new();
    for (list, rules) in [
        (List::DenyRead, &plan.fs.deny_read),
        (List::AllowRead, &plan.fs.allow_read),
        (List::DenyWrite, &plan.fs.deny_write),
    ] {
        for r in rules {
            if let PathRule::Glob(g) = r {
                globs.push((g, list));
            }
        }
    }
    let roots = walk_roots(plan);
    let walked = run(&globs, &roots, limit).map_err(Refusal::unavailable)?;
    let covered = globs
        .iter()
        .zip(walked.found)
        .map(|((g, list), paths)| {
            let mut paths: Vec<PathBuf> = paths
                .into_iter()
                .filter(|p| {
                    *list != List::AllowRead
                        || !std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
                })
                .map(|p| resolve_lenient(&p))
                .collect();
            paths.sort();
            paths.dedup();
            Covered {
                list: *list,
                written: g.written.clone(),
                pattern: g.pattern.clone(),
                paths,
            }
        })
        .collect();
    Ok(Some(Cover {
        roots: outermost(&roots),
        limit,
        entries: walked.entries,
        globs: covered,
        skipped: walked.skipped,
    }))
}

/// At most this many matched paths per glob are listed by `describe`.
const SHOWN: usize = 1000;

/// `explain`'s account of the walk: whether it ran, where, at what cost,
/// and for each glob what it covered, with what a backend covers later.
pub fn describe(cover: Option<&Cover>, backend: Option<&str>) -> serde_json::Value {
    use serde_json::json;
    let later = match backend {
        Some("bwrap") => "matches are found when dcjail starts: a file created later that matches a glob is not covered; a matched directory is masked (deny_read), bound read-only (deny_write) or re-opened (allow_read) whole, so files created inside it later are covered",
        Some("landlock") => "matches are found when dcjail starts: a file created later that matches a glob is not covered, except inside a matched deny_read directory, which stays unreadable whole; deny_write globs inside a writable root are refused, and so is a deny_read match inside one",
        _ => "",
    };
    let Some(c) = cover else {
        return json!({ "walked": false, "entries": 0, "globs": [] });
    };
    json!({
        "walked": true,
        "roots": c.roots.iter().map(|r| r.to_string_lossy()).collect::<Vec<_>>(),
        "entries": c.entries,
        "limit": c.limit,
        "globs": c.globs.iter().map(|g| json!({
            "list": g.list.key(),
            "glob": g.written,
            "pattern": g.pattern,
            "count": g.paths.len(),
            "matched": g.paths.iter().take(SHOWN).map(|p| p.to_string_lossy()).collect::<Vec<_>>(),
            "matched_truncated": g.paths.len() > SHOWN,
        })).collect::<Vec<_>>(),
        "created_later": later,
        "skipped": {
            "unlisted": c.skipped.unlisted.iter().take(SHOWN).map(|p| p.to_string_lossy()).collect::<Vec<_>>(),
            "other_users_entries_in_world_writable_dirs": c.skipped.foreign,
        },
    })
}

/// One walk: a start directory, how deep the globs can reach below it
/// (`None`: any depth), and the globs (indices) tested there.
struct Job {
    start: PathBuf,
    depth: Option<usize>,
    wants: Vec<usize>,
}

/// Expands `globs` into the existing paths they match. Anchored globs (an
/// absolute pattern) are walked from their literal prefix; unanchored ones
/// (`**/x`) under each of `roots`. At most `limit` directory entries are
/// examined in total; reaching the bound is an error.
pub fn expand(globs: &[&Glob], roots: &[PathBuf], limit: usize) -> Result<Vec<PathBuf>, String> {
    let tagged: Vec<(&Glob, List)> = globs.iter().map(|g| (*g, List::DenyRead)).collect();
    let all: BTreeSet<PathBuf> = run(&tagged, roots, limit)?
        .found
        .into_iter()
        .flatten()
        .collect();
    Ok(all.into_iter().collect())
}

/// What `expand_on` found and left out.
#[doc(hidden)]
#[derive(Debug, PartialEq)]
pub struct Expansion {
    pub paths: Vec<PathBuf>,
    pub entries: usize,
    pub skipped: Skipped,
}

/// `expand` on at most `threads` threads (1: the calling thread alone,
/// what the walk does when no thread can be started), with its account of
/// what it left out: for the tests that hold the parallel walk to the
/// sequential one, and for the bench.
#[doc(hidden)]
pub fn expand_on(
    globs: &[&Glob],
    roots: &[PathBuf],
    limit: usize,
    threads: usize,
) -> Result<Expansion, String> {
    let tagged: Vec<(&Glob, List)> = globs.iter().map(|g| (*g, List::DenyRead)).collect();
    let w = run_on(&tagged, roots, limit, threads)?;
    let all: BTreeSet<PathBuf> = w.found.into_iter().flatten().collect();
    Ok(Expansion {
        paths: all.into_iter().collect(),
        entries: w.entries,
        skipped: w.skipped,
    })
}

/// The one walk behind `expand` and `expand_plan`: the matches of each glob
/// (same order) and the number of entries examined.
fn run(globs: &[(&Glob, List)], roots: &[PathBuf], limit: usize) -> Result<Walked, String> {
    let threads = if globs.is_empty() {
        1
    } else {
        cores().min(MAX_THREADS)
    };
    run_on(globs, roots, limit, threads)
}

/// The cores this process may run on: one `sched_getaffinity`, where
/// `available_parallelism` also reads the cgroup's quota files (~80 µs,
/// as long as the rest of a small walk).
#[cfg(target_os = "linux")]
fn cores() -> usize {
    // SAFETY: a zeroed cpu_set_t is a valid empty set, filled by the call.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return 1;
        }
        usize::try_from(libc::CPU_COUNT(&set)).map_or(1, |n| n.max(1))
    }
}

#[cfg(not(target_os = "linux"))]
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn run_on(
    globs: &[(&Glob, List)],
    roots: &[PathBuf],
    limit: usize,
    threads: usize,
) -> Result<Walked, String> {
    let mut found: Vec<BTreeSet<PathBuf>> = vec![BTreeSet::new(); globs.len()];
    if globs.is_empty() {
        return Ok(Walked {
            found,
            entries: 0,
            skipped: Skipped::default(),
        });
    }
    let mut jobs: Vec<Job> = Vec::new();
    let mut unanchored: Vec<usize> = Vec::new();
    for (i, (g, _)) in globs.iter().enumerate() {
        match literal_prefix(&g.pattern) {
            Some((start, depth)) => {
                if let Some(p) = PSEUDO.iter().find(|p| start.starts_with(p)) {
                    return Err(format!(
                        "glob `{}` would need a walk of {p}, which dcjail does not walk; name the paths literally",
                        g.written
                    ));
                }
                match jobs
                    .iter_mut()
                    .find(|j| j.start == start && j.depth == depth)
                {
                    Some(j) => j.wants.push(i),
                    None => jobs.push(Job {
                        start,
                        depth,
                        wants: vec![i],
                    }),
                }
            }
            None => unanchored.push(i),
        }
    }
    if !unanchored.is_empty() {
        for root in outermost(roots) {
            jobs.push(Job {
                start: root,
                depth: None,
                wants: unanchored.clone(),
            });
        }
    }
    let jobs = fold(jobs);
    // One set for all globs: globset matches a basename or extension glob
    // (`**/.env`, `**/*.lock`) by hash lookup, without running a regex per
    // entry. Same options as the plan's matchers, so the same meaning.
    let mut builder = GlobSetBuilder::new();
    for (g, _) in globs {
        builder.add(
            GlobBuilder::new(&g.pattern)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .map_err(|e| format!("bad glob `{}`: {}", g.written, e.kind()))?,
        );
    }
    let set = builder
        .build()
        .map_err(|e| format!("cannot compile the globs: {e}"))?;

    let budget = Budget {
        left: AtomicUsize::new(limit),
        limit,
    };
    let by_name = jobs.iter().map(|j| leaf_names(j, globs)).collect();
    let w = Walk {
        jobs: &jobs,
        globs,
        set: &set,
        budget: &budget,
        me: euid(),
        by_name,
    };
    // Each job's start is looked at here; its directories are read by the
    // pool, several at once.
    let mut first = Out::new(globs.len());
    let mut dirs = Vec::new();
    for j in 0..jobs.len() {
        w.start(j, &mut first, &mut dirs);
    }
    let outs = pool::run(
        dirs,
        threads,
        || Out::new(globs.len()),
        |d, out, more| w.read(d, out, more),
        || "glob expansion: a walking thread died".to_string(),
    )?;
    let mut skipped = Skipped::default();
    for out in std::iter::once(first).chain(outs) {
        for (all, mine) in found.iter_mut().zip(out.found) {
            all.extend(mine);
        }
        skipped.unlisted.extend(out.skipped.unlisted);
        skipped.foreign += out.skipped.foreign;
    }
    // Threads finish in any order; what they report does not.
    skipped.unlisted.sort();
    Ok(Walked {
        found,
        entries: limit - budget.left.load(Ordering::Relaxed),
        skipped,
    })
}

/// Threads reading directories at most: the kernel's readdir dominates,
/// and more threads than cores only contend.
const MAX_THREADS: usize = 4;

/// What one walk found: each glob's matches (same order), the entries it
/// read, and what it left out.
struct Walked {
    found: Vec<BTreeSet<PathBuf>>,
    entries: usize,
    skipped: Skipped,
}

/// Folds a job whose start lies inside another job's start that has no
/// depth bound into that one, so no directory is read twice. Only a start
/// that is its own canonical path is folded: the outer walk does not follow
/// symlinks, so it would miss a start reached through one.
fn fold(mut jobs: Vec<Job>) -> Vec<Job> {
    jobs.sort_by_key(|j| (j.start.components().count(), j.depth.is_some()));
    let mut out: Vec<Job> = Vec::new();
    for j in jobs {
        let host = out
            .iter()
            .position(|k| k.depth.is_none() && k.start != j.start && j.start.starts_with(&k.start))
            .or_else(|| {
                out.iter()
                    .position(|k| k.depth.is_none() && k.start == j.start)
            })
            .filter(|_| std::fs::canonicalize(&j.start).is_ok_and(|c| c == j.start));
        match host {
            Some(k) => {
                for w in j.wants {
                    if !out[k].wants.contains(&w) {
                        out[k].wants.push(w);
                    }
                }
            }
            None => out.push(j),
        }
    }
    out
}

/// The bound on entries, shared by the walking threads. Each accounts for
/// what it examined in batches of at most `BATCH` entries, so the walk
/// refuses exactly when the directories it visits hold more than `limit`
/// entries, having examined at most `BATCH` more per thread.
struct Budget {
    left: AtomicUsize,
    limit: usize,
}

const BATCH: usize = 64;

impl Budget {
    /// Accounts for `n` more entries examined under `start`; an error once
    /// the bound is passed.
    fn spend(&self, n: usize, start: &Path) -> Result<(), String> {
        let took = self
            .left
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |l| l.checked_sub(n));
        took.map(drop).map_err(|_| {
            format!(
                "glob expansion stopped after {} directory entries (under {}); narrow the glob or the writable roots, or raise {LIMIT_ENV}",
                self.limit,
                start.display()
            )
        })
    }
}

/// A directory to read: which job it belongs to, its depth below the
/// job's start, the lists already covering it (a matched ancestor), and
/// whether anyone may write to it.
struct Dir {
    job: usize,
    path: PathBuf,
    depth: usize,
    covered: u8,
    shared: bool,
    /// It holds no directory: its link count says so (`keeps_links`).
    leaf: bool,
}

/// What one thread found.
struct Out {
    found: Vec<BTreeSet<PathBuf>>,
    skipped: Skipped,
    hits: Vec<usize>,
    /// Filesystems (by device) seen so far, and whether they keep links.
    fs: Vec<(u64, bool)>,
}

impl Out {
    fn new(globs: usize) -> Out {
        Out {
            found: vec![BTreeSet::new(); globs],
            skipped: Skipped::default(),
            hits: Vec::new(),
            fs: Vec::new(),
        }
    }
}

/// Everything the walking threads share, read-only but for the budget.
struct Walk<'a> {
    jobs: &'a [Job],
    globs: &'a [(&'a Glob, List)],
    set: &'a GlobSet,
    budget: &'a Budget,
    me: u32,
    /// Per job: the names its globs spell out, when every one of them ends
    /// in a literal name (`leaf_names`).
    by_name: Vec<Option<Vec<std::ffi::OsString>>>,
}

impl Walk<'_> {
    /// The lists job `j` looks for.
    fn lists(&self, j: usize) -> u8 {
        self.jobs[j]
            .wants
            .iter()
            .fold(0, |m, &i| m | self.globs[i].1.bit())
    }

    /// Tests `p` against job `j`'s globs whose list does not already cover
    /// it; returns the lists covering `p` from now on.
    fn test(&self, j: usize, p: &Path, covered: u8, out: &mut Out) -> u8 {
        let mut now = covered;
        self.set
            .matches_candidate_into(&Candidate::new(p), &mut out.hits);
        for &i in &out.hits {
            let bit = self.globs[i].1.bit();
            if covered & bit == 0 && self.jobs[j].wants.contains(&i) {
                out.found[i].insert(p.to_path_buf());
                now |= bit;
            }
        }
        now
    }

    /// Job `j`'s start, reached the way the command would reach it: through
    /// symlinks in the prefix (only entries met during the walk are not
    /// followed). Pushes it as the first directory to read, unless it
    /// matched already or is not one.
    fn start(&self, j: usize, out: &mut Out, dirs: &mut Vec<Dir>) {
        let job = &self.jobs[j];
        let Ok(meta) = std::fs::metadata(&job.start) else {
            return;
        };
        let covered = self.test(j, &job.start, 0, out);
        if covered == self.lists(j) || !meta.is_dir() || job.depth == Some(0) {
            return;
        }
        let leaf = is_leaf(&meta, &job.start, out);
        dirs.push(Dir {
            job: j,
            path: job.start.clone(),
            depth: 0,
            covered,
            shared: is_shared(&meta),
            leaf,
        });
    }

    /// Reads one directory: tests its entries, pushes its subdirectories to
    /// `more`.
    fn read(&self, d: Dir, out: &mut Out, more: &mut Vec<Dir>) -> Result<(), String> {
        let job = &self.jobs[d.job];
        if let (true, false, Some(names)) = (d.leaf, d.shared, &self.by_name[d.job]) {
            return self.look_up(d, names, out);
        }
        let lists = self.lists(d.job);
        let entries = match std::fs::read_dir(&d.path) {
            Ok(e) => e,
            Err(e) => {
                match unlistable(&d.path, &e) {
                    Unlistable::Gone => {}
                    Unlistable::ByName => {
                        for t in tails(job, self.globs) {
                            let p = d.path.join(t);
                            if std::fs::symlink_metadata(&p).is_ok() {
                                self.test(d.job, &p, d.covered, out);
                            }
                        }
                        out.skipped.unlisted.push(d.path);
                    }
                    Unlistable::Error(why) => return Err(why),
                }
                return Ok(());
            }
        };
        let mut unpaid = 0usize;
        for entry in entries {
            let entry = match entry {
                Ok(e) => e,
                Err(e) => match unlistable(&d.path, &e) {
                    Unlistable::Error(why) => return Err(why),
                    _ => break,
                },
            };
            unpaid += 1;
            if unpaid == BATCH {
                self.budget.spend(unpaid, &job.start)?;
                unpaid = 0;
            }
            // `file_type` comes from getdents: a symlink is never a dir here.
            let is_dir = entry.file_type().map(|t| t.is_dir()).unwrap_or(false);
            // Another user's entry in /tmp is not this user's secret: it is
            // neither matched nor walked, so it can never make a run refuse.
            let m = if d.shared || is_dir {
                entry.metadata().ok()
            } else {
                None
            };
            if d.shared && m.as_ref().is_none_or(|m| m.uid() != self.me) {
                out.skipped.foreign += 1;
                continue;
            }
            let path = entry.path();
            let now = self.test(d.job, &path, d.covered, out);
            if now == lists {
                continue;
            }
            let child_depth = d.depth + 1;
            if job.depth.is_some_and(|max| child_depth >= max) {
                continue;
            }
            if is_dir && !PSEUDO.iter().any(|p| path == Path::new(p)) {
                let shared = m.as_ref().is_some_and(is_shared);
                let leaf = m.as_ref().is_some_and(|m| is_leaf(m, &path, out));
                more.push(Dir {
                    job: d.job,
                    path,
                    depth: child_depth,
                    covered: now,
                    shared,
                    leaf,
                });
            }
        }
        self.budget.spend(unpaid, &job.start)
    }

    /// A directory with no subdirectory, whose matches can only bear the
    /// names the job's globs spell out: those are looked up, instead of
    /// reading every name in it (which, on ext4, the kernel hashes and
    /// sorts). What it finds is what reading it would: every match is one
    /// of its entries, and there is nothing below it to walk. Whether it
    /// could be listed is still asked, so `skipped` says the same.
    fn look_up(&self, d: Dir, names: &[std::ffi::OsString], out: &mut Out) -> Result<(), String> {
        if !can(&d.path, libc::R_OK) {
            match unlistable(&d.path, &std::io::Error::last_os_error()) {
                Unlistable::Gone => return Ok(()),
                Unlistable::ByName => out.skipped.unlisted.push(d.path.clone()),
                Unlistable::Error(why) => return Err(why),
            }
        }
        for t in names {
            let p = d.path.join(t);
            if std::fs::symlink_metadata(&p).is_ok() {
                self.test(d.job, &p, d.covered, out);
            }
        }
        self.budget.spend(names.len(), &self.jobs[d.job].start)
    }
}

/// The names `look_up` tries for job `j`: `None` unless every glob of the
/// job ends in a literal name, since otherwise a match can bear any name.
fn leaf_names(job: &Job, globs: &[(&Glob, List)]) -> Option<Vec<std::ffi::OsString>> {
    let names = tails(job, globs);
    (names.len() == job.wants.len()).then_some(names)
}

/// Whether the directory `m` (of `path`) holds no directory: a link count
/// of 2 (its name and its `.`), on a filesystem known to count a
/// subdirectory's `..` in it. Others (btrfs, overlayfs, network and FUSE
/// filesystems) give 1 or a guess, and are read whole.
fn is_leaf(m: &std::fs::Metadata, path: &Path, out: &mut Out) -> bool {
    if m.nlink() != 2 {
        return false;
    }
    let dev = m.dev();
    if let Some(&(_, keeps)) = out.fs.iter().find(|(d, _)| *d == dev) {
        return keeps;
    }
    let keeps = keeps_links(path);
    out.fs.push((dev, keeps));
    keeps
}

#[cfg(not(target_os = "linux"))]
fn keeps_links(_: &Path) -> bool {
    // Seatbelt matches globs itself; elsewhere every directory is read.
    false
}

#[cfg(target_os = "linux")]
fn keeps_links(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated string and `st` a buffer of the
    // right type for the duration of the call.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return false;
    }
    // ext2, ext3 and ext4 share one magic number. (`f_type`'s integer type
    // differs between targets, hence the casts.)
    #[allow(clippy::unnecessary_cast)]
    let known = [
        libc::EXT4_SUPER_MAGIC as i64,
        libc::XFS_SUPER_MAGIC as i64,
        libc::TMPFS_MAGIC as i64,
    ];
    #[allow(clippy::unnecessary_cast)]
    let t = st.f_type as i64;
    known.contains(&t)
}

/// The literal last component of each of the job's globs (`.env` of
/// `**/.env`): looked up by name in a directory that can be entered but not
/// listed.
fn tails(job: &Job, globs: &[(&Glob, List)]) -> Vec<std::ffi::OsString> {
    job.wants
        .iter()
        .filter_map(|&i| globs[i].0.pattern.rsplit('/').next())
        .filter_map(unescape_literal)
        .filter(|t| !t.is_empty() && t != "." && t != "..")
        .map(std::ffi::OsString::from)
        .collect()
}

fn euid() -> u32 {
    // SAFETY: geteuid never fails.
    unsafe { libc::geteuid() }
}

/// A directory anyone may write to (`/tmp`, sticky or not): other users'
/// entries in it are theirs, never this user's secrets.
fn is_shared(m: &std::fs::Metadata) -> bool {
    m.is_dir() && m.mode() & 0o002 != 0
}

/// What a directory that could not be listed means for the walk.
enum Unlistable {
    /// It vanished, or this user (hence the command) cannot enter it:
    /// nothing in it is reachable.
    Gone,
    /// It can be entered but not listed: a file in it is reachable by a
    /// name the command knows, so the names the globs spell out are looked
    /// up; nothing else can be found.
    ByName,
    /// Anything else: the walk cannot say what it covers.
    Error(String),
}

fn unlistable(dir: &Path, e: &std::io::Error) -> Unlistable {
    match e.kind() {
        ErrorKind::NotFound | ErrorKind::NotADirectory => Unlistable::Gone,
        ErrorKind::PermissionDenied if !can_enter(dir) => Unlistable::Gone,
        ErrorKind::PermissionDenied => Unlistable::ByName,
        _ => Unlistable::Error(format!(
            "glob expansion cannot list {}: {}",
            dir.display(),
            crate::policy::io_words(e)
        )),
    }
}

fn can_enter(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return true;
    };
    // SAFETY: `c` is a valid NUL-terminated string for the duration of the call.
    unsafe { libc::access(c.as_ptr(), libc::X_OK) == 0 }
}

/// Whether this process may `mode` (`R_OK`...) `path`, by its effective
/// ids, as opening it would be judged; on `false` errno says why.
fn can(path: &Path, mode: libc::c_int) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated string for the duration of the call.
    unsafe { libc::faccessat(libc::AT_FDCWD, c.as_ptr(), mode, libc::AT_EACCESS) == 0 }
}

/// The roots with every root that lies inside another one dropped.
fn outermost(roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for r in roots {
        if roots.iter().any(|o| o != r && r.starts_with(o)) || out.contains(r) {
            continue;
        }
        out.push(r.clone());
    }
    out
}

/// For an anchored (absolute) pattern: the longest literal directory prefix
/// and how many components below it the pattern can reach (`None` with a
/// `**`). `None` for an unanchored pattern.
fn literal_prefix(pattern: &str) -> Option<(PathBuf, Option<usize>)> {
    if !pattern.starts_with('/') {
        return None;
    }
    let comps: Vec<&str> = pattern.split('/').filter(|c| !c.is_empty()).collect();
    let mut start = PathBuf::from("/");
    let mut i = 0;
    while i < comps.len() {
        match unescape_literal(comps[i]) {
            Some(lit) if lit != "." && lit != ".." => start.push(OsStr::new(&lit)),
            _ => break,
        }
        i += 1;
    }
    let rest = &comps[i..];
    let depth = if rest.iter().any(|c| c.contains("**")) {
        None
    } else {
        Some(rest.len())
    };
    Some((start, depth))
}

/// The literal text of one pattern component, or `None` when it holds a
/// wildcard. Understands the two escapes a policy pattern can contain:
/// `\c` and the `[c]` that `globset::escape` writes.
fn unescape_literal(comp: &str) -> Option<String> {
    let mut out = String::with_capacity(comp.len());
    let chars: Vec<char> = comp.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                out.push(*chars.get(i + 1)?);
                i += 2;
            }
            '[' => {
                let c = *chars.get(i + 1)?;
                if chars.get(i + 2) == Some(&']') && "*?[]{}".contains(c) {
                    out.push(c);
                    i += 3;
                } else {
                    return None;
                }
            }
            '*' | '?' | '{' | '}' | ']' => return None,
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    struct Tmp(PathBuf);
    impl Tmp {
        fn new(tag: &str) -> Tmp {
            let p = std::env::temp_dir().join(format!(
                "dcjail-walk-{tag}-{}-{:?}",
                std::process::id(),
                std::thread::current().id()
            ));
            let _ = fs::remove_dir_all(&p);
            fs::create_dir_all(&p).unwrap();
            Tmp(fs::canonicalize(&p).unwrap())
        }
    }
    impl Drop for Tmp {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn touch(p: &Path) {
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, b"x").unwrap();
    }

    #[test]
    fn no_glob_touches_nothing() {
        // A root that does not exist would be an error if it were read.
        let r = expand(&[], &[PathBuf::from("/nonexistent/dcjail")], 0).unwrap();
        assert!(r.is_empty());
    }

    #[test]
    fn unanchored_dotenv_found_at_depth_three_in_every_root() {
        let t = Tmp::new("depth3");
        let a = t.0.join("a");
        let b = t.0.join("b");
        touch(&a.join("x/y/z/.env"));
        touch(&a.join(".env"));
        touch(&a.join("x/y/z/not.env"));
        touch(&a.join("x/.envrc"));
        touch(&b.join("q/.env"));
        let g = compile("**/.env").unwrap();
        let got = expand(&[&g], &[a.clone(), b.clone()], 1000).unwrap();
        assert_eq!(
            got,
            vec![a.join(".env"), a.join("x/y/z/.env"), b.join("q/.env")]
        );
    }

    #[test]
    fn anchored_glob_walks_only_its_prefix_and_depth() {
        let t = Tmp::new("anchored");
        touch(&t.0.join("proj/.env"));
        touch(&t.0.join("proj/sub/.env"));
        touch(&t.0.join("other/.env"));
        // A big sibling tree that must not be walked: with a tiny limit,
        // walking it would be an error.
        for i in 0..50 {
            touch(&t.0.join(format!("other/f{i}")));
        }
        let pat = format!("{}/proj/*.env", globset::escape(&t.0.to_string_lossy()));
        let g = compile(&pat).unwrap();
        let got = expand(&[&g], &[], 5).unwrap();
        assert_eq!(got, vec![t.0.join("proj/.env")]);
    }

    #[test]
    fn nested_roots_are_walked_once() {
        let t = Tmp::new("nested");
        touch(&t.0.join("in/.env"));
        let g = compile("**/.env").unwrap();
        // 2 entries in total (`in`, `in/.env`): a second walk of `in` would
        // exceed a limit of 2.
        let got = expand(&[&g], &[t.0.join("in"), t.0.clone()], 2).unwrap();
        assert_eq!(got, vec![t.0.join("in/.env")]);
    }

    #[test]
    fn hitting_the_bound_is_an_error_not_a_short_list() {
        let t = Tmp::new("bound");
        for i in 0..100 {
            touch(&t.0.join(format!("d{}/f{i}", i % 10)));
            // A subdirectory, so each d* is read (a directory without one
            // is only looked up by name).
            fs::create_dir_all(t.0.join(format!("d{}/sub", i % 10))).unwrap();
        }
        touch(&t.0.join("d9/.env"));
        let g = compile("**/.env").unwrap();
        let err = expand(&[&g], std::slice::from_ref(&t.0), 50).unwrap_err();
        assert!(err.contains("stopped after 50"), "{err}");
        // With room enough the same walk succeeds.
        let ok = expand(&[&g], std::slice::from_ref(&t.0), 1000).unwrap();
        assert_eq!(ok, vec![t.0.join("d9/.env")]);
    }

    #[test]
    fn symlink_loop_is_not_followed() {
        let t = Tmp::new("loop");
        fs::create_dir_all(t.0.join("a/b")).unwrap();
        std::os::unix::fs::symlink(t.0.join("a"), t.0.join("a/b/loop")).unwrap();
        std::os::unix::fs::symlink("self", t.0.join("a/self")).unwrap();
        touch(&t.0.join("a/b/.env"));
        let g = compile("**/.env").unwrap();
        let got = expand(&[&g], std::slice::from_ref(&t.0), 100).unwrap();
        assert_eq!(got, vec![t.0.join("a/b/.env")]);
    }

    #[test]
    fn matching_symlink_is_reported_as_the_link() {
        let t = Tmp::new("link");
        touch(&t.0.join("secret"));
        std::os::unix::fs::symlink(t.0.join("secret"), t.0.join(".env")).unwrap();
        let g = compile("**/.env").unwrap();
        let got = expand(&[&g], std::slice::from_ref(&t.0), 100).unwrap();
        assert_eq!(got, vec![t.0.join(".env")]);
    }

    #[test]
    fn matched_directory_is_not_descended() {
        let t = Tmp::new("dirmatch");
        for i in 0..30 {
            touch(&t.0.join(format!("secrets/f{i}")));
        }
        let g = compile("**/secrets").unwrap();
        let got = expand(&[&g], std::slice::from_ref(&t.0), 3).unwrap();
        assert_eq!(got, vec![t.0.join("secrets")]);
    }

    #[test]
    fn a_directory_without_subdirectories_is_looked_up_by_name() {
        let t = Tmp::new("leaf");
        for i in 0..200 {
            touch(&t.0.join(format!("flat/f{i}")));
        }
        touch(&t.0.join("flat/.env"));
        let literal = compile("**/.env").unwrap();
        let tagged = [(&literal, List::DenyRead)];
        let w = run(&tagged, std::slice::from_ref(&t.0), 1000).unwrap();
        // `flat` (no subdirectory) costs one lookup, not its 201 names.
        assert_eq!(w.entries, 2);
        assert_eq!(w.found[0], BTreeSet::from([t.0.join("flat/.env")]));
        // A glob whose last component is no literal name reads it whole,
        // and finds the same.
        let class = compile("**/.e[n]v").unwrap();
        let tagged = [(&class, List::DenyRead)];
        let w = run(&tagged, std::slice::from_ref(&t.0), 1000).unwrap();
        assert_eq!(w.entries, 202);
        assert_eq!(w.found[0], BTreeSet::from([t.0.join("flat/.env")]));
        // With a subdirectory, the directory is read.
        fs::create_dir(t.0.join("flat/sub")).unwrap();
        let tagged = [(&literal, List::DenyRead)];
        let w = run(&tagged, std::slice::from_ref(&t.0), 1000).unwrap();
        assert_eq!(w.entries, 1 + 202 + 1);
    }

    #[test]
    fn globs_inside_pseudo_filesystems_are_refused() {
        let g = compile("/proc/*/environ").unwrap();
        let err = expand(&[&g], &[], 1000).unwrap_err();
        assert!(err.contains("/proc"), "{err}");
    }

    /// Runs `f` as uid/gid 65534 in a forked child; its `Some(0)` passes
    /// (through `setgroups`, which nix offers on Linux only).
    #[cfg(target_os = "linux")]
    fn as_nobody(f: impl FnOnce() -> Option<i32>) {
        // SAFETY: the child only runs `f` and `_exit`s.
        match unsafe { nix::unistd::fork() }.unwrap() {
            nix::unistd::ForkResult::Child => {
                let code = (|| {
                    nix::unistd::setgroups(&[]).ok()?;
                    nix::unistd::setgid(nix::unistd::Gid::from_raw(65534)).ok()?;
                    nix::unistd::setuid(nix::unistd::Uid::from_raw(65534)).ok()?;
                    f()
                })()
                .unwrap_or(99);
                unsafe { libc::_exit(code) };
            }
            nix::unistd::ForkResult::Parent { child } => {
                let st = nix::sys::wait::waitpid(child, None).unwrap();
                assert_eq!(st, nix::sys::wait::WaitStatus::Exited(child, 0));
            }
        }
    }

    /// As root every directory is listable; the unlistable cases only happen
    /// to an unprivileged user, so the walk runs as `nobody` in a child.
    #[cfg(target_os = "linux")]
    #[test]
    fn unlistable_directories_are_skipped_and_spelled_out_names_looked_up() {
        use std::os::unix::fs::PermissionsExt;
        if !nix::unistd::geteuid().is_root() {
            eprintln!("note: not root, cannot switch to nobody; skipped");
            return;
        }
        let t = Tmp::new("perm");
        touch(&t.0.join("xonly/.env"));
        touch(&t.0.join("xonly/deeper/.env"));
        touch(&t.0.join("closed/.env"));
        touch(&t.0.join("open/.env"));
        // Others may enter `xonly` (and open `xonly/.env` by name) but not list it.
        fs::set_permissions(t.0.join("xonly"), fs::Permissions::from_mode(0o711)).unwrap();
        fs::set_permissions(t.0.join("closed"), fs::Permissions::from_mode(0o700)).unwrap();
        let g = compile("**/.env").unwrap();
        let roots = vec![t.0.clone()];
        let (xonly, open) = (t.0.join("xonly"), t.0.join("open/.env"));
        as_nobody(|| {
            // No refusal: what this user cannot list, the command cannot
            // list either; the name the glob spells out is looked up.
            let got = expand(&[&g], &roots, 1000).ok()?;
            if got != vec![open.clone(), xonly.join(".env")] {
                return Some(2);
            }
            let tagged = [(&g, List::DenyRead)];
            let w = run(&tagged, &roots, 1000).ok()?;
            (w.skipped.unlisted == vec![xonly.clone()]).then_some(0)
        });
    }

    /// Another user's entries in a world-writable directory are not
    /// this user's files: never matched, never walked, never a refusal.
    #[cfg(target_os = "linux")]
    #[test]
    fn other_users_entries_in_a_world_writable_directory_are_not_matched() {
        use std::os::unix::fs::PermissionsExt;
        if !nix::unistd::geteuid().is_root() {
            eprintln!("note: not root, cannot switch to nobody; skipped");
            return;
        }
        let t = Tmp::new("sticky");
        let shared = t.0.join("shared");
        touch(&shared.join("roots/.env"));
        touch(&shared.join("roots/unlistable/.env"));
        touch(&shared.join("nobodys/.env"));
        touch(&shared.join(".env"));
        // World-writable without the sticky bit counts the same.
        touch(&t.0.join("open/roots.env/.env"));
        fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).unwrap();
        fs::set_permissions(t.0.join("open"), fs::Permissions::from_mode(0o777)).unwrap();
        fs::set_permissions(
            shared.join("roots/unlistable"),
            fs::Permissions::from_mode(0o311),
        )
        .unwrap();
        let nobody = Some(nix::unistd::Uid::from_raw(65534));
        for p in ["nobodys", "nobodys/.env"] {
            nix::unistd::chown(&shared.join(p), nobody, None).unwrap();
        }
        let g = compile("**/.env").unwrap();
        let roots = vec![t.0.clone()];
        // Root: its own entries are matched, nobody's are not.
        let got = expand(&[&g], &roots, 1000).unwrap();
        assert_eq!(
            got,
            vec![
                t.0.join("open/roots.env/.env"),
                shared.join(".env"),
                shared.join("roots/.env"),
                shared.join("roots/unlistable/.env")
            ]
        );
        let (mine, roots2) = (shared.join("nobodys/.env"), roots.clone());
        as_nobody(|| {
            // Root's entries (one of them unlistable to nobody) are skipped
            // whole: no refusal, no match.
            let tagged = [(&g, List::DenyRead)];
            let w = run(&tagged, &roots2, 1000).ok()?;
            let got: Vec<PathBuf> = w.found.into_iter().flatten().collect();
            (got == vec![mine.clone()] && w.skipped.foreign == 3 && w.skipped.unlisted.is_empty())
                .then_some(0)
        });
    }

    fn plan_with(ws: &Path, deny_read: &[&str]) -> crate::plan::Plan {
        let mut policy = crate::policy::Policy::default();
        policy.sandbox.filesystem.deny_read = deny_read.iter().map(PathBuf::from).collect();
        let facts = crate::plan::Facts {
            cwd: ws.to_path_buf(),
            home: None,
            tmpdir: None,
            exe: None,
        };
        crate::plan::build(&policy, vec!["true".into()], &facts).unwrap()
    }

    #[test]
    fn plan_globs_expand_to_resolved_paths_in_the_workspace() {
        let t = Tmp::new("plan");
        touch(&t.0.join("a/b/c/.env"));
        touch(&t.0.join("real-secret"));
        std::os::unix::fs::symlink(t.0.join("real-secret"), t.0.join("a/.env")).unwrap();
        touch(&t.0.join("literal"));
        let plan = plan_with(&t.0, &["**/.env", "literal"]);
        let c = expand_plan(&plan, 1000).unwrap().unwrap();
        // The symlink is resolved to what it reaches.
        assert_eq!(
            c.paths(List::DenyRead),
            vec![t.0.join("a/b/c/.env"), t.0.join("real-secret")]
        );
        assert!(c.paths(List::AllowRead).is_empty() && c.paths(List::DenyWrite).is_empty());
        assert_eq!(c.globs.len(), 1);
        assert_eq!(c.globs[0].written, "**/.env");
        assert_eq!(c.roots, vec![t.0.clone()]);
        // The literal plan keeps the literal rule and gains the matches.
        let lit = c.literal_plan(&plan);
        let got: Vec<PathBuf> = lit
            .fs
            .deny_read
            .iter()
            .map(|r| r.literal().unwrap().to_path_buf())
            .collect();
        assert_eq!(
            got,
            vec![
                t.0.join("literal"),
                t.0.join("a/b/c/.env"),
                t.0.join("real-secret")
            ]
        );
    }

    #[test]
    fn plan_walk_over_the_bound_refuses_122() {
        let t = Tmp::new("plan-bound");
        for i in 0..20 {
            touch(&t.0.join(format!("f{i}")));
        }
        // A subdirectory, so the workspace is read, not looked up by name.
        fs::create_dir(t.0.join("sub")).unwrap();
        let plan = plan_with(&t.0, &["**/.env"]);
        let r = expand_plan(&plan, 10).unwrap_err();
        assert_eq!(r.reason, crate::error::Reason::SandboxUnavailable);
        assert_eq!(r.exit_code(), 122);
        assert!(r.message.contains(LIMIT_ENV), "{}", r.message);
        // Without globs there is nothing to walk, whatever the bound.
        let plan = plan_with(&t.0, &["literal/.env"]);
        assert!(!has_globs(&plan));
        assert_eq!(expand_plan(&plan, 0).unwrap(), None);
    }

    #[test]
    fn three_lists_are_expanded_in_one_walk() {
        let t = Tmp::new("onewalk");
        touch(&t.0.join("secrets/a"));
        touch(&t.0.join("secrets/pub.txt"));
        touch(&t.0.join("x.lock"));
        touch(&t.0.join("sub/y.lock"));
        let mut plan = plan_with(&t.0, &["**/secrets"]);
        let more = plan_with(&t.0, &["**/secrets/*.txt", "**/*.lock"]);
        plan.fs.allow_read = vec![more.fs.deny_read[0].clone()];
        plan.fs.deny_write = vec![more.fs.deny_read[1].clone()];
        let c = expand_plan(&plan, 1000).unwrap().unwrap();
        // secrets, x.lock, sub, secrets/a, secrets/pub.txt, sub/y.lock:
        // every entry read once, not once per list.
        assert_eq!(c.entries, 6);
        assert_eq!(c.paths(List::DenyRead), vec![t.0.join("secrets")]);
        assert_eq!(c.paths(List::AllowRead), vec![t.0.join("secrets/pub.txt")]);
        assert_eq!(
            c.paths(List::DenyWrite),
            vec![t.0.join("sub/y.lock"), t.0.join("x.lock")]
        );
    }

    #[test]
    fn anchored_glob_inside_a_walked_root_is_not_walked_again() {
        let t = Tmp::new("fold");
        touch(&t.0.join("sub/deep/k.pem"));
        touch(&t.0.join("sub/.env"));
        touch(&t.0.join("other"));
        let pat = format!("{}/sub/**/*.pem", globset::escape(&t.0.to_string_lossy()));
        let plan = plan_with(&t.0, &["**/.env", &pat]);
        let c = expand_plan(&plan, 1000).unwrap().unwrap();
        // sub, other, sub/deep, sub/.env, sub/deep/k.pem
        assert_eq!(c.entries, 5);
        assert_eq!(
            c.paths(List::DenyRead),
            vec![t.0.join("sub/.env"), t.0.join("sub/deep/k.pem")]
        );
    }

    #[test]
    fn a_symlink_matched_by_allow_read_reopens_nothing() {
        let t = Tmp::new("allowlink");
        touch(&t.0.join("secrets/pub.txt"));
        touch(&t.0.join("elsewhere/key"));
        std::os::unix::fs::symlink(t.0.join("elsewhere/key"), t.0.join("secrets/key.txt")).unwrap();
        let mut plan = plan_with(&t.0, &["**/secrets"]);
        let more = plan_with(&t.0, &["**/secrets/*.txt"]);
        plan.fs.allow_read = more.fs.deny_read.clone();
        let c = expand_plan(&plan, 1000).unwrap().unwrap();
        assert_eq!(c.paths(List::AllowRead), vec![t.0.join("secrets/pub.txt")]);
    }

    #[test]
    fn roots_are_what_the_policy_grants_but_never_slash() {
        let t = Tmp::new("roots");
        let mut policy = crate::policy::Policy::default();
        let facts = crate::plan::Facts {
            cwd: t.0.clone(),
            home: None,
            tmpdir: None,
            exe: None,
        };
        let ro = crate::plan::build(&policy, vec!["true".into()], &facts).unwrap();
        assert_eq!(walk_roots(&ro), vec![t.0.clone()]);
        policy.sandbox.mode = crate::policy::SandboxMode::DangerFullAccess;
        let dfa = crate::plan::build(&policy, vec!["true".into()], &facts).unwrap();
        assert_eq!(walk_roots(&dfa), vec![t.0.clone()]);
        policy.sandbox.mode = crate::policy::SandboxMode::WorkspaceWrite;
        let ww = crate::plan::build(&policy, vec!["true".into()], &facts).unwrap();
        let roots = walk_roots(&ww);
        assert_eq!(roots[0], t.0);
        assert!(
            roots.contains(&fs::canonicalize("/tmp").unwrap()),
            "{roots:?}"
        );
        assert!(!roots.contains(&PathBuf::from("/")));
    }

    #[test]
    fn literal_prefix_understands_escapes() {
        assert_eq!(literal_prefix("**/.env"), None);
        assert_eq!(
            literal_prefix("/a/b/*.env"),
            Some((PathBuf::from("/a/b"), Some(1)))
        );
        assert_eq!(
            literal_prefix("/a/[*]b/**/x"),
            Some((PathBuf::from("/a/*b"), None))
        );
        assert_eq!(
            literal_prefix("/a/\\?q/x?"),
            Some((PathBuf::from("/a/?q"), Some(1)))
        );
        assert_eq!(
            literal_prefix("/a/{b,c}/x"),
            Some((PathBuf::from("/a"), Some(2)))
        );
    }
}
