//! A small reader of git's configuration syntax: sections, `[section
//! "sub"]` and the older `[section.sub]`, quoting, escapes, continuation
//! lines and comments, read the way git reads them.
//!
//! Owns: turning the bytes of one file into the (key, value) pairs git would
//! see. Must never: open a file, follow an include (the caller decides what
//! to read next), or panic on any input; a file git would refuse to parse is
//! `None`, since git then reads nothing from it either.

/// One `key = value` line. `section` and `name` are lower-cased (git
/// compares them so); `sub` keeps its case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub section: String,
    pub sub: Option<Vec<u8>>,
    pub name: String,
    /// `None` for a bare `name` line, which git reads as boolean true.
    pub value: Option<Vec<u8>>,
}

impl Entry {
    /// Whether this is `section.name` (no subsection) — both lower-case.
    pub fn is(&self, section: &str, name: &str) -> bool {
        self.sub.is_none() && self.section == section && self.name == name
    }

    /// Whether this is `section.<any sub>.name`.
    pub fn is_sub(&self, section: &str, name: &str) -> bool {
        self.sub.is_some() && self.section == section && self.name == name
    }
}

struct Cursor<'a> {
    text: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    /// The next character with `\r\n` read as `\n`, as git does.
    fn next(&mut self) -> Option<u8> {
        let c = *self.text.get(self.pos)?;
        self.pos += 1;
        if c == b'\r' && self.text.get(self.pos) == Some(&b'\n') {
            self.pos += 1;
            return Some(b'\n');
        }
        Some(c)
    }

    fn peek(&self) -> Option<u8> {
        let c = *self.text.get(self.pos)?;
        if c == b'\r' && self.text.get(self.pos + 1) == Some(&b'\n') {
            return Some(b'\n');
        }
        Some(c)
    }

    fn skip_line(&mut self) {
        while let Some(c) = self.next() {
            if c == b'\n' {
                break;
            }
        }
    }
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn is_name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-'
}

/// Parses one configuration file. `None`: git would stop with "bad config
/// line" (or the file holds a NUL byte), and reads none of it.
pub fn parse(text: &[u8]) -> Option<Vec<Entry>> {
    let text = text.strip_prefix(b"\xef\xbb\xbf").unwrap_or(text);
    if text.contains(&0) {
        return None;
    }
    let mut cur = Cursor { text, pos: 0 };
    let mut out = Vec::new();
    let mut section: Option<(String, Option<Vec<u8>>)> = None;
    while let Some(c) = cur.next() {
        if is_space(c) {
            continue;
        }
        if c == b'#' || c == b';' {
            cur.skip_line();
            continue;
        }
        if c == b'[' {
            section = Some(header(&mut cur)?);
            continue;
        }
        if !c.is_ascii_alphabetic() {
            return None;
        }
        // git takes a key before any section header as a key of no section.
        let (sec, sub) = section.clone().unwrap_or_default();
        let mut name = String::from(c.to_ascii_lowercase() as char);
        while let Some(c) = cur.peek().filter(|c| is_name_char(*c)) {
            cur.pos += 1;
            name.push(c.to_ascii_lowercase() as char);
        }
        while matches!(cur.peek(), Some(b' ' | b'\t')) {
            cur.pos += 1;
        }
        let value = match cur.peek() {
            None => None,
            Some(b'\n') => {
                cur.next();
                None
            }
            Some(b'#' | b';') => {
                cur.skip_line();
                None
            }
            Some(b'=') => {
                cur.pos += 1;
                Some(value(&mut cur)?)
            }
            Some(_) => return None,
        };
        out.push(Entry {
            section: sec,
            sub,
            name,
            value,
        });
    }
    Some(out)
}

/// After `[`: `section]`, `section "sub"]` or `section.sub]`. What follows
/// the `]` on the same line is read as ordinary content, as git does.
fn header(cur: &mut Cursor) -> Option<(String, Option<Vec<u8>>)> {
    let mut name = String::new();
    loop {
        let c = cur.next()?;
        match c {
            b']' => break,
            b' ' | b'\t' => {
                while matches!(cur.peek(), Some(b' ' | b'\t')) {
                    cur.pos += 1;
                }
                if cur.next()? != b'"' {
                    return None;
                }
                let mut sub = Vec::new();
                loop {
                    match cur.next()? {
                        b'\n' => return None,
                        b'"' => break,
                        b'\\' => match cur.next()? {
                            b'\n' => return None,
                            c => sub.push(c),
                        },
                        c => sub.push(c),
                    }
                }
                if cur.next()? != b']' {
                    return None;
                }
                if name.is_empty() {
                    return None;
                }
                return Some((name, Some(sub)));
            }
            c if is_name_char(c) || c == b'.' => name.push(c.to_ascii_lowercase() as char),
            _ => return None,
        }
    }
    if name.is_empty() {
        return None;
    }
    // The deprecated `[section.sub]`: the subsection is lower-cased too.
    match name.split_once('.') {
        Some((sec, sub)) if !sec.is_empty() => {
            Some((sec.to_string(), Some(sub.as_bytes().to_vec())))
        }
        Some(_) => None,
        None => Some((name, None)),
    }
}

/// After `=`: the value up to an unquoted newline, with quotes removed,
/// escapes applied, unquoted blanks kept inside and dropped at either end.
fn value(cur: &mut Cursor) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut quote = false;
    let mut comment = false;
    let mut blanks: Vec<u8> = Vec::new();
    loop {
        let Some(c) = cur.next() else {
            return if quote { None } else { Some(out) };
        };
        if c == b'\n' {
            if quote {
                return None;
            }
            return Some(out);
        }
        if comment || c == b'\r' {
            continue;
        }
        if is_space(c) && !quote {
            if !out.is_empty() {
                blanks.push(c);
            }
            continue;
        }
        if !quote && (c == b';' || c == b'#') {
            comment = true;
            continue;
        }
        out.append(&mut blanks);
        match c {
            // A backslash at the very end of the file ends the value.
            b'\\' => match cur.next().unwrap_or(b'\n') {
                b'\n' => {}
                b't' => out.push(b'\t'),
                b'b' => out.push(0x08),
                b'n' => out.push(b'\n'),
                b'\\' => out.push(b'\\'),
                b'"' => out.push(b'"'),
                _ => return None,
            },
            b'"' => quote = !quote,
            c => out.push(c),
        }
    }
}

/// git's boolean words, for keys that take either a boolean or a program
/// (`core.fsmonitor`, `pager.<cmd>`).
pub fn is_bool(v: &[u8]) -> bool {
    let v = v.to_ascii_lowercase();
    matches!(
        v.as_slice(),
        b"" | b"true" | b"false" | b"yes" | b"no" | b"on" | b"off" | b"1" | b"0"
    )
}

/// The program a command-valued setting runs: its first shell word, after
/// a leading `!` and any `NAME=value` assignments. Quoting with `'…'`, `"…"`
/// and backslashes is undone; `None` when there is no such word.
pub fn first_word(v: &[u8]) -> Option<Vec<u8>> {
    let mut rest = v.strip_prefix(b"!").unwrap_or(v);
    for _ in 0..8 {
        let (word, after) = shell_word(rest)?;
        let assignment = word.iter().position(|c| *c == b'=').is_some_and(|i| {
            i > 0
                && word[..i]
                    .iter()
                    .all(|c| c.is_ascii_alphanumeric() || *c == b'_')
        });
        if !assignment {
            return Some(word);
        }
        rest = after;
    }
    None
}

/// One shell word from the start of `s` (blanks skipped), and what follows.
fn shell_word(s: &[u8]) -> Option<(Vec<u8>, &[u8])> {
    let mut i = 0;
    while i < s.len() && is_space(s[i]) {
        i += 1;
    }
    let mut word = Vec::new();
    while i < s.len() {
        let c = s[i];
        if is_space(c) || matches!(c, b';' | b'|' | b'&' | b'<' | b'>' | b'(' | b')') {
            break;
        }
        match c {
            b'\'' => {
                let end = s[i + 1..].iter().position(|c| *c == b'\'')?;
                word.extend_from_slice(&s[i + 1..i + 1 + end]);
                i += end + 2;
            }
            b'"' => {
                i += 1;
                loop {
                    let c = *s.get(i)?;
                    i += 1;
                    match c {
                        b'"' => break,
                        b'\\' => {
                            let n = *s.get(i)?;
                            i += 1;
                            if !matches!(n, b'"' | b'\\' | b'$' | b'`') {
                                word.push(b'\\');
                            }
                            word.push(n);
                        }
                        c => word.push(c),
                    }
                }
            }
            b'\\' => {
                let n = *s.get(i + 1)?;
                word.push(n);
                i += 2;
            }
            c => {
                word.push(c);
                i += 1;
            }
        }
    }
    if word.is_empty() {
        None
    } else {
        Some((word, &s[i..]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(text: &str) -> Vec<(String, Option<String>)> {
        parse(text.as_bytes())
            .unwrap()
            .into_iter()
            .map(|e| {
                let mut k = e.section.clone();
                if let Some(s) = &e.sub {
                    k.push('.');
                    k.push_str(&String::from_utf8_lossy(s));
                }
                k.push('.');
                k.push_str(&e.name);
                (k, e.value.map(|v| String::from_utf8_lossy(&v).into_owned()))
            })
            .collect()
    }

    fn one(text: &str) -> (String, Option<String>) {
        let v = kv(text);
        assert_eq!(v.len(), 1, "{v:?}");
        v.into_iter().next().unwrap()
    }

    #[test]
    fn sections_subsections_and_case() {
        assert_eq!(
            kv("[Core]\n\tFsMonitor = /x\n[includeIf \"gitdir:~/W/\"]\npath=a\n[Branch.Main]\nremote=o\n"),
            vec![
                ("core.fsmonitor".into(), Some("/x".into())),
                ("includeif.gitdir:~/W/.path".into(), Some("a".into())),
                ("branch.main.remote".into(), Some("o".into())),
            ]
        );
    }

    #[test]
    fn values_are_unquoted_unescaped_and_trimmed() {
        assert_eq!(one("[a]\nb = \"x  y\" z  \n").1.unwrap(), "x  y z");
        assert_eq!(one("[a]\nb =   x \t y  ").1.unwrap(), "x \t y");
        assert_eq!(one("[a]\nb = x\\ty\\n\\\\\\\"").1.unwrap(), "x\ty\n\\\"");
        assert_eq!(one("[a]\nb = one \\\n two\n").1.unwrap(), "one  two");
        assert_eq!(one("[a]\nb = x # c\n").1.unwrap(), "x");
        assert_eq!(
            one("[a]\nb = \"x # not ; a comment\"\n").1.unwrap(),
            "x # not ; a comment"
        );
        assert_eq!(one("[a]\nb\n").1, None);
        assert_eq!(one("[a]\nb ; c\n").1, None);
        assert_eq!(one("[a]\r\nb = x\r\n").1.unwrap(), "x");
        assert_eq!(one("\u{feff}[a]\nb = x").1.unwrap(), "x");
    }

    #[test]
    fn content_after_a_header_on_the_same_line_counts() {
        assert_eq!(
            one("[core] hooksPath = .husky/_"),
            ("core.hookspath".into(), Some(".husky/_".into()))
        );
    }

    #[test]
    fn subsection_escapes() {
        let e = parse(b"[a \"x\\\"y\\\\z\\q\"]\nb=1").unwrap();
        assert_eq!(e[0].sub.as_deref(), Some(&b"x\"y\\zq"[..]));
    }

    #[test]
    fn what_git_refuses_is_none() {
        for bad in [
            "[a]\nb = \"open\n",
            "[a]\nb = \\q\n",
            "[a\n",
            "[a \"x]\n",
            "[a \"x\" ]\n",
            "[]\n",
            "[a]\n1b = x\n",
            "[a]\nb c\n",
            "[a]\nb = \0",
        ] {
            assert_eq!(parse(bad.as_bytes()), None, "{bad:?}");
        }
    }

    #[test]
    fn never_panics_on_any_bytes() {
        // A fixed-seed xorshift: the same inputs every run.
        let mut s: u64 = 0x9e37_79b9_7f4a_7c15;
        let alphabet = b"[]\"\\ \t\n\r#;=.abcXYZ-!01/\x00\xff";
        for len in 0..400 {
            let mut buf = Vec::with_capacity(len);
            for _ in 0..len {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                buf.push(alphabet[(s % alphabet.len() as u64) as usize]);
            }
            let _ = parse(&buf);
            let _ = first_word(&buf);
        }
    }

    #[test]
    fn first_word_of_a_command() {
        let w = |s: &str| first_word(s.as_bytes()).map(|v| String::from_utf8(v).unwrap());
        assert_eq!(w("./fsmon.sh --x").as_deref(), Some("./fsmon.sh"));
        assert_eq!(w("!\"/a b/c\" arg").as_deref(), Some("/a b/c"));
        assert_eq!(w("  'x y'z;rest").as_deref(), Some("x yz"));
        assert_eq!(w("FOO=1 BAR=2 ./run").as_deref(), Some("./run"));
        assert_eq!(w("a\\ b").as_deref(), Some("a b"));
        assert_eq!(w("f() { x; }; f").as_deref(), Some("f"));
        assert_eq!(w("   "), None);
        assert_eq!(w("'unterminated"), None);
    }

    #[test]
    fn booleans() {
        for b in ["true", "False", "yes", "OFF", "1", "0", ""] {
            assert!(is_bool(b.as_bytes()), "{b}");
        }
        assert!(!is_bool(b"/usr/bin/x"));
    }
}
