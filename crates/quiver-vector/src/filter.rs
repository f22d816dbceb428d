//! The metadata filter language (wire-format §1.11): comparisons, GLOB, IN, CONTAINS, HAS FIELD, with
//! AND binding tighter than OR, parentheses, nested keys and array indexes. Parsed once per query into
//! an AST and evaluated on each record's metadata.
//!
//! Semantics where the reference is silent: a missing field or a value of another type never matches,
//! also under the negated operators (as in SQL); numbers compare numerically (`1 = 1.0`); the literals
//! `1` and `0` equal `true` and `false` when the field is a boolean.

use std::fmt;

use serde_json::Value;

/// A step into metadata.
#[derive(Debug, Clone, PartialEq)]
pub enum Segment {
    /// An object key.
    Key(String),
    /// An array index from the start.
    Index(usize),
    /// An array index from the end: `[#-k]`.
    FromEnd(usize),
}

/// A literal of the language.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// Quoted text.
    Text(String),
    /// A number.
    Number(f64),
    /// `true` or `false`.
    Bool(bool),
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    /// `=`
    Equal,
    /// `!=`
    NotEqual,
    /// `<`
    Less,
    /// `<=`
    LessOrEqual,
    /// `>`
    Greater,
    /// `>=`
    GreaterOrEqual,
}

/// A parsed filter.
#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    /// Any of.
    Or(Vec<Filter>),
    /// All of.
    And(Vec<Filter>),
    /// `HAS [NOT] FIELD path`.
    HasField {
        /// The field.
        path: Vec<Segment>,
        /// `HAS NOT FIELD`.
        negated: bool,
    },
    /// `path <op> literal`.
    Compare {
        /// The field.
        path: Vec<Segment>,
        /// The operator.
        op: Comparison,
        /// The literal.
        value: Literal,
    },
    /// `path [NOT] GLOB 'pattern'`.
    Glob {
        /// The field.
        path: Vec<Segment>,
        /// The pattern.
        pattern: String,
        /// `NOT GLOB`.
        negated: bool,
    },
    /// `path [NOT] IN (literals)`.
    In {
        /// The field.
        path: Vec<Segment>,
        /// The literals.
        values: Vec<Literal>,
        /// `NOT IN`.
        negated: bool,
    },
    /// `path [NOT] CONTAINS literal`.
    Contains {
        /// The field (an array).
        path: Vec<Segment>,
        /// The literal.
        value: Literal,
        /// `NOT CONTAINS`.
        negated: bool,
    },
}

/// A filter that does not parse; the message names the position (1-based, in characters).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid filter: {message} at position {position}")]
pub struct FilterError {
    /// What is wrong.
    pub message: String,
    /// Where (1-based character position).
    pub position: usize,
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    Text(String),
    Number(f64),
    Op(Comparison),
    Open,
    Close,
    Comma,
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Token::Ident(name) => write!(f, "`{name}`"),
            Token::Text(text) => write!(f, "'{text}'"),
            Token::Number(number) => write!(f, "{number}"),
            Token::Op(_) => f.write_str("an operator"),
            Token::Open => f.write_str("`(`"),
            Token::Close => f.write_str("`)`"),
            Token::Comma => f.write_str("`,`"),
        }
    }
}

/// A field name starts with a letter, `_`, or `@` (a search index's `@metadata.<key>`).
fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || matches!(c, '_' | '@')
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '[' | ']' | '#' | '-')
}

fn tokenize(text: &str) -> Result<Vec<(Token, usize)>, FilterError> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    let error = |message: String, position: usize| FilterError {
        message,
        position: position + 1,
    };
    while i < chars.len() {
        let c = chars[i];
        let start = i;
        match c {
            c if c.is_whitespace() => i += 1,
            '(' => {
                tokens.push((Token::Open, start));
                i += 1;
            }
            ')' => {
                tokens.push((Token::Close, start));
                i += 1;
            }
            ',' => {
                tokens.push((Token::Comma, start));
                i += 1;
            }
            '=' => {
                tokens.push((Token::Op(Comparison::Equal), start));
                i += 1;
            }
            '!' if chars.get(i + 1) == Some(&'=') => {
                tokens.push((Token::Op(Comparison::NotEqual), start));
                i += 2;
            }
            '<' | '>' => {
                let or_equal = chars.get(i + 1) == Some(&'=');
                let op = match (c, or_equal) {
                    ('<', false) => Comparison::Less,
                    ('<', true) => Comparison::LessOrEqual,
                    (_, false) => Comparison::Greater,
                    (_, true) => Comparison::GreaterOrEqual,
                };
                tokens.push((Token::Op(op), start));
                i += if or_equal { 2 } else { 1 };
            }
            '\'' | '"' => {
                let quote = c;
                let mut value = String::new();
                i += 1;
                loop {
                    match chars.get(i) {
                        None => return Err(error("unterminated string".into(), start)),
                        Some('\\') if chars.get(i + 1).is_some() => {
                            value.push(chars[i + 1]);
                            i += 2;
                        }
                        Some(&ch) if ch == quote => {
                            i += 1;
                            break;
                        }
                        Some(&ch) => {
                            value.push(ch);
                            i += 1;
                        }
                    }
                }
                tokens.push((Token::Text(value), start));
            }
            c if c.is_ascii_digit()
                || ((c == '-' || c == '+' || c == '.')
                    && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit() || *d == '.')) =>
            {
                i += 1;
                while chars.get(i).is_some_and(|d| {
                    d.is_ascii_digit()
                        || matches!(d, '.' | 'e' | 'E')
                        || ((*d == '-' || *d == '+') && matches!(chars[i - 1], 'e' | 'E'))
                }) {
                    i += 1;
                }
                let literal: String = chars[start..i].iter().collect();
                let number = literal
                    .parse::<f64>()
                    .map_err(|_| error(format!("`{literal}` is not a number"), start))?;
                tokens.push((Token::Number(number), start));
            }
            c if is_ident_start(c) => {
                // The first character is taken as it is: `@` starts a name but does not continue one.
                i += 1;
                while chars.get(i).is_some_and(|d| is_ident_char(*d)) {
                    i += 1;
                }
                tokens.push((Token::Ident(chars[start..i].iter().collect()), start));
            }
            other => return Err(error(format!("unexpected character `{other}`"), start)),
        }
    }
    Ok(tokens)
}

fn parse_path(name: &str, position: usize) -> Result<Vec<Segment>, FilterError> {
    let error = |message: String| FilterError {
        message,
        position: position + 1,
    };
    let mut segments = Vec::new();
    for part in name.split('.') {
        let (key, mut rest) = match part.find('[') {
            Some(at) => (&part[..at], &part[at..]),
            None => (part, ""),
        };
        if key.is_empty() {
            return Err(error(format!("`{name}` has an empty field name")));
        }
        segments.push(Segment::Key(key.to_owned()));
        while !rest.is_empty() {
            let Some(end) = rest.find(']') else {
                return Err(error(format!("`{name}` has an unclosed `[`")));
            };
            let inside = rest.get(1..end).unwrap_or("");
            let segment = if let Some(back) = inside.strip_prefix("#-") {
                Segment::FromEnd(
                    back.parse()
                        .map_err(|_| error(format!("`[{inside}]` is not an array index")))?,
                )
            } else if inside == "#" {
                Segment::FromEnd(0)
            } else {
                Segment::Index(
                    inside
                        .parse()
                        .map_err(|_| error(format!("`[{inside}]` is not an array index")))?,
                )
            };
            segments.push(segment);
            rest = &rest[end + 1..];
            if !rest.is_empty() && !rest.starts_with('[') {
                return Err(error(format!("`{name}` has text after `]`")));
            }
        }
    }
    Ok(segments)
}

struct Parser {
    tokens: Vec<(Token, usize)>,
    next: usize,
    end: usize,
}

impl Parser {
    fn position(&self) -> usize {
        self.tokens.get(self.next).map_or(self.end, |(_, at)| *at) + 1
    }

    fn error<T>(&self, message: impl Into<String>) -> Result<T, FilterError> {
        Err(FilterError {
            message: message.into(),
            position: self.position(),
        })
    }

    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.next).map(|(token, _)| token)
    }

    fn keyword(&self, word: &str) -> bool {
        matches!(self.peek(), Some(Token::Ident(name)) if name.eq_ignore_ascii_case(word))
    }

    fn take_keyword(&mut self, word: &str) -> bool {
        let found = self.keyword(word);
        if found {
            self.next += 1;
        }
        found
    }

    fn or_expression(&mut self) -> Result<Filter, FilterError> {
        let mut parts = vec![self.and_expression()?];
        while self.take_keyword("OR") {
            parts.push(self.and_expression()?);
        }
        Ok(if parts.len() == 1 {
            parts.remove(0)
        } else {
            Filter::Or(parts)
        })
    }

    fn and_expression(&mut self) -> Result<Filter, FilterError> {
        let mut parts = vec![self.unary()?];
        while self.take_keyword("AND") {
            parts.push(self.unary()?);
        }
        Ok(if parts.len() == 1 {
            parts.remove(0)
        } else {
            Filter::And(parts)
        })
    }

    fn unary(&mut self) -> Result<Filter, FilterError> {
        if self.peek() == Some(&Token::Open) {
            self.next += 1;
            let inner = self.or_expression()?;
            if self.peek() != Some(&Token::Close) {
                return self.error("expected `)`");
            }
            self.next += 1;
            return Ok(inner);
        }
        if self.keyword("HAS") {
            self.next += 1;
            let negated = self.take_keyword("NOT");
            if !self.take_keyword("FIELD") {
                return self.error("expected FIELD after HAS");
            }
            let path = self.path()?;
            return Ok(Filter::HasField { path, negated });
        }
        self.predicate()
    }

    fn path(&mut self) -> Result<Vec<Segment>, FilterError> {
        match self.tokens.get(self.next).cloned() {
            Some((Token::Ident(name), at)) => {
                self.next += 1;
                parse_path(&name, at)
            }
            Some((token, _)) => self.error(format!("expected a field name, found {token}")),
            None => self.error("expected a field name"),
        }
    }

    fn literal(&mut self) -> Result<Literal, FilterError> {
        let literal = match self.peek() {
            Some(Token::Text(text)) => Literal::Text(text.clone()),
            Some(Token::Number(number)) => Literal::Number(*number),
            Some(Token::Ident(word)) if word.eq_ignore_ascii_case("true") => Literal::Bool(true),
            Some(Token::Ident(word)) if word.eq_ignore_ascii_case("false") => Literal::Bool(false),
            Some(token) => return self.error(format!("expected a value, found {token}")),
            None => return self.error("expected a value"),
        };
        self.next += 1;
        Ok(literal)
    }

    fn predicate(&mut self) -> Result<Filter, FilterError> {
        let path = self.path()?;
        if let Some(Token::Op(op)) = self.peek() {
            let op = *op;
            self.next += 1;
            let value = self.literal()?;
            return Ok(Filter::Compare { path, op, value });
        }
        let negated = self.take_keyword("NOT");
        if self.take_keyword("GLOB") {
            return match self.literal()? {
                Literal::Text(pattern) => Ok(Filter::Glob {
                    path,
                    pattern,
                    negated,
                }),
                Literal::Number(_) | Literal::Bool(_) => self.error("GLOB needs a quoted pattern"),
            };
        }
        if self.take_keyword("IN") {
            if self.peek() != Some(&Token::Open) {
                return self.error("expected `(` after IN");
            }
            self.next += 1;
            let mut values = vec![self.literal()?];
            while self.peek() == Some(&Token::Comma) {
                self.next += 1;
                values.push(self.literal()?);
            }
            if self.peek() != Some(&Token::Close) {
                return self.error("expected `)` to close IN");
            }
            self.next += 1;
            return Ok(Filter::In {
                path,
                values,
                negated,
            });
        }
        if self.take_keyword("CONTAINS") {
            let value = self.literal()?;
            return Ok(Filter::Contains { path, value, negated });
        }
        match self.peek() {
            Some(token) => self.error(format!("expected an operator, found {token}")),
            None => self.error("expected an operator"),
        }
    }
}

impl Filter {
    /// Parses a filter; `None` for an empty (or blank) one.
    ///
    /// # Errors
    /// [`FilterError`] naming what is wrong and where.
    pub fn parse(text: &str) -> Result<Option<Filter>, FilterError> {
        let tokens = tokenize(text)?;
        if tokens.is_empty() {
            return Ok(None);
        }
        let mut parser = Parser {
            tokens,
            next: 0,
            end: text.chars().count(),
        };
        let filter = parser.or_expression()?;
        if let Some(token) = parser.peek() {
            let token = token.to_string();
            return parser.error(format!("unexpected {token}"));
        }
        Ok(Some(filter))
    }

    /// Whether a record's `metadata` passes `filter`: no filter passes everything, and a record
    /// without metadata is judged as `null`.
    pub fn passes(filter: Option<&Filter>, metadata: Option<&Value>) -> bool {
        filter.is_none_or(|f| f.matches(metadata.unwrap_or(&Value::Null)))
    }

    /// Whether `metadata` passes the filter.
    pub fn matches(&self, metadata: &Value) -> bool {
        match self {
            Filter::Or(parts) => parts.iter().any(|p| p.matches(metadata)),
            Filter::And(parts) => parts.iter().all(|p| p.matches(metadata)),
            Filter::HasField { path, negated } => resolve(metadata, path).is_some() != *negated,
            Filter::Compare { path, op, value } => {
                resolve(metadata, path).is_some_and(|field| compare(field, *op, value))
            }
            Filter::Glob {
                path,
                pattern,
                negated,
            } => match resolve(metadata, path) {
                Some(Value::String(text)) => glob_matches(pattern, text) != *negated,
                Some(_) | None => false,
            },
            Filter::In {
                path,
                values,
                negated,
            } => match resolve(metadata, path) {
                Some(field) if is_scalar(field) => {
                    let comparable = values.iter().any(|v| same_kind(field, v));
                    let found = values.iter().any(|v| equals(field, v));
                    if *negated { comparable && !found } else { found }
                }
                Some(_) | None => false,
            },
            Filter::Contains { path, value, negated } => match resolve(metadata, path) {
                Some(Value::Array(items)) => items.iter().any(|item| equals(item, value)) != *negated,
                Some(_) | None => false,
            },
        }
    }
}

/// Follows `path` into `metadata`.
pub fn resolve<'a>(metadata: &'a Value, path: &[Segment]) -> Option<&'a Value> {
    let mut current = metadata;
    for segment in path {
        current = match (segment, current) {
            (Segment::Key(key), Value::Object(map)) => map.get(key)?,
            (Segment::Index(index), Value::Array(items)) => items.get(*index)?,
            (Segment::FromEnd(back), Value::Array(items)) => {
                items.get(items.len().checked_sub((*back).max(1))?)?
            }
            (Segment::Key(_) | Segment::Index(_) | Segment::FromEnd(_), _) => return None,
        };
    }
    Some(current)
}

fn is_scalar(value: &Value) -> bool {
    matches!(value, Value::String(_) | Value::Number(_) | Value::Bool(_))
}

/// The boolean a literal equals where the field is a boolean: `true`, `false`, `1` and `0`.
pub(crate) fn as_bool_literal(literal: &Literal) -> Option<bool> {
    match literal {
        Literal::Bool(b) => Some(*b),
        Literal::Number(n) if *n == 1.0 => Some(true),
        Literal::Number(n) if *n == 0.0 => Some(false),
        Literal::Number(_) | Literal::Text(_) => None,
    }
}

fn same_kind(field: &Value, literal: &Literal) -> bool {
    match field {
        Value::String(_) => matches!(literal, Literal::Text(_)),
        Value::Number(_) => matches!(literal, Literal::Number(_)),
        Value::Bool(_) => as_bool_literal(literal).is_some(),
        Value::Null | Value::Array(_) | Value::Object(_) => false,
    }
}

fn equals(field: &Value, literal: &Literal) -> bool {
    match (field, literal) {
        (Value::String(text), Literal::Text(wanted)) => text == wanted,
        (Value::Number(number), Literal::Number(wanted)) => number.as_f64() == Some(*wanted),
        (Value::Bool(b), literal) => as_bool_literal(literal) == Some(*b),
        (Value::String(_) | Value::Number(_) | Value::Null | Value::Array(_) | Value::Object(_), _) => false,
    }
}

fn compare(field: &Value, op: Comparison, literal: &Literal) -> bool {
    match op {
        Comparison::Equal => equals(field, literal),
        Comparison::NotEqual => is_scalar(field) && same_kind(field, literal) && !equals(field, literal),
        Comparison::Less | Comparison::LessOrEqual | Comparison::Greater | Comparison::GreaterOrEqual => {
            let (Some(left), Literal::Number(right)) = (field.as_f64(), literal) else {
                return false;
            };
            match op {
                Comparison::Less => left < *right,
                Comparison::LessOrEqual => left <= *right,
                Comparison::Greater => left > *right,
                Comparison::GreaterOrEqual | Comparison::Equal | Comparison::NotEqual => left >= *right,
            }
        }
    }
}

/// Case-sensitive UNIX glob: `*`, `?`, `[abc]`, `[a-z]`, `[^abc]` / `[!abc]`. Positions are byte offsets
/// into `pattern` and `text`, each character decoded where it is read, so a match allocates nothing (the
/// metadata index matches a pattern against every distinct text of a field).
pub fn glob_matches(pattern: &str, text: &str) -> bool {
    let (mut p, mut t) = (0, 0);
    // Where the last `*` is, and how much of the text it has taken.
    let mut backtrack: Option<(usize, usize)> = None;
    while let Some(c) = char_at(text, t) {
        if let Some(wanted) = char_at(pattern, p) {
            match wanted {
                '*' => {
                    backtrack = Some((p, t));
                    p += 1;
                    continue;
                }
                '?' => {
                    p += 1;
                    t += c.len_utf8();
                    continue;
                }
                '[' => {
                    if let Some((matched, next)) = class_matches(pattern, p, c) {
                        if matched {
                            p = next;
                            t += c.len_utf8();
                            continue;
                        }
                    } else if c == '[' {
                        p += 1;
                        t += 1;
                        continue;
                    }
                }
                literal if literal == c => {
                    p += literal.len_utf8();
                    t += c.len_utf8();
                    continue;
                }
                _ => {}
            }
        }
        match backtrack {
            Some((star, taken)) => {
                let next = taken + char_at(text, taken).map_or(1, char::len_utf8);
                p = star + 1;
                t = next;
                backtrack = Some((star, next));
            }
            None => return false,
        }
    }
    pattern[p..].chars().all(|c| c == '*')
}

/// The character at byte offset `at` of `text`.
fn char_at(text: &str, at: usize) -> Option<char> {
    text.get(at..)?.chars().next()
}

/// Whether `c` is in the class that opens at byte `open` of `pattern`, and the byte after the class;
/// `None` where the class is not closed.
fn class_matches(pattern: &str, open: usize, c: char) -> Option<(bool, usize)> {
    let mut i = open + 1;
    let negated = matches!(char_at(pattern, i), Some('^' | '!'));
    if negated {
        i += 1;
    }
    let mut found = false;
    let mut first = true;
    while let Some(current) = char_at(pattern, i) {
        if current == ']' && !first {
            return Some((found != negated, i + 1));
        }
        first = false;
        let after = i + current.len_utf8();
        let range_end = (char_at(pattern, after) == Some('-'))
            .then(|| char_at(pattern, after + 1))
            .flatten()
            .filter(|end| *end != ']');
        if let Some(end) = range_end {
            if (current..=end).contains(&c) {
                found = true;
            }
            i = after + 1 + end.len_utf8();
        } else {
            if current == c {
                found = true;
            }
            i = after;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn city() -> Value {
        json!({
            "city": "Istanbul", "country": "Turkey", "is_capital": false, "population": 15460000,
            "geography": {"continent": "Asia", "coordinates": {"latitude": 41.0082, "longitude": 28.9784}},
            "economy": {"currency": "TRY", "major_industries": ["Tourism", "Textiles", "Finance"]}
        })
    }

    fn passes(filter: &str) -> bool {
        Filter::parse(filter).unwrap().unwrap().matches(&city())
    }

    #[test]
    fn the_documented_examples_match_as_documented() {
        assert!(passes(
            "country = 'Turkey' AND population = 15460000 AND is_capital = false"
        ));
        assert!(passes("country != 'Germany'"));
        assert!(passes("geography.coordinates.longitude <= 30.0"));
        assert!(passes("city GLOB '?[sz]*[^m-z]'"));
        assert!(passes("city NOT GLOB 'A*'"));
        assert!(passes("country IN ('Germany', 'Turkey', 'France')"));
        assert!(passes("economy.currency NOT IN ('USD', 'EUR')"));
        assert!(passes("economy.major_industries CONTAINS 'Tourism'"));
        assert!(passes("economy.major_industries NOT CONTAINS 'Steel Production'"));
        assert!(passes("HAS FIELD geography.coordinates"));
        assert!(passes("HAS NOT FIELD geography.coordinates.altitude"));
        assert!(passes("economy.major_industries[0] = 'Tourism'"));
        assert!(passes("economy.major_industries[#-1] = 'Finance'"));
        assert!(passes("geography.continent = \"Asia\""));
    }

    #[test]
    fn a_field_name_may_start_with_an_at_sign_but_not_hold_one() {
        let record = json!({"title": "Dune", "@metadata": {"year": 1965}});
        let matches = |text: &str| Filter::parse(text).unwrap().unwrap().matches(&record);
        assert!(matches("@metadata.year = 1965 AND title = 'Dune'"));
        assert!(!matches("@metadata.year > 1965"));
        assert!(Filter::parse("title@x = 1").is_err());
        assert!(Filter::parse("@ = 1").is_ok());
    }

    #[test]
    fn and_binds_tighter_than_or_and_parentheses_group() {
        assert!(passes(
            "country = 'Germany' AND population > 1 OR city = 'Istanbul'"
        ));
        assert!(!passes(
            "country = 'Germany' AND (population > 1 OR city = 'Istanbul')"
        ));
        assert!(passes(
            "(country = 'Turkey' OR country = 'Greece') AND is_capital = 0"
        ));
    }

    #[test]
    fn keywords_are_case_insensitive() {
        assert!(passes(
            "country in ('Turkey') and city not glob 'B*' or has not field x"
        ));
        assert!(passes("is_capital = FALSE"));
    }

    #[test]
    fn missing_fields_and_other_types_never_match() {
        assert!(!passes("missing = 1"));
        assert!(!passes("missing != 1"));
        assert!(!passes("country != 5"));
        assert!(!passes("country > 3"));
        assert!(!passes("missing NOT IN ('a')"));
        assert!(!passes("country NOT CONTAINS 'T'"));
        assert!(passes("population = 15460000.0"));
    }

    #[test]
    fn syntax_errors_name_the_position() {
        let error = Filter::parse("country = 'Turkey' AND").unwrap_err();
        assert_eq!(error.position, 23);
        let error = Filter::parse("country == 'x'").unwrap_err();
        assert_eq!(error.position, 10);
        assert!(Filter::parse("country = 'unterminated").is_err());
        assert!(Filter::parse("a IN 'x'").unwrap_err().message.contains("`(`"));
        assert!(Filter::parse("(a = 1").unwrap_err().message.contains("`)`"));
        assert!(Filter::parse("HAS a").is_err());
        assert!(
            Filter::parse("a = 1 b")
                .unwrap_err()
                .message
                .contains("unexpected")
        );
        assert_eq!(Filter::parse("   ").unwrap(), None);
    }

    #[test]
    fn globs_follow_unix_rules() {
        assert!(glob_matches("*", ""));
        assert!(glob_matches("a*c", "abbbc"));
        assert!(!glob_matches("a*c", "abbbd"));
        assert!(glob_matches("[a-c]?[!x]", "bzy"));
        assert!(!glob_matches("[a-c]", "d"));
        assert!(glob_matches("*.txt", "notes.txt"));
        assert!(!glob_matches("A*", "a"));
        // Characters beyond ASCII count as one, in the text, the pattern and classes alike.
        assert!(glob_matches("?", "é"));
        assert!(!glob_matches("??", "é"));
        assert!(glob_matches("*é?", "cafés"));
        assert!(glob_matches("[à-ü]x*", "éxé"));
        assert!(glob_matches("*[!é]", "éa"));
        assert!(!glob_matches("*[!é]", "aé"));
        assert!(glob_matches("日*語", "日本語"));
        // An unclosed class is taken literally.
        assert!(glob_matches("[ab*", "[abc"));
    }

    #[test]
    fn array_indexes_reach_elements_from_either_end() {
        let metadata = json!({"tags": ["a", "b", "c"]});
        let last = Filter::parse("tags[#-1] = 'c'").unwrap().unwrap();
        let second_last = Filter::parse("tags[#-2] = 'b'").unwrap().unwrap();
        let out_of_range = Filter::parse("tags[5] = 'c'").unwrap().unwrap();
        assert!(last.matches(&metadata) && second_last.matches(&metadata));
        assert!(!out_of_range.matches(&metadata));
    }
}
