//! An inverted index of the records' metadata: for each field reached through object keys alone (up to
//! [`MAX_DEPTH`] keys deep), and each scalar value found there, the slots of the records holding it.
//!
//! A filter's equality tests (`=`, `IN`, and `AND` / `OR` of them) are answered from it: the planner
//! then knows exactly how many records pass instead of estimating it from a sample, a selective filter
//! scans only the listed slots instead of judging every record's metadata, and a walk through the graph
//! tests a bit instead of reading metadata. Other tests (ranges, `GLOB`, `HAS FIELD`, negations) are
//! judged on each record's metadata as before; under an `AND` with an indexed test, only on the records
//! that test lists.
//!
//! Slots are never reused, so a removed record's slot only ever leaves a posting: postings drop
//! removed slots lazily, once they are half of it, and a listing may hold removed slots (which the
//! graph and the slot table know as removed).

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::ops::Bound;

use serde_json::Value;

use crate::filter::{Comparison, Filter, Literal, Segment};

/// The deepest field indexed, in keys: `a.b.c.d`.
pub const MAX_DEPTH: usize = 4;

/// The longest text value indexed, in bytes. Longer values, and filters that test for them, are
/// judged on each record.
pub const MAX_TEXT: usize = 64;

/// The most distinct numbers a range test unites the postings of; a range over more (a timestamp field,
/// say) is judged on each record instead.
pub const MAX_RANGE_VALUES: usize = 1024;

/// A scalar value as the index keys it, so that equal values under the filter language's equality
/// share a key: numbers by their `f64` value (`1 = 1.0`), booleans apart from the numbers `1` and `0`
/// that also equal them (a lookup takes both keys).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Text(Box<str>),
    Number(u64),
    Bool(bool),
}

fn number_key(value: f64) -> Key {
    Key::Number(number_bits(value))
}

/// A number's bits, with `-0.0` as `0.0` (equal in the filter language, as in IEEE 754).
fn number_bits(value: f64) -> u64 {
    if value == 0.0 { 0 } else { value.to_bits() }
}

/// A number's bits reordered so that unsigned order is numeric order (for numbers that are not NaN).
fn sortable(bits: u64) -> u64 {
    if bits >> 63 == 1 { !bits } else { bits | 1 << 63 }
}

/// The key of a scalar metadata value; `None` for other values and for texts too long to index.
fn key_of(value: &Value) -> Option<Key> {
    match value {
        Value::String(text) if text.len() <= MAX_TEXT => Some(Key::Text(text.as_str().into())),
        Value::Number(number) => number.as_f64().map(number_key),
        Value::Bool(b) => Some(Key::Bool(*b)),
        Value::String(_) | Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

/// The keys a field must hold to equal `literal`; `None` where the index cannot tell (a long text).
fn keys_equal_to(literal: &Literal) -> Option<Vec<Key>> {
    Some(match literal {
        Literal::Text(text) if text.len() <= MAX_TEXT => vec![Key::Text(text.as_str().into())],
        Literal::Text(_) => return None,
        Literal::Number(n) => {
            let mut keys = vec![number_key(*n)];
            if *n == 1.0 {
                keys.push(Key::Bool(true));
            } else if *n == 0.0 {
                keys.push(Key::Bool(false));
            }
            keys
        }
        Literal::Bool(b) => vec![Key::Bool(*b)],
    })
}

/// Appends one key to an encoded field path: each key as its byte length, a colon and the key, so no
/// key can run into the next whatever characters it holds.
fn push_key(path: &mut String, key: &str) {
    use std::fmt::Write;
    let _ = write!(path, "{}:{key}", key.len());
}

/// The encoded field of a filter's path; `None` unless it is one to [`MAX_DEPTH`] object keys.
fn encoded_path(path: &[Segment]) -> Option<String> {
    if path.is_empty() || path.len() > MAX_DEPTH {
        return None;
    }
    let mut encoded = String::new();
    for segment in path {
        match segment {
            Segment::Key(key) => push_key(&mut encoded, key),
            Segment::Index(_) | Segment::FromEnd(_) => return None,
        }
    }
    Some(encoded)
}

/// The slots holding one value in one field.
#[derive(Debug, Default)]
struct Posting {
    /// Ascending; removed slots stay until they are half of it.
    slots: Vec<u32>,
    /// Slots of live records.
    live: usize,
}

/// The slots a filter may pass, from the index.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed<'a> {
    /// Ascending; it may hold removed slots, which never pass.
    pub slots: Cow<'a, [u32]>,
    /// Whether every listed live record passes the filter (otherwise each must be judged); either way,
    /// no unlisted record passes.
    pub exact: bool,
}

/// One field's values.
#[derive(Debug, Default)]
struct Field {
    /// By value.
    values: HashMap<Key, Posting>,
    /// The numbers among the values, in numeric order (as [`sortable`] bits), for ranges.
    numbers: BTreeSet<u64>,
}

/// The metadata index of one namespace.
#[derive(Debug, Default)]
pub struct MetadataIndex {
    /// By encoded field path.
    fields: HashMap<Box<str>, Field>,
}

impl MetadataIndex {
    /// Lists `slot` under each indexed field of `metadata`. Slots must arrive in ascending order (a
    /// namespace hands out slots in order).
    pub fn add(&mut self, slot: u32, metadata: &Value) {
        each_field(metadata, &mut |path, key| {
            let field = match self.fields.get_mut(path) {
                Some(field) => field,
                None => self.fields.entry(path.into()).or_default(),
            };
            if let Key::Number(bits) = key {
                field.numbers.insert(sortable(bits));
            }
            let posting = field.values.entry(key).or_default();
            if posting.slots.last().is_none_or(|&last| last < slot) {
                posting.slots.push(slot);
                posting.live += 1;
            }
        });
    }

    /// Counts `slot`, whose record held `metadata`, as removed; `is_live` tells the slots still live
    /// when a posting drops its removed ones.
    pub fn remove(&mut self, metadata: &Value, is_live: impl Fn(u32) -> bool) {
        each_field(metadata, &mut |path, key| {
            let Some(field) = self.fields.get_mut(path) else {
                return;
            };
            let Some(posting) = field.values.get_mut(&key) else {
                return;
            };
            posting.live = posting.live.saturating_sub(1);
            if posting.slots.len() >= 2 * posting.live + 16 {
                posting.slots.retain(|&slot| is_live(slot));
                posting.live = posting.slots.len();
            }
            if posting.live == 0 {
                field.values.remove(&key);
                if let Key::Number(bits) = key {
                    field.numbers.remove(&sortable(bits));
                }
                if field.values.is_empty() {
                    self.fields.remove(path);
                }
            }
        });
    }

    /// The slots that may pass `filter`, where the index can tell; `None` where it cannot (no test of
    /// the filter, or of an `OR`, is one the index answers).
    pub fn plan(&self, filter: &Filter) -> Option<Listed<'_>> {
        match filter {
            Filter::Compare {
                path,
                op: Comparison::Equal,
                value,
            } => self.equal_to(path, std::slice::from_ref(value)),
            Filter::In {
                path,
                values,
                negated: false,
            } => self.equal_to(path, values),
            Filter::And(parts) => {
                let mut planned: Vec<Listed<'_>> = Vec::with_capacity(parts.len());
                let mut exact = true;
                for part in parts {
                    match self.plan(part) {
                        Some(listed) => {
                            exact &= listed.exact;
                            planned.push(listed);
                        }
                        None => exact = false,
                    }
                }
                planned.sort_by_key(|listed| listed.slots.len());
                let mut planned = planned.into_iter();
                let first = planned.next()?;
                let slots = planned.fold(first.slots, |kept, other| {
                    Cow::Owned(intersect(&kept, &other.slots))
                });
                Some(Listed { slots, exact })
            }
            Filter::Or(parts) => {
                let mut exact = true;
                let mut lists = Vec::with_capacity(parts.len());
                for part in parts {
                    let listed = self.plan(part)?;
                    exact &= listed.exact;
                    lists.push(listed.slots);
                }
                Some(Listed {
                    slots: union(lists),
                    exact,
                })
            }
            Filter::Compare {
                path,
                op:
                    op @ (Comparison::Less
                    | Comparison::LessOrEqual
                    | Comparison::Greater
                    | Comparison::GreaterOrEqual),
                value,
            } => self.in_range(path, *op, value),
            Filter::Compare {
                op: Comparison::NotEqual,
                ..
            }
            | Filter::In { negated: true, .. }
            | Filter::HasField { .. }
            | Filter::Glob { .. }
            | Filter::Contains { .. } => None,
        }
    }

    /// The slots whose field `path` equals one of `literals`.
    fn equal_to(&self, path: &[Segment], literals: &[Literal]) -> Option<Listed<'_>> {
        let path = encoded_path(path)?;
        let mut keys = Vec::new();
        for literal in literals {
            keys.extend(keys_equal_to(literal)?);
        }
        let lists: Vec<Cow<'_, [u32]>> = match self.fields.get(path.as_str()) {
            Some(field) => keys
                .iter()
                .filter_map(|key| field.values.get(key))
                .map(|posting| Cow::Borrowed(posting.slots.as_slice()))
                .collect(),
            None => Vec::new(),
        };
        Some(Listed {
            slots: union(lists),
            exact: true,
        })
    }

    /// The slots whose field `path` holds a number `op` the literal; `None` where the range holds more
    /// than [`MAX_RANGE_VALUES`] distinct numbers.
    fn in_range(&self, path: &[Segment], op: Comparison, literal: &Literal) -> Option<Listed<'_>> {
        let path = encoded_path(path)?;
        let nothing = Listed {
            slots: Cow::Borrowed(&[]),
            exact: true,
        };
        // Only numbers compare with `<` and the like: a text or boolean literal passes no record.
        let (Literal::Number(bound), Some(field)) = (literal, self.fields.get(path.as_str())) else {
            return Some(nothing);
        };
        let at = sortable(number_bits(*bound));
        let range = match op {
            Comparison::Less => (Bound::Unbounded, Bound::Excluded(at)),
            Comparison::LessOrEqual => (Bound::Unbounded, Bound::Included(at)),
            Comparison::Greater => (Bound::Excluded(at), Bound::Unbounded),
            Comparison::GreaterOrEqual | Comparison::Equal | Comparison::NotEqual => {
                (Bound::Included(at), Bound::Unbounded)
            }
        };
        let numbers: Vec<u64> = field
            .numbers
            .range(range)
            .take(MAX_RANGE_VALUES + 1)
            .copied()
            .collect();
        if numbers.len() > MAX_RANGE_VALUES {
            return None;
        }
        let lists = numbers
            .into_iter()
            .filter_map(|number| {
                let bits = sortable_back(number);
                field.values.get(&Key::Number(bits))
            })
            .map(|posting| Cow::Borrowed(posting.slots.as_slice()))
            .collect();
        Some(Listed {
            slots: union(lists),
            exact: true,
        })
    }
}

/// The bits [`sortable`] reordered.
fn sortable_back(sorted: u64) -> u64 {
    if sorted >> 63 == 1 {
        sorted & !(1 << 63)
    } else {
        !sorted
    }
}

/// Calls `found` with each indexed field of `metadata` (encoded) and the key of its value.
fn each_field(metadata: &Value, found: &mut impl FnMut(&str, Key)) {
    fn walk(value: &Value, path: &mut String, depth: usize, found: &mut impl FnMut(&str, Key)) {
        let Value::Object(map) = value else { return };
        for (name, value) in map {
            let mark = path.len();
            push_key(path, name);
            if value.is_object() {
                if depth < MAX_DEPTH {
                    walk(value, path, depth + 1, found);
                }
            } else if let Some(key) = key_of(value) {
                found(path, key);
            }
            path.truncate(mark);
        }
    }
    walk(metadata, &mut String::new(), 1, found);
}

/// The slots in both ascending lists.
fn intersect(left: &[u32], right: &[u32]) -> Vec<u32> {
    let (small, large) = if left.len() <= right.len() {
        (left, right)
    } else {
        (right, left)
    };
    let mut kept = Vec::with_capacity(small.len());
    let mut rest = large;
    for &slot in small {
        match rest.binary_search(&slot) {
            Ok(at) => {
                kept.push(slot);
                rest = &rest[at + 1..];
            }
            Err(at) => rest = &rest[at..],
        }
    }
    kept
}

/// The slots in any of the ascending lists, ascending and once each: marked in a bitmap over the
/// slots' range and read back in order, which costs a word per 64 slots of range instead of a sort.
fn union(mut lists: Vec<Cow<'_, [u32]>>) -> Cow<'_, [u32]> {
    if lists.len() <= 1 {
        return lists.pop().unwrap_or(Cow::Borrowed(&[]));
    }
    let Some(last) = lists.iter().filter_map(|list| list.last()).max() else {
        return Cow::Borrowed(&[]);
    };
    let mut marks = vec![0_u64; *last as usize / 64 + 1];
    let mut total = 0;
    for list in &lists {
        total += list.len();
        for &slot in list.iter() {
            marks[slot as usize / 64] |= 1 << (slot % 64);
        }
    }
    let mut all = Vec::with_capacity(total);
    for (word_at, &word) in marks.iter().enumerate() {
        let mut rest = word;
        while rest != 0 {
            all.push(word_at as u32 * 64 + rest.trailing_zeros());
            rest &= rest - 1;
        }
    }
    Cow::Owned(all)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn index(records: &[Value]) -> MetadataIndex {
        let mut index = MetadataIndex::default();
        for (slot, metadata) in records.iter().enumerate() {
            index.add(slot as u32, metadata);
        }
        index
    }

    fn plan(index: &MetadataIndex, filter: &str) -> Option<(Vec<u32>, bool)> {
        let filter = Filter::parse(filter)
            .expect("the test's filter parses")
            .expect("not empty");
        index
            .plan(&filter)
            .map(|listed| (listed.slots.into_owned(), listed.exact))
    }

    /// The slots a filter passes, judged record by record.
    fn judged(records: &[Value], filter: &str) -> Vec<u32> {
        let filter = Filter::parse(filter)
            .expect("the test's filter parses")
            .expect("not empty");
        (0..records.len() as u32)
            .filter(|&slot| filter.matches(&records[slot as usize]))
            .collect()
    }

    fn records() -> Vec<Value> {
        vec![
            json!({"tag": 3, "city": "Istanbul", "geo": {"continent": "Asia"}, "open": true}),
            json!({"tag": 3.0, "city": "Berlin", "geo": {"continent": "Europe"}, "open": false}),
            json!({"tag": "3", "city": "Paris", "tags": [3], "open": 1}),
            json!({"tag": 4, "city": "Istanbul", "geo": {"continent": "Europe"}, "score": 9}),
            json!({"city": "x".repeat(MAX_TEXT + 1), "a.b": 1, "a": {"b": 2}}),
            json!(null),
            json!({"score": -5}),
            json!({"score": -0.0}),
            json!({"score": 2.5}),
            json!({"score": 0}),
        ]
    }

    #[test]
    fn equality_tests_list_exactly_the_records_that_pass() {
        let records = records();
        let index = index(&records);
        for filter in [
            "tag = 3",
            "tag = '3'",
            "tag IN (4, '3')",
            "city = 'Istanbul'",
            "geo.continent = 'Europe'",
            "open = true",
            "open = 1",
            "open = 0",
            "a.b = 2",
            "tag > 3",
            "tag >= 3",
            "tag < 4",
            "tag <= 3.5",
            "score < 100",
            "tag > 'a'",
            "tag >= 3 AND tag < 4",
            "open > 0",
            "tag = 3 OR score > 5",
            "score < 0",
            "score <= 0",
            "score >= -5",
            "score > -1",
            "score > -0.0",
            "tag = 3 AND city = 'Berlin'",
            "tag = 3 OR city = 'Paris'",
            "missing = 1",
        ] {
            assert_eq!(
                plan(&index, filter),
                Some((judged(&records, filter), true)),
                "{filter}"
            );
        }
    }

    #[test]
    fn an_and_with_a_test_the_index_cannot_answer_lists_a_superset_to_judge() {
        let records = records();
        let index = index(&records);
        let (slots, exact) =
            plan(&index, "city = 'Istanbul' AND HAS FIELD score").expect("the equality is indexed");
        assert_eq!((slots, exact), (vec![0, 3], false));
        assert_eq!(judged(&records, "city = 'Istanbul' AND HAS FIELD score"), vec![3]);
    }

    #[test]
    fn tests_the_index_cannot_answer_are_left_to_the_records() {
        let index = index(&records());
        for filter in [
            "tag != 3",
            "city GLOB 'I*'",
            "tags CONTAINS 3",
            "tags[0] = 3",
            "tag NOT IN (3)",
            "HAS FIELD tag",
            "tag = 3 OR tag != 4",
            &format!("city = '{}'", "x".repeat(MAX_TEXT + 1)),
            "a.b.c.d.e = 1",
        ] {
            assert_eq!(plan(&index, filter), None, "{filter}");
        }
    }

    #[test]
    fn a_range_over_too_many_distinct_numbers_is_left_to_the_records() {
        let records: Vec<Value> = (0..2 * MAX_RANGE_VALUES).map(|n| json!({"at": n})).collect();
        let index = index(&records);
        assert_eq!(plan(&index, "at > 10"), None);
        let narrow = format!("at >= {}", 2 * MAX_RANGE_VALUES - 5);
        assert_eq!(plan(&index, &narrow), Some((judged(&records, &narrow), true)));
    }

    #[test]
    fn removed_records_leave_their_postings() {
        let records = records();
        let mut index = index(&records);
        let mut live = vec![true; records.len()];
        for slot in [0_usize, 1] {
            live[slot] = false;
            index.remove(&records[slot], |s| live[s as usize]);
        }
        // A value no live record holds any more is gone from the index.
        assert_eq!(plan(&index, "tag = 3"), Some((Vec::new(), true)));
        // Others may still list removed slots, which never pass.
        let (mut slots, exact) = plan(&index, "city = 'Istanbul'").expect("indexed");
        slots.retain(|&slot| live[slot as usize]);
        assert_eq!((slots, exact), (vec![3], true));
    }

    #[test]
    fn postings_drop_removed_slots_once_they_are_half_of_them() {
        let mut index = MetadataIndex::default();
        let metadata = json!({"tag": 1});
        for slot in 0..1000 {
            index.add(slot, &metadata);
        }
        let mut live = vec![true; 1000];
        for slot in 0..900 {
            live[slot] = false;
            index.remove(&metadata, |s| live[s as usize]);
        }
        let (slots, _) = plan(&index, "tag = 1").expect("indexed");
        assert!(
            slots.len() < 2 * 100 + 16,
            "{} slots listed for 100 live records",
            slots.len()
        );
        assert!((900..1000).all(|slot| slots.contains(&slot)));
    }

    #[test]
    fn lists_intersect_and_unite_in_order() {
        assert_eq!(intersect(&[1, 3, 5, 7, 9], &[2, 3, 4, 9, 10]), vec![3, 9]);
        let lists = vec![
            Cow::Owned(vec![1, 5, 9, 64, 200]),
            Cow::Owned(vec![2, 5, 10, 63, 64]),
        ];
        assert_eq!(union(lists).into_owned(), vec![1, 2, 5, 9, 10, 63, 64, 200]);
        assert_eq!(
            union(vec![Cow::Owned(Vec::new()), Cow::Owned(Vec::new())]).into_owned(),
            Vec::<u32>::new()
        );
    }
}
