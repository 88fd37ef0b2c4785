//! dcjail: a launcher that puts a command inside an OS sandbox chosen from a
//! resolved agent policy. Data flows one way:
//! `cli` → `run` → `policy` → `decide` → `plan` → `backend` → `exec`.

pub mod backend;
pub mod card;
pub mod cli;
pub mod completions;
pub mod decide;
pub mod denials;
pub mod doctor;
pub mod duration;
pub mod error;
pub mod exec;
pub mod explain;
pub mod fields;
pub mod gitconfig;
pub mod gitfiles;
pub mod hook;
pub mod import;
pub mod inside;
pub mod manpage;
pub mod net;
pub mod paths;
pub mod plan;
pub mod policy;
pub mod protected;
pub mod run;
pub mod setup;
pub mod shellword;
pub mod usage;
pub mod walk;
pub mod worktree;
