//! Delivery signatures: an HS256 JWT over the destination URL and the body's SHA-256, verifiable by the
//! official receivers (`iss` "Upstash", `sub` the URL, `exp` five minutes on, `body` base64url hash).

use base64::Engine;
use base64::engine::general_purpose::{URL_SAFE, URL_SAFE_NO_PAD};
use hmac::{Hmac, KeyInit, Mac};
use quiver_core::Timestamp;
use quiver_core::secret::random_token;
use serde_json::json;
use sha2::{Digest, Sha256};

/// How long a signature stays valid.
pub const SIGNATURE_LIFETIME_SECS: i64 = 300;

/// Signs a delivery of `body` to `url` with `key`, issued by `issuer` at `now` (wall-clock time: the
/// receiver checks `nbf` and `exp` against its own clock).
pub fn sign(key: &str, issuer: &str, url: &str, body: &[u8], now: Timestamp) -> String {
    let issued = now.as_secs();
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
    let claims = json!({
        "iss": issuer,
        "sub": url,
        "exp": issued + SIGNATURE_LIFETIME_SECS,
        "nbf": issued,
        "iat": issued,
        "jti": format!("jwt_{}", random_token(16)),
        "body": URL_SAFE.encode(Sha256::digest(body)),
    });
    let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
    let signing_input = format!("{header}.{payload}");
    let signature = URL_SAFE_NO_PAD.encode(hmac_sha256(key.as_bytes(), signing_input.as_bytes()));
    format!("{signing_input}.{signature}")
}

/// HMAC-SHA256 of `message` under `key`.
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> Vec<u8> {
    // HMAC accepts keys of any length, so construction cannot fail.
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
    mac.update(message);
    mac.finalize().into_bytes().to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_claims(token: &str) -> serde_json::Value {
        let payload = token.split('.').nth(1).unwrap();
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap()
    }

    #[test]
    fn a_signature_carries_the_claims_receivers_check_and_verifies_with_the_key() {
        let now = Timestamp::from_millis(1_700_000_000_500);
        let token = sign("sig_key", "Upstash", "http://127.0.0.1:9/hook", b"hello", now);
        let claims = decode_claims(&token);
        assert_eq!(claims["iss"], "Upstash");
        assert_eq!(claims["sub"], "http://127.0.0.1:9/hook");
        assert_eq!(claims["nbf"], 1_700_000_000);
        assert_eq!(claims["exp"], 1_700_000_300);
        assert_eq!(claims["body"], URL_SAFE.encode(Sha256::digest(b"hello")));
        assert!(claims["jti"].as_str().unwrap().starts_with("jwt_"));

        let (signing_input, signature) = token.rsplit_once('.').unwrap();
        let expected = URL_SAFE_NO_PAD.encode(hmac_sha256(b"sig_key", signing_input.as_bytes()));
        assert_eq!(signature, expected);
        let forged = URL_SAFE_NO_PAD.encode(hmac_sha256(b"other_key", signing_input.as_bytes()));
        assert_ne!(signature, forged);
    }

    #[test]
    fn hmac_matches_the_rfc_4231_test_vector() {
        let key = [0x0b_u8; 20];
        let mac = hmac_sha256(&key, b"Hi There");
        let hex: String = mac.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
    }
}
