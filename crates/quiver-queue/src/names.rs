//! Names and ids users give to FIFO queues, URL groups, schedules and workflow runs: each a type that
//! only a valid text makes, so the services never see one unchecked.

use std::fmt;

use serde::{Deserialize, Serialize};

/// URL group, FIFO queue and schedule names: `[A-Za-z0-9._-]`, 1 to 128 characters.
pub fn is_valid_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// A text that is not a valid name or id of its kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {kind} `{text}`: {rule}")]
pub struct InvalidName {
    kind: &'static str,
    text: String,
    rule: &'static str,
}

const NAME_RULE: &str = "use 1 to 128 of A-Z, a-z, 0-9, `.`, `_` and `-`";

macro_rules! name_type {
    ($(#[$doc:meta])* $type:ident, $kind:literal, $is_valid:expr, $rule:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $type(String);

        impl $type {
            /// The text as this kind of name.
            ///
            /// # Errors
            /// The text breaks the kind's rule.
            pub fn parse(text: impl Into<String>) -> Result<$type, InvalidName> {
                let text = text.into();
                let is_valid: fn(&str) -> bool = $is_valid;
                if is_valid(&text) {
                    Ok($type(text))
                } else {
                    Err(InvalidName {
                        kind: $kind,
                        text,
                        rule: $rule,
                    })
                }
            }

            /// The text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl TryFrom<String> for $type {
            type Error = InvalidName;
            fn try_from(text: String) -> Result<$type, InvalidName> {
                $type::parse(text)
            }
        }

        impl From<$type> for String {
            fn from(name: $type) -> String {
                name.0
            }
        }

        impl fmt::Display for $type {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $type {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $type {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }
    };
}

name_type!(
    /// The name of a FIFO queue.
    QueueName,
    "queue name",
    is_valid_name,
    NAME_RULE
);
name_type!(
    /// The name of a URL group.
    UrlGroupName,
    "url group name",
    is_valid_name,
    NAME_RULE
);
name_type!(
    /// A schedule's id: chosen by the client (`Svc-Schedule-Id`) or generated (`scd_...`).
    ScheduleId,
    "schedule id",
    is_valid_name,
    NAME_RULE
);
name_type!(
    /// A workflow run's id: chosen by the SDK or the client (`wfr_...` by convention), 1 to 1024 bytes
    /// without control characters.
    RunId,
    "workflow run id",
    |text| (1..=1024).contains(&text.len()) && !text.chars().any(char::is_control),
    "use 1 to 1024 bytes without control characters"
);

impl ScheduleId {
    /// A new, random schedule id.
    pub fn generate() -> ScheduleId {
        ScheduleId(format!("scd_{}", quiver_core::secret::random_token(20)))
    }
}

impl RunId {
    /// A new, random run id.
    pub fn generate() -> RunId {
        RunId(format!("wfr_{}", quiver_core::secret::random_token(16)))
    }

    /// The run id that `digest` names: `wfr_` and the digest's first 16 bytes in URL-safe base64, the
    /// shape of a random one.
    pub(crate) fn of_digest(digest: &[u8]) -> RunId {
        use base64::Engine;
        let bytes = &digest[..digest.len().min(16)];
        RunId(format!(
            "wfr_{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_allow_letters_digits_dots_dashes_and_underscores() {
        assert!(is_valid_name("my-group_1.v2"));
        assert!(!is_valid_name("has space"));
        assert!(!is_valid_name(""));
        assert!(!is_valid_name(&"a".repeat(129)));
    }

    #[test]
    fn only_valid_texts_make_names_and_the_error_says_the_rule() {
        assert_eq!(QueueName::parse("orders").unwrap().as_str(), "orders");
        let error = UrlGroupName::parse("a b").unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid url group name `a b`: use 1 to 128 of A-Z, a-z, 0-9, `.`, `_` and `-`"
        );
        assert!(RunId::parse("wfr_custom:1").is_ok());
        assert!(RunId::parse("wfr\n1").is_err());
        assert!(RunId::parse("").is_err());
        assert!(ScheduleId::generate().as_str().starts_with("scd_"));
        let parsed: Result<QueueName, _> = serde_json::from_str("\"bad name\"");
        assert!(parsed.is_err(), "deserializing checks too");
    }
}
