//! Why a backend cannot run a plan here, typed: which backend, and what was
//! missing. Every such failure is `sandbox-unavailable` (exit 122): the
//! gate chain said run, this machine cannot hold the whole plan with it.
//! The message is the sentence the refusal prints; the kind says who can
//! fix it (install something, change the host, change the policy).

use super::Kind;
use crate::error::Refusal;

/// What a backend lacks for this plan. Where dcjail's own code decides
/// the words, the variant carries the facts and the words are written in
/// one place (`Display`); a string is what another program or a lower
/// layer said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Missing {
    /// The backend exists only on another operating system.
    Platform,
    /// A program it runs is absent or not trusted (bwrap, sandbox-exec).
    Program(String),
    /// The host stops it: a kernel feature, a switch, an outer sandbox.
    Host(String),
    /// The host stops it, as the Linux probes judge it (a user-namespace
    /// switch, a seccomp filter, AppArmor, landlock's state): the obstacle,
    /// with its fix.
    #[cfg(target_os = "linux")]
    Obstacle(super::obstacle::Obstacle),
    /// Landlock answers with an older ABI than this layer's rules need:
    /// `needs` is each rule the kernel lacks, with the ABI that brought it.
    LandlockAbi {
        needed: u32,
        have: u32,
        needs: Vec<(u32, &'static str)>,
    },
    /// The plan holds a rule this backend cannot express.
    Rule(String),
    /// The network allowlist under landlock, which filters TCP connect by
    /// port only.
    AllowlistNeedsBwrap,
    /// A feature of the plan that only a layer missing here holds
    /// (`backend::layers`): the feature, the layer, why the layer is
    /// missing, and what the user can change.
    NeedsLayer {
        feature: String,
        layer: Layer,
        why: String,
        fix: &'static str,
    },
    /// Setting the launch up failed before anything of the command ran.
    Setup(Setup),
}

/// A kernel layer a Linux backend can run without, for some policies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layer {
    Landlock,
    /// seccomp user notification: the broker's.
    SeccompNotify,
    /// A network namespace of the command's own (bwrap's).
    NetNamespace,
}

impl Layer {
    /// Its name in refusals.
    pub fn words(self) -> &'static str {
        match self {
            Layer::Landlock => "landlock",
            Layer::SeccompNotify => "seccomp user notification",
            Layer::NetNamespace => "a network namespace of its own",
        }
    }
}

/// A launch's setup that failed before anything of the command ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Setup {
    /// bwrap stopped before the second stage; its own words, without
    /// their `bwrap: ` (empty when it said nothing).
    Bwrap { said: String },
    /// Another step: a descriptor, a pipe, a memfd, a guard's directory.
    Step(String),
}

impl Setup {
    /// Whether bwrap stopped at a bind mount: what it was about to mount
    /// can be removed meanwhile, and a second try skips what is gone.
    pub fn at_bind_mount(&self) -> bool {
        matches!(self, Setup::Bwrap { said } if said.contains("Can't bind mount"))
    }
}

impl From<String> for Setup {
    fn from(s: String) -> Setup {
        Setup::Step(s)
    }
}

impl std::fmt::Display for Setup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Setup::Bwrap { said } => {
                write!(
                    f,
                    "bubblewrap could not build the sandbox: {}",
                    if said.is_empty() {
                        "it exited before the second stage"
                    } else {
                        said
                    }
                )?;
                if said.contains("Can't mount proc") {
                    write!(
                        f,
                        " (the kernel refuses a new /proc inside a user namespace while paths of the /proc above are covered by other mounts, as container runtimes mask them; fix: {})",
                        super::obstacle::PROC_MASKED_FIX
                    )?;
                }
                Ok(())
            }
            Setup::Step(m) => f.write_str(m),
        }
    }
}

impl Missing {
    /// `Missing::Setup` of a step that said why in words (for `because`).
    pub fn setup(m: String) -> Missing {
        Missing::Setup(Setup::Step(m))
    }
}

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Missing::Platform => f.write_str("the backend exists only on another operating system"),
            Missing::Program(m) | Missing::Host(m) | Missing::Rule(m) => f.write_str(m),
            #[cfg(target_os = "linux")]
            Missing::Obstacle(o) => write!(f, "{o}"),
            Missing::LandlockAbi {
                needed,
                have,
                needs,
            } => {
                let list: Vec<String> = needs
                    .iter()
                    .map(|(a, what)| format!("{what} (ABI {a})"))
                    .collect();
                write!(
                    f,
                    "landlock ABI {needed} needed for {}; this kernel has {have}",
                    list.join(", ")
                )
            }
            Missing::AllowlistNeedsBwrap => f.write_str("landlock filters TCP connect by port, not by address, so a direct connection to another host on the proxy's port would not fail; the network allowlist needs the bwrap backend"),
            Missing::NeedsLayer {
                feature,
                layer,
                why,
                fix,
            } => write!(
                f,
                "{feature} needs {}, which is missing here ({why}): {fix}",
                layer.words()
            ),
            Missing::Setup(s) => write!(f, "{s}"),
        }
    }
}

/// A backend that cannot run this plan here, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unavailable {
    pub backend: Kind,
    pub missing: Missing,
}

impl Unavailable {
    pub fn new(backend: Kind, missing: Missing) -> Unavailable {
        Unavailable { backend, missing }
    }

    /// The backend is not in this build for this OS.
    pub fn platform(backend: Kind) -> Unavailable {
        Unavailable::new(backend, Missing::Platform)
    }

    /// The sentence the refusal and `explain`'s `passed_over` say.
    pub fn message(&self) -> String {
        match &self.missing {
            Missing::Platform => match self.backend {
                Kind::Seatbelt => "Seatbelt exists only on macOS".to_string(),
                k => format!("the {} backend exists only on Linux", k.name()),
            },
            m => m.to_string(),
        }
    }
}

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message())
    }
}

impl From<Unavailable> for String {
    fn from(u: Unavailable) -> String {
        u.message()
    }
}

impl From<Unavailable> for Refusal {
    fn from(u: Unavailable) -> Refusal {
        Refusal::unavailable(u.message())
    }
}

/// `Missing::X` for a `Result<_, String>` of one step, on one backend.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) trait Because<T> {
    fn because(self, backend: Kind, kind: fn(String) -> Missing) -> Result<T, Unavailable>;
}

impl<T> Because<T> for Result<T, String> {
    fn because(self, backend: Kind, kind: fn(String) -> Missing) -> Result<T, Unavailable> {
        self.map_err(|m| Unavailable::new(backend, kind(m)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Reason;

    #[test]
    fn every_missing_piece_is_a_sandbox_unavailable_refusal_naming_it() {
        let r: Refusal = Unavailable::new(Kind::Bwrap, Missing::Program("no bwrap".into())).into();
        assert_eq!(r.reason, Reason::SandboxUnavailable);
        assert_eq!(r.message, "no bwrap");
        assert_eq!(
            Unavailable::platform(Kind::Landlock).message(),
            "the landlock backend exists only on Linux"
        );
        assert_eq!(
            Unavailable::platform(Kind::Seatbelt).to_string(),
            "Seatbelt exists only on macOS"
        );
        let e: Result<(), String> = Err("rule".into());
        assert_eq!(
            e.clone().because(Kind::Bwrap, Missing::setup),
            Err(Unavailable::new(
                Kind::Bwrap,
                Missing::Setup(Setup::Step("rule".into()))
            ))
        );
        assert_eq!(
            e.because(Kind::Landlock, Missing::Rule),
            Err(Unavailable::new(
                Kind::Landlock,
                Missing::Rule("rule".into())
            ))
        );
    }

    #[test]
    fn the_typed_reasons_say_what_the_strings_said() {
        // The words each variant replaced, as users read them.
        let say = |m: Missing| Unavailable::new(Kind::Landlock, m).message();
        assert_eq!(
            say(Missing::AllowlistNeedsBwrap),
            "landlock filters TCP connect by port, not by address, so a direct connection to another host on the proxy's port would not fail; the network allowlist needs the bwrap backend"
        );
        assert_eq!(
            say(Missing::NeedsLayer {
                feature: "network full".into(),
                layer: Layer::Landlock,
                why: "no landlock here".into(),
                fix: "use --net none",
            }),
            "network full needs landlock, which is missing here (no landlock here): use --net none"
        );
        assert_eq!(
            say(Missing::LandlockAbi {
                needed: 6,
                have: 3,
                needs: vec![
                    (5, "device ioctl"),
                    (6, "signal and abstract-socket scoping")
                ],
            }),
            "landlock ABI 6 needed for device ioctl (ABI 5), signal and abstract-socket scoping (ABI 6); this kernel has 3"
        );
        let bwrap = |said: &str| Setup::Bwrap { said: said.into() };
        assert_eq!(
            say(Missing::Setup(bwrap(""))),
            "bubblewrap could not build the sandbox: it exited before the second stage"
        );
        let at_mount = bwrap("Can't bind mount /oldroot/tmp/r on /newroot/tmp/r: No such file");
        assert_eq!(
            say(Missing::Setup(at_mount.clone())),
            "bubblewrap could not build the sandbox: Can't bind mount /oldroot/tmp/r on /newroot/tmp/r: No such file"
        );
        // Only bwrap's own words at a bind mount are a vanished path; the
        // same words from another step are not.
        assert!(at_mount.at_bind_mount());
        assert!(!bwrap("Unknown option --bind-fd").at_bind_mount());
        assert!(!Setup::Step("Can't bind mount".into()).at_bind_mount());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn an_obstacle_reads_with_its_fix() {
        let o = super::super::obstacle::Obstacle::UnprivilegedUsernsOff;
        let u = Unavailable::new(Kind::Bwrap, Missing::Obstacle(o.clone()));
        assert_eq!(u.message(), format!("{}; fix: {}", o.message(), o.fix()));
    }
}
