//! `dcjail setup apparmor`: the profile text held by goldens (regenerate
//! with `DCJAIL_BLESS=1 cargo test --test setup_apparmor`), the profile
//! recognised by the same reader that judges AppArmor for `auto`, and the
//! command's output and refusals on this machine. Installing for real needs
//! AppArmor, which this suite does not assume: `--install` is driven only
//! to where it refuses, and `src/setup/install.rs` tests the install itself
//! with a stand-in apparmor_parser.

#[cfg(target_os = "linux")]
#[path = "support/scratch.rs"]
mod scratch;

use dcjail::setup::render;
use std::path::{Path, PathBuf};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/apparmor")
}

/// (golden file, bwrap path): the distribution's bwrap, and one the
/// distribution's profile does not cover.
const GOLDENS: &[(&str, &str)] = &[
    ("usr-bin-bwrap.profile", "/usr/bin/bwrap"),
    ("usr-local-bin-bwrap.profile", "/usr/local/bin/bwrap"),
];

#[test]
fn setup_apparmor_output_matches_the_goldens() {
    let bless = std::env::var_os("DCJAIL_BLESS").is_some_and(|v| v == "1");
    let mut failures = Vec::new();
    for (file, bwrap) in GOLDENS {
        let text = render(Path::new(bwrap)).unwrap();
        let path = golden_dir().join(file);
        if bless {
            std::fs::create_dir_all(golden_dir()).unwrap();
            std::fs::write(&path, &text).unwrap();
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(g) if g == text => {}
            Ok(_) => failures.push(format!("{file} differs (DCJAIL_BLESS=1 to regenerate)")),
            Err(e) => failures.push(format!("{file}: {e}")),
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The two profiles of the file, as (header line, body lines).
fn blocks(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut cur: Option<(String, Vec<String>)> = None;
    for l in text.lines() {
        let t = l.trim();
        if t.starts_with('#') || t.is_empty() {
            continue;
        }
        if t.starts_with("profile ") {
            cur = Some((t.to_string(), Vec::new()));
        } else if t == "}" {
            out.extend(cur.take());
        } else if let Some((_, body)) = cur.as_mut() {
            body.push(t.to_string());
        }
    }
    out
}

#[test]
fn the_profile_grants_namespaces_to_that_one_bwrap_and_no_privilege_to_what_it_runs() {
    let text = render(Path::new("/usr/local/bin/bwrap")).unwrap();
    let b = blocks(&text);
    assert_eq!(b.len(), 2, "{b:?}");
    let (head, outer) = &b[0];
    assert!(
        head.starts_with("profile dcjail-bwrap /usr/local/bin/bwrap "),
        "{head}"
    );
    assert!(outer.contains(&"allow userns,".to_string()));
    // Everything bwrap executes is stacked with the child profile.
    let execs: Vec<&String> = outer.iter().filter(|r| r.contains("ix ")).collect();
    assert_eq!(
        execs,
        vec!["allow pix /** -> &dcjail-bwrap//&dcjail-bwrap-child,"]
    );
    let (head, child) = &b[1];
    // The child attaches to nothing by path: only bwrap's exec reaches it.
    assert_eq!(
        head,
        "profile dcjail-bwrap-child flags=(attach_disconnected,mediate_deleted) {"
    );
    assert!(child.contains(&"audit deny capability,".to_string()));
    for r in child {
        for word in [
            "userns",
            "mount",
            "pivot_root",
            "allow capability",
            "io_uring",
        ] {
            assert!(!r.contains(word), "the child profile allows `{r}`");
        }
        if r.contains("ix ") {
            assert_eq!(r, "allow pix /** -> &dcjail-bwrap-child,");
        }
    }
    // Nothing but the one path names a program.
    let attached: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with('/'))
        .collect();
    assert!(attached.is_empty(), "{attached:?}");
}

#[cfg(target_os = "linux")]
mod linux {
    use super::*;
    use dcjail::backend::obstacle::parse_profile;
    use std::process::Command;

    use crate::scratch::exe as bin;

    #[test]
    fn dcjails_own_reader_of_apparmor_profiles_sees_what_the_profile_grants() {
        for (_, bwrap) in GOLDENS {
            let f = parse_profile(&render(Path::new(bwrap)).unwrap());
            assert_eq!(f.attachments, vec![bwrap.to_string()]);
            assert!(f.userns);
        }
    }

    #[test]
    fn setup_apparmor_prints_the_profile_for_the_bwrap_dcjail_uses_here() {
        if !crate::scratch::need("bwrap") {
            return;
        }
        let bwrap = dcjail::backend::bwrap::find(&dcjail::plan::Facts::gather().unwrap(), None)
            .expect("a bwrap dcjail trusts");
        let bwrap = std::fs::canonicalize(bwrap).unwrap();
        let o = Command::new(bin())
            .args(["setup", "apparmor"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0));
        assert_eq!(
            String::from_utf8(o.stdout).unwrap(),
            render(&bwrap).unwrap()
        );
        // One note on stderr, never a second copy of anything on stdout.
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("dcjail: note: "), "{err}");
    }

    fn installed() -> bool {
        std::fs::symlink_metadata(dcjail::setup::PROFILE_FILE).is_ok()
    }

    #[test]
    fn install_as_an_unprivileged_user_is_refused_and_writes_nothing() {
        if !crate::scratch::root("switch to uid 65534") {
            return;
        }
        let before = installed();
        let o = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(bin())
            .args(["setup", "apparmor", "--install"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(125), "{o:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with("dcjail: usage-error: ") && err.contains("sudo"),
            "{err}"
        );
        assert!(o.stdout.is_empty());
        assert_eq!(installed(), before);
    }

    #[test]
    fn install_where_apparmor_is_off_says_so_and_writes_nothing() {
        let on = std::fs::read_to_string("/sys/module/apparmor/parameters/enabled")
            .map(|s| s.trim() == "Y")
            .unwrap_or(false);
        if !crate::scratch::root("try to install the profile") || !crate::scratch::need("bwrap") {
            return;
        }
        if on {
            // Not a missing prerequisite: with AppArmor on, this test would
            // install the profile, which it must not do to the machine.
            eprintln!("SKIPPED: AppArmor is on here; this case is for hosts without it");
            return;
        }
        assert!(!installed());
        let o = Command::new(bin())
            .args(["setup", "apparmor", "--install"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{o:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.starts_with("dcjail: setup apparmor: AppArmor is not enabled"),
            "{err}"
        );
        assert!(!installed());
    }
}
