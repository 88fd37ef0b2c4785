//! `explain`'s account of the glob walk (`describe`): what each glob
//! covered, what a backend covers later, and which globs matched nothing.
//! Reads a finished `Cover`; walks again only to tell a glob that matched
//! nothing from one whose matches another glob of its list already holds.

use super::{compile, expand, Cover, Covered};

/// At most this many matched paths per glob are listed by `describe`.
const SHOWN: usize = 1000;

/// `explain`'s account of the walk: whether it ran, where, at what cost,
/// and for each glob what it covered, with what a backend covers later.
/// `matched_nothing` lists the globs that matched no existing path at
/// launch (a typo, or a rule for files that are not there yet): said here
/// and in `--report`, not on the terminal, where a `**/.env` rule in a
/// project without one would repeat it before every command.
pub fn describe(cover: Option<&Cover>, backend: Option<&str>) -> serde_json::Value {
    use serde_json::json;
    let later = match backend {
        Some("bwrap") => "matches are found when dcjail starts: a file created later that matches a glob is not covered; a matched directory is masked (deny_read), bound read-only (deny_write) or re-opened (allow_read) whole, so files created inside it later are covered",
        Some("landlock") => "matches are found when dcjail starts: a file created later that matches a glob is not covered, except inside a matched deny_read directory, which stays unreadable whole; deny_write globs inside a writable root are refused, and so is a deny_read match inside one",
        _ => "",
    };
    let Some(c) = cover else {
        return json!({ "walked": false, "entries": 0, "globs": [] });
    };
    json!({
        "walked": true,
        "roots": c.roots.iter().map(|r| r.to_string_lossy()).collect::<Vec<_>>(),
        "entries": c.entries,
        "limit": c.limit,
        "globs": c.globs.iter().map(|g| json!({
            "list": g.list.key(),
            "glob": g.written,
            "pattern": g.pattern,
            "count": g.paths.len(),
            "matched": g.paths.iter().take(SHOWN).map(|p| p.to_string_lossy()).collect::<Vec<_>>(),
            "matched_truncated": g.paths.len() > SHOWN,
        })).collect::<Vec<_>>(),
        "matched_nothing": matched_nothing(c).iter().map(|g| json!({
            "list": g.list.key(),
            "glob": g.written,
        })).collect::<Vec<_>>(),
        "created_later": later,
        "skipped": {
            "unlisted": c.skipped.unlisted.iter().take(SHOWN).map(|p| p.to_string_lossy()).collect::<Vec<_>>(),
            "other_users_entries_in_world_writable_dirs": c.skipped.foreign,
        },
    })
}

/// The globs that matched no existing path at launch. The walk does not
/// descend into a directory another glob of the same list matched, so a
/// glob with no path of its own is walked again alone before it is listed
/// (only here, for `explain` and `--report`, never on a plain launch): one
/// whose matches all lie inside what the list already covers is not
/// "matching nothing". One that cannot be walked again within the bound
/// is left out rather than guessed at.
fn matched_nothing(c: &Cover) -> Vec<&Covered> {
    c.globs
        .iter()
        .enumerate()
        .filter(|(i, g)| {
            if !g.paths.is_empty() {
                return false;
            }
            let may_be_shadowed = c
                .globs
                .iter()
                .enumerate()
                .any(|(j, o)| j != *i && o.list == g.list && !o.paths.is_empty());
            if !may_be_shadowed {
                return true;
            }
            match compile(&g.pattern) {
                Ok(alone) => expand(&[&alone], &c.roots, c.limit).is_ok_and(|v| v.is_empty()),
                Err(_) => false,
            }
        })
        .map(|(_, g)| g)
        .collect()
}
