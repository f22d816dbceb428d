//! Header names: the configuration prefixes (`Svc-`, and `Upstash-` as an alias) and canonical case.

/// The configuration key of a header or query name (`Svc-Retries`, `upstash-retries` -> `retries`), or
/// `None` when it carries neither prefix.
pub fn config_key(name: &str) -> Option<String> {
    let lower = name.to_ascii_lowercase();
    lower
        .strip_prefix("svc-")
        .or_else(|| lower.strip_prefix("upstash-"))
        .map(str::to_owned)
}

/// `test-header` -> `Test-Header`.
pub fn canonical(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = true;
    for c in name.chars() {
        if upper {
            out.extend(c.to_uppercase());
        } else {
            out.extend(c.to_lowercase());
        }
        upper = c == '-';
    }
    out
}

/// Headers never forwarded by `Header-Forward: true`: credentials, hop-by-hop and framing headers.
pub fn is_private_header(lowercase_name: &str) -> bool {
    matches!(
        lowercase_name,
        "authorization"
            | "host"
            | "content-length"
            | "connection"
            | "keep-alive"
            | "transfer-encoding"
            | "te"
            | "trailer"
            | "upgrade"
            | "proxy-authorization"
            | "accept-encoding"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_prefixes_give_the_same_key_in_any_case() {
        assert_eq!(config_key("Svc-Retries").as_deref(), Some("retries"));
        assert_eq!(
            config_key("upstash-callback-forward-x").as_deref(),
            Some("callback-forward-x")
        );
        assert_eq!(config_key("Content-Type"), None);
    }

    #[test]
    fn canonical_case_capitalises_each_word() {
        assert_eq!(canonical("test-header"), "Test-Header");
        assert_eq!(canonical("X-API-KEY"), "X-Api-Key");
    }
}
