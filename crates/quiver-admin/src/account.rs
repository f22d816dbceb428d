//! Accounts and their credentials.

use std::fmt;

use quiver_core::secret::random_token;
use quiver_core::{AccountId, Timestamp};
use serde::{Deserialize, Serialize};

/// An email address used as an account's login. 3 to 254 characters, one `@`, no white space.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Email(String);

/// Why a text is not an acceptable email.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not an email address")]
pub struct InvalidEmail(pub String);

impl Email {
    /// The address as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for Email {
    type Error = InvalidEmail;
    fn try_from(text: String) -> Result<Self, InvalidEmail> {
        let valid = (3..=254).contains(&text.len())
            && !text.chars().any(|c| c.is_whitespace() || c.is_control())
            && text.split_once('@').is_some_and(|(local, domain)| {
                !local.is_empty() && !domain.is_empty() && !domain.contains('@')
            });
        if valid {
            Ok(Email(text))
        } else {
            Err(InvalidEmail(text))
        }
    }
}

impl From<Email> for String {
    fn from(email: Email) -> String {
        email.0
    }
}

impl fmt::Display for Email {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An account: the owner of indexes and of queue data.
#[derive(Clone, PartialEq, Eq)]
pub struct Account {
    /// Stable identifier.
    pub id: AccountId,
    /// Login for the management API (HTTP Basic user name).
    pub email: Email,
    /// Password for the management API.
    pub api_key: String,
    /// Bearer token for the message queue.
    pub queue_token: String,
    /// Bearer token that may only read queue data.
    pub queue_read_only_token: String,
    /// Key that signs deliveries now.
    pub current_signing_key: String,
    /// Key that will sign deliveries after the next rotation.
    pub next_signing_key: String,
    /// When the account was created.
    pub created_at: Timestamp,
    /// Whether this is the account made at first start (the one `quiver credentials` prints).
    pub is_bootstrap: bool,
}

impl fmt::Debug for Account {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Account")
            .field("id", &self.id)
            .field("email", &self.email)
            .field("created_at", &self.created_at)
            .field("is_bootstrap", &self.is_bootstrap)
            .finish_non_exhaustive()
    }
}

/// A new API key or queue token: 32 random bytes, base64url.
pub fn new_token() -> String {
    random_token(32)
}

/// A new queue token, shaped like the hosted service's: the base64 of `{"UserID": <account id>,
/// "Password": <32 random bytes, base64url>}`. The workflow SDK reads the `UserID` out of it to build
/// webhook URLs (`/v2/workflows/hooks/{userId}/...`).
pub fn new_queue_token(account: AccountId) -> String {
    use base64::Engine;
    let payload = serde_json::json!({"UserID": account.to_string(), "Password": random_token(32)});
    base64::engine::general_purpose::STANDARD.encode(payload.to_string())
}

/// The `UserID` a queue token carries, if it is shaped like the hosted service's tokens (the
/// development token's is `defaultUser`).
pub fn queue_token_user(token: &str) -> Option<String> {
    use base64::Engine;
    // A token of any other shape (older random tokens) simply carries no user: not an error.
    let decoded = base64::engine::general_purpose::STANDARD.decode(token).ok()?;
    let payload: serde_json::Value = serde_json::from_slice(&decoded).ok()?;
    payload.get("UserID")?.as_str().map(str::to_owned)
}

/// A new signing key, shaped like the queue's own (`sig_` and 28 random characters).
pub fn new_signing_key() -> String {
    format!("sig_{}", random_token(21))
}

impl Account {
    /// A new account with freshly generated credentials.
    pub fn generate(email: Email, created_at: Timestamp, is_bootstrap: bool) -> Account {
        let id = AccountId::random();
        Account {
            id,
            email,
            api_key: new_token(),
            queue_token: new_queue_token(id),
            queue_read_only_token: new_queue_token(id),
            current_signing_key: new_signing_key(),
            next_signing_key: new_signing_key(),
            created_at,
            is_bootstrap,
        }
    }
}

/// Credentials wanted for the bootstrap account. Each given value wins over what is stored; what is
/// missing keeps its stored value, or is generated at first start.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct BootstrapCredentials {
    /// Management login.
    pub email: Option<Email>,
    /// Management password.
    pub api_key: Option<String>,
    /// Queue bearer token.
    pub queue_token: Option<String>,
    /// Current signing key.
    pub current_signing_key: Option<String>,
    /// Next signing key.
    pub next_signing_key: Option<String>,
}

impl fmt::Debug for BootstrapCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BootstrapCredentials")
            .field("email", &self.email)
            .finish_non_exhaustive()
    }
}

impl BootstrapCredentials {
    /// Fills every missing value from `fallback`.
    pub fn or(self, fallback: BootstrapCredentials) -> BootstrapCredentials {
        BootstrapCredentials {
            email: self.email.or(fallback.email),
            api_key: self.api_key.or(fallback.api_key),
            queue_token: self.queue_token.or(fallback.queue_token),
            current_signing_key: self.current_signing_key.or(fallback.current_signing_key),
            next_signing_key: self.next_signing_key.or(fallback.next_signing_key),
        }
    }

    /// Applies every given value to `account`; returns whether anything changed.
    pub fn apply_to(&self, account: &mut Account) -> bool {
        let before = account.clone();
        if let Some(email) = &self.email {
            account.email = email.clone();
        }
        let pairs = [
            (&self.api_key, &mut account.api_key),
            (&self.queue_token, &mut account.queue_token),
            (&self.current_signing_key, &mut account.current_signing_key),
            (&self.next_signing_key, &mut account.next_signing_key),
        ];
        for (wanted, field) in pairs {
            if let Some(value) = wanted {
                value.clone_into(field);
            }
        }
        *account != before
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_queue_tokens_carry_their_account_as_user_id_like_the_hosted_ones() {
        let account = Account::generate(
            Email::try_from("a@b.c".to_owned()).unwrap(),
            Timestamp::EPOCH,
            false,
        );
        assert_eq!(
            queue_token_user(&account.queue_token),
            Some(account.id.to_string())
        );
        assert_ne!(account.queue_token, account.queue_read_only_token);
        let dev = "eyJVc2VySUQiOiJkZWZhdWx0VXNlciIsIlBhc3N3b3JkIjoiZGVmYXVsdFBhc3N3b3JkIn0=";
        assert_eq!(queue_token_user(dev).as_deref(), Some("defaultUser"));
        assert_eq!(queue_token_user("not a token"), None);
    }

    #[test]
    fn emails_need_one_at_sign_and_no_spaces() {
        assert!(Email::try_from("a@b".to_owned()).is_ok());
        for bad in ["", "ab", "a b@c", "@b.c", "a@", "a@b@c"] {
            assert!(Email::try_from(bad.to_owned()).is_err(), "{bad} was accepted");
        }
    }

    #[test]
    fn given_bootstrap_values_replace_stored_ones_and_missing_ones_keep_them() {
        let email = Email::try_from("root@example.com".to_owned()).unwrap();
        let mut account = Account::generate(email, Timestamp::EPOCH, true);
        let old_token = account.queue_token.clone();
        let wanted = BootstrapCredentials {
            api_key: Some("key".into()),
            ..Default::default()
        };
        assert!(wanted.apply_to(&mut account));
        assert_eq!(account.api_key, "key");
        assert_eq!(account.queue_token, old_token);
        assert!(!wanted.apply_to(&mut account));
    }

    #[test]
    fn debug_output_never_shows_secrets() {
        let email = Email::try_from("root@example.com".to_owned()).unwrap();
        let account = Account::generate(email, Timestamp::EPOCH, true);
        assert!(!format!("{account:?}").contains(&account.api_key));
    }
}
