//! Ranges of numbers in the metadata index: one test's range, and the window that ranges on one field
//! under an `AND` make, listed from the postings of the numbers they hold.

use std::ops::Bound;

use super::{Field, Key, Listed, MAX_VALUES, exactly, nothing, posting_slots, sortable};
use crate::filter::{Comparison, Filter, Literal, Segment};
use crate::slots::union;

/// A range of sortable numbers, as `BTreeSet::range` takes it.
pub(super) type Range = (Bound<u64>, Bound<u64>);

/// The numbers `op` `bound` passes (`op` one of `<`, `<=`, `>`, `>=`).
pub(super) fn range_of(op: Comparison, bound: f64) -> Range {
    let at = sortable(bound);
    match op {
        Comparison::Less => (Bound::Unbounded, Bound::Excluded(at)),
        Comparison::LessOrEqual => (Bound::Unbounded, Bound::Included(at)),
        Comparison::Greater => (Bound::Excluded(at), Bound::Unbounded),
        Comparison::GreaterOrEqual | Comparison::Equal | Comparison::NotEqual => {
            (Bound::Included(at), Bound::Unbounded)
        }
    }
}

/// The field and range of a test `<`, `<=`, `>` or `>=` of a number.
pub(super) fn numeric_range(filter: &Filter) -> Option<(&[Segment], Range)> {
    let Filter::Compare {
        path,
        op,
        value: Literal::Number(bound),
    } = filter
    else {
        return None;
    };
    match op {
        Comparison::Less | Comparison::LessOrEqual | Comparison::Greater | Comparison::GreaterOrEqual => {
            Some((path.as_slice(), range_of(*op, *bound)))
        }
        Comparison::Equal | Comparison::NotEqual => None,
    }
}

/// The numbers in both ranges.
pub(super) fn narrowed(range: Range, other: Range) -> Range {
    (tighter(range.0, other.0, true), tighter(range.1, other.1, false))
}

/// Of two lower bounds (`lower`) the higher, of two upper bounds the lower; at one value, the one that
/// excludes it.
fn tighter(left: Bound<u64>, right: Bound<u64>, lower: bool) -> Bound<u64> {
    match (left, right) {
        (Bound::Unbounded, bound) | (bound, Bound::Unbounded) => bound,
        (Bound::Included(at) | Bound::Excluded(at), Bound::Included(other) | Bound::Excluded(other)) => {
            let left_wins = if at == other {
                matches!(left, Bound::Excluded(_))
            } else {
                (at > other) == lower
            };
            if left_wins { left } else { right }
        }
    }
}

/// Whether no number is in `range` (which `BTreeSet::range` would also refuse, by panicking, where its
/// start lies past its end).
fn is_empty(range: Range) -> bool {
    match range {
        (Bound::Included(low), Bound::Included(high)) => low > high,
        (Bound::Included(low) | Bound::Excluded(low), Bound::Included(high) | Bound::Excluded(high)) => {
            low >= high
        }
        _ => false,
    }
}

/// The numbers of `field` below and above `range`.
fn rest_of(field: &Field, range: Range) -> impl Iterator<Item = &u64> {
    let flip = |bound: Bound<u64>| match bound {
        Bound::Included(at) => Some(Bound::Excluded(at)),
        Bound::Excluded(at) => Some(Bound::Included(at)),
        Bound::Unbounded => None,
    };
    let below = flip(range.0).map(|end| field.numbers.range((Bound::Unbounded, end)));
    let above = flip(range.1).map(|start| field.numbers.range((start, Bound::Unbounded)));
    below.into_iter().flatten().chain(above.into_iter().flatten())
}

/// The slots of `field` holding a number in `range`; `None` where, the first time a filter is asked
/// (not `repeated`), that is more than [`MAX_VALUES`] distinct numbers and more than about a quarter
/// of the field's (see [`super::MetadataIndex::in_range`]).
pub(super) fn listed_range(field: &Field, range: Range, repeated: bool) -> Option<Listed<'_>> {
    if is_empty(range) {
        return Some(nothing());
    }
    let few = field.numbers.range(range).nth(MAX_VALUES).is_none();
    if !few && !repeated {
        // Three of the rest for each number in the range, until one side runs out.
        let (mut inside, mut outside) = (field.numbers.range(range), rest_of(field, range));
        let at_most_a_quarter = loop {
            if inside.next().is_none() {
                break true;
            }
            if outside.by_ref().take(3).count() < 3 {
                break false;
            }
        };
        if !at_most_a_quarter {
            return None;
        }
    }
    let postings = field
        .numbers
        .range(range)
        .filter_map(|&number| field.values.get(&Key::Number(number)))
        .map(posting_slots)
        .collect();
    Some(exactly(union(postings)))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::super::MAX_VALUES;
    use super::super::tests::{index, judged, plan};
    use crate::filter::Filter;

    #[test]
    fn a_range_over_many_distinct_numbers_is_listed_unless_it_holds_over_a_quarter_when_first_asked() {
        let count = 8 * MAX_VALUES;
        let records: Vec<Value> = (0..count).map(|n| json!({"at": n, "price": n % 7})).collect();
        let index = index(&records);
        let half = count / 2;
        for listed in [
            format!("at >= {}", count - 5),
            format!("at < {}", count / 4),
            format!("at >= {}", count - count / 4),
            format!("at > {}", count - MAX_VALUES - 10),
            format!("at <= {}", MAX_VALUES + 10),
            format!("at > {} AND price = 3", count - count / 8),
        ] {
            assert_eq!(
                plan(&index, &listed),
                Some((judged(&records, &listed), true)),
                "{listed}: at most a quarter of the distinct numbers"
            );
        }
        for most in [
            "at > 10".to_owned(),
            format!("at <= {}", half + 1),
            format!("at > {}", count - count / 4 - 10),
        ] {
            assert_eq!(plan(&index, &most), None, "{most}: over a quarter of the numbers");
            let parsed = Filter::parse(&most).unwrap().unwrap();
            let listed = index.planned(&parsed, true).expect("asked again, it is listed");
            assert_eq!(
                (listed.slots.iter().collect::<Vec<_>>(), listed.exact),
                (judged(&records, &most), true),
                "{most}"
            );
        }
        assert_eq!(
            plan(&index, "at != 10"),
            None,
            "a negation over many values is judged"
        );
    }

    #[test]
    fn ranges_on_one_field_are_listed_as_the_window_they_make() {
        let count = 8 * MAX_VALUES;
        let mut records: Vec<Value> = (0..count).map(|n| json!({"at": n, "price": n % 7})).collect();
        records.push(json!({"at": "1000"}));
        records.push(json!({"at": 1000.5}));
        let index = index(&records);
        let middle = count / 2;
        for window in [
            format!("at >= {middle} AND at < {}", middle + 100),
            format!("at > {middle} AND at <= {}", middle + 1500),
            format!("at < {} AND at >= {middle} AND price = 3", middle + 2000),
            "at >= 1000 AND at <= 1001".to_owned(),
            "at >= 1000 AND at > 1000 AND at <= 1002 AND at < 1002".to_owned(),
            "at > 1000 AND at >= 1000 AND at < 1002 AND at <= 1002".to_owned(),
            "at > 1000 AND at < 1001".to_owned(),
            "at >= 10 AND at > 20 AND at < 2000 AND at <= 1500".to_owned(),
            "at >= 500 AND at < 500".to_owned(),
            "at > 500 AND at < 400".to_owned(),
            "at >= 500 AND at <= 500".to_owned(),
            "missing > 1 AND missing < 5".to_owned(),
        ] {
            assert_eq!(
                plan(&index, &window),
                Some((judged(&records, &window), true)),
                "{window}"
            );
        }
        let wide = format!("at > 10 AND at < {}", count - 10);
        assert_eq!(
            plan(&index, &wide),
            None,
            "{wide}: a window over most of the numbers"
        );
        let parsed = Filter::parse(&wide).unwrap().unwrap();
        let listed = index.planned(&parsed, true).expect("asked again, it is listed");
        assert_eq!(
            (listed.slots.iter().collect::<Vec<_>>(), listed.exact),
            (judged(&records, &wide), true)
        );
    }
}
