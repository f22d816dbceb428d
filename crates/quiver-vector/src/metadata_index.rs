//! An inverted index of the records' metadata: for each field reached through object keys alone (up to
//! [`MAX_DEPTH`] keys deep), and each scalar value found there, the slots of the records holding it.
//!
//! A filter's tests (`=`, `!=`, `<`, `<=`, `>`, `>=`, `IN`, `NOT IN`, `CONTAINS`, `GLOB`, `NOT GLOB`, and
//! `AND` / `OR` of them) are answered from it: the planner then knows exactly which records may pass instead
//! of estimating how many from a sample, a selective filter scans only the listed slots instead of judging
//! every record's metadata, and a walk through the graph tests a bit instead of reading metadata. A `GLOB` is
//! matched against the field's distinct texts; ranges on one field under an `AND` are listed as the window
//! they make. Other tests (`HAS FIELD`, `NOT CONTAINS`, array positions, negations that would unite more than
//! [`MAX_VALUES`] values' postings, and, the first time they are asked, a range over more than a quarter of a
//! field's many distinct numbers and a `GLOB` that most of its many distinct texts match) are judged on each
//! record's metadata as before; under an `AND` with an answered test, only on the records it lists.
//!
//! Slots are never reused, so a removed record's slot only ever leaves a posting: postings drop
//! removed slots lazily, once they are half of it, and a listing may hold removed slots (which the
//! graph and the slot table know as removed).

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap, HashSet};

use serde_json::Value;

use crate::filter::{Comparison, Filter, Literal, Segment, as_bool_literal, glob_matches};
use crate::slots::{Slots, intersect, union};
use ranges::{listed_range, narrowed, numeric_range, range_of};

mod ranges;

/// The deepest field indexed, in keys: `a.b.c.d`.
pub const MAX_DEPTH: usize = 4;

/// The longest text value indexed, in bytes. Longer values, and filters that test for them, are
/// judged on each record.
pub const MAX_TEXT: usize = 64;

/// The most distinct values whose postings a negation unites (it lists every other value of the
/// field): one over more is judged on each record. A range goes beyond it while it holds at most a
/// quarter of the field's distinct numbers, and a `GLOB` while a sample of the field's texts says fewer
/// than half of them match; either goes beyond it when asked again.
pub const MAX_VALUES: usize = 1024;

/// The distinct texts a `GLOB` over more than [`MAX_VALUES`] of them is tried on first.
const GLOB_SAMPLE: usize = 256;

/// A scalar value as the index keys it, so that equal values under the filter language's equality
/// share a key: numbers by their `f64` value (`1 = 1.0`) as [`sortable`] bits, booleans apart from the
/// numbers `1` and `0` that also equal them (a lookup takes both keys).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Text(Box<str>),
    Number(u64),
    Bool(bool),
}

impl Key {
    /// Whether the filter language compares a field holding this value with `literal` at all (the
    /// negated tests pass only values of a comparable kind).
    fn same_kind(&self, literal: &Literal) -> bool {
        match self {
            Key::Text(_) => matches!(literal, Literal::Text(_)),
            Key::Number(_) => matches!(literal, Literal::Number(_)),
            Key::Bool(_) => as_bool_literal(literal).is_some(),
        }
    }
}

fn number_key(value: f64) -> Key {
    Key::Number(sortable(value))
}

/// A number's bits reordered so that unsigned order is numeric order (for numbers that are not NaN),
/// with `-0.0` as `0.0` (equal in the filter language, as in IEEE 754).
fn sortable(value: f64) -> u64 {
    let bits = if value == 0.0 { 0 } else { value.to_bits() };
    if bits >> 63 == 1 { !bits } else { bits | 1 << 63 }
}

/// What the index makes of a metadata value.
enum Indexed {
    /// A scalar it lists.
    Key(Key),
    /// A text too long to list.
    LongText,
    /// A scalar element of an array, listed for `CONTAINS`.
    Element(Key),
}

/// How the index takes a metadata value; `None` for values it ignores (null, arrays).
fn indexed(value: &Value) -> Option<Indexed> {
    Some(Indexed::Key(match value {
        Value::String(text) if text.len() > MAX_TEXT => return Some(Indexed::LongText),
        Value::String(text) => Key::Text(text.as_str().into()),
        Value::Number(number) => number_key(number.as_f64()?),
        Value::Bool(b) => Key::Bool(*b),
        Value::Null | Value::Array(_) | Value::Object(_) => return None,
    }))
}

/// The keys a field must hold to equal `literal`; `None` for a text too long to be listed.
fn keys_equal_to(literal: &Literal) -> Option<Vec<Key>> {
    Some(match literal {
        Literal::Text(text) if text.len() <= MAX_TEXT => vec![Key::Text(text.as_str().into())],
        Literal::Text(_) => return None,
        Literal::Number(n) => {
            let mut keys = vec![number_key(*n)];
            if let Some(b) = as_bool_literal(literal) {
                keys.push(Key::Bool(b));
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
    /// They may hold removed slots, which never pass.
    pub slots: Slots<'a>,
    /// Whether every listed live record passes the filter (otherwise each must be judged); either way,
    /// no unlisted record passes.
    pub exact: bool,
}

/// One field's values.
#[derive(Debug, Default)]
struct Field {
    /// By value.
    values: HashMap<Key, Posting>,
    /// The numbers among the values, in numeric order (their keys' bits), for ranges.
    numbers: BTreeSet<u64>,
    /// Live records holding a text here too long to list: a negation, which such a text may pass,
    /// is then judged on each record.
    long_texts: usize,
    /// By scalar element of the arrays held here (texts up to [`MAX_TEXT`] bytes).
    elements: HashMap<Key, Posting>,
}

/// The metadata index of one namespace.
#[derive(Debug, Default)]
pub struct MetadataIndex {
    /// By encoded field path.
    fields: HashMap<Box<str>, Field>,
}

impl MetadataIndex {
    /// Lists `slot` under each indexed field of `metadata`. Slots in ascending order are appended
    /// (a namespace hands out new slots in order); one below the last is inserted in its place.
    pub fn add(&mut self, slot: u32, metadata: &Value) {
        each_field(metadata, &mut |path, value| {
            let field = match self.fields.get_mut(path) {
                Some(field) => field,
                None => self.fields.entry(path.into()).or_default(),
            };
            let posting = match value {
                Indexed::Key(key) => {
                    if let Key::Number(bits) = key {
                        field.numbers.insert(bits);
                    }
                    field.values.entry(key).or_default()
                }
                Indexed::LongText => {
                    field.long_texts += 1;
                    return;
                }
                Indexed::Element(key) => field.elements.entry(key).or_default(),
            };
            if posting.slots.last().is_none_or(|&last| last < slot) {
                posting.slots.push(slot);
                posting.live += 1;
            } else if let Err(at) = posting.slots.binary_search(&slot) {
                posting.slots.insert(at, slot);
                posting.live += 1;
            }
        });
    }

    /// Counts `slot`, whose record held `metadata`, as removed; `is_live` tells the slots still live
    /// when a posting drops its removed ones.
    pub fn remove(&mut self, metadata: &Value, is_live: impl Fn(u32) -> bool) {
        each_field(metadata, &mut |path, value| {
            let Some(field) = self.fields.get_mut(path) else {
                return;
            };
            let (postings, key, is_value) = match value {
                Indexed::LongText => {
                    field.long_texts = field.long_texts.saturating_sub(1);
                    (None, None, false)
                }
                Indexed::Key(key) => (Some(&mut field.values), Some(key), true),
                Indexed::Element(key) => (Some(&mut field.elements), Some(key), false),
            };
            if let (Some(postings), Some(key)) = (postings, key)
                && let Some(posting) = postings.get_mut(&key)
            {
                posting.live = posting.live.saturating_sub(1);
                if posting.slots.len() >= 2 * posting.live + 16 {
                    posting.slots.retain(|&slot| is_live(slot));
                    posting.live = posting.slots.len();
                }
                if posting.live == 0 {
                    postings.remove(&key);
                    if let (true, Key::Number(bits)) = (is_value, key) {
                        field.numbers.remove(&bits);
                    }
                }
            }
            if field.values.is_empty() && field.elements.is_empty() && field.long_texts == 0 {
                self.fields.remove(path);
            }
        });
    }

    /// Bytes it holds, estimated from its collections' capacities (hash tables at a byte of control
    /// per entry, ordered sets at twice their keys).
    pub fn memory_bytes(&self) -> usize {
        let postings = |values: &HashMap<Key, Posting>| {
            values.capacity() * (size_of::<(Key, Posting)>() + 1)
                + values
                    .iter()
                    .map(|(key, posting)| {
                        let text = match key {
                            Key::Text(text) => text.len(),
                            Key::Number(_) | Key::Bool(_) => 0,
                        };
                        text + posting.slots.capacity() * size_of::<u32>()
                    })
                    .sum::<usize>()
        };
        self.fields.capacity() * (size_of::<(Box<str>, Field)>() + 1)
            + self
                .fields
                .iter()
                .map(|(path, field)| {
                    path.len()
                        + postings(&field.values)
                        + postings(&field.elements)
                        + field.numbers.len() * 2 * size_of::<u64>()
                })
                .sum::<usize>()
    }

    /// The slots that may pass `filter`, where the index can tell; `None` where it cannot (no test of
    /// an `AND`, or not every test of an `OR`, is one the index answers).
    pub fn plan(&self, filter: &Filter) -> Option<Listed<'_>> {
        self.planned(filter, false)
    }

    /// As [`MetadataIndex::plan`]; where `repeated` (a filter asked before, whose listing will be kept),
    /// a `GLOB` that most of a field's many distinct texts match is listed too, where the first time it
    /// is left to the records (matching every distinct text costs about what judging every record does).
    pub(crate) fn planned(&self, filter: &Filter, repeated: bool) -> Option<Listed<'_>> {
        match filter {
            Filter::Compare { path, op, value } => match op {
                Comparison::Equal => self.equal_to(path, std::slice::from_ref(value)),
                Comparison::NotEqual => self.none_of(path, std::slice::from_ref(value)),
                Comparison::Less
                | Comparison::LessOrEqual
                | Comparison::Greater
                | Comparison::GreaterOrEqual => self.in_range(path, *op, value, repeated),
            },
            Filter::In {
                path,
                values,
                negated,
            } => {
                if *negated {
                    self.none_of(path, values)
                } else {
                    self.equal_to(path, values)
                }
            }
            Filter::And(parts) => {
                let mut planned: Vec<Listed<'_>> = Vec::with_capacity(parts.len());
                let mut exact = true;
                // Ranges on one field are planned together, as the window they make (`at >= x AND
                // at < y`): each side alone may hold most of the field's numbers where the window
                // holds few.
                let mut windowed = vec![false; parts.len()];
                for (first, part) in parts.iter().enumerate() {
                    let Some((path, mut window)) = numeric_range(part) else {
                        continue;
                    };
                    if windowed[first] {
                        continue;
                    }
                    let mut sides = 1;
                    for (other, later) in parts.iter().enumerate().skip(first + 1) {
                        if let Some((later_path, range)) = numeric_range(later)
                            && later_path == path
                        {
                            window = narrowed(window, range);
                            windowed[other] = true;
                            sides += 1;
                        }
                    }
                    if sides == 1 {
                        continue;
                    }
                    windowed[first] = true;
                    match self.field(path).map(|field| match field {
                        Some(field) => listed_range(field, window, repeated),
                        None => Some(nothing()),
                    }) {
                        Some(Some(listed)) => planned.push(listed),
                        Some(None) | None => exact = false,
                    }
                }
                for (part, _) in parts.iter().zip(&windowed).filter(|(_, windowed)| !**windowed) {
                    match self.planned(part, repeated) {
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
                let slots = planned.fold(first.slots, |kept, other| intersect(kept, &other.slots));
                Some(Listed { slots, exact })
            }
            Filter::Or(parts) => {
                let mut exact = true;
                let mut all = Vec::with_capacity(parts.len());
                for part in parts {
                    let listed = self.planned(part, repeated)?;
                    exact &= listed.exact;
                    all.push(listed.slots);
                }
                Some(Listed {
                    slots: union(all),
                    exact,
                })
            }
            Filter::Contains {
                path,
                value,
                negated: false,
            } => {
                let field = self.field(path)?;
                equal_in(field.map(|field| &field.elements), std::slice::from_ref(value))
            }
            Filter::Glob {
                path,
                pattern,
                negated,
            } => self.globbed(path, pattern, *negated, repeated),
            Filter::HasField { .. } | Filter::Contains { negated: true, .. } => None,
        }
    }

    /// The field at a filter's `path`: `None` for paths the index does not cover, `Some(None)` for a
    /// field no live record holds.
    fn field(&self, path: &[Segment]) -> Option<Option<&Field>> {
        let path = encoded_path(path)?;
        Some(self.fields.get(path.as_str()))
    }

    /// The slots whose field `path` equals one of `literals`.
    fn equal_to(&self, path: &[Segment], literals: &[Literal]) -> Option<Listed<'_>> {
        let field = self.field(path)?;
        equal_in(field.map(|field| &field.values), literals)
    }

    /// The slots whose field `path` holds a scalar of a kind one of `literals` compares with, equal to
    /// none of them (`!=`, `NOT IN`); `None` where that takes more than [`MAX_VALUES`] values, or where
    /// a text too long to list may pass.
    fn none_of(&self, path: &[Segment], literals: &[Literal]) -> Option<Listed<'_>> {
        let Some(field) = self.field(path)? else {
            return Some(nothing());
        };
        let texts = literals.iter().any(|literal| matches!(literal, Literal::Text(_)));
        if field.values.len() > MAX_VALUES || (texts && field.long_texts > 0) {
            return None;
        }
        // A long text literal equals no listed value, so it excludes none. The kinds compared and the
        // values excluded are looked up per listed value, so a long `NOT IN` over a field of many values
        // costs one pass over them, not one per literal.
        let excluded: HashSet<Key> = literals.iter().filter_map(keys_equal_to).flatten().collect();
        let compared = [Key::Text("".into()), Key::Number(0), Key::Bool(false)]
            .map(|kind| literals.iter().any(|literal| kind.same_kind(literal)));
        let kind = |key: &Key| match key {
            Key::Text(_) => 0,
            Key::Number(_) => 1,
            Key::Bool(_) => 2,
        };
        let postings = field
            .values
            .iter()
            .filter(|(key, _)| compared[kind(key)])
            .filter(|(key, _)| !excluded.contains(*key))
            .map(|(_, posting)| posting_slots(posting))
            .collect();
        Some(exactly(union(postings)))
    }

    /// The slots whose field `path` holds a text that `pattern` matches (or, `negated`, does not),
    /// matched against each distinct text of the field; `None` where the field holds a text too long to
    /// list, or, the first time a filter is asked (not `repeated`), more than [`MAX_VALUES`] distinct
    /// values of which a sample says at least half pass.
    ///
    /// Matching every distinct text costs about what judging every record does (4 ms over 100,000
    /// names), which a scan for a selective pattern costs anyway, and the listing is then kept for
    /// the filter's next queries (`recent_listings`). A pattern most records pass is walked instead the
    /// first time, judging only the records the walk reaches (about half a millisecond), so a pattern
    /// asked once does not pay for a listing; asked again, it is listed and kept, and its walks test a
    /// bit instead of judging metadata.
    fn globbed(&self, path: &[Segment], pattern: &str, negated: bool, repeated: bool) -> Option<Listed<'_>> {
        let Some(field) = self.field(path)? else {
            return Some(nothing());
        };
        if field.long_texts > 0 {
            return None;
        }
        let passes = |key: &Key| matches!(key, Key::Text(text) if glob_matches(pattern, text) != negated);
        if field.values.len() > MAX_VALUES && !repeated {
            // The table's order is its hashes' order, which is as good as a random sample.
            let passing = field
                .values
                .keys()
                .take(GLOB_SAMPLE)
                .filter(|key| passes(key))
                .count();
            if 2 * passing >= GLOB_SAMPLE {
                return None;
            }
        }
        let postings = field
            .values
            .iter()
            .filter(|(key, _)| passes(key))
            .map(|(_, posting)| posting_slots(posting))
            .collect();
        Some(exactly(union(postings)))
    }

    /// The slots whose field `path` holds a number `op` the literal; `None` where, the first time a
    /// filter is asked (not `repeated`), the range holds more than [`MAX_VALUES`] distinct numbers and
    /// more than about a quarter of the field's.
    ///
    /// A range over a field where most records hold a number of their own (a timestamp, a price) is
    /// listed from its numbers' postings, one look-up a number: at 100,000 records, 0.5 to 1 ms for a
    /// tenth of them, where judging costs a metadata read per record judged (6 ms a query at a tenth:
    /// the selectivity sample, then a walk that judges each node it reaches). Listing half of them
    /// takes about 15 ms, where a walk judging only the records it reaches takes about 2.6 ms, so a
    /// range over more than a quarter is walked the first time, as a `GLOB` most texts match is;
    /// asked again, it is listed and kept (`recent_listings`). Which side of a quarter a range holds
    /// is found by counting it and the rest of the field together, stopping at the first to run out.
    fn in_range(
        &self,
        path: &[Segment],
        op: Comparison,
        literal: &Literal,
        repeated: bool,
    ) -> Option<Listed<'_>> {
        let field = self.field(path)?;
        // Only numbers compare with `<` and the like: a text or boolean literal passes no record.
        let (Literal::Number(bound), Some(field)) = (literal, field) else {
            return Some(nothing());
        };
        listed_range(field, range_of(op, *bound), repeated)
    }
}

fn posting_slots(posting: &Posting) -> Slots<'_> {
    Slots::List(Cow::Borrowed(posting.slots.as_slice()))
}

fn exactly(slots: Slots<'_>) -> Listed<'_> {
    Listed { slots, exact: true }
}

/// No slot: what a test passes on a field no live record holds (or with a literal it never matches).
fn nothing() -> Listed<'static> {
    exactly(Slots::List(Cow::Borrowed(&[])))
}

/// The slots whose key in `postings` (a field's values, or its arrays' elements; `None` where no live
/// record holds the field) equals one of `literals`; `None` for a literal the index cannot look up.
fn equal_in<'a>(postings: Option<&'a HashMap<Key, Posting>>, literals: &[Literal]) -> Option<Listed<'a>> {
    let mut keys = Vec::new();
    for literal in literals {
        keys.extend(keys_equal_to(literal)?);
    }
    let found = keys
        .iter()
        .filter_map(|key| postings?.get(key))
        .map(posting_slots)
        .collect();
    Some(exactly(union(found)))
}

/// Calls `found` with each indexed field of `metadata` (encoded) and how its value is indexed.
fn each_field(metadata: &Value, found: &mut impl FnMut(&str, Indexed)) {
    fn walk(value: &Value, path: &mut String, depth: usize, found: &mut impl FnMut(&str, Indexed)) {
        let Value::Object(map) = value else { return };
        for (name, value) in map {
            let mark = path.len();
            push_key(path, name);
            match value {
                Value::Object(_) => {
                    if depth < MAX_DEPTH {
                        walk(value, path, depth + 1, found);
                    }
                }
                Value::Array(items) => {
                    // Each distinct element once: a removal counts a record out of a posting once.
                    let mut seen = std::collections::HashSet::new();
                    for item in items {
                        if let Some(Indexed::Key(key)) = indexed(item)
                            && seen.insert(key.clone())
                        {
                            found(path, Indexed::Element(key));
                        }
                    }
                }
                Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {
                    if let Some(value) = indexed(value) {
                        found(path, value);
                    }
                }
            }
            path.truncate(mark);
        }
    }
    walk(metadata, &mut String::new(), 1, found);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    pub(super) fn index(records: &[Value]) -> MetadataIndex {
        let mut index = MetadataIndex::default();
        for (slot, metadata) in records.iter().enumerate() {
            index.add(slot as u32, metadata);
        }
        index
    }

    pub(super) fn plan(index: &MetadataIndex, filter: &str) -> Option<(Vec<u32>, bool)> {
        let filter = Filter::parse(filter)
            .expect("the test's filter parses")
            .expect("not empty");
        index
            .plan(&filter)
            .map(|listed| (listed.slots.iter().collect(), listed.exact))
    }

    /// The slots a filter passes, judged record by record.
    pub(super) fn judged(records: &[Value], filter: &str) -> Vec<u32> {
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
            json!({"tag": 4, "city": "Istanbul", "geo": {"continent": "Europe"}, "score": 9, "tags": ["3", 4, 4, true]}),
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
            "tag != 3",
            "tag NOT IN (3, 4)",
            "open != true",
            "open != 1",
            "score != 0",
            "tag NOT IN ('3', 4)",
            "tag != 3 AND open = false",
            "tags CONTAINS 3",
            "tags CONTAINS '3'",
            "tags CONTAINS 4",
            "tags CONTAINS 1",
            "tags CONTAINS true",
            "tags CONTAINS 4 OR tag = 3",
            "geo.continent GLOB 'Eu*'",
            "geo.continent NOT GLOB 'Eu*'",
            "tag GLOB '3'",
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
            "city GLOB 'I*'",
            "city NOT GLOB 'I*'",
            "tags NOT CONTAINS 3",
            "tags[0] = 3",
            "city != 'Paris'",
            "HAS FIELD tag",
            "tag = 3 OR city GLOB 'I*'",
            &format!("city = '{}'", "x".repeat(MAX_TEXT + 1)),
            "a.b.c.d.e = 1",
        ] {
            assert_eq!(plan(&index, filter), None, "{filter}");
        }
    }

    #[test]
    fn a_glob_over_many_distinct_texts_is_listed_unless_most_of_them_match_when_first_asked() {
        let records: Vec<Value> = (0..4 * MAX_VALUES)
            .map(|n| json!({"name": format!("r{n}")}))
            .collect();
        let index = index(&records);
        for selective in ["name GLOB '*3'", "name GLOB 'r1?'", "name NOT GLOB 'r*'"] {
            assert_eq!(
                plan(&index, selective),
                Some((judged(&records, selective), true)),
                "{selective}"
            );
        }
        for most in ["name GLOB 'r*'", "name NOT GLOB '*3'"] {
            assert_eq!(plan(&index, most), None, "{most}: most texts match");
            let parsed = Filter::parse(most).unwrap().unwrap();
            let listed = index.planned(&parsed, true).expect("asked again, it is listed");
            assert_eq!(
                (listed.slots.iter().collect::<Vec<_>>(), listed.exact),
                (judged(&records, most), true),
                "{most}"
            );
        }
    }

    #[test]
    fn slots_listed_out_of_order_take_their_place_once() {
        let mut index = MetadataIndex::default();
        for slot in [5, 2, 9, 2, 7] {
            index.add(slot, &json!({"tag": 1}));
        }
        assert_eq!(plan(&index, "tag = 1"), Some((vec![2, 5, 7, 9], true)));
    }

    #[test]
    fn a_record_whose_array_repeats_an_element_leaves_its_posting_once() {
        let records = [json!({"tags": [4]}), json!({"tags": [4, 4, "x", "x"]})];
        let mut index = index(&records);
        index.remove(&records[1], |slot| slot == 0);
        let (mut slots, exact) = plan(&index, "tags CONTAINS 4").expect("indexed");
        slots.retain(|&slot| slot == 0);
        assert_eq!((slots, exact), (vec![0], true));
        assert_eq!(plan(&index, "tags CONTAINS 'x'"), Some((Vec::new(), true)));
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
}
