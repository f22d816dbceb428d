//! Typed identifiers. Each wraps a UUID and parses only from a well-formed UUID string.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

macro_rules! uuid_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(Uuid);

        impl $name {
            /// A new random (version 4) identifier.
            pub fn random() -> Self {
                $name(Uuid::new_v4())
            }

            /// The underlying UUID.
            pub fn as_uuid(&self) -> Uuid {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.hyphenated().fmt(f)
            }
        }

        impl FromStr for $name {
            type Err = uuid::Error;
            fn from_str(text: &str) -> Result<Self, Self::Err> {
                Uuid::parse_str(text).map($name)
            }
        }
    };
}

uuid_id!(
    /// Identifies an account.
    AccountId
);
uuid_id!(
    /// Identifies a vector or search index.
    IndexId
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_round_trips_through_its_text_form() {
        let id = IndexId::random();
        assert_eq!(id.to_string().parse::<IndexId>().unwrap(), id);
        assert!("not-a-uuid".parse::<IndexId>().is_err());
    }
}
