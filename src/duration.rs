//! Durations as timeout(1) writes them, for `--timeout` and
//! `sandbox.timeout`. Pure: text in, a `Duration` or the reason out.

use serde::Deserializer;
use std::time::Duration;

/// Largest timeout: beyond it a deadline cannot be represented.
pub const MAX_TIMEOUT_SECS: u64 = 10 * 365 * 24 * 3600;

/// What a duration is, said in every message about a bad one.
const DURATION_WORDS: &str = "a duration is a number of seconds with an optional suffix s, m, h or d, as timeout(1) takes it (1.5, 90s, 5m, 1h, 2d; 0 = none)";

/// A duration as timeout(1) writes it: a decimal number (fraction and
/// exponent allowed) with an optional suffix `s`, `m`, `h` or `d`; 0 means
/// none. Negative, non-finite and longer-than-ten-years values are refused
/// (timeout(1) would wait forever on the last two; a policy never does).
/// The error says what is wrong without repeating the value.
pub fn parse(text: &str) -> std::result::Result<Duration, String> {
    let (number, unit) = match text.char_indices().last() {
        Some((i, 's')) => (&text[..i], 1.0),
        Some((i, 'm')) => (&text[..i], 60.0),
        Some((i, 'h')) => (&text[..i], 3600.0),
        Some((i, 'd')) => (&text[..i], 86400.0),
        _ => (text, 1.0),
    };
    // Rust's float syntax, minus its words (inf, NaN) and a second sign.
    let plain = !number.is_empty()
        && number
            .trim_start_matches(['+', '-'])
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'))
        && number.chars().any(|c| c.is_ascii_digit());
    let value = match number.parse::<f64>() {
        Ok(v) if plain => v,
        _ => return Err(DURATION_WORDS.to_string()),
    };
    if value < 0.0 {
        return Err("a timeout cannot be negative (0 = none)".to_string());
    }
    let secs = value * unit;
    if !secs.is_finite() || secs > MAX_TIMEOUT_SECS as f64 {
        return Err(format!(
            "longer than the largest timeout, {MAX_TIMEOUT_SECS} seconds (ten years)"
        ));
    }
    let d = Duration::try_from_secs_f64(secs).map_err(|_| DURATION_WORDS.to_string())?;
    // A positive value too small for a nanosecond is still a timeout.
    Ok(if d.is_zero() && secs > 0.0 {
        Duration::from_nanos(1)
    } else {
        d
    })
}

/// `sandbox.timeout` in a policy: whole seconds (as before), a number of
/// seconds with a fraction, or a string in timeout(1)'s syntax.
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Duration, D::Error> {
    struct V;
    impl serde::de::Visitor<'_> for V {
        type Value = Duration;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a number of seconds or a duration such as \"90s\", \"5m\", \"1h\"")
        }
        fn visit_u64<E: serde::de::Error>(self, v: u64) -> std::result::Result<Duration, E> {
            if v > MAX_TIMEOUT_SECS {
                return Err(E::custom(format!(
                    "{v} seconds is longer than the largest timeout, {MAX_TIMEOUT_SECS} seconds (ten years)"
                )));
            }
            Ok(Duration::from_secs(v))
        }
        fn visit_i64<E: serde::de::Error>(self, v: i64) -> std::result::Result<Duration, E> {
            match u64::try_from(v) {
                Ok(u) => self.visit_u64(u),
                Err(_) => Err(E::custom(format!(
                    "`{v}`: a timeout cannot be negative (0 = none)"
                ))),
            }
        }
        fn visit_f64<E: serde::de::Error>(self, v: f64) -> std::result::Result<Duration, E> {
            self.visit_str(&v.to_string())
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> std::result::Result<Duration, E> {
            parse(v).map_err(|e| E::custom(format!("`{}`: {e}", crate::error::one_line(v))))
        }
    }
    d.deserialize_any(V)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_timeout_1_reads_them() {
        let ok = |t: &str| parse(t).unwrap();
        assert_eq!(ok("1.5"), Duration::from_millis(1500));
        assert_eq!(ok("90s"), Duration::from_secs(90));
        assert_eq!(ok("5m"), Duration::from_secs(300));
        assert_eq!(ok("0.5m"), Duration::from_secs(30));
        assert_eq!(ok("1h"), Duration::from_secs(3600));
        assert_eq!(ok("2d"), Duration::from_secs(172_800));
        assert_eq!(ok("1e2"), Duration::from_secs(100));
        assert_eq!(ok(".5"), Duration::from_millis(500));
        assert_eq!(ok("+5"), Duration::from_secs(5));
        assert_eq!(ok("0"), Duration::ZERO);
        assert_eq!(ok("-0"), Duration::ZERO);
        assert_eq!(ok("1e-12"), Duration::from_nanos(1));
        assert_eq!(ok("3650d"), Duration::from_secs(MAX_TIMEOUT_SECS));
        for bad in [
            "", "s", "-1", "-1s", "abc", "5x", "5S", "1s2", " 5", "5 ", "inf", "infinity", "nan",
            "0x10", "1e400", "3651d", "+-5", "--5", "1..5",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} accepted");
        }
        assert!(parse("-1").unwrap_err().contains("negative"));
        assert!(parse("1e400").unwrap_err().contains("ten years"));
    }
}
