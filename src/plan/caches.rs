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

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// When a variable is set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    /// Always (a cache the tool fills again as it needs).
    Always,
    /// Unless the caller set it: cargo's home, which the launcher feeds
    /// from the host's (`exec::cargo_home`: links to its downloads and
    /// unpacked sources, copies of its index), so `cargo build --offline`
    /// of what the host holds still works. A home the caller named is
    /// read as it is (read-only where the protected table holds it).
    UnlessCallerSet,
    /// go's module store: decided by `Go` (its own store, fed from the
    /// host's download cache through `GOPROXY`).
    GoModules,
}

/// One tool's variable and the subdirectory of the private root it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Var {
    pub tool: &'static str,
    pub name: &'static str,
    pub sub: &'static str,
    /// The host's cache it replaces, relative to `$HOME`.
    pub replaces: &'static str,
    pub when: When,
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
        when: When::Always,
    }
}

/// The variables set, one tool each (go has two caches). `CARGO_HOME`
/// moves cargo's whole home: `cargo install` lands in the private `bin`,
/// on no one's PATH; the host's `~/.cargo/config.toml` (and credentials)
/// still apply through the links the launcher makes.
pub const VARS: &[Var] = &[
    v("pip", "PIP_CACHE_DIR", "pip", ".cache/pip"),
    v("npm", "npm_config_cache", "npm", ".npm"),
    Var {
        when: When::UnlessCallerSet,
        ..v("cargo", "CARGO_HOME", "cargo", ".cargo/registry")
    },
    v("uv", "UV_CACHE_DIR", "uv", ".cache/uv"),
    v("yarn", "YARN_CACHE_FOLDER", "yarn", ".cache/yarn"),
    // pnpm's home: pnpm 10 reads no `pnpm_config_*` (and `npm_config_*`
    // would make npm warn about an unknown setting on every call), but its
    // default store is `$PNPM_HOME/store`, used when a file of the project
    // can be hard-linked there; its home store read-only, it would make one
    // inside the project. The caller's `PNPM_HOME` is replaced too: it is
    // the host's store and global installs, read-only here. What else pnpm
    // keeps in its home follows (global packages, `pnpm env`'s node,
    // pnpm 10's copies of the pnpm a `packageManager` field names); its bin
    // directory is on no PATH, so `pnpm add -g` refuses.
    v("pnpm", "PNPM_HOME", "pnpm-home", ".local/share/pnpm"),
    // pnpm 11 and later read `pnpm_config_*`: their store named outright,
    // beside pnpm 10's in the same directory (`v10`, `v11`), so a link
    // that fails makes pnpm copy, never pick a store in the project.
    v(
        "pnpm",
        "pnpm_config_store_dir",
        "pnpm-home/store",
        ".local/share/pnpm/store",
    ),
    v("pnpm", "pnpm_config_cache_dir", "pnpm", ".cache/pnpm"),
    v("go", "GOCACHE", "go-build", ".cache/go-build"),
    Var {
        when: When::GoModules,
        ..v("go", "GOMODCACHE", "go-mod", "go/pkg/mod")
    },
    // Python's user site (`pip install --user`, its `.pth` files): a base
    // of its own, which later calls in the workspace load and the host's
    // python never.
    v("python", "PYTHONUSERBASE", "python-user", ".local"),
];

/// go's proxy list when neither `GOPROXY` nor go's env file names one.
pub const GO_DEFAULT_PROXY: &str = "https://proxy.golang.org,direct";

/// What go would use outside dcjail, as the launcher read it (the caller's
/// environment first, then go's env file, as go reads them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Go {
    /// The host's module store: `GOMODCACHE` from go's env file, else the
    /// first `GOPATH` entry's `pkg/mod`, else `~/go/pkg/mod`.
    pub store: PathBuf,
    /// Whether that store exists.
    pub has_store: bool,
    /// Whether its `cache/download` is a directory (a proxy go can read).
    pub has_download: bool,
    /// `GOPROXY` as the caller or go's env file set it; `None`: go's default.
    pub proxy: Option<String>,
    /// `GONOPROXY` or `GOPRIVATE` is set: modules go fetches from their
    /// origin, never through a proxy, so no proxy can feed them.
    pub private: bool,
}

impl Go {
    /// Reads go's settings: `var` gives the caller's variable (empty is
    /// unset, as go takes it), `file` go's env file (`parse_env_file`),
    /// `is_dir` what exists.
    pub fn read(
        home: &Path,
        var: impl Fn(&str) -> Option<String>,
        file: &BTreeMap<String, String>,
        is_dir: impl Fn(&Path) -> bool,
    ) -> Go {
        let get = |k: &str| {
            var(k)
                .filter(|v| !v.is_empty())
                .or_else(|| file.get(k).filter(|v| !v.is_empty()).cloned())
        };
        let gopath = get("GOPATH")
            .and_then(|p| p.split(':').next().map(PathBuf::from))
            .filter(|p| p.is_absolute())
            .unwrap_or_else(|| home.join("go"));
        let store = file
            .get("GOMODCACHE")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .unwrap_or_else(|| gopath.join("pkg").join("mod"));
        Go {
            has_store: is_dir(&store),
            has_download: is_dir(&store.join("cache").join("download")),
            store,
            proxy: get("GOPROXY"),
            private: get("GONOPROXY").is_some() || get("GOPRIVATE").is_some(),
        }
    }

    /// The host's store when none is given: `~/go/pkg/mod`, absent.
    pub fn absent(home: &Path) -> Go {
        Go::read(home, |_| None, &BTreeMap::new(), |_| false)
    }

    /// Whether the proxy list turns downloads off (`GOPROXY=off`).
    fn off(&self) -> bool {
        self.proxy.as_deref().is_some_and(|p| {
            p.split([',', '|'])
                .next()
                .is_some_and(|first| first.trim() == "off")
        })
    }

    /// Whether go gets the workspace's own module store: not when the host
    /// has a store that it cannot feed from (downloads off, or private
    /// modules fetched only from their origin): then the host's is read,
    /// read-only, so what it holds still builds.
    fn own_store(&self) -> bool {
        !self.has_store || !(self.off() || self.private)
    }

    /// `GOPROXY` for the own store: the host's download cache first, read
    /// as a `file://` proxy (go goes on to the next on a module it lacks),
    /// then the list the caller would have had.
    fn proxy_list(&self) -> Option<String> {
        if !(self.has_store && self.has_download) || self.off() || self.private {
            return None;
        }
        let rest = self.proxy.as_deref().unwrap_or(GO_DEFAULT_PROXY);
        Some(format!(
            "{},{rest}",
            file_url(&self.store.join("cache").join("download"))
        ))
    }
}

/// go's env file (`GOENV`, `go env -w`): `KEY=VALUE` lines, a key starting
/// with a capital letter, the last line of a key winning; anything else is
/// skipped, as go skips it.
pub fn parse_env_file(text: &str) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for line in text.lines() {
        let Some((k, val)) = line.split_once('=') else {
            continue;
        };
        if !k.starts_with(|c: char| c.is_ascii_uppercase()) {
            continue;
        }
        m.insert(k.to_string(), val.to_string());
    }
    m
}

/// Where go's env file is: `GOENV` (`off`: none), else
/// `$XDG_CONFIG_HOME/go/env`, else `~/.config/go/env`.
pub fn env_file(home: &Path, var: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let set = |k: &str| var(k).filter(|v| !v.is_empty());
    if let Some(g) = set("GOENV") {
        return (g != "off").then(|| PathBuf::from(g));
    }
    let config = set("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .unwrap_or_else(|| home.join(".config"));
    Some(config.join("go").join("env"))
}

/// A `file://` URL for an absolute path: every byte but letters, digits,
/// `-._~/` percent-encoded (a `,` or `|` would split go's list).
fn file_url(p: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut s = String::from("file://");
    for &b in p.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            s.push(char::from(b));
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}

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

    /// The variables and their values. `caller_set` says whether the
    /// caller set the variable: a store of sources the caller named is
    /// read as it is; `go` what go would use outside dcjail (`GOPROXY` is
    /// set with go's own store).
    pub fn env(&self, caller_set: impl Fn(&str) -> bool, go: &Go) -> Vec<(&'static str, OsString)> {
        let mut out = Vec::new();
        for v in VARS {
            let set = match v.when {
                When::Always => true,
                When::UnlessCallerSet => !caller_set(v.name),
                When::GoModules => !caller_set(v.name) && go.own_store(),
            };
            if !set {
                continue;
            }
            out.push((v.name, self.root.join(v.sub).into_os_string()));
            if v.when == When::GoModules {
                if let Some(p) = go.proxy_list() {
                    out.push(("GOPROXY", p.into()));
                }
            }
        }
        out
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
        let cold = Go::absent(&p.home);
        for (name, dir) in p.env(|_| false, &cold) {
            assert!(Path::new(&dir).starts_with(&p.root), "{name}");
        }
        // cargo's home is the own one unless the caller named one.
        let names = |v: Vec<(&'static str, OsString)>| -> Vec<&'static str> {
            v.into_iter().map(|(n, _)| n).collect()
        };
        let own = names(p.env(|_| false, &cold));
        assert!(own.contains(&"CARGO_HOME") && own.contains(&"PIP_CACHE_DIR"));
        let named = names(p.env(|k| k == "CARGO_HOME", &cold));
        assert!(!named.contains(&"CARGO_HOME") && named.contains(&"GOMODCACHE"));
        assert!(
            !named.contains(&"GOPROXY"),
            "no host store: nothing to feed from"
        );
    }

    #[test]
    fn pnpm_10_and_11_get_one_home_of_their_own_whatever_the_caller_set() {
        let p = Private::for_workspace(Path::new("/h"), Path::new("/w")).unwrap();
        let cold = Go::absent(&p.home);
        for caller in [false, true] {
            let e = p.env(|k| caller && k == "PNPM_HOME", &cold);
            let home = p.root.join("pnpm-home");
            assert_eq!(val(&e, "PNPM_HOME").as_deref(), home.to_str());
            assert_eq!(
                val(&e, "pnpm_config_store_dir").as_deref(),
                home.join("store").to_str()
            );
        }
    }

    fn go_with(file: &str, vars: &[(&str, &str)], dirs: &[&str]) -> Go {
        let f = parse_env_file(file);
        Go::read(
            Path::new("/h"),
            |k| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            },
            &f,
            |p| dirs.iter().any(|d| Path::new(d) == p),
        )
    }

    fn val(v: &[(&'static str, OsString)], k: &str) -> Option<String> {
        v.iter()
            .find(|(n, _)| *n == k)
            .map(|(_, x)| x.to_string_lossy().into_owned())
    }

    #[test]
    fn go_gets_its_own_store_fed_from_the_hosts_download_cache() {
        let p = Private::for_workspace(Path::new("/h"), Path::new("/w")).unwrap();
        let warm = ["/h/go/pkg/mod", "/h/go/pkg/mod/cache/download"];
        let e = p.env(|_| false, &go_with("", &[], &warm));
        assert_eq!(
            val(&e, "GOMODCACHE").as_deref(),
            Some(p.root.join("go-mod").to_str().unwrap())
        );
        assert_eq!(
            val(&e, "GOPROXY").as_deref(),
            Some("file:///h/go/pkg/mod/cache/download,https://proxy.golang.org,direct")
        );
        // The caller's list, else the env file's, follows the host's cache.
        let g = go_with("GOPROXY=https://file.example\n", &[], &warm);
        let e = p.env(|_| false, &g);
        assert!(val(&e, "GOPROXY")
            .unwrap()
            .ends_with(",https://file.example"));
        let g = go_with(
            "GOPROXY=https://file.example\n",
            &[("GOPROXY", "https://corp.example|direct")],
            &warm,
        );
        let e = p.env(|_| false, &g);
        assert!(val(&e, "GOPROXY")
            .unwrap()
            .ends_with(",https://corp.example|direct"));
        // A store without a download cache: the own store, no proxy set.
        let e = p.env(|_| false, &go_with("", &[], &warm[..1]));
        assert!(val(&e, "GOMODCACHE").is_some() && val(&e, "GOPROXY").is_none());
        // No host store: the own store, nothing to feed from.
        let e = p.env(|_| false, &go_with("", &[], &[]));
        assert!(val(&e, "GOMODCACHE").is_some() && val(&e, "GOPROXY").is_none());
        // A store the caller named is read as it is.
        let e = p.env(|k| k == "GOMODCACHE", &go_with("", &[], &warm));
        assert!(val(&e, "GOMODCACHE").is_none() && val(&e, "GOPROXY").is_none());
    }

    #[test]
    fn go_reads_the_hosts_store_where_no_proxy_can_feed_it() {
        let p = Private::for_workspace(Path::new("/h"), Path::new("/w")).unwrap();
        let warm = ["/h/go/pkg/mod", "/h/go/pkg/mod/cache/download"];
        for g in [
            go_with("", &[("GOPROXY", "off")], &warm),
            go_with("GOPROXY=off\n", &[], &warm),
            go_with("", &[("GOPRIVATE", "corp.example")], &warm),
            go_with("GONOPROXY=corp.example\n", &[], &warm),
        ] {
            let e = p.env(|_| false, &g);
            assert!(val(&e, "GOMODCACHE").is_none(), "{g:?}");
            assert!(val(&e, "GOPROXY").is_none(), "{g:?}");
            assert!(val(&e, "GOCACHE").is_some());
        }
        // Without a host store, the own one even then (as before).
        let g = go_with("", &[("GOPROXY", "off")], &[]);
        assert!(val(&p.env(|_| false, &g), "GOMODCACHE").is_some());
    }

    #[test]
    fn go_finds_the_hosts_store_and_env_file_as_go_does() {
        let g = go_with("GOPATH=/g\n", &[], &["/g/pkg/mod"]);
        assert_eq!(g.store, Path::new("/g/pkg/mod"));
        assert!(g.has_store);
        let g = go_with("GOPATH=/g\n", &[("GOPATH", "/c:/d")], &[]);
        assert_eq!(g.store, Path::new("/c/pkg/mod"));
        let g = go_with("GOMODCACHE=/m\nGOPATH=/g\n", &[], &[]);
        assert_eq!(g.store, Path::new("/m"));
        let f = parse_env_file("# c\nlower=x\nGOPROXY=a\nnoequals\nGOPROXY=b,c\n");
        assert_eq!(f.len(), 1);
        assert_eq!(f.get("GOPROXY").map(String::as_str), Some("b,c"));
        let none = |_: &str| None;
        assert_eq!(
            env_file(Path::new("/h"), none),
            Some(PathBuf::from("/h/.config/go/env"))
        );
        let xdg = |k: &str| (k == "XDG_CONFIG_HOME").then(|| "/x".to_string());
        assert_eq!(
            env_file(Path::new("/h"), xdg),
            Some(PathBuf::from("/x/go/env"))
        );
        let off = |k: &str| (k == "GOENV").then(|| "off".to_string());
        assert_eq!(env_file(Path::new("/h"), off), None);
        assert_eq!(
            file_url(Path::new("/a b/c,d|e/%")),
            "file:///a%20b/c%2Cd%7Ce/%25"
        );
    }
}
