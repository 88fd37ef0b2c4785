//! Finding a bubblewrap dcjail may run: fixed absolute paths first, then
//! PATH entries no sandbox can write; never one the workspace could plant.
//! Also its version, and the distribution's install command for the fix.

use crate::plan::{Facts, Plan};
use std::path::{Path, PathBuf};

pub use super::BWRAP_PATHS;

/// Parses "bubblewrap X.Y.Z".
pub fn parse_version(text: &str) -> Option<(u32, u32, u32)> {
    let rest = text.split("bubblewrap ").nth(1)?;
    let word: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let mut it = word.split('.').map(|n| n.parse::<u32>().ok());
    Some((
        it.next()??,
        it.next().flatten().unwrap_or(0),
        it.next().flatten().unwrap_or(0),
    ))
}

/// An absolute path no sandbox can have planted: owned by root or by us
/// (`uid`, the caller's real user id), writable by nobody else, and outside
/// every writable root of the plan.
pub(super) fn trusted(p: &Path, plan: Option<&Plan>, uid: u32) -> bool {
    use std::os::unix::fs::MetadataExt;
    let (canon, meta) = match without_symlinks(p) {
        Some((c, m)) => (c, Some(m)),
        None => match std::fs::canonicalize(p) {
            Ok(c) => (c, None),
            Err(_) => return false,
        },
    };
    if let Some(plan) = plan {
        let inside = plan
            .fs
            .writable
            .iter()
            .filter(|r| r.as_path() != Path::new("/"))
            .chain([&plan.workspace, &plan.cwd])
            .chain(plan.worktree.iter())
            .any(|r| canon.starts_with(r));
        if inside {
            return false;
        }
    }
    let Some(m) = meta.or_else(|| std::fs::metadata(&canon).ok()) else {
        return false;
    };
    m.is_file()
        && (m.uid() == 0 || m.uid() == uid)
        && m.mode() & 0o022 == 0
        && m.mode() & 0o111 != 0
}

#[cfg(target_os = "linux")]
pub(super) use crate::backend::host::without_symlinks;

/// Elsewhere every path is resolved the slow way.
#[cfg(not(target_os = "linux"))]
pub(super) fn without_symlinks(_p: &Path) -> Option<(PathBuf, std::fs::Metadata)> {
    None
}

/// The distribution's install command for bubblewrap, from /etc/os-release.
pub fn install_hint() -> String {
    let text = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
    let ids: String = text
        .lines()
        .filter(|l| l.starts_with("ID=") || l.starts_with("ID_LIKE="))
        .collect::<Vec<_>>()
        .join(" ");
    let cmd = if ids.contains("debian") || ids.contains("ubuntu") {
        "sudo apt-get install bubblewrap"
    } else if ids.contains("fedora") || ids.contains("rhel") || ids.contains("centos") {
        "sudo dnf install bubblewrap"
    } else if ids.contains("arch") {
        "sudo pacman -S bubblewrap"
    } else if ids.contains("alpine") {
        "sudo apk add bubblewrap"
    } else if ids.contains("suse") {
        "sudo zypper install bubblewrap"
    } else {
        "install the bubblewrap package"
    };
    cmd.to_string()
}

/// Finds bwrap: the fixed list first, then the caller's PATH entries
/// (`facts.path`) that are absolute and outside every writable root.
pub fn find(facts: &Facts, plan: Option<&Plan>) -> Result<PathBuf, String> {
    for p in BWRAP_PATHS {
        let p = Path::new(p);
        if trusted(p, plan, facts.uid) {
            return Ok(p.to_path_buf());
        }
    }
    if let Some(path) = &facts.path {
        for dir in std::env::split_paths(path) {
            if !dir.is_absolute() {
                continue;
            }
            let c = dir.join("bwrap");
            if trusted(&c, plan, facts.uid) {
                return std::fs::canonicalize(&c).map_err(|e| e.to_string());
            }
        }
    }
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut untrusted: Vec<String> = Vec::new();
    for p in BWRAP_PATHS {
        let Ok(c) = std::fs::canonicalize(p) else {
            continue;
        };
        if !seen.contains(&c) {
            untrusted.extend(untrusted_because(&c, facts.uid));
            seen.push(c);
        }
    }
    if !untrusted.is_empty() {
        return Err(format!(
            "{NO_TRUSTED_BWRAP}: {}; dcjail runs only a bwrap owned by root or by the user running dcjail, writable by no one else, outside the writable roots",
            untrusted.join("; ")
        ));
    }
    Err(format!(
        "bubblewrap is not installed (no trusted bwrap in {} or on PATH); {}",
        BWRAP_PATHS.join(", "),
        install_hint()
    ))
}

/// How `find`'s refusal starts when a bwrap exists but is not trusted.
pub const NO_TRUSTED_BWRAP: &str = "bubblewrap is installed but not trusted";

/// Why an existing bwrap is not trusted (owner and mode), for the refusal:
/// inside a user namespace that does not map root, root's files belong to
/// the overflow uid, and "not installed" would send the user the wrong way.
fn untrusted_because(p: &Path, uid: u32) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(p).ok()?;
    let overflow = std::fs::read_to_string("/proc/sys/kernel/overflowuid")
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok());
    if (m.uid() == 0 || m.uid() == uid) && m.mode() & 0o022 == 0 {
        return Some(format!(
            "{} is inside a writable root of this policy",
            p.display()
        ));
    }
    let note = if Some(m.uid()) == overflow {
        " (the overflow uid: its owner is not mapped into this user namespace)"
    } else {
        ""
    };
    Some(format!(
        "{} is owned by uid {}{note}, mode {:o}",
        p.display(),
        m.uid(),
        m.mode() & 0o7777
    ))
}

/// bwrap's version, read from the string compiled into the binary (cheap:
/// no process), falling back to `bwrap --version`.
pub fn version(bwrap: &Path) -> Option<(u32, u32, u32)> {
    use std::io::Read;
    let mut data = Vec::new();
    if let Ok(f) = std::fs::File::open(bwrap) {
        let _ = f.take(16 << 20).read_to_end(&mut data);
    }
    let needle = b"bubblewrap ";
    if let Some(i) = data
        .windows(needle.len() + 1)
        .position(|w| w.starts_with(needle) && w[needle.len()].is_ascii_digit())
    {
        let end = (i + 32).min(data.len());
        if let Some(v) = parse_version(&String::from_utf8_lossy(&data[i..end])) {
            return Some(v);
        }
    }
    let out = std::process::Command::new(bwrap)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    parse_version(&String::from_utf8_lossy(&out.stdout))
}
