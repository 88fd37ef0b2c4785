//! `setup apparmor` on Linux: which bwrap, whether a profile is needed, and
//! the install (checked by apparmor_parser, written atomically, loaded).

use super::{render, PROFILE_FILE};
use crate::backend::host::{paths, Probe};
use crate::backend::obstacle::{self, AppArmor};
use crate::error::{one_line, Error, Failure, Refusal};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where distributions install apparmor_parser; run by absolute path only.
const PARSERS: &[&str] = &["/usr/sbin/apparmor_parser", "/sbin/apparmor_parser"];
/// The policy ABI the profile names.
const ABI_FILE: &str = "/etc/apparmor.d/abi/4.0";

/// A failure of the install after checks passed: exit 1, one line.
fn failed(m: impl Into<String>) -> Failure {
    Failure::Tool {
        who: "setup apparmor",
        message: m.into(),
    }
}

pub fn apparmor(install: bool, host: &dyn Probe) -> i32 {
    crate::error::finish(apparmor_steps(install, host))
}

fn apparmor_steps(install: bool, host: &dyn Probe) -> Result<(), Failure> {
    let bwrap = match host.bwrap() {
        Ok(b) => host.canonical(&b).unwrap_or(b),
        Err(e) => return Err(Error::NoBwrap(e.to_string()).into()),
    };
    let text = render(&bwrap)?;
    let state = obstacle::apparmor(host, &bwrap);
    if !install {
        print!("{text}");
        let note = match &state {
            AppArmor::NotRestricted => "AppArmor does not restrict user namespaces on this machine: this bwrap needs no profile here".to_string(),
            AppArmor::Covered { file } => format!(
                "{}/{file} already lets {} create user namespaces",
                paths::APPARMOR_DIR,
                bwrap.display()
            ),
            AppArmor::Uncovered { .. } => {
                "to install and load it: sudo dcjail setup apparmor --install".to_string()
            }
        };
        eprintln!("dcjail: note: {}", one_line(&note));
        return Ok(());
    }
    if host.euid() != 0 {
        return Err(Refusal::usage(
            "`setup apparmor --install` writes /etc/apparmor.d and loads a profile, so it runs as root: sudo dcjail setup apparmor --install",
        )
        .into());
    }
    root_controlled(&bwrap)?;
    if host
        .read(paths::APPARMOR_ENABLED)
        .map(|s| s.trim().to_string())
        .as_deref()
        != Some("Y")
    {
        return Err(failed(
            "AppArmor is not enabled in this kernel: nothing restricts bwrap's user namespaces, and there is nothing to install",
        ));
    }
    if let AppArmor::Covered { file } = &state {
        if file != obstacle::DCJAIL_PROFILE {
            println!(
                "{}/{file} already lets {} create user namespaces: nothing to install",
                paths::APPARMOR_DIR,
                bwrap.display()
            );
            return Ok(());
        }
    }
    let Some(parser) = PARSERS
        .iter()
        .map(Path::new)
        .find(|p| root_controlled(p).is_ok())
    else {
        return Err(failed(
            "apparmor_parser is not installed (sudo apt-get install apparmor)",
        ));
    };
    if !host.exists(ABI_FILE) {
        return Err(failed(format!(
            "{ABI_FILE} is missing: the profile needs AppArmor 4 (Ubuntu 24.04 and later)"
        )));
    }
    install_into(Path::new(PROFILE_FILE), parser, &text).map_err(|e| failed(e.to_string()))?;
    println!(
        "installed {PROFILE_FILE} and loaded it: {} may now create user namespaces; check with `dcjail doctor`, as yourself",
        bwrap.display()
    );
    Ok(())
}

/// What went wrong in writing and loading the profile.
#[derive(Debug)]
pub enum InstallError {
    /// apparmor_parser refused the profile text (nothing was written).
    Refused(String),
    /// The target has no directory or no file name.
    BadTarget(PathBuf),
    /// The profile file could not be created, written or renamed in place.
    Write(String),
    /// The kernel refused the written profile (the file was removed again).
    Load { target: PathBuf, why: String },
}

impl std::fmt::Display for InstallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InstallError::Refused(e) => write!(f, "apparmor_parser refused the profile: {e}"),
            InstallError::BadTarget(t) => {
                write!(
                    f,
                    "no directory or file name for the profile {}",
                    t.display()
                )
            }
            InstallError::Write(e) => f.write_str(e),
            InstallError::Load { target, why } => write!(
                f,
                "apparmor_parser could not load {}: {why}; the file was removed again",
                target.display()
            ),
        }
    }
}

/// Checks `text` with `parser`, writes it to `target` (a new file renamed
/// over the old one, mode 0644), and loads it. A profile the parser refuses
/// is never written; one the kernel then refuses is removed again, so that
/// nothing is left that would fail at the next boot.
pub fn install_into(target: &Path, parser: &Path, text: &str) -> Result<(), InstallError> {
    run_parser(parser, &["-Q", "-K", "-T"], Some(text)).map_err(InstallError::Refused)?;
    let bad = || InstallError::BadTarget(target.to_path_buf());
    let dir = target.parent().ok_or_else(bad)?;
    let name = target
        .file_name()
        .ok_or_else(bad)?
        .to_string_lossy()
        .into_owned();
    let tmp = dir.join(format!(".{name}.dcjail-{}", std::process::id()));
    let written = write_new(&tmp, text).and_then(|()| {
        std::fs::rename(&tmp, target).map_err(|e| {
            format!(
                "cannot rename {} to {}: {e}",
                tmp.display(),
                target.display()
            )
        })
    });
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(InstallError::Write(e));
    }
    let target_s = target.to_string_lossy().into_owned();
    if let Err(e) = run_parser(parser, &["-r", "-W", &target_s], None) {
        let _ = std::fs::remove_file(target);
        return Err(InstallError::Load {
            target: target.to_path_buf(),
            why: e,
        });
    }
    Ok(())
}

fn write_new(path: &Path, text: &str) -> Result<(), String> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    f.write_all(text.as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn run_parser(parser: &Path, args: &[&str], stdin: Option<&str>) -> Result<(), String> {
    use std::process::{Command, Stdio};
    let mut c = Command::new(parser);
    c.args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = c
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", parser.display()))?;
    if let (Some(text), Some(mut input)) = (stdin, child.stdin.take()) {
        // A parser that stops reading early reports why on stderr.
        let _ = input.write_all(text.as_bytes());
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("cannot run {}: {e}", parser.display()))?;
    if out.status.success() {
        Ok(())
    } else {
        let said = String::from_utf8_lossy(&out.stderr).trim().to_string();
        Err(if said.is_empty() {
            format!("it exited with {}", out.status)
        } else {
            said
        })
    }
}

/// `p` and every directory above it belong to root and are writable by
/// no one else: otherwise whoever could replace the program would get what
/// the profile grants it.
pub fn root_controlled(p: &Path) -> Result<(), Error> {
    use std::os::unix::fs::MetadataExt;
    let mut at: Option<PathBuf> = Some(p.to_path_buf());
    while let Some(cur) = at {
        let m = std::fs::symlink_metadata(&cur).map_err(|e| Error::Inspect {
            path: cur.clone(),
            why: e.to_string(),
        })?;
        if m.file_type().is_symlink() || m.uid() != 0 || m.mode() & 0o022 != 0 {
            return Err(Error::NotRootControlled {
                detail: format!(
                    "{}owner uid {}, mode {:o}",
                    if m.file_type().is_symlink() {
                        "a symlink, "
                    } else {
                        ""
                    },
                    m.uid(),
                    m.mode() & 0o7777
                ),
                path: cur,
                what: p.to_path_buf(),
            });
        }
        at = cur.parent().map(Path::to_path_buf);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::current_dir()
            .unwrap()
            .join("target")
            .join(format!("setup-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// A stand-in for apparmor_parser: refuses the check (`-Q`) or the
    /// load (`-r`) when told to, and logs its arguments.
    fn fake_parser(dir: &Path, refuse: &str) -> PathBuf {
        let p = dir.join("parser");
        std::fs::write(
            &p,
            format!(
                "#!/bin/sh\necho \"$@\" >> '{}/log'\ncase \"$1\" in {refuse}) echo 'no: bad rule' >&2; exit 1;; esac\ncat >/dev/null\nexit 0\n",
                dir.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    #[test]
    fn a_profile_the_parser_refuses_is_never_written() {
        let d = scratch("refused");
        let parser = fake_parser(&d, "-Q");
        let target = d.join("dcjail-bwrap");
        let e = install_into(&target, &parser, "profile x {}\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("refused the profile") && e.contains("no: bad rule"),
            "{e}"
        );
        assert!(!target.exists());
        assert_eq!(
            std::fs::read_dir(&d).unwrap().count(),
            2,
            "only parser and log"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_profile_the_kernel_refuses_is_removed_again() {
        let d = scratch("unloaded");
        let parser = fake_parser(&d, "-r");
        let target = d.join("dcjail-bwrap");
        let e = install_into(&target, &parser, "profile x {}\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("could not load") && e.contains("removed again"),
            "{e}"
        );
        assert!(!target.exists());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn an_accepted_profile_is_written_whole_and_loaded() {
        let d = scratch("ok");
        let parser = fake_parser(&d, "--none");
        let target = d.join("dcjail-bwrap");
        // An old file (or a symlink planted there) is replaced, not followed.
        std::os::unix::fs::symlink("/etc/hostname", &target).unwrap();
        install_into(&target, &parser, "profile x {}\n").unwrap();
        let m = std::fs::symlink_metadata(&target).unwrap();
        assert!(m.is_file());
        assert_eq!(m.permissions().mode() & 0o777, 0o644);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "profile x {}\n");
        let log = std::fs::read_to_string(d.join("log")).unwrap();
        assert_eq!(
            log,
            format!("-Q -K -T\n-r -W {}\n", target.display()),
            "checked first, then loaded"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn only_a_program_only_root_can_replace_gets_a_profile() {
        assert!(root_controlled(Path::new("/usr/bin/env")).is_ok());
        // /tmp is writable by everyone: anything under it could be swapped.
        let e = root_controlled(Path::new("/tmp")).unwrap_err().to_string();
        assert!(e.contains("/tmp") && e.contains("mode 1777"), "{e}");
        let d = scratch("perm");
        let f = d.join("bwrap");
        std::fs::write(&f, "").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o775)).unwrap();
        assert!(root_controlled(&f).is_err());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
