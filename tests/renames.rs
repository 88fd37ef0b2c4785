//! A rename or hard link from one directory to another inside the
//! workspace works as without dcjail, on every backend and network mode.
//! Landlock denies such a move (EXDEV) in every layer that grants no
//! REFER, even a layer that handles no file access at all, so each domain
//! dcjail adds for another purpose (the watcher's signal scope, the
//! broker's abstract-socket scope) must grant it: cargo's rustc, which
//! moves its `.rmeta` out of a temporary directory, failed without that.
#![cfg(target_os = "linux")]

#[path = "support/scratch.rs"]
mod scratch;

use scratch::text;

const MOVES: &str = "import os\n\
os.makedirs('d/sub'); open('d/sub/f', 'w').write('x')\n\
os.rename('d/sub/f', 'd/g'); os.link('d/g', 'd/sub/h')\n\
os.makedirs('e/deep'); os.rename('e/deep', 'd/deep')\n\
print(sorted(os.listdir('d')), sorted(os.listdir('d/sub')))\n";

#[test]
fn moves_across_directories_work_as_without_dcjail() {
    for &nobody in scratch::users() {
        let tag = u8::from(nobody);
        let bare_ws = scratch::fresh(&format!("renames-bare-{tag}"));
        if nobody {
            std::os::unix::fs::chown(&bare_ws, Some(65534), Some(65534)).unwrap();
        }
        let bare = scratch::run_as(&bare_ws, nobody, &["/usr/bin/python3", "-c", MOVES]);
        assert!(bare.status.success(), "{}", text(&bare));
        for (be, net) in [
            ("bwrap", "none"),
            ("bwrap", "full"),
            ("auto", "full"),
            ("landlock", "none"),
            ("landlock", "full"),
        ] {
            let ws = scratch::fresh(&format!("renames-{be}-{net}-{tag}"));
            if nobody {
                std::os::unix::fs::chown(&ws, Some(65534), Some(65534)).unwrap();
            }
            let mut argv = vec![scratch::exe(), "--backend", be, "--net", net];
            argv.extend(["--sandbox-mode", "workspace-write"]);
            if be == "landlock" {
                argv.push("--no-protect-defaults");
            }
            argv.extend(["--", "/usr/bin/python3", "-c", MOVES]);
            let o = scratch::run_as(&ws, nobody, &argv);
            assert!(o.status.success(), "{be} {net}: {}", text(&o));
            assert_eq!(o.stdout, bare.stdout, "{be} {net}: {}", text(&o));
        }
    }
}

/// Rewrites `.git/config` the way git does (a lock file, then a rename
/// onto it): first with the same bytes, then with a hook path added.
const REWRITE: &str = "import os\n\
c = open('.git/config', 'rb').read()\n\
open('.git/config.lock', 'wb').write(c)\n\
try:\n    os.rename('.git/config.lock', '.git/config'); print('same: renamed')\n\
except OSError as e: print('same: refused', e.errno)\n\
open('.git/config.lock', 'wb').write(c + b'[core]\\n\\thooksPath = /tmp/evil\\n')\n\
try:\n    os.rename('.git/config.lock', '.git/config'); print('changed: renamed')\n\
except OSError as e: print('changed: refused', e.errno)\n\
print('lock left:', os.path.exists('.git/config.lock'))\n";

/// A repository (`ws`) and an empty home beside it (`home`), owned by the
/// user who runs the command.
fn repo(tag: &str, nobody: bool) -> std::path::PathBuf {
    let d = scratch::fresh(tag);
    let ws = d.join("ws");
    std::fs::create_dir_all(d.join("home")).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    let o = scratch::run_as(&ws, false, &["git", "init", "-q", "-b", "main", "."]);
    assert!(o.status.success(), "{}", text(&o));
    if nobody {
        let st = std::process::Command::new("chown")
            .args(["-R", "65534:65534"])
            .arg(&d)
            .status()
            .unwrap();
        assert!(st.success());
    }
    ws
}

/// `argv` in `ws` as the user, with the home beside it.
fn run_in(ws: &std::path::Path, nobody: bool, argv: &[&str]) -> std::process::Output {
    let mut c = scratch::command_as(ws, nobody, argv);
    c.env("HOME", ws.with_file_name("home"))
        .env("GIT_CONFIG_NOSYSTEM", "1");
    scratch::output_within(c, 60)
}

#[test]
fn a_rewrite_of_a_kept_config_with_the_same_bytes_succeeds_and_a_change_is_refused() {
    for &nobody in scratch::users() {
        let tag = u8::from(nobody);
        // Without dcjail both renames land: the second one plants a hook path.
        let bare = repo(&format!("renames-cfg-bare-{tag}"), nobody);
        let o = run_in(&bare, nobody, &["/usr/bin/python3", "-c", REWRITE]);
        assert_eq!(
            String::from_utf8_lossy(&o.stdout),
            "same: renamed\nchanged: renamed\nlock left: False\n",
            "control: {}",
            text(&o)
        );
        for be in ["bwrap", "auto"] {
            let ws = repo(&format!("renames-cfg-{be}-{tag}"), nobody);
            let before = std::fs::read(ws.join(".git/config")).unwrap();
            let argv = [
                scratch::exe(),
                "--backend",
                be,
                "--sandbox-mode",
                "workspace-write",
                "--",
                "/usr/bin/python3",
                "-c",
                REWRITE,
            ];
            let o = run_in(&ws, nobody, &argv);
            assert_eq!(
                String::from_utf8_lossy(&o.stdout),
                "same: renamed\nchanged: refused 16\nlock left: True\n",
                "{be}: {}",
                text(&o)
            );
            assert_eq!(
                std::fs::read(ws.join(".git/config")).unwrap(),
                before,
                "{be}"
            );
            scratch::remove(ws.parent().unwrap());
        }
        scratch::remove(bare.parent().unwrap());
    }
}

#[test]
fn git_branch_d_leaves_no_warning_whatever_the_git() {
    // git before 2.45 rewrites .git/config with the same bytes when it
    // deletes a branch (to drop a section that is not there); under dcjail
    // that rewrite met the kept config: "warning: Update of config-file
    // failed". Every git on this machine is tried (Debian's /usr/bin/git
    // is 2.39).
    let mut gits: Vec<String> = ["/usr/bin/git", "/usr/local/bin/git"]
        .iter()
        .filter(|g| std::path::Path::new(g).exists())
        .map(|g| g.to_string())
        .collect();
    gits.dedup();
    assert!(!gits.is_empty(), "no git");
    for git in &gits {
        for &nobody in scratch::users() {
            let ws = repo(&format!("renames-branch-{}", u8::from(nobody)), nobody);
            let script = format!(
                "{git} -c user.name=t -c user.email=t@e commit -q --allow-empty -m one && \
                 {git} branch side && {git} branch -d side"
            );
            let argv = [
                scratch::exe(),
                "--backend",
                "bwrap",
                "--sandbox-mode",
                "workspace-write",
                "--",
                "sh",
                "-c",
                &script,
            ];
            let o = run_in(&ws, nobody, &argv);
            assert!(o.status.success(), "{git}: {}", text(&o));
            assert!(
                !String::from_utf8_lossy(&o.stderr).contains("config"),
                "{git}: {}",
                text(&o)
            );
            scratch::remove(ws.parent().unwrap());
        }
    }
}
