//! Delivery signatures: an HS256 JWT over the destination URL and the body's SHA-256, verifiable by the
//! official receivers (`iss` "Upstash", `sub` the URL, `exp` five minutes on, `body` base64url hash).

use std::fmt::Write as _;

use base64::Engine;
use base64::engine::general_purpose::{URL_SAFE, URL_SAFE_NO_PAD};
use hmac::{Hmac, KeyInit, Mac};
use quiver_core::Timestamp;
use quiver_core::secret::append_random_token;
use sha2::{Digest, Sha256};

/// How long a signature stays valid.
pub const SIGNATURE_LIFETIME_SECS: i64 = 300;

/// The JWT header every signature carries, `{"alg":"HS256","typ":"JWT"}` in base64url.
const HEADER: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9";

/// Signs a delivery of `body` to `url` with `key`, issued by `issuer` at `now` (wall-clock time: the
/// receiver checks `nbf` and `exp` against its own clock). Every delivery is signed, so the claims are
/// written straight into one buffer rather than built as a JSON value first.
pub fn sign(key: &str, issuer: &str, url: &str, body: &[u8], now: Timestamp) -> String {
    let issued = now.as_secs();
    // Writing to a `String` cannot fail, so the `write!` results below are ignored.
    let mut claims = String::with_capacity(160 + issuer.len() + url.len());
    claims.push_str(r#"{"body":""#);
    URL_SAFE.encode_string(Sha256::digest(body), &mut claims);
    let _ = write!(
        claims,
        r#"","exp":{},"iat":{issued},"iss":"#,
        issued + SIGNATURE_LIFETIME_SECS
    );
    push_json_string(&mut claims, issuer);
    claims.push_str(r#","jti":"jwt_"#);
    append_random_token(&mut claims, 16);
    let _ = write!(claims, r#"","nbf":{issued},"sub":"#);
    push_json_string(&mut claims, url);
    claims.push('}');
    let mut token = String::with_capacity(HEADER.len() + 2 + claims.len().div_ceil(3) * 4 + 43);
    token.push_str(HEADER);
    token.push('.');
    URL_SAFE_NO_PAD.encode_string(claims.as_bytes(), &mut token);
    let signature = hmac_sha256(key.as_bytes(), token.as_bytes());
    token.push('.');
    URL_SAFE_NO_PAD.encode_string(signature, &mut token);
    token
}

/// Appends `text` as a JSON string: quoted, with quotes, backslashes and control characters escaped.
fn push_json_string(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => {
                // Writing to a `String` cannot fail.
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
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
    fn claims_are_valid_json_whatever_the_url_and_issuer_hold() {
        let now = Timestamp::from_millis(1_700_000_000_000);
        let issuer = "Up\"stash\\ \u{1}\n é";
        let url = "http://127.0.0.1:9/a?q=\"x\"&p=\\";
        let token = sign("k", issuer, url, b"", now);
        let [header, _, _] = token.split('.').collect::<Vec<_>>()[..] else {
            panic!("a JWT has three parts: {token}");
        };
        let header: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).unwrap()).unwrap();
        assert_eq!(header, serde_json::json!({"alg": "HS256", "typ": "JWT"}));
        let claims = decode_claims(&token);
        assert_eq!(claims["iss"], issuer);
        assert_eq!(claims["sub"], url);
        assert_eq!(claims["iat"], 1_700_000_000);
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
