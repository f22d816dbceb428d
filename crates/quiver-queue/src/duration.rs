//! Durations as the queue's headers write them: `30s`, `10m`, `1d10h30m`, or a bare number of seconds.

use std::time::Duration;

/// Parses `<n><unit>` groups (units `ms`, `s`, `m`, `h`, `d`), or a bare whole number of seconds.
///
/// # Errors
/// A message saying what is wrong, for the caller to prefix with the header's name.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("is empty".into());
    }
    if let Ok(seconds) = text.parse::<u64>() {
        return Ok(Duration::from_secs(seconds));
    }
    let mut total = Duration::ZERO;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        if digits == 0 {
            return Err(format!(
                "`{text}` is not a duration like 30s, 10m, 2h or 1d10h30m"
            ));
        }
        let amount: u64 = rest[..digits]
            .parse()
            .map_err(|_| format!("`{text}` is too large"))?;
        rest = &rest[digits..];
        let unit_length = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
        let unit_millis: u64 = match &rest[..unit_length] {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            other => {
                return Err(format!(
                    "`{other}` in `{text}` is not a unit; use ms, s, m, h or d"
                ));
            }
        };
        rest = &rest[unit_length..];
        let part = amount
            .checked_mul(unit_millis)
            .ok_or_else(|| format!("`{text}` is too large"))?;
        total = total
            .checked_add(Duration::from_millis(part))
            .ok_or_else(|| format!("`{text}` is too large"))?;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_combine_and_bare_numbers_are_seconds() {
        assert_eq!(
            parse_duration("1d10h30m"),
            Ok(Duration::from_secs(86_400 + 36_000 + 1_800))
        );
        assert_eq!(parse_duration("100s"), Ok(Duration::from_secs(100)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("45"), Ok(Duration::from_secs(45)));
    }

    #[test]
    fn malformed_durations_say_what_is_wrong() {
        for bad in ["", "s", "10x", "1.5s", "-3s", "10 s"] {
            assert!(parse_duration(bad).is_err(), "{bad:?} was accepted");
        }
        assert!(parse_duration("99999999999999999999d").is_err());
    }
}
