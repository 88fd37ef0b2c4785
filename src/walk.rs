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

mod describe;
mod held;
mod links;
mod mounts;
mod pool;

pub use describe::describe;

pub use held::{held_links, keep_read_only};
pub use links::{hard_links, Linked, Links};
pub use mounts::{LazyMounts, Mounts};

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
/// so a small one only makes dcjail refuse sooner (tests use it). Read with
/// the facts.
pub use crate::plan::WALK_LIMIT_ENV as LIMIT_ENV;

/// Pseudo filesystems that are never entered: they are huge or infinite,
/// and walking them has side effects on some kernels.
const PSEUDO: &[&str] = &["/proc", "/sys", "/dev"];

/// Compiles a pattern with the options `plan` uses for policy globs
/// (`/` is not matched by `*`, backslash escapes): for tests, benches and
/// the re-walk of `matched_nothing`.
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

/// The bound `DCJAIL_WALK_LIMIT` sets (the value gathered with the facts,
/// `plan::Facts::walk_limit`), or `DEFAULT_LIMIT`.
pub fn limit_of(value: Option<&std::ffi::OsStr>) -> Result<usize, Refusal> {
    match value {
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
    let jobs = plan_jobs(globs, roots)?;
    let set = glob_set(globs)?;

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

/// The walks to make: one per literal start (and depth) that some glob is
/// anchored at, and one per outermost root for the globs that are not.
fn plan_jobs(globs: &[(&Glob, List)], roots: &[PathBuf]) -> Result<Vec<Job>, String> {
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
    Ok(fold(jobs))
}

fn glob_set(globs: &[(&Glob, List)]) -> Result<GlobSet, String> {
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
    builder
        .build()
        .map_err(|e| format!("cannot compile the globs: {e}"))
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
    // SAFETY: an all-zero statfs is a valid value of the C struct.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid NUL-terminated string and `st` a buffer of the
    // right type for the duration of the call.
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
mod tests;
