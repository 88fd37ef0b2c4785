//! `dcjail worktree enter|exit`: the worktree lifecycle (issue 5).

use crate::error::Refusal;
use std::ffi::OsString;

pub fn main(_args: &[OsString]) -> i32 {
    let r = Refusal::usage("`dcjail worktree` is not available in this build yet");
    eprintln!("{}", r.line());
    r.exit_code()
}
