//! The paths a Codex `apply_patch` touches, read from the patch text: every
//! `Add File`, `Update File`, `Delete File` and `Move to` line. Pure. A
//! marker line this reader does not know makes the whole patch unreadable,
//! so a patch is never half-checked.

use std::path::PathBuf;

/// The markers a patch holds besides the file operations.
const FRAME: &[&str] = &["*** Begin Patch", "*** End Patch", "*** End of File"];

/// The file operations' markers, each followed by a path.
const OPS: &[&str] = &[
    "*** Add File:",
    "*** Update File:",
    "*** Delete File:",
    "*** Move to:",
];

/// Every path the patch names, in order; `Err` with the line that cannot be
/// read when a marker is unknown or names no path.
pub fn paths(patch: &str) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for line in patch.lines() {
        // Every marker starts with `*** `; a line of the file's text such
        // as `***bold***` is not one.
        let t = line.trim();
        if !t.starts_with("*** ") || FRAME.contains(&t) {
            continue;
        }
        let Some(rest) = OPS.iter().find_map(|op| t.strip_prefix(op)) else {
            return Err(format!("an unknown patch marker `{t}`"));
        };
        let path = rest.trim();
        if path.is_empty() {
            return Err(format!("`{t}` names no file"));
        }
        out.push(PathBuf::from(path));
    }
    Ok(out)
}

/// Whether a shell command runs `apply_patch` (`apply_patch <<'EOF'`, also
/// after `cd dir &&`), which Codex applies itself when the command text
/// starts that way: a simple command of the line starts with it.
pub fn through_shell(command: &str) -> bool {
    super::codex_rules::simple_commands(command)
        .iter()
        .any(|c| {
            c.first().is_some_and(|w| {
                let w = w.split("<<").next().unwrap_or(w);
                w == "apply_patch" || w == "applypatch"
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_names_its_path() {
        let p = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** Update File: src/b.rs\n*** Move to: ../c.rs\n@@\n-x\n+y\n*** Delete File: /etc/d\n*** End Patch\n";
        assert_eq!(
            paths(p).unwrap(),
            ["a.txt", "src/b.rs", "../c.rs", "/etc/d"].map(PathBuf::from)
        );
    }

    #[test]
    fn an_unknown_marker_or_an_empty_path_makes_the_patch_unreadable() {
        assert!(paths("*** Begin Patch\n*** Rename File: a\n*** End Patch").is_err());
        assert!(paths("*** Begin Patch\n*** Add File:   \n*** End Patch").is_err());
        assert!(paths("  *** Add File: x  ").unwrap() == [PathBuf::from("x")]);
        assert!(
            paths("*** Update File: a\n@@\n ***bold***\n+***x***\n").unwrap()
                == [PathBuf::from("a")]
        );
    }

    #[test]
    fn a_patch_typed_through_the_shell_is_recognised() {
        assert!(through_shell("apply_patch <<'EOF'\n*** Begin Patch\nEOF"));
        assert!(through_shell("cd sub && apply_patch <<'EOF'\nEOF"));
        assert!(!through_shell("echo apply_patches"));
        assert!(!through_shell("grep -rn apply_patch ."));
        assert!(through_shell("apply_patch<<'EOF'\nEOF"));
    }
}
