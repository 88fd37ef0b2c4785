//! The landlock backend's watcher fences itself off: a landlock domain
//! of its own that scopes signals only, so that one `kill(-1, SIGKILL)`
//! from it reaches the whole sandbox and nothing else. The command's own
//! layer is applied by the second stage's sequence (`inside::stage2`),
//! the same one bwrap's second stage runs.

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
    crate::inside::stage2::scope_only(scope::SIGNAL, None)
        .map_err(|f| format!("the watcher's signal scope: {}", super::fail_text(&f)))?;
    // SAFETY: signal 0 only checks the permission; getppid never fails.
    let reach = unsafe { libc::kill(libc::getppid(), 0) };
    if reach == 0 || super::errno() != libc::EPERM {
        return Err("the watcher's signal scope does not hold: dcjail is still in reach".into());
    }
    Ok(())
}
