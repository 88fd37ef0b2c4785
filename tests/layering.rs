//! The shape of `src/`, checked: module arrows point down only (an explicit
//! rank table), no import cycle, no source file over 1,000 lines and no
//! function over 100 lines outside tests. A plain text scan: comments,
//! string literals and `#[cfg(test)]` items are blanked first, then every
//! `crate::NAME` path (and `use crate::{A, B}` group) is an arrow from the
//! file's top-level module to `NAME`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Low to high: a module may name modules of its own rank or below, never
/// one above. Same-rank arrows are allowed but may not close a cycle.
const RANKS: &[(&str, u32)] = &[
    // What runs inside the sandbox (the second stage, the broker, their
    // wire formats and raw calls): compiled into the embedded stub too,
    // with its files at the stub's crate root, so it names no module of
    // dcjail at all (`inside_names_nothing_of_dcjail`).
    ("inside", 0),
    // Helpers that name nothing but `error`.
    ("error", 0),
    ("duration", 1),
    ("gitconfig", 1),
    // Path arithmetic (lenient resolution, inside-of) and the clap wrapper
    // with its one-line usage errors: leaves that many layers share.
    ("paths", 1),
    ("usage", 1),
    // Quoting a word for a POSIX shell: the hook's rewritten command and
    // the denial report's suggested options both need it.
    ("shellword", 1),
    // The domain-pattern vocabulary lives under `net` (what the proxy
    // matches), but the policy schema parses it: a leaf below `policy`.
    ("net::domain", 1),
    ("policy", 2),
    // `fields` walks the policy's fields (for `import`): above `policy`.
    ("fields", 3),
    ("decide", 3),
    ("plan", 4),
    ("protected", 4),
    ("gitfiles", 4),
    ("walk", 4),
    ("backend", 5),
    ("net", 6),
    // Judges the broker's raw denial records (inside::denial_wire) against
    // the plan, after or beside a run.
    ("denials", 6),
    ("exec", 7),
    ("run", 8),
    ("worktree", 8),
    ("explain", 8),
    ("doctor", 8),
    ("hook", 8),
    ("import", 8),
    ("setup", 8),
    ("card", 8),
    ("cli", 9),
    // Generated from the flags `cli` defines: above it.
    ("completions", 10),
    // The man page's OPTIONS entries, from the same definitions.
    ("manpage", 10),
    ("main", 11),
];

/// Known arrows that break the rules today, each to be deleted once its
/// work has landed.
const ALLOWED: &[(&str, &str, &str)] = &[];

/// Files allowed over 1,000 lines today.
const LONG_FILES: &[(&str, &str)] = &[];

/// Functions allowed over 100 lines today: (file, fn name).
const LONG_FNS: &[(&str, &str, &str)] = &[];

const MAX_FILE_LINES: usize = 1000;
const MAX_FN_LINES: usize = 100;

/// The checkout scanned: this one, or the one `DCJAIL_LAYERING_ROOT` names
/// (to hold another tree, an older one say, to the same rules).
fn root() -> PathBuf {
    std::env::var_os("DCJAIL_LAYERING_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

fn sources() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }
    let root = root();
    let mut out = Vec::new();
    walk(&root.join("src"), &mut out);
    out.into_iter()
        .map(|p| p.strip_prefix(&root).unwrap().to_path_buf())
        .collect()
}

/// The source with comments and the contents of string and character
/// literals replaced by spaces; newlines are kept, so lines still count.
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let blank = |c: u8| if c == b'\n' { b'\n' } else { b' ' };
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                out.push(b' ');
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
        } else if c == b'r'
            && matches!(b.get(i + 1), Some(b'"') | Some(b'#'))
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
        {
            // A raw string: r"…", r#"…"#.
            let mut j = i + 1;
            while b.get(j) == Some(&b'#') {
                j += 1;
            }
            if b.get(j) != Some(&b'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let hashes = j - i - 1;
            out.extend(std::iter::repeat_n(b' ', j + 1 - i));
            i = j + 1;
            while i < b.len() {
                if b[i] == b'"'
                    && b[i + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|h| **h == b'#')
                        .count()
                        == hashes
                {
                    out.extend(std::iter::repeat_n(b' ', 1 + hashes));
                    i += 1 + hashes;
                    break;
                }
                out.push(blank(b[i]));
                i += 1;
            }
        } else if c == b'"' {
            out.push(b' ');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    out.push(b' ');
                    i += 1;
                }
                if i < b.len() {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
            out.push(b' ');
            i += 1;
        } else if c == b'\'' {
            // A character literal ('x', '\n', '\u{1f}'), not a lifetime.
            let end = if b.get(i + 1) == Some(&b'\\') {
                b[i + 2..]
                    .iter()
                    .position(|x| *x == b'\'')
                    .map(|p| i + 2 + p)
            } else if b.get(i + 2) == Some(&b'\'') {
                Some(i + 2)
            } else {
                // A multi-byte character: up to 4 bytes then the quote.
                (3..=5)
                    .find(|k| b.get(i + k) == Some(&b'\'') && b[i + 1] >= 0x80)
                    .map(|k| i + k)
            };
            match end {
                Some(e) if e - i <= 12 => {
                    out.extend(std::iter::repeat_n(b' ', e + 1 - i));
                    i = e + 1;
                }
                _ => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The byte index just past the item starting at `from`: its braced body,
/// or its `;` when it has none.
fn item_end(code: &[u8], from: usize) -> usize {
    let mut depth = 0usize;
    let mut i = from;
    while i < code.len() {
        match code[i] {
            b';' if depth == 0 => return i + 1,
            b'{' => depth += 1,
            b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    code.len()
}

/// `code` with every item under `#[cfg(test)]` (or a `cfg(all(test, …))`)
/// blanked.
fn without_tests(code: &str) -> String {
    let mut b = code.as_bytes().to_vec();
    let mut at = 0;
    while let Some(p) = code[at..].find("#[cfg(") {
        let start = at + p;
        let attr_end = item_end_attr(code.as_bytes(), start);
        let attr = &code[start..attr_end];
        at = attr_end;
        let testy = attr.starts_with("#[cfg(test)]")
            || (attr.starts_with("#[cfg(all(") && attr.contains("test"))
                && !attr.contains("not(test");
        if !testy {
            continue;
        }
        let end = item_end(code.as_bytes(), attr_end);
        for x in &mut b[start..end] {
            if *x != b'\n' {
                *x = b' ';
            }
        }
        at = end;
    }
    String::from_utf8_lossy(&b).into_owned()
}

/// Just past the attribute starting at `from` (`#[` … its closing `]`).
fn item_end_attr(code: &[u8], from: usize) -> usize {
    let mut depth = 0usize;
    for (i, c) in code.iter().enumerate().skip(from) {
        match c {
            b'[' => depth += 1,
            b']' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    code.len()
}

/// The module a source file belongs to, as the rank table names it.
fn node_of(path: &Path) -> String {
    let rel = path.strip_prefix("src").unwrap();
    let parts: Vec<String> = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.len() >= 2 && parts[0] == "net" && parts[1] == "domain" {
        return "net::domain".into();
    }
    match parts[0].as_str() {
        "lib" => "lib".into(),
        p => p.into(),
    }
}

/// Whether the file is a test module of its own (`mod tests;` under
/// `#[cfg(test)]`): its arrows and lengths are the tests'.
fn is_test_file(path: &Path) -> bool {
    path.file_stem().is_some_and(|s| s == "tests")
}

/// The modules named by `crate::…` (or `dcjail::…` from the binary).
fn arrows(code: &str, krate: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let prefix = format!("{krate}::");
    let mut at = 0;
    while let Some(p) = code[at..].find(&prefix) {
        let start = at + p;
        at = start + prefix.len();
        let before = code[..start].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &code[at..];
        let names: Vec<String> = if let Some(group) = rest.strip_prefix('{') {
            // `crate::{a, b::c, d::{e, f}}`: the first segment of each.
            let mut depth = 1;
            let mut cur = String::new();
            let mut names = Vec::new();
            let mut first = true;
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => {
                        names.push(std::mem::take(&mut cur));
                        first = true;
                        continue;
                    }
                    _ => {}
                }
                if depth == 1 && first {
                    if c.is_alphanumeric() || c == '_' || c == ':' {
                        cur.push(c);
                    } else if !cur.is_empty() {
                        first = false;
                    }
                }
            }
            names.push(cur);
            names
        } else {
            vec![rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect()]
        };
        for n in names {
            let segs: Vec<&str> = n.split("::").filter(|s| !s.is_empty()).collect();
            match segs.as_slice() {
                [] | ["self", ..] => {}
                ["net", "domain", ..] => {
                    out.insert("net::domain".to_string());
                }
                [first, ..] => {
                    out.insert(first.to_string());
                }
            }
        }
    }
    out
}

fn rank(node: &str) -> Option<u32> {
    RANKS.iter().find(|(n, _)| *n == node).map(|(_, r)| *r)
}

struct Scan {
    graph: BTreeMap<String, BTreeSet<String>>,
    /// (file, lines)
    files: Vec<(String, usize)>,
    /// (file, fn name, lines)
    fns: Vec<(String, String, usize)>,
}

fn scan() -> Scan {
    let mut s = Scan {
        graph: BTreeMap::new(),
        files: Vec::new(),
        fns: Vec::new(),
    };
    for path in sources() {
        let text = std::fs::read_to_string(root().join(&path)).unwrap();
        let file = path.to_string_lossy().into_owned();
        s.files.push((file.clone(), text.lines().count()));
        if is_test_file(&path) {
            continue;
        }
        let code = without_tests(&code_only(&text));
        let node = node_of(&path);
        let krate = if node == "main" { "dcjail" } else { "crate" };
        let named = arrows(&code, krate);
        let entry = s.graph.entry(node.clone()).or_default();
        for n in named {
            if n != node {
                entry.insert(n);
            }
        }
        s.fns.extend(
            long_fns(&code)
                .into_iter()
                .map(|(n, l)| (file.clone(), n, l)),
        );
    }
    s.graph.remove("lib");
    s
}

/// Every function and its length in lines, from `fn` to its closing brace.
fn long_fns(code: &str) -> Vec<(String, usize)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(p) = code[at..].find("fn ") {
        let start = at + p;
        at = start + 3;
        let before = code[..start].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let name: String = code[at..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            continue;
        }
        let end = item_end(b, start);
        if b.get(end - 1) != Some(&b'}') {
            continue;
        }
        let lines = code[start..end].lines().count();
        if lines > MAX_FN_LINES {
            out.push((name, lines));
        }
    }
    out
}

fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Only the arrows that are not allowed: an allowed arrow is a known,
    // listed exception, and its cycle is the same known one.
    let allowed = |a: &str, b: &str| ALLOWED.iter().any(|(x, y, _)| *x == a && *y == b);
    let mut found = Vec::new();
    for start in graph.keys() {
        // Depth-first from `start`, looking for a way back to it.
        let mut stack: Vec<(String, Vec<String>)> = vec![(start.clone(), vec![start.clone()])];
        let mut seen = BTreeSet::new();
        while let Some((n, path)) = stack.pop() {
            for m in graph.get(&n).into_iter().flatten() {
                if allowed(&n, m) {
                    continue;
                }
                if m == start {
                    let mut c = path.clone();
                    c.push(m.clone());
                    found.push(c);
                } else if seen.insert(m.clone()) {
                    let mut p = path.clone();
                    p.push(m.clone());
                    stack.push((m.clone(), p));
                }
            }
        }
    }
    found
}

fn violations(s: &Scan) -> Vec<String> {
    let mut out = Vec::new();
    for (from, tos) in &s.graph {
        let Some(rf) = rank(from) else {
            out.push(format!("`{from}` has no rank in RANKS"));
            continue;
        };
        for to in tos {
            let Some(rt) = rank(to) else {
                out.push(format!("`{to}` (named by `{from}`) has no rank in RANKS"));
                continue;
            };
            let allowed = ALLOWED.iter().any(|(a, b, _)| a == from && b == to);
            if rt > rf && !allowed {
                out.push(format!(
                    "`{from}` (rank {rf}) names `{to}` (rank {rt}): an arrow pointing up"
                ));
            }
        }
    }
    for c in cycles(&s.graph) {
        out.push(format!("import cycle: {}", c.join(" -> ")));
    }
    for (f, n) in &s.files {
        if *n > MAX_FILE_LINES && !LONG_FILES.iter().any(|(x, _)| x == f) {
            out.push(format!("{f} has {n} lines (more than {MAX_FILE_LINES})"));
        }
    }
    for (f, name, n) in &s.fns {
        if !LONG_FNS.iter().any(|(x, y, _)| x == f && y == name) {
            out.push(format!(
                "{f}: fn {name} has {n} lines (more than {MAX_FN_LINES})"
            ));
        }
    }
    out
}

#[test]
fn module_arrows_point_down_and_files_and_functions_stay_short() {
    let s = scan();
    let v = violations(&s);
    assert!(v.is_empty(), "{} violations:\n{}", v.len(), v.join("\n"));
}

#[test]
fn inside_names_nothing_of_dcjail() {
    let s = scan();
    let named: Vec<&String> = s
        .graph
        .get("inside")
        .map(|t| t.iter().filter(|to| *to != "inside").collect())
        .unwrap_or_default();
    assert!(
        named.is_empty(),
        "src/inside names {named:?}: the stub compiles these files alone"
    );
    assert!(s.graph.contains_key("inside"), "src/inside was scanned");
}

#[test]
fn every_allowance_is_still_needed() {
    // An exception that no longer applies is deleted, so the list stays
    // the list of work in flight.
    let s = scan();
    let mut stale = Vec::new();
    for (a, b, why) in ALLOWED {
        if !s.graph.get(*a).is_some_and(|t| t.contains(*b)) {
            stale.push(format!("ALLOWED ({a} -> {b}, {why})"));
        }
    }
    for (f, why) in LONG_FILES {
        if !s.files.iter().any(|(x, n)| x == f && *n > MAX_FILE_LINES) {
            stale.push(format!("LONG_FILES ({f}, {why})"));
        }
    }
    for (f, name, why) in LONG_FNS {
        if !s.fns.iter().any(|(x, y, _)| x == f && y == name) {
            stale.push(format!("LONG_FNS ({f}, {name}, {why})"));
        }
    }
    assert!(
        stale.is_empty(),
        "no longer needed, delete them:\n{}",
        stale.join("\n")
    );
}

#[test]
fn the_scanner_sees_through_comments_strings_and_tests() {
    let code = code_only(
        "use crate::{a, b::c, d::{e, f}};\n// crate::hidden\nlet s = \"crate::nope {\";\nlet c = '{';\nfn g<'a>(x: &'a str) { crate::h::i(); }\n#[cfg(test)]\nmod tests { use crate::t; }\n",
    );
    let code = without_tests(&code);
    let got = arrows(&code, "crate");
    let want: BTreeSet<String> = ["a", "b", "d", "h"].iter().map(|s| s.to_string()).collect();
    assert_eq!(got, want);
    let long = format!(
        "fn big() {{\n{}}}\nfn small() {{}}\n",
        "    x();\n".repeat(120)
    );
    let fns = long_fns(&code_only(&long));
    assert_eq!(fns, vec![("big".to_string(), 122)]);
}

/// Where `code` (comments, strings and tests blanked) reaches the process
/// itself: the `unsafe` keyword, or a call into libc (`libc::NAME(`, with
/// `NAME` lower case: a function, not a constant or a type). Naming libc's
/// constants and types (`libc::AF_INET`, `libc::c_long`, a `libc::sock_filter`
/// literal) stays allowed: a render may speak the kernel's numbers; it may
/// not ask the kernel anything. As (line, what) pairs.
fn process_effects(code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let word_at = |i: usize, w: &str| {
            let before = line[..i].chars().next_back();
            let after = line[i + w.len()..].chars().next();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
        };
        let mut at = 0;
        while let Some(p) = line[at..].find("unsafe") {
            if word_at(at + p, "unsafe") {
                out.push((n + 1, "unsafe".to_string()));
            }
            at += p + "unsafe".len();
        }
        let mut at = 0;
        while let Some(p) = line[at..].find("libc::") {
            let start = at + p;
            at = start + "libc::".len();
            if !word_at(start, "libc") {
                continue;
            }
            let name: String = line[at..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let called = line[at + name.len()..].trim_start().starts_with('(');
            if called && name.starts_with(|c: char| c.is_ascii_lowercase()) {
                out.push((n + 1, format!("libc::{name}(")));
            }
        }
    }
    out
}

/// `backend/` renders: from plan and facts to a launch, no `unsafe` and no
/// call into libc outside the host probe (`src/backend/host.rs` and
/// `src/backend/host/`), the one place it asks this machine. Test code is
/// exempt (it may set up what it checks).
#[test]
fn backend_holds_no_unsafe_and_calls_no_libc_but_in_the_host_probe() {
    let mut found = Vec::new();
    for path in sources() {
        let p = path.to_string_lossy().into_owned();
        let in_backend = p.starts_with("src/backend/");
        let host = p == "src/backend/host.rs" || p.starts_with("src/backend/host/");
        if !in_backend || host || is_test_file(&path) {
            continue;
        }
        let text = std::fs::read_to_string(root().join(&path)).unwrap();
        for (line, what) in process_effects(&without_tests(&code_only(&text))) {
            found.push(format!("{p}:{line}: {what}"));
        }
    }
    assert!(
        found.is_empty(),
        "outside backend::host, backend/ must not use unsafe nor call libc:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_effect_scanner_tells_a_call_from_a_constant() {
    let code = without_tests(&code_only(
        "let a = libc::AF_INET;\nlet t: libc::c_long = 0;\n\
         let f = libc::sock_filter { code: 0 };\n// unsafe { libc::getuid() }\n\
         let s = \"libc::geteuid()\";\nlet u = unsafe { libc::geteuid () };\n\
         fn unsafe_free() {}\n#[cfg(test)]\nmod tests { fn x() { unsafe { libc::getpid() }; } }\n",
    ));
    assert_eq!(
        process_effects(&code),
        vec![(6, "unsafe".to_string()), (6, "libc::geteuid(".to_string())]
    );
}
