//! The exit statuses dcjail reports for the command itself, in one place.
//! Refusals have theirs from `error::Reason`; the ones the second stage
//! reports too are `stub_format`'s, which the stub shares.

pub use crate::inside::stub_format::{
    NOT_EXECUTABLE_STATUS as NOT_EXECUTABLE, NOT_FOUND_STATUS as NOT_FOUND,
    SIGNAL_STATUS_BASE as SIGNAL_BASE,
};

/// The timeout killed the command.
pub const TIMEOUT: i32 = 124;

/// dcjail could not start the command at all (fork failed): the status of
/// dcjail's own errors.
pub fn cannot_start() -> i32 {
    crate::error::Reason::PolicyError.exit_code()
}
