//! Property test: random filters, printed as text with random keyword case and quote style, parse and
//! evaluate exactly as a naive reference evaluates the tree they were printed from, on random metadata.

#![expect(
    clippy::wildcard_enum_match_arm,
    reason = "the naive reference matches on serde_json::Value freely"
)]
use quiver_vector::filter::Filter;
use serde_json::{Value, json};

/// A small deterministic generator (PCG-style LCG), so failures reproduce.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

/// The reference's own tree: what was generated, independent of the crate's AST.
#[derive(Debug, Clone)]
enum Tree {
    Or(Vec<Tree>),
    And(Vec<Tree>),
    Has(&'static str, bool),
    Cmp(&'static str, &'static str, Value),
    Glob(&'static str, &'static str, bool),
    In(&'static str, Vec<Value>, bool),
    Contains(&'static str, Value, bool),
}

const SCALAR_PATHS: [&str; 7] = ["n", "f", "s", "b", "obj.e", "tags[0]", "tags[#-1]"];
const STRINGS: [&str; 5] = ["x", "y", "xy", "yz", "z"];

fn literal(random: &mut Random) -> Value {
    match random.below(4) {
        0 => json!(random.below(5)),
        1 => json!(random.below(5) as f64 + 0.5),
        2 => json!(random.pick(&STRINGS)),
        _ => json!(random.below(2) == 0),
    }
}

fn tree(random: &mut Random, depth: u32) -> Tree {
    let choice = if depth == 0 {
        2 + random.below(5)
    } else {
        random.below(7)
    };
    match choice {
        0 => Tree::Or(
            (0..2 + random.below(2))
                .map(|_| tree(random, depth - 1))
                .collect(),
        ),
        1 => Tree::And(
            (0..2 + random.below(2))
                .map(|_| tree(random, depth - 1))
                .collect(),
        ),
        2 => Tree::Has(
            random.pick(&["n", "s", "obj", "obj.e", "missing", "tags"]),
            random.below(2) == 0,
        ),
        3 => Tree::Cmp(
            random.pick(&SCALAR_PATHS),
            random.pick(&["=", "!=", "<", "<=", ">", ">="]),
            literal(random),
        ),
        4 => Tree::Glob(
            random.pick(&["s", "tags[0]", "n"]),
            random.pick(&["x*", "*z", "?y", "[xy]*", "[^x]*"]),
            random.below(2) == 0,
        ),
        5 => Tree::In(
            random.pick(&SCALAR_PATHS),
            (0..1 + random.below(3)).map(|_| literal(random)).collect(),
            random.below(2) == 0,
        ),
        _ => Tree::Contains(
            random.pick(&["tags", "s", "missing"]),
            json!(random.pick(&STRINGS)),
            random.below(2) == 0,
        ),
    }
}

fn keyword(random: &mut Random, word: &str) -> String {
    match random.below(3) {
        0 => word.to_ascii_lowercase(),
        1 => word.to_owned(),
        _ => word
            .chars()
            .enumerate()
            .map(|(i, c)| if i % 2 == 0 { c.to_ascii_lowercase() } else { c })
            .collect(),
    }
}

fn print_literal(random: &mut Random, value: &Value) -> String {
    match value {
        Value::String(text) if random.below(2) == 0 => format!("'{text}'"),
        Value::String(text) => format!("\"{text}\""),
        Value::Bool(b) => keyword(random, if *b { "TRUE" } else { "FALSE" }),
        other => other.to_string(),
    }
}

fn print(random: &mut Random, tree: &Tree) -> String {
    match tree {
        Tree::Or(parts) => {
            let joined: Vec<String> = parts.iter().map(|p| format!("({})", print(random, p))).collect();
            let or = format!(" {} ", keyword(random, "OR"));
            joined.join(&or)
        }
        Tree::And(parts) => {
            let joined: Vec<String> = parts.iter().map(|p| format!("({})", print(random, p))).collect();
            let and = format!(" {} ", keyword(random, "AND"));
            joined.join(&and)
        }
        Tree::Has(path, negated) => {
            let not = if *negated {
                format!("{} ", keyword(random, "NOT"))
            } else {
                String::new()
            };
            format!(
                "{} {not}{} {path}",
                keyword(random, "HAS"),
                keyword(random, "FIELD")
            )
        }
        Tree::Cmp(path, op, value) => format!("{path} {op} {}", print_literal(random, value)),
        Tree::Glob(path, pattern, negated) => {
            let not = if *negated {
                format!("{} ", keyword(random, "NOT"))
            } else {
                String::new()
            };
            format!("{path} {not}{} '{pattern}'", keyword(random, "GLOB"))
        }
        Tree::In(path, values, negated) => {
            let not = if *negated {
                format!("{} ", keyword(random, "NOT"))
            } else {
                String::new()
            };
            let values: Vec<String> = values.iter().map(|v| print_literal(random, v)).collect();
            format!("{path} {not}{} ({})", keyword(random, "IN"), values.join(", "))
        }
        Tree::Contains(path, value, negated) => {
            let not = if *negated {
                format!("{} ", keyword(random, "NOT"))
            } else {
                String::new()
            };
            format!(
                "{path} {not}{} {}",
                keyword(random, "CONTAINS"),
                print_literal(random, value)
            )
        }
    }
}

/// Naive path lookup: split on dots, then peel `[i]` / `[#-k]` suffixes.
fn lookup<'a>(metadata: &'a Value, path: &str) -> Option<&'a Value> {
    let mut current = metadata;
    for part in path.split('.') {
        let (key, index) = match part.split_once('[') {
            Some((key, rest)) => (key, Some(rest.trim_end_matches(']'))),
            None => (part, None),
        };
        current = current.as_object()?.get(key)?;
        if let Some(index) = index {
            let items = current.as_array()?;
            current = match index.strip_prefix("#-") {
                Some(back) => items.get(items.len().checked_sub(back.parse::<usize>().ok()?)?)?,
                None => items.get(index.parse::<usize>().ok()?)?,
            };
        }
    }
    Some(current)
}

/// Reference equality: same JSON type (numbers numerically; booleans also against 1 and 0).
fn same(field: &Value, literal: &Value) -> Option<bool> {
    match (field, literal) {
        (Value::String(a), Value::String(b)) => Some(a == b),
        (Value::Number(a), Value::Number(b)) => Some(a.as_f64() == b.as_f64()),
        (Value::Bool(a), Value::Bool(b)) => Some(a == b),
        (Value::Bool(a), Value::Number(n)) if n.as_f64() == Some(1.0) || n.as_f64() == Some(0.0) => {
            Some(*a == (n.as_f64() == Some(1.0)))
        }
        _ => None,
    }
}

fn glob(pattern: &str, text: &str) -> bool {
    // Reference matcher by recursion over characters (the crate's is iterative with backtracking).
    fn go(p: &[char], t: &[char]) -> bool {
        match p.first() {
            None => t.is_empty(),
            Some('*') => go(&p[1..], t) || (!t.is_empty() && go(p, &t[1..])),
            Some('?') => !t.is_empty() && go(&p[1..], &t[1..]),
            Some('[') => {
                let Some(close) = p.iter().position(|c| *c == ']') else {
                    return false;
                };
                let class = &p[1..close];
                let (negated, class) = match class.first() {
                    Some('^' | '!') => (true, &class[1..]),
                    _ => (false, class),
                };
                let Some(c) = t.first() else { return false };
                (class.contains(c) != negated) && go(&p[close + 1..], &t[1..])
            }
            Some(literal) => t.first() == Some(literal) && go(&p[1..], &t[1..]),
        }
    }
    go(
        &pattern.chars().collect::<Vec<_>>(),
        &text.chars().collect::<Vec<_>>(),
    )
}

fn reference(tree: &Tree, metadata: &Value) -> bool {
    match tree {
        Tree::Or(parts) => parts.iter().any(|p| reference(p, metadata)),
        Tree::And(parts) => parts.iter().all(|p| reference(p, metadata)),
        Tree::Has(path, negated) => lookup(metadata, path).is_some() != *negated,
        Tree::Cmp(path, op, value) => {
            let Some(field) = lookup(metadata, path) else {
                return false;
            };
            match *op {
                "=" => same(field, value) == Some(true),
                "!=" => same(field, value) == Some(false),
                _ => match (field.as_f64(), value.as_f64()) {
                    (Some(a), Some(b)) if field.is_number() && value.is_number() => match *op {
                        "<" => a < b,
                        "<=" => a <= b,
                        ">" => a > b,
                        _ => a >= b,
                    },
                    _ => false,
                },
            }
        }
        Tree::Glob(path, pattern, negated) => match lookup(metadata, path) {
            Some(Value::String(text)) => glob(pattern, text) != *negated,
            _ => false,
        },
        Tree::In(path, values, negated) => {
            let Some(field) = lookup(metadata, path) else {
                return false;
            };
            if field.is_array() || field.is_object() || field.is_null() {
                return false;
            }
            let results: Vec<Option<bool>> = values.iter().map(|v| same(field, v)).collect();
            let found = results.contains(&Some(true));
            if *negated {
                results.iter().any(Option::is_some) && !found
            } else {
                found
            }
        }
        Tree::Contains(path, value, negated) => match lookup(metadata, path) {
            Some(Value::Array(items)) => items.iter().any(|item| same(item, value) == Some(true)) != *negated,
            _ => false,
        },
    }
}

fn metadata(random: &mut Random) -> Value {
    let mut object = serde_json::Map::new();
    if random.below(5) > 0 {
        object.insert("n".into(), json!(random.below(5)));
    }
    if random.below(5) > 0 {
        object.insert("f".into(), json!(random.below(5) as f64 + 0.5));
    }
    if random.below(5) > 0 {
        object.insert("s".into(), json!(random.pick(&STRINGS)));
    }
    if random.below(5) > 0 {
        object.insert("b".into(), json!(random.below(2) == 0));
    }
    if random.below(3) > 0 {
        object.insert("obj".into(), json!({"e": random.below(4)}));
    }
    if random.below(3) > 0 {
        let tags: Vec<&str> = (0..random.below(4)).map(|_| random.pick(&STRINGS)).collect();
        object.insert("tags".into(), json!(tags));
    }
    Value::Object(object)
}

#[test]
fn parsed_filters_evaluate_like_a_naive_reference_on_random_metadata() {
    let mut random = Random(2026);
    let mut disagreements = Vec::new();
    let mut matched = 0;
    for case in 0..4_000 {
        let generated = tree(&mut random, 2);
        let text = print(&mut random, &generated);
        let parsed = Filter::parse(&text)
            .unwrap_or_else(|e| panic!("case {case}: `{text}` did not parse: {e}"))
            .expect("not empty");
        for _ in 0..5 {
            let record = metadata(&mut random);
            let (ours, theirs) = (parsed.matches(&record), reference(&generated, &record));
            matched += usize::from(theirs);
            if ours != theirs {
                disagreements.push(format!("`{text}` on {record}: parsed {ours}, reference {theirs}"));
            }
        }
    }
    assert!(
        disagreements.is_empty(),
        "{} disagreements, first: {:?}",
        disagreements.len(),
        &disagreements[..disagreements.len().min(5)]
    );
    assert!(
        matched > 2_000 && matched < 18_000,
        "the generated cases exercise both outcomes ({matched} of 20000 matched)"
    );
}

/// The metadata index lists, for every random filter it answers, exactly the live records that pass
/// (or, where it says the listing is not exact, at least them), on random metadata with records removed.
#[test]
fn the_metadata_index_lists_what_judging_each_record_passes() {
    use quiver_vector::metadata_index::MetadataIndex;

    let mut random = Random(1926);
    let records: Vec<Value> = (0..600).map(|_| metadata(&mut random)).collect();
    let mut index = MetadataIndex::default();
    for (slot, record) in records.iter().enumerate() {
        index.add(slot as u32, record);
    }
    let mut live = vec![true; records.len()];
    // Two records in three, so that postings also drop their removed slots.
    for slot in (0..records.len()).filter(|slot| slot % 3 > 0) {
        live[slot] = false;
        index.remove(&records[slot], |s| live[s as usize]);
    }
    let (mut answered, mut exact) = (0, 0);
    let mut wrong = Vec::new();
    for _ in 0..3_000 {
        let generated = tree(&mut random, 2);
        let text = print(&mut random, &generated);
        let parsed = Filter::parse(&text).expect("parses").expect("not empty");
        let Some(listed) = index.plan(&parsed) else {
            continue;
        };
        answered += 1;
        exact += usize::from(listed.exact);
        let listed_live: Vec<u32> = listed.slots.iter().filter(|&s| live[s as usize]).collect();
        let passing: Vec<u32> = (0..records.len() as u32)
            .filter(|&s| live[s as usize] && parsed.matches(&records[s as usize]))
            .collect();
        let agrees = if listed.exact {
            listed_live == passing
        } else {
            passing.iter().all(|s| listed_live.contains(s))
        };
        if !agrees {
            wrong.push(format!(
                "`{text}` (exact: {}): listed {listed_live:?}, passing {passing:?}",
                listed.exact
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} wrong listings, first: {:?}",
        wrong.len(),
        &wrong[..wrong.len().min(3)]
    );
    assert!(
        answered > 1_000 && exact > 500,
        "the index answered {answered} filters ({exact} exactly)"
    );
}
