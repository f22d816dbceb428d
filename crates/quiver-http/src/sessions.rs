//! The console's sign-in sessions, held in this node's memory.
//!
//! A session is made by signing in with an account's email and API key, and is named by a random id
//! that only the browser's `HttpOnly` cookie carries. It ends at sign-out, after `idle` without a
//! request, or `lifetime` after sign-in, whichever comes first. Each session also has a random CSRF
//! token that every request but sign-in must repeat in a header: a page of another site can make the
//! browser send the cookie (where `SameSite` is not honoured) but cannot read the token.
//!
//! Sessions live in memory, so a restart signs everyone out, and behind a load balancer each node
//! knows only the sessions made on it (docs/OPERATIONS.md says to keep a browser on one node).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use quiver_admin::Account;
use quiver_core::{Clock, Timestamp};

/// Most sessions a node holds at once. Signing in beyond it ends the session least recently used, so
/// a flood of sign-ins cannot grow the map without bound.
const MAX_SESSIONS: usize = 10_000;

/// Random bytes in a session id and in a CSRF token (256 bits each).
const TOKEN_BYTES: usize = 32;

/// What a request made in a session acts as: the account's credentials as they were at sign-in. A key
/// or token reset since then makes the APIs refuse them, which ends the console's use of them too.
#[derive(Clone)]
pub struct SignedIn {
    /// The account's email (the management API's user name).
    pub email: String,
    /// The account's API key (the management API's password).
    pub api_key: String,
    /// The account's queue token.
    pub queue_token: String,
    /// The token every request of the session repeats in `X-Quiver-Csrf`.
    pub csrf: String,
}

impl std::fmt::Debug for SignedIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignedIn")
            .field("email", &self.email)
            .finish_non_exhaustive()
    }
}

#[derive(Debug)]
struct Session {
    who: SignedIn,
    started: Timestamp,
    last_seen: Timestamp,
}

/// This node's console sessions.
#[derive(Debug)]
pub struct Sessions {
    clock: Arc<dyn Clock>,
    idle: Duration,
    lifetime: Duration,
    sessions: Mutex<HashMap<String, Session>>,
}

impl Sessions {
    /// No sessions yet; each will end after `idle` without a request or `lifetime` after sign-in.
    pub fn new(clock: Arc<dyn Clock>, idle: Duration, lifetime: Duration) -> Sessions {
        Sessions {
            clock,
            idle,
            lifetime,
            sessions: Mutex::new(HashMap::new()),
        }
    }

    /// The time now, by the clock sessions keep.
    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// How long a session may last at most (the cookie's `Max-Age`).
    pub fn lifetime(&self) -> Duration {
        self.lifetime
    }

    /// Starts a session for `account`: its id (for the cookie) and what it acts as.
    pub fn sign_in(&self, account: &Account) -> (String, SignedIn) {
        let now = self.clock.now();
        let id = quiver_core::secret::random_token(TOKEN_BYTES);
        let who = SignedIn {
            email: account.email.to_string(),
            api_key: account.api_key.clone(),
            queue_token: account.queue_token.clone(),
            csrf: quiver_core::secret::random_token(TOKEN_BYTES),
        };
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        sessions.retain(|_, session| self.is_live(session, now));
        if sessions.len() >= MAX_SESSIONS {
            let least_recent = sessions
                .iter()
                .min_by_key(|(_, session)| session.last_seen)
                .map(|(id, _)| id.clone());
            if let Some(least_recent) = least_recent {
                sessions.remove(&least_recent);
            }
        }
        sessions.insert(
            id.clone(),
            Session {
                who: who.clone(),
                started: now,
                last_seen: now,
            },
        );
        (id, who)
    }

    /// The live session named `id`, which this request keeps alive; `None` when there is none (never
    /// made, signed out, or ended, in which case it is forgotten).
    pub fn find(&self, id: &str) -> Option<SignedIn> {
        let now = self.clock.now();
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        let session = sessions.get_mut(id)?;
        if !self.is_live(session, now) {
            sessions.remove(id);
            return None;
        }
        session.last_seen = now;
        Some(session.who.clone())
    }

    /// Ends the session named `id`, if there is one.
    pub fn sign_out(&self, id: &str) {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
    }

    fn is_live(&self, session: &Session, now: Timestamp) -> bool {
        now.duration_since(session.last_seen) < self.idle
            && now.duration_since(session.started) < self.lifetime
    }
}

#[cfg(test)]
mod tests {
    use quiver_core::ManualClock;

    use super::*;

    fn account() -> Account {
        Account {
            id: quiver_core::AccountId::random(),
            email: quiver_admin::Email::try_from("ops@example.com".to_owned()).unwrap(),
            api_key: "key".to_owned(),
            queue_token: "queue".to_owned(),
            queue_read_only_token: "read".to_owned(),
            current_signing_key: "current".to_owned(),
            next_signing_key: "next".to_owned(),
            created_at: Timestamp::EPOCH,
            is_bootstrap: false,
        }
    }

    fn sessions(clock: &ManualClock) -> Sessions {
        Sessions::new(
            Arc::new(clock.clone()),
            Duration::from_secs(60),
            Duration::from_secs(600),
        )
    }

    #[test]
    fn a_session_ends_after_idle_time_without_requests() {
        let clock = ManualClock::starting_now();
        let sessions = sessions(&clock);
        let (id, who) = sessions.sign_in(&account());
        assert_eq!(who.email, "ops@example.com");
        clock.advance(Duration::from_secs(59));
        assert!(sessions.find(&id).is_some(), "a request keeps it alive");
        clock.advance(Duration::from_secs(59));
        assert!(
            sessions.find(&id).is_some(),
            "idle time counts from the last request"
        );
        clock.advance(Duration::from_secs(60));
        assert!(sessions.find(&id).is_none());
    }

    #[test]
    fn a_session_ends_at_its_lifetime_however_busy() {
        let clock = ManualClock::starting_now();
        let sessions = sessions(&clock);
        let (id, _) = sessions.sign_in(&account());
        for _ in 0..19 {
            clock.advance(Duration::from_secs(30));
            assert!(sessions.find(&id).is_some());
        }
        clock.advance(Duration::from_secs(30));
        assert!(sessions.find(&id).is_none());
    }

    #[test]
    fn signing_out_ends_only_that_session_and_ids_differ() {
        let clock = ManualClock::starting_now();
        let sessions = sessions(&clock);
        let (first, first_who) = sessions.sign_in(&account());
        let (second, second_who) = sessions.sign_in(&account());
        assert_ne!(first, second);
        assert_ne!(first_who.csrf, second_who.csrf);
        assert!(first.len() >= 43, "256 random bits");
        sessions.sign_out(&first);
        assert!(sessions.find(&first).is_none());
        assert!(sessions.find(&second).is_some());
    }
}
