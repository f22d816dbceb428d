//! The management operations, with their rules. HTTP handlers call these and nothing below them.

use std::collections::HashMap;
use std::sync::Arc;

use quiver_core::index::{DenseModel, IndexType, SparseModel};
use quiver_core::plan::PlanType;
use quiver_core::secret::constant_time_eq;
use quiver_core::{Clock, IndexId, StoreError};
use tracing::info;

use crate::account::{Account, BootstrapCredentials, Email, new_token};
use crate::catalog::{
    IndexKind, IndexName, IndexRecord, IndexSettings, NewSearchIndex, NewVectorIndex, SearchSettings,
    VectorSettings,
};
use crate::endpoint_names::random_endpoint;
use crate::error::AdminError;
use crate::store::AdminStore;

/// How many fresh endpoint names to try before giving up on a clash.
const ENDPOINT_ATTEMPTS: usize = 8;

/// The outcome of [`Admin::bootstrap`].
#[derive(Debug, Clone)]
pub struct Bootstrap {
    /// The bootstrap account as stored now.
    pub account: Account,
    /// Whether it was created by this call (so its credentials should be shown once).
    pub created: bool,
}

/// Accounts and the index catalogue.
#[derive(Clone)]
pub struct Admin {
    store: Arc<dyn AdminStore>,
    clock: Arc<dyn Clock>,
    accounts: Arc<AccountCache>,
}

/// Accounts already read, by queue token and by id, so the queue's hot paths (authenticating every
/// publish, signing every delivery) do not read the catalogue each time. Every change an `Admin` makes
/// to an account clears it. Accounts are changed elsewhere only at start-up (bootstrap) or created by
/// `quiver accounts create`, whose new tokens simply miss the cache.
#[derive(Debug, Default)]
struct AccountCache {
    by_queue_token: std::sync::RwLock<HashMap<String, std::sync::Arc<Account>>>,
    by_id: std::sync::RwLock<HashMap<quiver_core::AccountId, Account>>,
    /// Indexes by either token; cleared on every index change.
    indexes_by_token: std::sync::RwLock<HashMap<String, IndexRecord>>,
}

impl AccountCache {
    fn clear(&self) {
        self.by_queue_token
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        self.by_id.write().unwrap_or_else(|p| p.into_inner()).clear();
        self.clear_indexes();
    }

    fn clear_indexes(&self) {
        self.indexes_by_token
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }
}

impl std::fmt::Debug for Admin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admin").finish_non_exhaustive()
    }
}

impl Admin {
    /// The management domain over `store`, reading time from `clock`.
    pub fn new(store: Arc<dyn AdminStore>, clock: Arc<dyn Clock>) -> Admin {
        Admin {
            store,
            clock,
            accounts: Arc::default(),
        }
    }

    /// Makes sure the bootstrap account exists and carries every wanted credential; generates what is
    /// neither wanted nor stored. Values in `wanted` replace stored ones.
    ///
    /// # Errors
    /// [`AdminError::AccountExists`] when a wanted email belongs to another account; store failures.
    pub async fn bootstrap(&self, wanted: &BootstrapCredentials) -> Result<Bootstrap, AdminError> {
        if let Some(mut account) = self.store.bootstrap_account().await? {
            if wanted.apply_to(&mut account) {
                self.store
                    .update_account(&account)
                    .await
                    .map_err(|e| email_conflict(e, &account.email))?;
                self.accounts.clear();
                info!(account.email = %account.email, "bootstrap account credentials updated from the environment");
            }
            return Ok(Bootstrap {
                account,
                created: false,
            });
        }
        let email = wanted.email.clone().unwrap_or_else(default_admin_email);
        let mut account = Account::generate(email, self.clock.now(), true);
        wanted.apply_to(&mut account);
        if let Err(error) = self.store.insert_account(&account).await {
            // Another node sharing the store created it first: that one is the bootstrap account.
            if let Some(theirs) = self.store.bootstrap_account().await? {
                return Ok(Bootstrap {
                    account: theirs,
                    created: false,
                });
            }
            return Err(email_conflict(error, &account.email));
        }
        info!(account.email = %account.email, "bootstrap account created");
        Ok(Bootstrap {
            account,
            created: true,
        })
    }

    /// Forgets every cached account and index, so the next use reads the catalogue: where other nodes
    /// change the same catalogue (a rotated token, a deleted index), this bounds how long this node
    /// answers from what it read before.
    pub fn forget_cached(&self) {
        self.accounts.clear();
    }

    /// The bootstrap account, if the server has started once.
    ///
    /// # Errors
    /// Store failures.
    pub async fn bootstrap_account(&self) -> Result<Option<Account>, AdminError> {
        Ok(self.store.bootstrap_account().await?)
    }

    /// The account with this email.
    ///
    /// # Errors
    /// [`AdminError::AccountNotFound`]; store failures.
    pub async fn account(&self, email: &str) -> Result<Account, AdminError> {
        self.store
            .account_by_email(email)
            .await?
            .ok_or_else(|| AdminError::AccountNotFound(email.to_owned()))
    }

    /// Adds an account with generated credentials.
    ///
    /// # Errors
    /// [`AdminError::AccountExists`]; store failures.
    pub async fn create_account(&self, email: Email) -> Result<Account, AdminError> {
        let account = Account::generate(email, self.clock.now(), false);
        self.store
            .insert_account(&account)
            .await
            .map_err(|e| email_conflict(e, &account.email))?;
        info!(account.email = %account.email, "account created");
        Ok(account)
    }

    /// The account whose email and API key these are.
    ///
    /// # Errors
    /// [`AdminError::Unauthorized`] for an unknown email or a wrong key (indistinguishable on purpose).
    pub async fn authenticate(&self, email: &str, api_key: &str) -> Result<Account, AdminError> {
        match self.store.account_by_email(email).await? {
            Some(account) if constant_time_eq(&account.api_key, api_key) => Ok(account),
            Some(_) | None => Err(AdminError::Unauthorized),
        }
    }

    /// The account a queue bearer token belongs to, and whether the token is the read-only one.
    ///
    /// # Errors
    /// [`AdminError::Unauthorized`] for an unknown token.
    pub async fn authenticate_queue(
        &self,
        token: &str,
    ) -> Result<(std::sync::Arc<Account>, bool), AdminError> {
        let cached = self
            .accounts
            .by_queue_token
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(token)
            .cloned();
        let found = match cached {
            Some(account) => Some(account),
            None => {
                let stored = self
                    .store
                    .account_by_queue_token(token)
                    .await?
                    .map(std::sync::Arc::new);
                if let Some(account) = &stored {
                    self.accounts
                        .by_queue_token
                        .write()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(token.to_owned(), std::sync::Arc::clone(account));
                }
                stored
            }
        };
        match found {
            Some(account) if constant_time_eq(&account.queue_token, token) => Ok((account, false)),
            Some(account) if constant_time_eq(&account.queue_read_only_token, token) => Ok((account, true)),
            Some(_) | None => Err(AdminError::Unauthorized),
        }
    }

    /// Makes the next signing key current and generates a new next one; returns the account as stored.
    ///
    /// # Errors
    /// Store failures.
    pub async fn rotate_signing_keys(&self, account: &Account) -> Result<Account, AdminError> {
        let mut rotated = self
            .store
            .account_by_id(account.id)
            .await?
            .ok_or_else(|| AdminError::AccountNotFound(account.email.to_string()))?;
        rotated.current_signing_key =
            std::mem::replace(&mut rotated.next_signing_key, crate::account::new_signing_key());
        self.store.update_account(&rotated).await?;
        self.accounts.clear();
        info!(account.email = %rotated.email, "signing keys rotated");
        Ok(rotated)
    }

    /// The account whose queue token carries `user_id` (see `account::queue_token_user`): the owner of a
    /// workflow webhook URL. Webhooks are rare; the accounts are scanned.
    ///
    /// # Errors
    /// Store failures.
    pub async fn account_by_queue_user(&self, user_id: &str) -> Result<Option<Account>, AdminError> {
        Ok(self.store.accounts().await?.into_iter().find(|account| {
            crate::account::queue_token_user(&account.queue_token).as_deref() == Some(user_id)
        }))
    }

    /// The account with this id.
    ///
    /// # Errors
    /// Store failures.
    pub async fn account_by_id(&self, id: quiver_core::AccountId) -> Result<Option<Account>, AdminError> {
        if let Some(account) = self
            .accounts
            .by_id
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
        {
            return Ok(Some(account.clone()));
        }
        let stored = self.store.account_by_id(id).await?;
        if let Some(account) = &stored {
            self.accounts
                .by_id
                .write()
                .unwrap_or_else(|p| p.into_inner())
                .insert(id, account.clone());
        }
        Ok(stored)
    }

    /// The index whose read-write or read-only token this is, and whether it is the read-only one.
    ///
    /// # Errors
    /// [`AdminError::Unauthorized`] for an unknown token; store failures.
    pub async fn index_by_token(&self, token: &str) -> Result<(IndexRecord, bool), AdminError> {
        let cached = self
            .accounts
            .indexes_by_token
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(token)
            .cloned();
        let record = match cached {
            Some(record) => record,
            None => {
                let record = self
                    .store
                    .index_by_token(token)
                    .await?
                    .ok_or(AdminError::Unauthorized)?;
                self.accounts
                    .indexes_by_token
                    .write()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(token.to_owned(), record.clone());
                record
            }
        };
        if constant_time_eq(&record.token, token) {
            Ok((record, false))
        } else if constant_time_eq(&record.read_only_token, token) {
            Ok((record, true))
        } else {
            Err(AdminError::Unauthorized)
        }
    }

    /// Checks a new vector index's settings without storing anything (what
    /// [`Admin::create_vector_index`] checks first).
    ///
    /// # Errors
    /// As [`Admin::create_vector_index`], store failures aside.
    pub fn check_vector_index(&self, request: &NewVectorIndex) -> Result<(), AdminError> {
        vector_settings(request).map(|_| ())
    }

    /// Creates a vector index owned by `owner`.
    ///
    /// # Errors
    /// [`AdminError::InvalidField`] when the settings do not fit together or exceed the plan;
    /// [`AdminError::Unsupported`] for a model that cannot run here; store failures.
    pub async fn create_vector_index(
        &self,
        owner: &Account,
        request: NewVectorIndex,
    ) -> Result<IndexRecord, AdminError> {
        let settings = vector_settings(&request)?;
        self.insert_new_index(
            owner,
            request.name,
            request.plan,
            IndexSettings::VectorV1(settings),
        )
        .await
    }

    /// Creates a search index owned by `owner`.
    ///
    /// # Errors
    /// Store failures.
    pub async fn create_search_index(
        &self,
        owner: &Account,
        request: NewSearchIndex,
    ) -> Result<IndexRecord, AdminError> {
        let settings = SearchSettings {
            region: request.region,
            input_enrichment_enabled: true,
        };
        self.insert_new_index(
            owner,
            request.name,
            request.plan,
            IndexSettings::SearchV1(settings),
        )
        .await
    }

    async fn insert_new_index(
        &self,
        owner: &Account,
        name: IndexName,
        plan: PlanType,
        settings: IndexSettings,
    ) -> Result<IndexRecord, AdminError> {
        let mut last_error = None;
        for _ in 0..ENDPOINT_ATTEMPTS {
            let record = IndexRecord {
                id: IndexId::random(),
                account_id: owner.id,
                name: name.clone(),
                endpoint: random_endpoint(),
                plan,
                token: new_token(),
                read_only_token: new_token(),
                created_at: self.clock.now(),
                settings: settings.clone(),
            };
            match self.store.insert_index(&record).await {
                Ok(()) => {
                    info!(index.id = %record.id, index.endpoint = %record.endpoint, kind = record.kind().as_str(), "index created");
                    return Ok(record);
                }
                // A clash of random names or tokens: draw again.
                Err(StoreError::Conflict(what)) => last_error = Some(StoreError::Conflict(what)),
                Err(other) => return Err(other.into()),
            }
        }
        Err(last_error
            .unwrap_or_else(|| StoreError::Backend("no endpoint name was free".into()))
            .into())
    }

    /// The owner's indexes of one kind, oldest first.
    ///
    /// # Errors
    /// Store failures.
    pub async fn indexes(&self, owner: &Account, kind: IndexKind) -> Result<Vec<IndexRecord>, AdminError> {
        Ok(self.store.indexes(owner.id, kind).await?)
    }

    /// One of the owner's indexes. Another account's index is reported exactly as an unknown one.
    ///
    /// # Errors
    /// [`AdminError::IndexNotFound`] for a malformed, unknown, foreign or other-kind id; store failures.
    pub async fn index(&self, owner: &Account, kind: IndexKind, id: &str) -> Result<IndexRecord, AdminError> {
        let not_found = || AdminError::IndexNotFound(id.to_owned());
        let parsed: IndexId = id.parse().map_err(|_| not_found())?;
        match self.store.index(owner.id, parsed).await? {
            Some(record) if record.kind() == kind => Ok(record),
            Some(_) | None => Err(not_found()),
        }
    }

    /// Deletes one of the owner's indexes.
    ///
    /// # Errors
    /// As [`Admin::index`].
    pub async fn delete_index(
        &self,
        owner: &Account,
        kind: IndexKind,
        id: &str,
    ) -> Result<IndexRecord, AdminError> {
        let record = self.index(owner, kind, id).await?;
        if !self.store.delete_index(owner.id, record.id).await? {
            return Err(AdminError::IndexNotFound(id.to_owned()));
        }
        self.accounts.clear_indexes();
        info!(index.id = %record.id, "index deleted");
        Ok(record)
    }

    /// Renames one of the owner's indexes.
    ///
    /// # Errors
    /// As [`Admin::index`].
    pub async fn rename_index(
        &self,
        owner: &Account,
        kind: IndexKind,
        id: &str,
        name: IndexName,
    ) -> Result<(), AdminError> {
        self.change_index(owner, kind, id, |record| {
            record.name = name;
            Ok(())
        })
        .await
    }

    /// Replaces both tokens of one of the owner's indexes; the old ones stop working at once.
    ///
    /// # Errors
    /// As [`Admin::index`].
    pub async fn reset_index_tokens(
        &self,
        owner: &Account,
        kind: IndexKind,
        id: &str,
    ) -> Result<(), AdminError> {
        self.change_index(owner, kind, id, |record| {
            record.token = new_token();
            record.read_only_token = new_token();
            Ok(())
        })
        .await
    }

    /// Moves one of the owner's indexes to another plan.
    ///
    /// # Errors
    /// [`AdminError::InvalidField`] when the index does not fit the target plan; as [`Admin::index`].
    pub async fn set_plan(
        &self,
        owner: &Account,
        kind: IndexKind,
        id: &str,
        plan: PlanType,
    ) -> Result<(), AdminError> {
        self.change_index(owner, kind, id, |record| {
            if let IndexSettings::VectorV1(settings) = &record.settings {
                check_dimension(settings.dimension_count, plan, "target_plan")?;
            }
            record.plan = plan;
            Ok(())
        })
        .await
    }

    /// Gives one of the owner's indexes to the account with email (or id) `target`.
    ///
    /// # Errors
    /// [`AdminError::AccountNotFound`] for an unknown target; as [`Admin::index`].
    pub async fn transfer_index(
        &self,
        owner: &Account,
        kind: IndexKind,
        id: &str,
        target: &str,
    ) -> Result<(), AdminError> {
        let target_account = match self.store.account_by_email(target).await? {
            Some(account) => account,
            None => {
                let by_id = match target.parse() {
                    Ok(account_id) => self.store.account_by_id(account_id).await?,
                    Err(_) => None,
                };
                by_id.ok_or_else(|| AdminError::AccountNotFound(target.to_owned()))?
            }
        };
        self.change_index(owner, kind, id, |record| {
            record.account_id = target_account.id;
            Ok(())
        })
        .await
    }

    async fn change_index(
        &self,
        owner: &Account,
        kind: IndexKind,
        id: &str,
        change: impl FnOnce(&mut IndexRecord) -> Result<(), AdminError>,
    ) -> Result<(), AdminError> {
        let mut record = self.index(owner, kind, id).await?;
        change(&mut record)?;
        let updated = self.store.update_index(&record).await?;
        self.accounts.clear_indexes();
        if updated {
            Ok(())
        } else {
            Err(AdminError::IndexNotFound(id.to_owned()))
        }
    }
}

/// The email of a bootstrap account created without one.
fn default_admin_email() -> Email {
    Email::try_from("admin@quiver.local".to_owned()).unwrap_or_else(|_| unreachable!("a valid literal"))
}

fn email_conflict(error: StoreError, email: &Email) -> AdminError {
    match error {
        StoreError::Conflict(_) => AdminError::AccountExists(email.to_string()),
        other @ (StoreError::Corrupt(_) | StoreError::Backend(_) | StoreError::Closed) => other.into(),
    }
}

fn invalid(field: &'static str, message: impl Into<String>) -> AdminError {
    AdminError::InvalidField {
        field,
        message: message.into(),
    }
}

fn check_dimension(dimension: u32, plan: PlanType, field: &'static str) -> Result<(), AdminError> {
    let max = plan.vector_limits().max_dimension;
    if dimension > max {
        return Err(invalid(
            field,
            format!("dimension {dimension} exceeds the {plan} plan's maximum of {max}"),
        ));
    }
    Ok(())
}

fn vector_settings(request: &NewVectorIndex) -> Result<VectorSettings, AdminError> {
    if request.embedding_model == Some(DenseModel::BgeM3) {
        return Err(AdminError::Unsupported(
            "embedding_model: BGE_M3 is not supported yet; use BGE_SMALL_EN_V1_5, BGE_BASE_EN_V1_5, \
             BGE_LARGE_EN_V1_5 or ALL_MINILM_L6_V2"
                .into(),
        ));
    }
    if request.sparse_embedding_model == Some(SparseModel::BgeM3) {
        return Err(AdminError::Unsupported(
            "sparse_embedding_model: BGE_M3 is not supported yet; use BM25".into(),
        ));
    }
    let has_dense = matches!(request.index_type, IndexType::Dense | IndexType::Hybrid);
    let has_sparse = matches!(request.index_type, IndexType::Sparse | IndexType::Hybrid);
    if !has_dense && request.embedding_model.is_some() {
        return Err(invalid(
            "embedding_model",
            "only DENSE and HYBRID indexes have a dense embedding model",
        ));
    }
    if !has_sparse && request.sparse_embedding_model.is_some() {
        return Err(invalid(
            "sparse_embedding_model",
            "only SPARSE and HYBRID indexes have a sparse embedding model",
        ));
    }
    let dimension_count = if has_dense {
        let dimension = match (request.embedding_model, request.dimension_count) {
            (Some(model), Some(given)) if given != model.dimensions() => {
                return Err(invalid(
                    "dimension_count",
                    format!(
                        "{given} does not match embedding_model {model}, which has {} dimensions",
                        model.dimensions()
                    ),
                ));
            }
            (Some(model), _) => model.dimensions(),
            (None, Some(given)) => given,
            (None, None) => {
                return Err(invalid(
                    "dimension_count",
                    "is required for DENSE and HYBRID indexes without an embedding_model",
                ));
            }
        };
        if dimension == 0 {
            return Err(invalid("dimension_count", "must be at least 1"));
        }
        check_dimension(dimension, request.plan, "dimension_count")?;
        dimension
    } else {
        0
    };
    Ok(VectorSettings {
        region: request.region,
        similarity_function: request.similarity_function,
        dimension_count,
        index_type: request.index_type,
        embedding_model: request.embedding_model,
        sparse_embedding_model: request.sparse_embedding_model,
    })
}

#[cfg(test)]
mod tests {
    use quiver_core::index::{SimilarityFunction, VectorRegion};

    use super::*;

    fn request() -> NewVectorIndex {
        NewVectorIndex {
            name: IndexName::try_from("docs".to_owned()).unwrap(),
            region: VectorRegion::UsEast1,
            similarity_function: SimilarityFunction::Cosine,
            dimension_count: Some(384),
            plan: PlanType::Free,
            index_type: IndexType::Dense,
            embedding_model: None,
            sparse_embedding_model: None,
        }
    }

    fn field_of(error: AdminError) -> &'static str {
        let AdminError::InvalidField { field, .. } = error else {
            panic!("expected an invalid field, got {error:?}");
        };
        field
    }

    #[test]
    fn an_embedding_model_sets_the_dimension_and_a_different_one_is_refused() {
        let with_model = NewVectorIndex {
            embedding_model: Some(DenseModel::BgeBaseEnV15),
            dimension_count: None,
            ..request()
        };
        assert_eq!(vector_settings(&with_model).unwrap().dimension_count, 768);
        let clash = NewVectorIndex {
            dimension_count: Some(384),
            ..with_model
        };
        assert_eq!(field_of(vector_settings(&clash).unwrap_err()), "dimension_count");
    }

    #[test]
    fn the_free_plan_caps_the_dimension_and_paid_plans_raise_the_cap() {
        let large = NewVectorIndex {
            dimension_count: Some(2048),
            ..request()
        };
        assert_eq!(field_of(vector_settings(&large).unwrap_err()), "dimension_count");
        let paid = NewVectorIndex {
            plan: PlanType::Payg,
            ..large
        };
        assert_eq!(vector_settings(&paid).unwrap().dimension_count, 2048);
    }

    #[test]
    fn sparse_indexes_need_no_dimension_and_take_no_dense_model() {
        let sparse = NewVectorIndex {
            index_type: IndexType::Sparse,
            dimension_count: None,
            sparse_embedding_model: Some(SparseModel::Bm25),
            ..request()
        };
        assert_eq!(vector_settings(&sparse).unwrap().dimension_count, 0);
        let with_dense = NewVectorIndex {
            embedding_model: Some(DenseModel::BgeSmallEnV15),
            ..sparse
        };
        assert_eq!(
            field_of(vector_settings(&with_dense).unwrap_err()),
            "embedding_model"
        );
    }

    #[test]
    fn dense_indexes_need_a_dimension_from_somewhere() {
        let missing = NewVectorIndex {
            dimension_count: None,
            ..request()
        };
        assert_eq!(
            field_of(vector_settings(&missing).unwrap_err()),
            "dimension_count"
        );
        let zero = NewVectorIndex {
            dimension_count: Some(0),
            ..request()
        };
        assert_eq!(field_of(vector_settings(&zero).unwrap_err()), "dimension_count");
    }

    #[test]
    fn bge_m3_is_refused_as_not_supported_yet() {
        let m3 = NewVectorIndex {
            embedding_model: Some(DenseModel::BgeM3),
            dimension_count: None,
            ..request()
        };
        assert!(matches!(vector_settings(&m3), Err(AdminError::Unsupported(_))));
    }
}
