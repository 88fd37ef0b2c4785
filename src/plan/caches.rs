//! The command's own caches. A package cache is code a later run loads
//! without building it again (pip's wheels, cargo's registry sources with
//! their `build.rs`, npm's tarballs), so a sandboxed command never writes
//! the host's copy: the protected table keeps those read-only, and the
//! tools get a directory of their own per workspace instead, kept between
//! calls, through the variables they read.
//!
//! Owns: where that directory is and which variables point into it. Must
//! never: create anything (`exec::caches` makes the directory at launch,
//! without following a symlink) or touch the host's caches.

use std::path::{Path, PathBuf};

/// One tool's variable and the subdirectory of the private root it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Var {
    pub tool: &'static str,
    pub name: &'static str,
    pub sub: &'static str,
    /// The host's cache it replaces, relative to `$HOME`.
    pub replaces: &'static str,
    /// Set only when the host has no such cache: a store of unpacked
    /// sources (cargo's registry, go's modules) that builds read offline,
    /// where a cold one of its own would break `cargo build --offline`.
    /// The host's stays read-only then (the protected table).
    pub only_if_absent: bool,
}

const fn v(
    tool: &'static str,
    name: &'static str,
    sub: &'static str,
    replaces: &'static str,
) -> Var {
    Var {
        tool,
        name,
        sub,
        replaces,
        only_if_absent: false,
    }
}

const fn store(
    tool: &'static str,
    name: &'static str,
    sub: &'static str,
    replaces: &'static str,
) -> Var {
    Var {
        only_if_absent: true,
        ..v(tool, name, sub, replaces)
    }
}

/// The variables set, one tool each (go has two caches). `CARGO_HOME`
/// moves cargo's whole home: `cargo install` lands in the private `bin`,
/// on no one's PATH; `~/.cargo/config.toml` still applies to a project
/// under the home directory (cargo reads every parent's `.cargo`).
pub const VARS: &[Var] = &[
    v("pip", "PIP_CACHE_DIR", "pip", ".cache/pip"),
    v("npm", "npm_config_cache", "npm", ".npm"),
    store("cargo", "CARGO_HOME", "cargo", ".cargo/registry"),
    v("uv", "UV_CACHE_DIR", "uv", ".cache/uv"),
    v("yarn", "YARN_CACHE_FOLDER", "yarn", ".cache/yarn"),
    // pnpm 11 and later read `pnpm_config_*` (pnpm 10 reads
    // `npm_config_store_dir`, which npm itself then warns about on every
    // call, so it is not set). Without it, pnpm finds its home store
    // read-only and makes one inside the project's `node_modules`.
    v(
        "pnpm",
        "pnpm_config_store_dir",
        "pnpm-store",
        ".local/share/pnpm/store",
    ),
    v("pnpm", "pnpm_config_cache_dir", "pnpm", ".cache/pnpm"),
    v("go", "GOCACHE", "go-build", ".cache/go-build"),
    store("go", "GOMODCACHE", "go-mod", "go/pkg/mod"),
    // Python's user site (`pip install --user`, its `.pth` files): a base
    // of its own, which the command's python loads and the host's never.
    v("python", "PYTHONUSERBASE", "python-user", ".local"),
];

/// Where the private caches of one workspace live.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Private {
    /// The home directory it is made in (canonical): everything from here
    /// down is created without following a symlink and must be the
    /// invoking user's.
    pub home: PathBuf,
    /// `~/.cache/dcjail/<name>-<hash>`: a writable root of the run.
    pub root: PathBuf,
}

impl Private {
    /// The private root for `workspace` (canonical) under `home`
    /// (canonical). `None` for a home of `/`: no user's own place.
    pub fn for_workspace(home: &Path, workspace: &Path) -> Option<Private> {
        if home == Path::new("/") || !home.is_absolute() {
            return None;
        }
        Some(Private {
            home: home.to_path_buf(),
            root: home
                .join(".cache")
                .join("dcjail")
                .join(leaf_name(workspace)),
        })
    }

    /// The variables and the directories they name. `host_has` says
    /// whether the host's cache (a path under the home directory) exists;
    /// `caller_set` whether the caller set the variable: a store of sources
    /// the caller named is read as it is, like the default one.
    pub fn env(
        &self,
        host_has: impl Fn(&Path) -> bool,
        caller_set: impl Fn(&str) -> bool,
    ) -> Vec<(&'static str, PathBuf)> {
        VARS.iter()
            .filter(|v| {
                !v.only_if_absent || !(caller_set(v.name) || host_has(&self.home.join(v.replaces)))
            })
            .map(|v| (v.name, self.root.join(v.sub)))
            .collect()
    }
}

/// `<last component>-<16 hex digits of the path's FNV-1a hash>`: readable
/// in `ls`, distinct per workspace path, the same from one release to the
/// next (std's hasher promises no stable output).
fn leaf_name(workspace: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in workspace.as_os_str().as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    let name: String = workspace
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .take(32)
        .collect();
    let name = name.trim_start_matches('.');
    if name.is_empty() {
        format!("root-{h:016x}")
    } else {
        format!("{name}-{h:016x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_workspace_gets_its_own_directory_named_for_people() {
        let home = Path::new("/home/u");
        let a = Private::for_workspace(home, Path::new("/home/u/src/app")).unwrap();
        let b = Private::for_workspace(home, Path::new("/home/v/src/app")).unwrap();
        assert!(a.root.starts_with("/home/u/.cache/dcjail"));
        assert_ne!(a.root, b.root);
        let leaf = a.root.file_name().unwrap().to_string_lossy().into_owned();
        assert!(leaf.starts_with("app-") && leaf.len() == 4 + 16, "{leaf}");
        let odd = Private::for_workspace(home, Path::new("/x/..\n;rm -rf")).unwrap();
        let leaf = odd.root.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            leaf.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)),
            "{leaf}"
        );
        assert!(Private::for_workspace(Path::new("/"), Path::new("/w")).is_none());
    }

    #[test]
    fn the_variables_point_inside_the_private_root() {
        let p = Private::for_workspace(Path::new("/h"), Path::new("/w")).unwrap();
        for (name, dir) in p.env(|_| false, |_| false) {
            assert!(dir.starts_with(&p.root), "{name}");
        }
        // A warm store of sources on the host is read, not replaced.
        let names = |v: Vec<(&'static str, PathBuf)>| -> Vec<&'static str> {
            v.into_iter().map(|(n, _)| n).collect()
        };
        let warm = names(p.env(|h| h.ends_with(".cargo/registry"), |_| false));
        assert!(!warm.contains(&"CARGO_HOME") && warm.contains(&"PIP_CACHE_DIR"));
        let named = names(p.env(|_| false, |k| k == "CARGO_HOME"));
        assert!(!named.contains(&"CARGO_HOME") && named.contains(&"GOMODCACHE"));
    }
}
