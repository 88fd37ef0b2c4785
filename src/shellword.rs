//! Words for a POSIX shell: a string quoted so that bash, dash, zsh and ksh
//! read it back byte for byte, for every line dcjail writes that a shell
//! will read (the hook's rewritten command, a suggested option). Pure.

/// `s` as one single-quoted shell word: every byte stands for itself inside
/// single quotes, and a quote is written as `'\''` (close, escaped quote,
/// reopen). bash, dash, zsh and ksh read it back as exactly `s`.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

/// Whether a word can go on a command line unquoted (vocabulary words).
pub fn plain(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_round_trips_through_sh() {
        for s in [
            "",
            "a b",
            "it's",
            "''",
            "'",
            "a'b'c",
            "$(id)`id`\\n\n\t\"",
            "\u{fffd}é",
        ] {
            let o = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("printf %s {}", quote(s)))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8(o.stdout).unwrap(), s);
        }
    }
}
