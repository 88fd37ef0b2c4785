//! Applying the landlock + seccomp layer to dcjail itself, just before
//! `execve` (the `landlock` backend): no_new_privs, capabilities dropped,
//! landlock, seccomp, descriptors closed, in one irreversible sequence.
//! `backend::landlock` says what the layer is; this is the only place
//! dcjail applies it to itself (under bwrap the second stage does).

use crate::backend::landlock::{access, scope, FsRule, LayerSpec};
use crate::backend::seccomp;
use std::os::unix::ffi::OsStrExt;

impl LayerSpec {
    /// Builds the ruleset, then applies, in this order: no_new_privs,
    /// capabilities dropped, landlock, the seccomp `program` (this layer's
    /// filter, `seccomp::compile` of `self.sockets` and `self.fs`, compiled
    /// by the caller before it forks so that a broker reads the same one),
    /// file descriptors closed. Nothing is applied when building fails;
    /// after the first step the process must exec or exit. When the filter
    /// hands calls to a broker, returns its listener (already closed in the
    /// command's descriptor table but for the one returned, which the
    /// caller must hand out and close before exec).
    pub fn apply(
        &self,
        program: &seccomp::Program,
    ) -> Result<Option<std::os::fd::OwnedFd>, String> {
        let ruleset = self.build_ruleset()?;
        // SAFETY: plain prctl.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            return Err(format!(
                "cannot set no_new_privs: {}",
                std::io::Error::last_os_error()
            ));
        }
        drop_capabilities()?;
        let status = ruleset
            .restrict_self()
            .map_err(|e| format!("landlock restrict_self failed: {e}"))?;
        if status.ruleset != ::landlock::RulesetStatus::FullyEnforced {
            return Err(format!(
                "landlock enforced the ruleset only partly ({:?})",
                status.ruleset
            ));
        }
        let listener = seccomp::install(program, self.brokered())?;
        let mut keep = self.keep_fds.clone();
        if let Some(l) = &listener {
            use std::os::fd::AsRawFd;
            keep.push(l.as_raw_fd());
        }
        close_fds(&keep)?;
        Ok(listener)
    }

    /// The broker's own landlock domain (`stage2::scope_broker`): applied
    /// to this process, single-threaded, before it forks the command; it
    /// scopes abstract unix sockets and nothing else, so the broker's
    /// `connect` for the command reaches no abstract socket outside the
    /// sandbox. dcjail itself talks to none.
    pub fn scope_broker(&self) -> Result<(), String> {
        use ::landlock::{
            CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr, Scope,
        };
        if self.scopes & scope::ABSTRACT_UNIX_SOCKET == 0 {
            return Ok(());
        }
        let ll = |e: ::landlock::RulesetError| format!("landlock (broker): {e}");
        // Every landlock layer denies a rename or link across directories
        // (REFER) unless a rule grants it, even one that handles no file
        // access: granted beneath `/`, so this layer scopes sockets only.
        let root = ::landlock::PathFd::new("/").map_err(|e| format!("landlock (broker): {e}"))?;
        let status = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(::landlock::AccessFs::Refer)
            .map_err(ll)?
            .scope(Scope::AbstractUnixSocket)
            .map_err(ll)?
            .create()
            .map_err(ll)?
            .add_rule(::landlock::PathBeneath::new(
                root,
                ::landlock::AccessFs::Refer,
            ))
            .map_err(ll)?
            .restrict_self()
            .map_err(ll)?;
        if status.ruleset != ::landlock::RulesetStatus::FullyEnforced {
            return Err("landlock enforced the broker's scope only partly".into());
        }
        Ok(())
    }

    fn build_ruleset(&self) -> Result<::landlock::RulesetCreated, String> {
        use ::landlock::{
            AccessNet, BitFlags, CompatLevel, Compatible, NetPort, Ruleset, RulesetAttr,
            RulesetCreatedAttr, Scope,
        };
        let ll = |e: ::landlock::RulesetError| format!("landlock: {e}");
        let fs_bits = |bits: u64| {
            BitFlags::<::landlock::AccessFs>::from_bits(bits)
                .map_err(|_| format!("landlock: unknown filesystem rights {bits:#x}"))
        };
        let mut rs = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(fs_bits(self.handled_fs)?)
            .map_err(ll)?;
        if self.restrict_tcp {
            rs = rs
                .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
                .map_err(ll)?;
        }
        let mut scopes = BitFlags::<Scope>::empty();
        if self.scopes & scope::ABSTRACT_UNIX_SOCKET != 0 {
            scopes |= Scope::AbstractUnixSocket;
        }
        if self.scopes & scope::SIGNAL != 0 {
            scopes |= Scope::Signal;
        }
        if !scopes.is_empty() {
            rs = rs.scope(scopes).map_err(ll)?;
        }
        let mut created = rs.create().map_err(ll)?;
        for port in &self.tcp_connect_ports {
            created = created
                .add_rule(NetPort::new(*port, AccessNet::ConnectTcp))
                .map_err(ll)?;
        }
        // The path rules go straight to the kernel through a duplicate of
        // the ruleset's descriptor (the same ruleset): the crate's checks
        // cost two more syscalls per rule, and a layer has dozens.
        let dup: Option<std::os::fd::OwnedFd> = created
            .try_clone()
            .map_err(|e| format!("landlock: cannot duplicate the ruleset: {e}"))?
            .into();
        let dup = dup.ok_or("landlock: the kernel created no ruleset")?;
        add_path_rules(&dup, &self.fs_rules)?;
        Ok(created)
    }
}

/// Adds one `LANDLOCK_RULE_PATH_BENEATH` rule per entry to `ruleset`: an
/// `O_PATH` open, the rule, a close. Rights that only mean something on a
/// directory are dropped for a non-directory (checked only when the kernel
/// says they do not fit); a path that is gone is skipped, which only
/// narrows the sandbox.
fn add_path_rules(ruleset: &std::os::fd::OwnedFd, rules: &[FsRule]) -> Result<(), String> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    #[repr(C, packed)]
    struct PathBeneath {
        allowed_access: u64,
        parent_fd: i32,
    }
    const LANDLOCK_RULE_PATH_BENEATH: libc::c_int = 1;
    let add = |fd: &OwnedFd, bits: u64| -> std::io::Result<()> {
        let attr = PathBeneath {
            allowed_access: bits,
            parent_fd: fd.as_raw_fd(),
        };
        // SAFETY: the attribute struct is the uapi layout and outlives the call.
        let r = unsafe {
            libc::syscall(
                libc::SYS_landlock_add_rule,
                ruleset.as_raw_fd(),
                LANDLOCK_RULE_PATH_BENEATH,
                &attr as *const PathBeneath,
                0u32,
            )
        };
        if r == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    };
    for rule in rules {
        let c = std::ffi::CString::new(rule.path.as_os_str().as_bytes())
            .map_err(|_| format!("landlock: `{}` contains a NUL byte", rule.path.display()))?;
        // SAFETY: a valid C string; the descriptor is owned right away.
        let raw = unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
        if raw < 0 {
            let e = std::io::Error::last_os_error();
            if std::fs::symlink_metadata(&rule.path).is_err() {
                continue;
            }
            return Err(format!(
                "landlock: cannot open `{}`: {e}",
                rule.path.display()
            ));
        }
        // SAFETY: `raw` is a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let e = match add(&fd, rule.access) {
            Ok(()) => continue,
            Err(e) => e,
        };
        let bits = rule.access & access::FILE;
        let retried = e.raw_os_error() == Some(libc::EINVAL)
            && bits != rule.access
            && !fd_is_dir(&fd)
            && (bits == 0 || add(&fd, bits).is_ok());
        if !retried {
            return Err(format!(
                "landlock: cannot add the rule for `{}`: {e}",
                rule.path.display()
            ));
        }
    }
    Ok(())
}

fn fd_is_dir(fd: &impl std::os::fd::AsFd) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: fstat on a valid descriptor into a zeroed stat buffer.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        libc::fstat(fd.as_fd().as_raw_fd(), &mut st) == 0
            && (st.st_mode & libc::S_IFMT) == libc::S_IFDIR
    }
}

/// Empties every capability set. The bounding set needs CAP_SETPCAP to
/// shrink: without it (an unprivileged caller) it stays, which is harmless
/// because no_new_privs caps what execve can grant at the (empty)
/// permitted set.
fn drop_capabilities() -> Result<(), String> {
    let err = |what: &str| format!("cannot {what}: {}", std::io::Error::last_os_error());
    // Dropping a capability the set lacks succeeds, so none is read first;
    // EINVAL marks the kernel's last capability (no /proc needed), EPERM a
    // caller without CAP_SETPCAP, for whom no drop can succeed.
    for cap in 0..64 as libc::c_ulong {
        // SAFETY: plain prctl.
        if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) } != 0 {
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINVAL) | Some(libc::EPERM) => break,
                _ => {
                    return Err(format!(
                        "cannot drop capability {cap} from the bounding set: {e}"
                    ))
                }
            }
        }
    }
    // SAFETY: plain prctl.
    if unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        )
    } != 0
    {
        return Err(err("clear the ambient capabilities"));
    }
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const V3: u32 = 0x2008_0522;
    let mut hdr = Header {
        version: V3,
        pid: 0,
    };
    let data = [Data::default(); 2];
    // SAFETY: capset reads the header and two data structs (version 3).
    if unsafe { libc::syscall(libc::SYS_capset, &mut hdr, data.as_ptr()) } != 0 {
        return Err(err("drop the capabilities"));
    }
    let mut got = [Data::default(); 2];
    let mut hdr = Header {
        version: V3,
        pid: 0,
    };
    // SAFETY: capget writes two data structs (version 3).
    if unsafe { libc::syscall(libc::SYS_capget, &mut hdr, got.as_mut_ptr()) } != 0 {
        return Err(err("read the capabilities back"));
    }
    if got
        .iter()
        .any(|d| d.effective != 0 || d.permitted != 0 || d.inheritable != 0)
    {
        return Err("capabilities are still held after dropping them".into());
    }
    Ok(())
}

/// Closes every descriptor above 2 but `keep`.
fn close_fds(keep: &[i32]) -> Result<(), String> {
    let mut keep: Vec<u32> = keep
        .iter()
        .filter(|fd| **fd > 2)
        .map(|fd| *fd as u32)
        .collect();
    keep.sort_unstable();
    keep.dedup();
    let mut lo: u32 = 3;
    for k in keep.iter().copied().chain(std::iter::once(u32::MAX)) {
        if k > lo {
            let hi = if k == u32::MAX { u32::MAX } else { k - 1 };
            // SAFETY: close_range only closes descriptors.
            let r = unsafe { libc::syscall(libc::SYS_close_range, lo, hi, 0u32) };
            if r != 0 {
                return Err(format!(
                    "cannot close inherited file descriptors: {}",
                    std::io::Error::last_os_error()
                ));
            }
        }
        lo = k.saturating_add(1);
    }
    Ok(())
}

/// Puts the calling process (the landlock backend's watcher) in a landlock
/// domain of its own that restricts nothing but signals: the command's
/// domain, made later in its child, is nested in it, so the watcher can
/// still signal the command and everything it starts, and nothing else.
/// `kill(-1, SIGKILL)` from here is then the one kill of the whole
/// sandbox the kernel makes at once (under the tasklist lock, so no fork
/// completes during it, and a process with SIGKILL pending forks no more):
/// a chain of processes that each fork a successor and exit cannot outrun
/// it, as it can a walk of the tree. The command cannot signal the watcher
/// (its own domain scopes signals too, and the watcher's is outside it).
///
/// Checked, not assumed: dcjail, outside, must be out of reach afterwards;
/// if it is not, `kill(-1)` would reach the host's processes, so an error
/// is returned and the caller must never call it.
pub fn fence_signals() -> Result<(), String> {
    use crate::backend::landlock::scope;
    #[repr(C)]
    struct RulesetAttr {
        handled_access_fs: u64,
        handled_access_net: u64,
        scoped: u64,
    }
    // Every landlock layer denies a rename or link across directories
    // (REFER) unless a rule grants it, even one that handles no file
    // access: granted beneath `/`, so this layer scopes signals only.
    let attr = RulesetAttr {
        handled_access_fs: crate::backend::landlock::access::REFER,
        handled_access_net: 0,
        scoped: scope::SIGNAL,
    };
    let err = |what: &str| format!("cannot {what}: {}", std::io::Error::last_os_error());
    // SAFETY: plain prctl (restrict_self needs it without CAP_SYS_ADMIN;
    // the watcher never execs, so it changes nothing else).
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(err("set no_new_privs on the watcher"));
    }
    // SAFETY: the attribute struct is the uapi layout (ABI 6) and outlives
    // the call.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &attr as *const RulesetAttr,
            std::mem::size_of::<RulesetAttr>(),
            0u32,
        )
    };
    if fd < 0 {
        return Err(err("create the watcher's signal scope (landlock ABI 6)"));
    }
    let fd = fd as libc::c_int;
    if let Err(e) = grant_refer_everywhere(fd) {
        // SAFETY: our own descriptor.
        unsafe { libc::close(fd) };
        return Err(e);
    }
    // SAFETY: a ruleset descriptor just made, closed right after.
    let r = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) };
    let restrict = (r != 0).then(|| err("enter the watcher's signal scope"));
    // SAFETY: our own descriptor.
    unsafe { libc::close(fd) };
    if let Some(e) = restrict {
        return Err(e);
    }
    // SAFETY: signal 0 only checks the permission; getppid never fails.
    let reach = unsafe { libc::kill(libc::getppid(), 0) };
    if reach == 0 || super::errno() != libc::EPERM {
        return Err("the watcher's signal scope does not hold: dcjail is still in reach".into());
    }
    Ok(())
}

/// Adds to ruleset `rs` the rule that grants REFER beneath `/`.
fn grant_refer_everywhere(rs: libc::c_int) -> Result<(), String> {
    #[repr(C, packed)]
    struct PathBeneath {
        allowed_access: u64,
        parent_fd: i32,
    }
    use std::os::fd::AsRawFd;
    let root = std::fs::File::open("/").map_err(|e| format!("cannot open /: {e}"))?;
    let rule = PathBeneath {
        allowed_access: crate::backend::landlock::access::REFER,
        parent_fd: root.as_raw_fd(),
    };
    // SAFETY: a path-beneath rule (type 1) of the uapi layout, valid for
    // the call; `root` outlives it.
    let r = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            rs,
            1u32,
            &rule as *const PathBeneath,
            0u32,
        )
    };
    if r != 0 {
        return Err(format!(
            "cannot grant renames in the watcher's signal scope: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}
