//! What runs inside the sandbox: the child's side of the launch. The wire
//! format between dcjail and its second stage (`stub_format`) and between
//! the broker and dcjail's denial report (`denial_wire`), raw system calls
//! (`sys`), the second stage's irreversible sequence (`stage2`: ruleset,
//! no_new_privs, capabilities, restrict_self, seccomp, descriptors) and the
//! seccomp user-notification broker (`broker`).
//!
//! Owns: every step taken after the launch is rendered, in the process
//! that becomes the command or beside it. Must never name a module of
//! dcjail above it (it is compiled into the embedded stub too, `core`
//! only, with these files at the stub's crate root: their paths to each
//! other are relative, `super::`), allocate, or decide anything: the
//! program it applies was decided and encoded outside.

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
pub mod broker;
pub mod denial_wire;
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
pub mod stage2;
pub mod stub_format;
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
pub mod sys;
