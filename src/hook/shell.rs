//! Reading the JSON a JavaScript agent writes, whose strings may hold lone
//! UTF-16 surrogates, exactly as the agent reads them. Pure.

use std::borrow::Cow;

fn hex4(b: &[u8], at: usize) -> Option<u32> {
    let h = b.get(at..at + 4)?;
    let s = std::str::from_utf8(h).ok()?;
    u32::from_str_radix(s, 16).ok()
}

/// JSON text with every lone surrogate escape (`\ud800` without its pair)
/// replaced by `\ufffd`. JavaScript's `JSON.stringify` writes such escapes
/// for strings that are not valid Unicode, and the agent itself runs that
/// command with U+FFFD in their place (Node encodes strings as UTF-8 that
/// way); serde_json refuses them instead.
pub fn repair_surrogates(text: &str) -> Cow<'_, str> {
    if !text.contains("\\u") && !text.contains("\\U") {
        return Cow::Borrowed(text);
    }
    let b = text.as_bytes();
    let mut out = String::new();
    let mut copied = 0;
    let mut in_str = false;
    let mut i = 0;
    let high = |c: u32| (0xD800..0xDC00).contains(&c);
    let low = |c: u32| (0xDC00..0xE000).contains(&c);
    while i < b.len() {
        if !in_str {
            in_str = b[i] == b'"';
            i += 1;
            continue;
        }
        match b[i] {
            b'"' => {
                in_str = false;
                i += 1;
            }
            b'\\' if b.get(i + 1) == Some(&b'u') => match hex4(b, i + 2) {
                Some(c) if high(c) => {
                    let pair = b.get(i + 6) == Some(&b'\\')
                        && b.get(i + 7) == Some(&b'u')
                        && hex4(b, i + 8).is_some_and(low);
                    if pair {
                        i += 12;
                    } else {
                        out.push_str(&text[copied..i]);
                        out.push_str("\\ufffd");
                        i += 6;
                        copied = i;
                    }
                }
                Some(c) if low(c) => {
                    out.push_str(&text[copied..i]);
                    out.push_str("\\ufffd");
                    i += 6;
                    copied = i;
                }
                _ => i += 2,
            },
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied.min(text.len())..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogates_become_replacement_characters_and_pairs_stay() {
        let cases = [
            (r#"{"c":"a\ud800b"}"#, "a\u{fffd}b"),
            (r#"{"c":"\udc00"}"#, "\u{fffd}"),
            (r#"{"c":"\ud83d\ude00"}"#, "\u{1f600}"),
            (r#"{"c":"\\ud800"}"#, "\\ud800"),
            (r#"{"c":"\ud800\ud800"}"#, "\u{fffd}\u{fffd}"),
            (r#"{"\ud800":"x"}"#, "x"),
        ];
        for (json, want) in cases {
            let fixed = repair_surrogates(json);
            let v: serde_json::Value = serde_json::from_str(&fixed).unwrap();
            let got = v
                .as_object()
                .unwrap()
                .values()
                .next()
                .unwrap()
                .as_str()
                .unwrap();
            assert_eq!(got, want, "{json}");
        }
    }
}
