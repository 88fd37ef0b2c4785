//! The pages a user reads hold together: every relative link in README.md,
//! SECURITY.md, CONTRIBUTING.md, CHANGELOG.md and docs/*.md names a file
//! that exists and, after `#`, a heading of that file (as GitHub spells its
//! anchor); the README stays a front door that leads to every page.

use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The Markdown pages users read, relative to the checkout.
fn pages() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = [
        "README.md",
        "SECURITY.md",
        "CONTRIBUTING.md",
        "CHANGELOG.md",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .map(|p| p.strip_prefix(root()).unwrap().to_path_buf())
        .collect();
    docs.sort();
    out.extend(docs);
    out
}

/// The text outside fenced code blocks (a `](` in a code sample is no link).
fn prose(text: &str) -> String {
    let mut fenced = false;
    let mut out = String::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// GitHub's anchor for a heading: lower case, punctuation but `-` and `_`
/// dropped, spaces as `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .collect::<String>()
        .replace(' ', "-")
}

fn anchors(text: &str) -> Vec<String> {
    prose(text)
        .lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| anchor(l.trim_start_matches('#')))
        .collect()
}

/// The targets of the inline links `[text](target)` of a page.
fn links(text: &str) -> Vec<String> {
    let text = prose(text);
    let mut out = Vec::new();
    let mut rest = text.as_str();
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        if let Some(end) = rest.find(')') {
            out.push(rest[..end].to_string());
        }
    }
    out
}

#[test]
fn the_anchor_of_a_heading_is_githubs() {
    assert_eq!(
        anchor(" Backends: what is enforced, and where"),
        "backends-what-is-enforced-and-where"
    );
    assert_eq!(anchor("`dcjail doctor --json`"), "dcjail-doctor---json");
    assert_eq!(
        anchor("Seatbelt (macOS): what is and is not verified"),
        "seatbelt-macos-what-is-and-is-not-verified"
    );
    assert_eq!(
        links("a [b](c.md#d)\n```\n[no](link.md)\n```\n[e](f)"),
        ["c.md#d", "f"].map(String::from),
        "links are read outside code blocks only"
    );
}

#[test]
fn every_relative_link_in_the_docs_resolves() {
    let mut checked = 0;
    let mut broken = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(root().join(&page))
            .unwrap_or_else(|e| panic!("{}: {e}", page.display()));
        for target in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, frag) = target.split_once('#').unwrap_or((&target, ""));
            let file = if path.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(path)
            };
            let Ok(linked) = std::fs::read_to_string(root().join(&file)) else {
                if !root().join(&file).exists() {
                    broken.push(format!("{}: {target}: no such file", page.display()));
                }
                continue;
            };
            if !frag.is_empty() && !anchors(&linked).iter().any(|a| a == frag) {
                broken.push(format!(
                    "{}: {target}: no heading with that anchor",
                    page.display()
                ));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(
        checked > 40,
        "only {checked} links found: is the reader right?"
    );
}

#[test]
fn the_readme_is_a_front_door_to_every_page() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(
        (8_000..=16_000).contains(&readme.len()),
        "README.md is {} bytes: the guide belongs in docs/",
        readme.len()
    );
    let linked = links(&readme);
    for page in pages().iter().skip(1) {
        let name = page.to_string_lossy();
        assert!(
            linked.iter().any(|l| l == name.as_ref()),
            "README.md does not link {name}"
        );
    }
    for f in ["LICENSE-MIT", "LICENSE-APACHE"] {
        assert!(linked.iter().any(|l| l == f), "README.md does not link {f}");
        assert!(root().join(f).is_file(), "{f} is missing");
    }
    for heading in ["Install, and two commands", "Exit status"] {
        assert!(
            anchors(&readme).contains(&anchor(heading)),
            "README.md has no section {heading:?}"
        );
    }
}
