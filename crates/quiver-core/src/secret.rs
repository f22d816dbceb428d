//! Secrets: cryptographically random tokens, and comparison that does not leak timing.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// A random token of `bytes` bytes from the operating system's CSPRNG, base64url without padding.
///
/// # Panics
/// When the operating system cannot supply randomness; no secret can be made safely then.
pub fn random_token(bytes: usize) -> String {
    let mut token = String::with_capacity(bytes.div_ceil(3) * 4);
    append_random_token(&mut token, bytes);
    token
}

/// Appends a [`random_token`] of `bytes` bytes to `out`.
///
/// # Panics
/// When the operating system cannot supply randomness.
pub fn append_random_token(out: &mut String, bytes: usize) {
    let mut buffer = [0_u8; POOL_BYTES];
    let mut rest = bytes;
    while rest > 0 {
        let chunk = rest.min(POOL_BYTES);
        fill_random(&mut buffer[..chunk]);
        URL_SAFE_NO_PAD.encode_string(&buffer[..chunk], out);
        rest -= chunk;
    }
    buffer.fill(0);
}

/// Bytes each thread draws from the operating system at once. Multiple of 3, so tokens longer than
/// this encode the same as in one piece.
const POOL_BYTES: usize = 384;

std::thread_local! {
    /// Unused bytes from the operating system's CSPRNG, and how many of them have been handed out.
    static POOL: std::cell::RefCell<([u8; POOL_BYTES], usize)> =
        const { std::cell::RefCell::new(([0; POOL_BYTES], POOL_BYTES)) };
}

/// Fills `out` (at most [`POOL_BYTES`]) with bytes from the operating system's CSPRNG. The bytes come
/// from a per-thread pool drawn a few hundred at a time, which saves a system call per message id; each
/// byte is handed out once and erased from the pool when it is.
fn fill_random(out: &mut [u8]) {
    POOL.with_borrow_mut(|(pool, used)| {
        if *used + out.len() > POOL_BYTES {
            getrandom::fill(pool).expect("the operating system's random source failed");
            *used = 0;
        }
        let taken = &mut pool[*used..*used + out.len()];
        out.copy_from_slice(taken);
        taken.fill(0);
        *used += out.len();
    });
}

/// A uniformly random number below `bound` (which must be positive), from the OS CSPRNG.
pub fn random_below(bound: u32) -> u32 {
    let bound = bound.max(1);
    let zone = u32::MAX - (u32::MAX % bound);
    loop {
        let mut bytes = [0_u8; 4];
        fill_random(&mut bytes);
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
    fn tokens_drawn_across_many_pool_refills_never_repeat() {
        let tokens: std::collections::HashSet<String> = (0..2000).map(|_| random_token(15)).collect();
        assert_eq!(tokens.len(), 2000);
        assert!(tokens.iter().all(|t| t.len() == 20));
        // Longer than one pool: the same length as one-piece encoding, and not a repeated block.
        let long = random_token(1000);
        assert_eq!(long.len(), 1334);
        assert_ne!(long[..512], long[512..1024]);
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
