//! The listings of a namespace's recent filters, kept until its metadata changes.
//!
//! A filter the metadata index answers by uniting or intersecting postings (`IN` over many values, a
//! negation, a range, an `AND`) builds a new list or bitmap on every query: at 100,000 records, 36 us for
//! `IN` over 5 values and 112 us for `NOT IN` over 100, against a query of about half a millisecond.
//! Applications repeat a handful of filters, so the last few such listings are kept, each with the filter
//! it answers, and every change to the metadata index drops them all (a write takes the namespace
//! exclusively, so no query sees a listing older than the records it searches). A listing that borrows
//! one posting as it is costs nothing to build and is not kept.

use std::borrow::Cow;
use std::ops::Deref;
use std::sync::{Arc, Mutex};

use crate::filter::Filter;
use crate::metadata_index::Listed;
use crate::slots::Slots;

/// Listings kept per namespace. Each holds at most a bit per slot (125 KB at a million slots), so this
/// bounds what they hold at a megabyte per million slots.
pub(crate) const KEPT: usize = 8;

/// A listing, built for this query or kept from an earlier one.
#[derive(Debug)]
pub(crate) enum Listing<'a> {
    /// Built for this query, borrowing the index.
    Built(Listed<'a>),
    /// Kept.
    Kept(Arc<Listed<'static>>),
}

impl<'a> Deref for Listing<'a> {
    type Target = Listed<'a>;

    fn deref(&self) -> &Listed<'a> {
        match self {
            Listing::Built(listed) => listed,
            Listing::Kept(listed) => listed,
        }
    }
}

/// The kept listings, most recently used first, and the last filters that had none.
#[derive(Debug, Default)]
pub(crate) struct RecentListings {
    kept: Mutex<Vec<(Filter, Arc<Listed<'static>>)>>,
    /// Filters `plan` answered `None` for since the metadata last changed, most recent first (at most
    /// [`KEPT`]): asked again, they are planned as repeated, which lists what is worth listing only
    /// when it will be kept and used.
    declined: Mutex<Vec<Filter>>,
}

impl RecentListings {
    /// The listing of `filter`: a kept one, else what `plan` builds (kept for next time when building
    /// it made a new list or bitmap). `None` where `plan` cannot tell which records may pass. `plan` is
    /// told whether the filter was asked before without a listing since the metadata last changed.
    pub(crate) fn listing<'a>(
        &self,
        filter: &Filter,
        plan: impl FnOnce(bool) -> Option<Listed<'a>>,
    ) -> Option<Listing<'a>> {
        let mut kept = locked(&self.kept);
        if let Some(at) = kept.iter().position(|(known, _)| known == filter) {
            let found = kept.remove(at);
            let listed = Arc::clone(&found.1);
            kept.insert(0, found);
            return Some(Listing::Kept(listed));
        }
        drop(kept);
        let repeated = {
            let mut declined = locked(&self.declined);
            let at = declined.iter().position(|known| known == filter);
            if let Some(at) = at {
                declined.remove(at);
            }
            at.is_some()
        };
        let Some(Listed { slots, exact }) = plan(repeated) else {
            let mut declined = locked(&self.declined);
            declined.truncate(KEPT - 1);
            declined.insert(0, filter.clone());
            return None;
        };
        let slots = match owned(slots) {
            Ok(slots) => slots,
            Err(borrowed) => {
                return Some(Listing::Built(Listed {
                    slots: borrowed,
                    exact,
                }));
            }
        };
        let listed = Arc::new(Listed { slots, exact });
        let mut kept = locked(&self.kept);
        // Another query may have kept the same filter meanwhile.
        if !kept.iter().any(|(known, _)| known == filter) {
            kept.truncate(KEPT - 1);
            kept.insert(0, (filter.clone(), Arc::clone(&listed)));
        }
        Some(Listing::Kept(listed))
    }

    /// Drops every kept listing: the index they came from changed. The declined filters go too, so a
    /// namespace written between its queries never pays for a listing it cannot keep.
    pub(crate) fn clear(&mut self) {
        self.kept
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
        self.declined
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
    }

    /// How many listings are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        locked(&self.kept).len()
    }
}

/// The slots as a set that borrows nothing, where building them made a new list or bitmap; a posting
/// borrowed as it is comes back as it is. A list longer than a bitmap of its range is kept as the bitmap,
/// so that no kept listing holds more than a bit per slot.
fn owned(slots: Slots<'_>) -> Result<Slots<'static>, Slots<'_>> {
    match slots {
        Slots::List(Cow::Owned(list)) => {
            let words = list.last().map_or(0, |&last| last as usize / 64 + 1);
            if words * size_of::<u64>() < list.len() * size_of::<u32>() {
                let list = Slots::List(Cow::Owned(list));
                Ok(Slots::bits(list.bitmap().into_owned()))
            } else {
                Ok(Slots::List(Cow::Owned(list)))
            }
        }
        Slots::Bits { words, count } => Ok(Slots::Bits { words, count }),
        borrowed @ Slots::List(Cow::Borrowed(_)) => Err(borrowed),
    }
}

/// `mutex`'s guard. A poisoned lock only means a query panicked while holding it: what it guards is
/// whole either way.
fn locked<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_listing_holds_at_most_a_bit_per_slot_and_the_same_slots() {
        let dense: Vec<u32> = (0..1_000).filter(|slot| slot % 3 != 0).collect();
        let kept = owned(Slots::List(Cow::Owned(dense.clone()))).unwrap();
        assert!(
            matches!(kept, Slots::Bits { .. }),
            "a dense list is kept as a bitmap"
        );
        assert_eq!(kept.iter().collect::<Vec<_>>(), dense);
        assert_eq!(kept.len(), dense.len());

        let sparse = vec![3_u32, 900, 40_000];
        let kept = owned(Slots::List(Cow::Owned(sparse.clone()))).unwrap();
        assert_eq!(
            kept,
            Slots::List(Cow::Owned(sparse.clone())),
            "a short list stays a list"
        );

        assert!(
            owned(Slots::List(Cow::Borrowed(&sparse))).is_err(),
            "a borrowed posting is not kept"
        );
    }
}
