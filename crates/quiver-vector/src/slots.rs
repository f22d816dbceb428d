//! Sets of slots, as the metadata index lists them: an ascending list (a posting, borrowed), or a bitmap
//! (what uniting several lists makes, and what a graph walk tests membership in).

use std::borrow::Cow;

/// A set of slots: an ascending list, or a bitmap (bit `s % 64` of word `s / 64` for slot `s`), which
/// uniting several lists makes.
#[derive(Debug, Clone, PartialEq)]
pub enum Slots<'a> {
    /// Ascending.
    List(Cow<'a, [u32]>),
    /// A bitmap and how many bits it has set.
    Bits {
        /// The words.
        words: Vec<u64>,
        /// Set bits.
        count: usize,
    },
}

impl Slots<'_> {
    /// How many slots.
    pub fn len(&self) -> usize {
        match self {
            Slots::List(list) => list.len(),
            Slots::Bits { count, .. } => *count,
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `slot` is one.
    pub fn contains(&self, slot: u32) -> bool {
        match self {
            Slots::List(list) => list.binary_search(&slot).is_ok(),
            Slots::Bits { words, .. } => bit(words, slot),
        }
    }

    /// The slots in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        let (list, words): (&[u32], &[u64]) = match self {
            Slots::List(list) => (list, &[]),
            Slots::Bits { words, .. } => (&[], words),
        };
        list.iter()
            .copied()
            .chain(words.iter().enumerate().flat_map(|(at, &word)| {
                let mut rest = word;
                std::iter::from_fn(move || {
                    (rest != 0).then(|| {
                        let slot = at as u32 * 64 + rest.trailing_zeros();
                        rest &= rest - 1;
                        slot
                    })
                })
            }))
    }

    /// A bitmap of the slots: borrowed where it is one.
    pub fn bitmap(&self) -> Cow<'_, [u64]> {
        match self {
            Slots::Bits { words, .. } => Cow::Borrowed(words),
            Slots::List(list) => {
                let mut words = vec![0_u64; list.last().map_or(0, |&last| last as usize / 64 + 1)];
                for &slot in list.iter() {
                    words[slot as usize / 64] |= 1 << (slot % 64);
                }
                Cow::Owned(words)
            }
        }
    }

    pub(crate) fn bits(words: Vec<u64>) -> Slots<'static> {
        let count = words.iter().map(|word| word.count_ones() as usize).sum();
        Slots::Bits { words, count }
    }
}

/// Whether `slot`'s bit is set in `words` (slots past the end are not).
pub fn bit(words: &[u64], slot: u32) -> bool {
    words
        .get(slot as usize / 64)
        .is_some_and(|word| word & (1 << (slot % 64)) != 0)
}

/// The slots in both sets: a list filtered by the other set, or two bitmaps' common bits.
pub(crate) fn intersect<'a>(left: Slots<'a>, right: &Slots<'_>) -> Slots<'a> {
    match (left, right) {
        (Slots::Bits { mut words, .. }, Slots::Bits { words: other, .. }) => {
            words.truncate(other.len());
            for (word, other) in words.iter_mut().zip(other) {
                *word &= other;
            }
            Slots::bits(words)
        }
        (Slots::List(list), other) => Slots::List(Cow::Owned(
            list.iter()
                .copied()
                .filter(|&slot| other.contains(slot))
                .collect(),
        )),
        (bits @ Slots::Bits { .. }, Slots::List(list)) => Slots::List(Cow::Owned(
            list.iter().copied().filter(|&slot| bits.contains(slot)).collect(),
        )),
    }
}

/// The slots in any of the sets: one set as it is, more marked in a bitmap over the slots' range,
/// which costs a word per 64 slots of range instead of a sort.
pub(crate) fn union(mut sets: Vec<Slots<'_>>) -> Slots<'_> {
    if sets.len() <= 1 {
        return sets.pop().unwrap_or(Slots::List(Cow::Borrowed(&[])));
    }
    let words = sets
        .iter()
        .map(|set| match set {
            Slots::List(list) => list.last().map_or(0, |&last| last as usize / 64 + 1),
            Slots::Bits { words, .. } => words.len(),
        })
        .max()
        .unwrap_or(0);
    let mut marks = vec![0_u64; words];
    for set in &sets {
        match set {
            Slots::List(list) => {
                for &slot in list.iter() {
                    marks[slot as usize / 64] |= 1 << (slot % 64);
                }
            }
            Slots::Bits { words, .. } => {
                for (mark, word) in marks.iter_mut().zip(words) {
                    *mark |= word;
                }
            }
        }
    }
    Slots::bits(marks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_intersect_and_unite_in_order_as_lists_or_bitmaps() {
        let list = |slots: &[u32]| Slots::List(Cow::Owned(slots.to_vec()));
        let united = union(vec![list(&[1, 5, 9, 64, 200]), list(&[2, 5, 10, 63, 64])]);
        assert!(matches!(united, Slots::Bits { count: 8, .. }));
        assert_eq!(
            united.iter().collect::<Vec<_>>(),
            vec![1, 2, 5, 9, 10, 63, 64, 200]
        );
        let other = union(vec![list(&[5, 64]), list(&[300])]);
        let both = intersect(united.clone(), &other);
        assert_eq!(both.iter().collect::<Vec<_>>(), vec![5, 64]);
        assert_eq!(
            intersect(list(&[3, 5, 64, 65]), &united)
                .iter()
                .collect::<Vec<_>>(),
            vec![5, 64]
        );
        assert_eq!(
            intersect(united, &list(&[1, 4, 200])).iter().collect::<Vec<_>>(),
            vec![1, 200]
        );
        assert!(union(vec![list(&[]), list(&[])]).is_empty());
        assert!(bit(&list(&[0, 70]).bitmap(), 70) && !bit(&list(&[0, 70]).bitmap(), 700));
    }
}
