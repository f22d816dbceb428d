//! Secrets: cryptographically random tokens, and comparison that does not leak timing.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// A random token of `bytes` bytes from the operating system's CSPRNG, base64url without padding.
///
/// # Panics
/// When the operating system cannot supply randomness; no secret can be made safely then.
pub fn random_token(bytes: usize) -> String {
    let mut buffer = vec![0_u8; bytes];
    getrandom::fill(&mut buffer).expect("the operating system's random source failed");
    URL_SAFE_NO_PAD.encode(buffer)
}

/// A uniformly random number below `bound` (which must be positive), from the OS CSPRNG.
pub fn random_below(bound: u32) -> u32 {
    let bound = bound.max(1);
    let zone = u32::MAX - (u32::MAX % bound);
    loop {
        let mut bytes = [0_u8; 4];
        getrandom::fill(&mut bytes).expect("the operating system's random source failed");
        let value = u32::from_le_bytes(bytes);
        if value < zone {
            return value % bound;
        }
    }
}

/// Compares two secrets in time that depends only on their lengths.
pub fn constant_time_eq(left: &str, right: &str) -> bool {
    let (left, right) = (left.as_bytes(), right.as_bytes());
    if left.len() != right.len() {
        return false;
    }
    left.iter().zip(right).fold(0_u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_long_distinct_and_url_safe() {
        let (first, second) = (random_token(32), random_token(32));
        assert_eq!(first.len(), 43);
        assert_ne!(first, second);
        assert!(
            first
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        );
    }

    #[test]
    fn constant_time_eq_matches_ordinary_equality() {
        assert!(constant_time_eq("secret", "secret"));
        assert!(!constant_time_eq("secret", "secreT"));
        assert!(!constant_time_eq("secret", "secrets"));
    }

    #[test]
    fn random_below_stays_below_its_bound() {
        assert!((0..1000).all(|_| random_below(7) < 7));
    }
}
