//! Quiver's shared vocabulary. Every other crate depends on this one; it performs no I/O.
//!
//! - [`clock`]: [`Timestamp`] and the injected [`Clock`] (system and manual).
//! - [`ids`]: typed identifiers ([`AccountId`], [`IndexId`]).
//! - [`secret`]: random tokens and keys, and constant-time comparison.
//! - [`index`]: the closed vocabularies of index settings (regions, similarity, models, kinds).
//! - [`observe`]: histograms and counters the domains keep for `GET /metrics`, without a metrics library.
//! - [`plan`]: plan types and the limits each plan grants.
//! - [`store`]: [`StoreError`], the error every storage trait returns.
#![warn(missing_docs)]

pub mod clock;
pub mod ids;
pub mod index;
pub mod observe;
pub mod plan;
pub mod secret;
pub mod store;

pub use clock::{Clock, ManualClock, SystemClock, Timestamp};
pub use ids::{AccountId, IndexId};
pub use store::StoreError;
