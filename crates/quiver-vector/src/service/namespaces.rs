//! Namespace operations of an index: list, delete, rename, and a random record.

use quiver_core::secret::random_below;

use super::{IndexRef, Vectors, read, write};
use crate::error::VectorError;
use crate::record::Record;
use crate::store::Change;

impl Vectors {
    /// Every namespace, the default one (`""`) first.
    ///
    /// # Errors
    /// Store failures on first load.
    pub async fn namespaces(&self, index: &IndexRef) -> Result<Vec<String>, VectorError> {
        let state = self.loaded(index).await?;
        self.fresh(index.id, &state).await?;
        Ok(read(&state.namespaces).keys().cloned().collect())
    }

    /// Deletes a namespace and its records.
    ///
    /// # Errors
    /// The default namespace (400) or an unknown one (404); store failures.
    pub async fn delete_namespace(&self, index: &IndexRef, namespace: &str) -> Result<(), VectorError> {
        super::feed::retry_behind(|| self.delete_namespace_once(index, namespace)).await
    }

    async fn delete_namespace_once(&self, index: &IndexRef, namespace: &str) -> Result<(), VectorError> {
        if namespace.is_empty() {
            return Err(VectorError::InvalidRequest(
                "the default namespace cannot be deleted".into(),
            ));
        }
        let state = self.loaded(index).await?;
        let mut position = state.writes.lock().await;
        self.catch_up(index.id, &state, &mut position).await?;
        if !read(&state.namespaces).contains_key(namespace) {
            return Err(VectorError::NamespaceNotFound {
                namespace: namespace.to_owned(),
                index: index.name.clone(),
            });
        }
        self.commit(
            index.id,
            &mut position,
            vec![Change::DropNamespace {
                namespace: namespace.to_owned(),
            }],
        )
        .await?;
        write(&state.namespaces).remove(namespace);
        Ok(())
    }

    /// Renames a namespace; with `delete_existing`, an existing target is replaced.
    ///
    /// # Errors
    /// The default namespace on either side or an existing target without `delete_existing` (400), an
    /// unknown source (404); store failures.
    pub async fn rename_namespace(
        &self,
        index: &IndexRef,
        from: &str,
        to: &str,
        delete_existing: bool,
    ) -> Result<(), VectorError> {
        super::feed::retry_behind(|| self.rename_namespace_once(index, from, to, delete_existing)).await
    }

    async fn rename_namespace_once(
        &self,
        index: &IndexRef,
        from: &str,
        to: &str,
        delete_existing: bool,
    ) -> Result<(), VectorError> {
        if from.is_empty() || to.is_empty() {
            return Err(VectorError::InvalidRequest(
                "the default namespace cannot be renamed or replaced".into(),
            ));
        }
        let state = self.loaded(index).await?;
        let mut position = state.writes.lock().await;
        self.catch_up(index.id, &state, &mut position).await?;
        let target_exists = {
            let namespaces = read(&state.namespaces);
            if !namespaces.contains_key(from) {
                return Err(VectorError::NamespaceNotFound {
                    namespace: from.to_owned(),
                    index: index.name.clone(),
                });
            }
            namespaces.contains_key(to)
        };
        if from == to {
            return Ok(());
        }
        if target_exists && !delete_existing {
            return Err(VectorError::InvalidRequest(format!(
                "namespace {to} already exists; set deleteExisting to replace it"
            )));
        }
        let mut changes = Vec::new();
        if target_exists {
            changes.push(Change::DropNamespace {
                namespace: to.to_owned(),
            });
        }
        changes.push(Change::RenameNamespace {
            from: from.to_owned(),
            to: to.to_owned(),
        });
        self.commit(index.id, &mut position, changes).await?;
        let mut namespaces = write(&state.namespaces);
        if let Some(moved) = namespaces.remove(from) {
            moved.unsave_whole();
            namespaces.insert(to.to_owned(), moved);
        }
        drop(namespaces);
        self.indexing.notify_one();
        Ok(())
    }

    /// A random record of the namespace, if any.
    ///
    /// # Errors
    /// Store failures on first load.
    pub async fn random(&self, index: &IndexRef, namespace: &str) -> Result<Option<Record>, VectorError> {
        let state = self.loaded(index).await?;
        self.fresh(index.id, &state).await?;
        let namespaces = read(&state.namespaces);
        let Some(found) = namespaces.get(namespace) else {
            return Ok(None);
        };
        if found.is_empty() {
            return Ok(None);
        }
        let pick = random_below(u32::try_from(found.len()).unwrap_or(u32::MAX)) as usize;
        Ok(found.records().nth(pick).map(|r| r.to_record()))
    }
}
