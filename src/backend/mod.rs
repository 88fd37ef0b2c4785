//! Backend choice: which sandbox can enforce the *whole* plan on this
//! machine, or a refusal naming what is missing (fail closed).
//! Each backend renders its launch from the plan with pure code; probing the
//! machine happens only here, after the gate chain has said run.

pub mod bwrap;
pub mod host;

use crate::error::{Refusal, Result};
use crate::plan::Plan;
use crate::policy::BackendChoice;

#[cfg(target_os = "linux")]
pub mod landlock;
#[cfg(target_os = "linux")]
pub mod layers;
#[cfg(target_os = "linux")]
mod linux_report;
#[cfg(target_os = "linux")]
pub mod nested;
#[cfg(target_os = "linux")]
pub mod obstacle;
#[cfg(target_os = "linux")]
pub mod program;
pub mod report;
pub mod seatbelt;
#[cfg(target_os = "linux")]
pub mod seccomp;
mod unavailable;
pub use unavailable::{Layer, Missing, Setup, Unavailable};

/// A sandbox backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Bwrap,
    Landlock,
    Seatbelt,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Bwrap => "bwrap",
            Kind::Landlock => "landlock",
            Kind::Seatbelt => "seatbelt",
        }
    }

    pub const ALL: [Kind; 3] = [Kind::Bwrap, Kind::Landlock, Kind::Seatbelt];
}

/// What `exec` must do to start the command.
#[derive(Debug)]
pub enum Launch {
    /// The sandbox is off: exec the command as it is.
    Unsandboxed,
    /// bubblewrap, with dcjail's second stage inside it.
    Bwrap(Box<bwrap::BwrapLaunch>),
    /// Apply the landlock + seccomp layer to dcjail itself, then exec.
    #[cfg(target_os = "linux")]
    Landlock(Box<self::landlock::LayerSpec>),
    /// macOS: `/usr/bin/sandbox-exec` with the rendered profile.
    Seatbelt(seatbelt::Rendered),
}

impl Launch {
    /// Gives the launch the allowlist proxy's loopback port, once the proxy
    /// listens: the landlock layer may connect to it only, the Seatbelt
    /// profile gets it as its `PROXY` parameter (the text is unchanged, so
    /// what `explain` showed is what runs). bwrap reaches its proxy inside
    /// its own namespace and takes no port. Pure.
    pub fn with_proxy_port(&mut self, port: u16) {
        match self {
            #[cfg(target_os = "linux")]
            Launch::Landlock(spec) => spec.tcp_connect_ports = vec![port],
            Launch::Seatbelt(r) => *r = r.clone().with_proxy_port(port),
            Launch::Unsandboxed | Launch::Bwrap(_) => {}
        }
    }
}

/// The chosen launch, and why earlier candidates were passed over.
#[derive(Debug)]
pub struct Choice {
    pub kind: Option<Kind>,
    pub launch: Launch,
    pub passed_over: Vec<Unavailable>,
    /// What the launch-time glob walk found; `None` when nothing was walked.
    pub globs: Option<crate::walk::Cover>,
    /// The other names of denied files (hard links) found at launch;
    /// `None` when there was nothing to look at.
    pub links: Option<crate::walk::Links>,
}

impl Choice {
    /// The `DCJAIL_BACKEND` value and `explain`'s `backend`.
    pub fn backend_name(&self) -> &'static str {
        self.kind.map(Kind::name).unwrap_or("none")
    }
}

/// The candidates in the order `auto` tries them on this OS.
pub(crate) fn candidates(choice: BackendChoice) -> Vec<Kind> {
    match choice {
        BackendChoice::Bwrap => vec![Kind::Bwrap],
        BackendChoice::Landlock => vec![Kind::Landlock],
        BackendChoice::Seatbelt => vec![Kind::Seatbelt],
        BackendChoice::Auto => {
            if cfg!(target_os = "linux") {
                vec![Kind::Bwrap, Kind::Landlock]
            } else if cfg!(target_os = "macos") {
                vec![Kind::Seatbelt]
            } else {
                Vec::new()
            }
        }
    }
}

/// This machine, as the backends probe it.
#[cfg(target_os = "linux")]
fn this_host() -> &'static dyn host::Probe {
    &host::Real
}

/// Off Linux nothing asks the Linux probes; a probe that answers nothing
/// stands in.
#[cfg(not(target_os = "linux"))]
fn this_host() -> &'static dyn host::Probe {
    &host::Absent
}

/// Gate 6, second half: picks a backend that enforces the whole plan.
pub fn select(plan: &Plan) -> Result<Choice> {
    select_with(plan, this_host())
}

/// `select` with the machine's answers given (tests give made-up ones).
pub fn select_with(plan: &Plan, host: &dyn host::Probe) -> Result<Choice> {
    if !plan.sandboxed {
        return Ok(Choice {
            kind: None,
            launch: Launch::Unsandboxed,
            passed_over: Vec::new(),
            globs: None,
            links: None,
        });
    }
    let mut passed_over = Vec::new();
    let list = candidates(plan.backend);
    if list.is_empty() {
        return Err(Refusal::unavailable(format!(
            "no sandbox backend exists for {} (set sandbox.enabled = false to run unsandboxed)",
            std::env::consts::OS
        )));
    }
    let globs = expand_globs(plan, &list)?;
    let (literal, links) = literal_plan(plan, globs.as_ref(), &list)?;
    for kind in list {
        match prepare(kind, plan, literal.as_ref(), host) {
            Ok(launch) => {
                return Ok(Choice {
                    kind: Some(kind),
                    launch,
                    passed_over,
                    globs,
                    links,
                })
            }
            Err(why) => passed_over.push(why),
        }
    }
    let why: Vec<String> = passed_over
        .iter()
        .map(|u| format!("{}: {}", u.backend.name(), u.message()))
        .collect();
    Err(Refusal::unavailable(format!(
        "cannot enforce this policy here; {}",
        why.join("; ")
    )))
}

/// The launch-time glob walk (`walk::expand_plan`), once per launch and
/// only when a glob is present and a candidate needs literal paths (bwrap,
/// landlock); Seatbelt matches globs itself. A walk over its bound refuses
/// the run whichever backend would have been chosen.
fn expand_globs(plan: &Plan, list: &[Kind]) -> Result<Option<crate::walk::Cover>> {
    if !crate::walk::has_globs(plan) || !list.iter().any(|k| *k != Kind::Seatbelt) {
        return Ok(None);
    }
    crate::walk::expand_plan(
        plan,
        crate::walk::limit_of(plan.facts.walk_limit.as_deref())?,
    )
}

/// `plan` as the backends that enforce literal paths (bwrap, landlock) get
/// it: each glob replaced by what it matched, every other name of a denied
/// file added to `deny_read` (`walk::hard_links`), and, for bwrap, every
/// other name inside a writable root of a file it keeps read-only added to
/// `deny_write` (`walk::held_links`); `None` when that is `plan` itself.
/// Seatbelt matches by path itself.
fn literal_plan(
    plan: &Plan,
    globs: Option<&crate::walk::Cover>,
    list: &[Kind],
) -> Result<(Option<Plan>, Option<crate::walk::Links>)> {
    let mut literal = globs.map(|c| c.literal_plan(plan));
    if !list.iter().any(|k| *k != Kind::Seatbelt) {
        return Ok((literal, None));
    }
    let mut links: Option<crate::walk::Links> = None;
    let mut mounts = crate::walk::LazyMounts::default();
    if !plan.fs.deny_read.is_empty() {
        let base = literal.as_ref().unwrap_or(plan);
        let limit = crate::walk::limit_of(plan.facts.walk_limit.as_deref())?;
        let l = crate::walk::hard_links(base, plan.facts.home.as_deref(), limit, &mut mounts)?;
        if l.adds_names() {
            literal = Some(l.apply(base));
        }
        links = Some(l);
    }
    // Landlock refuses any write subtraction inside a writable root, so
    // only bwrap's read-only mounts need the other names.
    if list.contains(&Kind::Bwrap)
        && (!plan.fs.protected.is_empty() || !plan.fs.deny_write.is_empty())
    {
        let base = literal.as_ref().unwrap_or(plan);
        let limit = crate::walk::limit_of(plan.facts.walk_limit.as_deref())?;
        let h = crate::walk::held_links(base, limit, &mut mounts)?;
        if let Some(p) = crate::walk::keep_read_only(&h, base) {
            literal = Some(p);
        }
        links.get_or_insert_with(Default::default).held = Some(Box::new(h));
    }
    Ok((literal, links))
}

/// A backend failed at launch, before any of the command ran (bwrap could
/// not build its namespaces here): under `auto` the next candidate is
/// chosen, otherwise the run is refused, naming why. `globs` is the failed
/// choice's walk, reused rather than walked again.
pub fn fallback(
    plan: &Plan,
    globs: Option<crate::walk::Cover>,
    why: Unavailable,
) -> Result<Choice> {
    let failed = why.backend;
    let mut passed_over = vec![why];
    if plan.backend == BackendChoice::Auto {
        let list = candidates(plan.backend);
        let (literal, links) = literal_plan(plan, globs.as_ref(), &list)?;
        let rest = list.iter().skip_while(|k| **k != failed).skip(1);
        for kind in rest {
            match prepare(*kind, plan, literal.as_ref(), this_host()) {
                Ok(launch) => {
                    return Ok(Choice {
                        kind: Some(*kind),
                        launch,
                        passed_over,
                        globs,
                        links,
                    })
                }
                Err(why) => passed_over.push(why),
            }
        }
    }
    let why: Vec<String> = passed_over
        .iter()
        .map(|u| format!("{}: {}", u.backend.name(), u.message()))
        .collect();
    Err(Refusal::unavailable(format!(
        "cannot enforce this policy here; {}",
        why.join("; ")
    )))
}

/// Probes one backend for this plan and renders its launch, or says why not.
/// `literal` is `plan` with its globs replaced by the paths the walk found:
/// what bwrap and landlock enforce.
fn prepare(
    kind: Kind,
    plan: &Plan,
    literal: Option<&Plan>,
    host: &dyn host::Probe,
) -> std::result::Result<Launch, Unavailable> {
    let _ = (plan, literal, host);
    match kind {
        #[cfg(target_os = "linux")]
        Kind::Bwrap => {
            bwrap::prepare(literal.unwrap_or(plan), host).map(|l| Launch::Bwrap(Box::new(l)))
        }
        #[cfg(target_os = "linux")]
        Kind::Landlock => {
            prepare_landlock(plan, literal, host).map(|s| Launch::Landlock(Box::new(s)))
        }
        #[cfg(not(target_os = "linux"))]
        Kind::Bwrap | Kind::Landlock => Err(Unavailable::platform(kind)),
        #[cfg(target_os = "macos")]
        Kind::Seatbelt => seatbelt::prepare(plan).map(Launch::Seatbelt),
        #[cfg(not(target_os = "macos"))]
        Kind::Seatbelt => Err(Unavailable::platform(kind)),
    }
}

/// The landlock layer for this plan, checked against this kernel.
#[cfg(target_os = "linux")]
fn prepare_landlock(
    plan: &Plan,
    literal: Option<&Plan>,
    host: &dyn host::Probe,
) -> std::result::Result<self::landlock::LayerSpec, Unavailable> {
    use unavailable::Because;
    let kind = Kind::Landlock;
    // Landlock filters TCP connect by port only: a direct connection
    // to another host on the proxy's port would get through, and the
    // allowlist promises that a direct connection fails.
    if plan.effective_net() == crate::policy::NetMode::Allowlist {
        return Err(Unavailable::new(kind, Missing::AllowlistNeedsBwrap));
    }
    // A deny_write glob is refused for what it could match inside a
    // writable root, not only for what it matches now.
    // Inside another dcjail bwrap cannot run: a refusal does not send the
    // user there.
    // So does a user namespace that Codex's or srt's sandbox keeps bwrap
    // from (the words only: the obstacle is judged as for any bwrap).
    let nested = self::obstacle::nested(host);
    let blocked = match &nested {
        Some(outer) => Some(self::obstacle::nested_words(outer)),
        None => self::obstacle::outer(host)
            .and_then(|_| host.bwrap().ok())
            .and_then(|b| self::obstacle::userns_obstacle(host, &b))
            .map(|o| o.short()),
    };
    let reword = |m: String| match &blocked {
        Some(why) => self::landlock::without_bwrap(m, why),
        None => m,
    };
    self::landlock::refuse_glob_write_subtraction(plan)
        .map_err(reword)
        .because(kind, Missing::Rule)?;
    // Inside another dcjail, what the outer sandbox is checked to hold
    // (protected paths inside the writable roots) is left to it.
    let base = literal.unwrap_or(plan);
    let relied = match nested {
        Some(_) => Some(
            self::nested::rely_on_outer(base)
                .map_err(reword)
                .because(kind, Missing::Rule)?,
        ),
        None => None,
    };
    let mut spec = self::landlock::layer_spec(relied.as_ref().map_or(base, |r| &r.0))
        .map_err(reword)
        .because(kind, Missing::Rule)?;
    if let Some((_, r)) = &relied {
        spec.without.relied = r.words();
        spec.without.narrowed.extend(r.narrowed());
    }
    spec.check_supported_with(host)
        .map_err(|m| Unavailable::new(kind, m))?;
    // Without seccomp user notification there is no broker: what only it
    // holds is refused by name, the rest runs narrower, and says so.
    if let Some(why) = self::obstacle::listener_missing(host) {
        self::layers::without_listener(&mut spec, None, &why)
            .map_err(|m| Unavailable::new(kind, m))?;
    }
    Ok(spec)
}

/// The launch as `explain` shows it: the backend's argv, rules, profile.
pub fn describe(_plan: &Plan, choice: &Choice) -> serde_json::Value {
    match &choice.launch {
        Launch::Unsandboxed => serde_json::json!({ "kind": "exec" }),
        Launch::Bwrap(l) => {
            let mut v = bwrap::describe(l, _plan.facts.euid);
            #[cfg(target_os = "linux")]
            if l.layer.without.landlock.is_some() {
                // The renderer's notes that speak of the landlock layer
                // inside do not hold here.
                let mut notes: Vec<serde_json::Value> = l
                    .rendered
                    .notes
                    .iter()
                    .filter(|n| !n.contains("landlock"))
                    .map(|n| n.as_str().into())
                    .collect();
                notes.push(
                    "without landlock (see `layers`): the mounts and namespaces alone hold the \
                     filesystem, the terminals and the network; the seccomp filter, no_new_privs \
                     and the empty capability sets stay; bwrap runs with --as-pid-1 and the \
                     second stage, undumpable, is the sandbox's init"
                        .into(),
                );
                v["notes"] = notes.into();
                return v;
            }
            if !_plan.fs.deny_read.is_empty() {
                if let Some(notes) = v["notes"].as_array_mut() {
                    notes.push(
                        "deny_read is held by the mounts: each denied file is masked by a \
                         read-only /dev/null, each denied directory by an empty read-only tmpfs \
                         (mount points: neither renamed, removed nor linked); the landlock layer \
                         inside also denies the paths outside the writable roots, and grants \
                         the writable roots whole, so what the command creates stays readable"
                            .into(),
                    );
                }
            }
            v
        }
        #[cfg(target_os = "linux")]
        Launch::Landlock(spec) => {
            let mut v = spec.describe(_plan.facts.euid);
            v["facts"] = serde_json::json!([self::landlock::terminal_fact(&_plan.facts.stdio)]);
            v
        }
        Launch::Seatbelt(r) => {
            serde_json::json!({ "kind": "seatbelt", "seatbelt": r.to_json(&_plan.argv) })
        }
    }
}

/// Which layers a launch applies and which it runs without (`layers`):
/// what `explain`, the report and the hook answers carry, so that a
/// weaker run can be told from a full one. `null` for an unsandboxed run.
pub fn layers(choice: &Choice) -> serde_json::Value {
    match &choice.launch {
        Launch::Unsandboxed => serde_json::Value::Null,
        #[cfg(target_os = "linux")]
        Launch::Bwrap(l) => self::layers::to_json(
            &l.layer.without,
            &["namespaces", "mounts"],
            l.layer.brokered(),
        ),
        #[cfg(target_os = "linux")]
        Launch::Landlock(spec) => self::layers::to_json(&spec.without, &[], spec.brokered()),
        #[cfg(not(target_os = "linux"))]
        Launch::Bwrap(_) => serde_json::Value::Null,
        Launch::Seatbelt(_) => serde_json::json!({
            "in_force": ["seatbelt"], "missing": [], "narrowed": [],
        }),
    }
}

/// `layers` in words, for the hook's answer: "layers namespaces, mounts,
/// seccomp; without landlock".
pub fn layers_words(choice: &Choice) -> String {
    let v = layers(choice);
    let names = |key: &str, field: Option<&str>| -> Vec<String> {
        v[key]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| match field {
                        Some(f) => x[f].as_str(),
                        None => x.as_str(),
                    })
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let on = names("in_force", None);
    let off = names("missing", Some("layer"));
    let mut w = format!("layers {}", on.join(", "));
    if !off.is_empty() {
        w.push_str(&format!("; without {}", off.join(", ")));
    }
    w
}

/// How a launch ends the command's whole tree when the command exits, at
/// the timeout and when dcjail is killed: what `explain` and `doctor` say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Teardown {
    /// A stable word for the mechanism.
    pub mechanism: &'static str,
    /// Nothing the command starts outlives dcjail, by more than 2 s after
    /// the deadline, also against a chain of processes that each fork a
    /// successor and exit, under load.
    pub bounded: bool,
    pub words: &'static str,
}

/// The teardown of a backend's launch; `None` is the unsandboxed one.
pub fn teardown(kind: Option<Kind>) -> Teardown {
    match kind {
        Some(Kind::Bwrap) => Teardown {
            mechanism: "pid-namespace",
            bounded: true,
            words: "every process runs in a pid namespace whose init dies with bwrap and bwrap with \
                    dcjail; the kernel then kills the whole namespace at once, so nothing the command \
                    started outlives dcjail (within 2 s of the deadline), a chain of processes that \
                    fork successors included",
        },
        Some(Kind::Landlock) => Teardown {
            mechanism: "landlock-signal-scope",
            bounded: true,
            words: "dcjail's watcher sits in a landlock domain that scopes signals and holds the \
                    command's domain nested; it ends the tree with one kill(-1, SIGKILL), which \
                    reaches every process of the sandbox and nothing else, at once: nothing the \
                    command started outlives dcjail (within 2 s of the deadline, also when dcjail \
                    is SIGKILLed), a chain of processes that fork successors included",
        },
        Some(Kind::Seatbelt) => Teardown {
            mechanism: "process-walk",
            bounded: false,
            words: "macOS has no subreaper: dcjail walks the tree from itself and kills what it \
                    finds, so a process whose parent has exited (a double-forked daemon, a chain of \
                    processes that fork successors) can outlive dcjail",
        },
        None => Teardown {
            mechanism: "process-walk",
            bounded: false,
            words: "unsandboxed, dcjail walks its descendants (it is their subreaper) and kills each \
                    as it finds it, round after round until none is left; a fast chain of processes \
                    that fork successors can win rounds and outlive the deadline by more than 2 s",
        },
    }
}

/// `doctor`: every check and every backend, whether it works here and why not.
pub fn doctor_report() -> report::Report {
    doctor_report_with(this_host())
}

/// `doctor_report` with the machine's answers given (tests give made-up ones).
pub fn doctor_report_with(host: &dyn host::Probe) -> report::Report {
    let _ = host;
    #[cfg(target_os = "linux")]
    let mut r = linux_report::report(host);
    #[cfg(target_os = "macos")]
    let mut r = seatbelt::doctor_report();
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    let mut r = report::Report {
        checks: Vec::new(),
        backends: Vec::new(),
    };
    for k in Kind::ALL {
        if r.backends.iter().any(|b| b.kind == k) {
            continue;
        }
        let why = Unavailable::platform(k).message();
        r.backends.push(report::BackendReport {
            kind: k,
            works: false,
            details: vec![why],
            fix: None,
        });
    }
    r.backends
        .sort_by_key(|b| Kind::ALL.iter().position(|k| *k == b.kind));
    teardown_checks(&mut r);
    r
}

/// Each working backend's teardown, in its details and as the
/// `process-teardown` check: ok where every working backend bounds it,
/// info naming the ones that do not.
fn teardown_checks(r: &mut report::Report) {
    let mut loose = Vec::new();
    for b in r.backends.iter_mut().filter(|b| b.works) {
        let t = teardown(Some(b.kind));
        b.details
            .push(format!("process teardown ({}): {}", t.mechanism, t.words));
        if !t.bounded {
            loose.push(b.kind);
        }
    }
    let working: Vec<Kind> = r
        .backends
        .iter()
        .filter(|b| b.works)
        .map(|b| b.kind)
        .collect();
    let check = if loose.is_empty() {
        report::Check::new(
            "process-teardown",
            report::Status::Ok,
            &working,
            "nothing the command starts outlives dcjail (within 2 s of the deadline) on every \
             backend that works here"
                .into(),
        )
    } else {
        let names: Vec<&str> = loose.iter().map(|k| k.name()).collect();
        report::Check::new(
            "process-teardown",
            report::Status::Info,
            &loose,
            format!(
                "under {} a process the command starts can outlive dcjail: {}",
                names.join(", "),
                teardown(loose.first().copied()).words
            ),
        )
    };
    r.checks.push(check);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doctor_says_where_the_teardown_is_not_bounded() {
        let backend = |kind, works| report::BackendReport {
            kind,
            works,
            details: Vec::new(),
            fix: None,
        };
        let mut r = report::Report {
            checks: Vec::new(),
            backends: vec![backend(Kind::Bwrap, false), backend(Kind::Seatbelt, true)],
        };
        let c = teardown_of(&mut r);
        assert_eq!(c.status, report::Status::Info);
        assert_eq!(c.backends, vec![Kind::Seatbelt]);
        assert!(c.message.contains("seatbelt"), "{}", c.message);
        assert!(r.backends[0].details.is_empty());
        assert!(r.backends[1].details[0].starts_with("process teardown (process-walk)"));
        let mut r = report::Report {
            checks: Vec::new(),
            backends: vec![backend(Kind::Bwrap, true), backend(Kind::Landlock, true)],
        };
        assert_eq!(teardown_of(&mut r).status, report::Status::Ok);
    }

    /// `teardown_checks` on `r`, and the check it added.
    fn teardown_of(r: &mut report::Report) -> report::Check {
        teardown_checks(r);
        r.checks
            .iter()
            .find(|c| c.id == "process-teardown")
            .unwrap()
            .clone()
    }

    #[test]
    fn the_glob_walk_runs_only_for_a_backend_that_needs_literal_paths() {
        let ws = std::env::temp_dir().join(format!("dcjail-expand-globs-{}", std::process::id()));
        std::fs::create_dir_all(ws.join("a")).unwrap();
        std::fs::write(ws.join("a/.env"), "x").unwrap();
        let ws = std::fs::canonicalize(&ws).unwrap();
        let facts = crate::plan::Facts {
            cwd: ws.clone(),
            ..Default::default()
        };
        let mut policy = crate::policy::Policy::default();
        policy.sandbox.filesystem.deny_read = vec!["**/.env".into()];
        let plan = crate::plan::build(&policy, vec!["true".into()], &facts).unwrap();
        // Seatbelt matches globs as regexes: nothing is walked for it.
        assert_eq!(expand_globs(&plan, &[Kind::Seatbelt]).unwrap(), None);
        for list in [
            &[Kind::Bwrap][..],
            &[Kind::Landlock],
            &[Kind::Bwrap, Kind::Landlock],
        ] {
            let c = expand_globs(&plan, list).unwrap().unwrap();
            assert_eq!(
                c.paths(crate::walk::List::DenyRead),
                vec![ws.join("a/.env")]
            );
        }
        // No glob, no walk.
        policy.sandbox.filesystem.deny_read = vec!["a/.env".into()];
        let plan = crate::plan::build(&policy, vec!["true".into()], &facts).unwrap();
        assert_eq!(expand_globs(&plan, &[Kind::Bwrap]).unwrap(), None);
        std::fs::remove_dir_all(&ws).unwrap();
    }
}
