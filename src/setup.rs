//! `dcjail setup apparmor [--install]`: the AppArmor profile that lets the
//! bubblewrap dcjail uses create user namespaces where AppArmor restricts
//! them (Ubuntu 24.04 and later), printed, or installed and loaded.
//!
//! Owns: the profile's text (`profiles/apparmor/dcjail-bwrap`, with the one
//! bwrap path filled in — a path checked to need no quoting, so nothing the
//! path holds can become a rule) and the install. It never grants anything
//! to a program that someone other than root could replace, never writes
//! outside /etc/apparmor.d/dcjail-bwrap, and puts nothing there that
//! apparmor_parser has not accepted first.

use clap::{Parser, Subcommand};
use std::ffi::OsString;
use std::path::Path;

#[cfg(target_os = "linux")]
mod install;

/// The profile, with `@BWRAP@` where the bwrap path goes.
pub const TEMPLATE: &str = include_str!("../profiles/apparmor/dcjail-bwrap");
/// Where `--install` puts it.
pub const PROFILE_FILE: &str = "/etc/apparmor.d/dcjail-bwrap";

/// dcjail setup: make this machine able to run what dcjail needs.
#[derive(Parser, Debug)]
#[command(
    name = "dcjail setup",
    subcommand_required = true,
    arg_required_else_help = false
)]
struct SetupCli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Print the AppArmor profile that lets dcjail's bwrap create user
    /// namespaces (Ubuntu 24.04 and later)
    Apparmor {
        /// As root: check it with apparmor_parser, install it as
        /// /etc/apparmor.d/dcjail-bwrap and load it
        #[arg(long)]
        install: bool,
    },
}

/// The `setup` parser, for the completion generator.
pub fn command() -> clap::Command {
    <SetupCli as clap::CommandFactory>::command()
}

pub fn main(args: &[OsString]) -> i32 {
    let mut a = vec![OsString::from("dcjail setup")];
    a.extend(args.iter().cloned());
    let cli: SetupCli = match crate::usage::parse(a) {
        Ok(c) => c,
        Err(code) => return code,
    };
    match cli.cmd {
        Cmd::Apparmor { install } => apparmor(install),
    }
}

#[cfg(target_os = "linux")]
fn apparmor(install: bool) -> i32 {
    install::apparmor(install, &crate::backend::host::Real)
}

#[cfg(not(target_os = "linux"))]
fn apparmor(_install: bool) -> i32 {
    crate::error::finish(Err(crate::error::Refusal::unavailable(
        "AppArmor exists only on Linux; there is nothing to set up here",
    )
    .into()))
}

/// Bytes a path may hold to be written into the profile as it is: an
/// AppArmor path with none of them needs no quoting and holds no glob.
fn plain_path_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'/' | b'.' | b'_' | b'-' | b'+')
}

/// The profile for `bwrap` (absolute, symlink-free). Refused, not quoted,
/// when the path holds anything but letters, digits and `/._-+`, or a
/// `.`/`..` component: AppArmor reads `*?[]{}^`, quotes and blanks as
/// syntax.
pub fn render(bwrap: &Path) -> Result<String, crate::error::Error> {
    use std::os::unix::ffi::OsStrExt;
    let b = bwrap.as_os_str().as_bytes();
    let odd = !bwrap.is_absolute()
        || b.is_empty()
        || !b.iter().all(|c| plain_path_byte(*c))
        || b.windows(2).any(|w| w == b"//")
        || bwrap.components().any(|c| {
            matches!(
                c,
                std::path::Component::CurDir | std::path::Component::ParentDir
            )
        })
        || b.ends_with(b"/");
    if odd {
        return Err(crate::error::Error::UnquotablePath(
            bwrap.to_string_lossy().into_owned(),
        ));
    }
    let path = bwrap.to_string_lossy();
    Ok(TEMPLATE.replace("@BWRAP@", &path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_appears_only_where_the_placeholder_was() {
        let t = render(Path::new("/opt/bw-0.11/bin/bwrap")).unwrap();
        assert!(!t.contains("@BWRAP@"));
        assert_eq!(t.matches("/opt/bw-0.11/bin/bwrap").count(), 2);
        assert!(t.contains("profile dcjail-bwrap /opt/bw-0.11/bin/bwrap flags="));
    }

    #[test]
    fn paths_that_would_need_quoting_or_glob_are_refused() {
        for p in [
            "bwrap",
            "/usr/bin/bw rap",
            "/usr/bin/bw*",
            "/usr/{bin,sbin}/bwrap",
            "/usr/bin/\"bwrap",
            "/usr/bin/bwrap\n}",
            "/usr//bin/bwrap",
            "/usr/bin/../bin/bwrap",
            "/usr/bin/",
            "/usr/bin/bw,rap",
            "/usr/bin/bw^rap",
        ] {
            assert!(render(Path::new(p)).is_err(), "{p:?} accepted");
        }
    }
}
