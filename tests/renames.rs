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
