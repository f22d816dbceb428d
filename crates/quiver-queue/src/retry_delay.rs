//! The `Retry-Delay` expression language: numbers, `retried`, `+ - * / %`, parentheses, and the functions
//! `pow exp sqrt abs floor ceil round min max`. The result is a delay in milliseconds. Parsed once at
//! publish (so a bad expression is a 400) and evaluated after each failure.

use std::fmt;

/// A parsed expression. Stored as the text it was written as, and parsed again when read back, so a
/// stored spec holds a checked expression, never a string to check later. Two expressions are equal
/// when their text is.
#[derive(Debug, Clone)]
pub struct RetryDelay {
    source: String,
    root: Node,
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Number(f64),
    Retried,
    Negate(Box<Node>),
    Binary(char, Box<Node>, Box<Node>),
    Call(Function, Vec<Node>),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Function {
    Pow,
    Exp,
    Sqrt,
    Abs,
    Floor,
    Ceil,
    Round,
    Min,
    Max,
}

impl Function {
    fn named(name: &str) -> Option<(Function, usize)> {
        Some(match name {
            "pow" => (Function::Pow, 2),
            "exp" => (Function::Exp, 1),
            "sqrt" => (Function::Sqrt, 1),
            "abs" => (Function::Abs, 1),
            "floor" => (Function::Floor, 1),
            "ceil" => (Function::Ceil, 1),
            "round" => (Function::Round, 1),
            "min" => (Function::Min, 2),
            "max" => (Function::Max, 2),
            _ => return None,
        })
    }
}

/// Expressions longer than this are refused: they are configuration, not programs.
const MAX_SOURCE: usize = 512;
/// Nesting deeper than this is refused, so evaluation cannot exhaust the stack.
const MAX_DEPTH: usize = 32;

struct Parser<'a> {
    text: &'a [u8],
    position: usize,
    depth: usize,
}

impl Parser<'_> {
    fn skip_space(&mut self) {
        while self.text.get(self.position).is_some_and(u8::is_ascii_whitespace) {
            self.position += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_space();
        self.text.get(self.position).copied()
    }

    fn error(&self, what: &str) -> String {
        format!("{what} at position {}", self.position + 1)
    }

    fn expression(&mut self) -> Result<Node, String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error("expression nests too deeply"));
        }
        let mut left = self.term()?;
        while let Some(op @ (b'+' | b'-')) = self.peek() {
            self.position += 1;
            left = Node::Binary(op as char, Box::new(left), Box::new(self.term()?));
        }
        self.depth -= 1;
        Ok(left)
    }

    fn term(&mut self) -> Result<Node, String> {
        let mut left = self.unary()?;
        while let Some(op @ (b'*' | b'/' | b'%')) = self.peek() {
            self.position += 1;
            left = Node::Binary(op as char, Box::new(left), Box::new(self.unary()?));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Node, String> {
        if self.peek() == Some(b'-') {
            self.position += 1;
            return Ok(Node::Negate(Box::new(self.unary()?)));
        }
        if self.peek() == Some(b'+') {
            self.position += 1;
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<Node, String> {
        match self.peek() {
            Some(b'(') => {
                self.position += 1;
                let inner = self.expression()?;
                self.expect(b')')?;
                Ok(inner)
            }
            Some(c) if c.is_ascii_digit() || c == b'.' => {
                let start = self.position;
                while self
                    .text
                    .get(self.position)
                    .is_some_and(|c| c.is_ascii_digit() || *c == b'.')
                {
                    self.position += 1;
                }
                let literal = std::str::from_utf8(&self.text[start..self.position]).unwrap_or("");
                literal
                    .parse()
                    .map(Node::Number)
                    .map_err(|_| self.error(&format!("`{literal}` is not a number")))
            }
            Some(c) if c.is_ascii_alphabetic() => {
                let start = self.position;
                while self
                    .text
                    .get(self.position)
                    .is_some_and(u8::is_ascii_alphanumeric)
                {
                    self.position += 1;
                }
                let name = std::str::from_utf8(&self.text[start..self.position]).unwrap_or("");
                if name == "retried" {
                    return Ok(Node::Retried);
                }
                let Some((function, arity)) = Function::named(name) else {
                    return Err(format!("unknown name `{name}` at position {}", start + 1));
                };
                self.expect(b'(')?;
                let mut arguments = vec![self.expression()?];
                while self.peek() == Some(b',') {
                    self.position += 1;
                    arguments.push(self.expression()?);
                }
                self.expect(b')')?;
                if arguments.len() != arity {
                    return Err(format!(
                        "{name} takes {arity} argument(s), got {}",
                        arguments.len()
                    ));
                }
                Ok(Node::Call(function, arguments))
            }
            Some(other) => Err(self.error(&format!("unexpected `{}`", other as char))),
            None => Err(self.error("unexpected end of expression")),
        }
    }

    fn expect(&mut self, wanted: u8) -> Result<(), String> {
        if self.peek() == Some(wanted) {
            self.position += 1;
            Ok(())
        } else {
            Err(self.error(&format!("expected `{}`", wanted as char)))
        }
    }
}

fn evaluate(node: &Node, retried: f64) -> f64 {
    match node {
        Node::Number(value) => *value,
        Node::Retried => retried,
        Node::Negate(inner) => -evaluate(inner, retried),
        Node::Binary(op, left, right) => {
            let (left, right) = (evaluate(left, retried), evaluate(right, retried));
            match op {
                '+' => left + right,
                '-' => left - right,
                '*' => left * right,
                '/' => left / right,
                _ => left % right,
            }
        }
        Node::Call(function, arguments) => {
            let value = |i: usize| arguments.get(i).map_or(f64::NAN, |a| evaluate(a, retried));
            match function {
                Function::Pow => value(0).powf(value(1)),
                Function::Exp => value(0).exp(),
                Function::Sqrt => value(0).sqrt(),
                Function::Abs => value(0).abs(),
                Function::Floor => value(0).floor(),
                Function::Ceil => value(0).ceil(),
                Function::Round => value(0).round(),
                Function::Min => value(0).min(value(1)),
                Function::Max => value(0).max(value(1)),
            }
        }
    }
}

impl RetryDelay {
    /// Parses an expression.
    ///
    /// # Errors
    /// What is wrong and where.
    pub fn parse(source: &str) -> Result<RetryDelay, String> {
        if source.len() > MAX_SOURCE {
            return Err(format!("expression is longer than {MAX_SOURCE} characters"));
        }
        let mut parser = Parser {
            text: source.as_bytes(),
            position: 0,
            depth: 0,
        };
        let root = parser.expression()?;
        if parser.peek().is_some() {
            return Err(parser.error("unexpected text after the expression"));
        }
        Ok(RetryDelay {
            source: source.to_owned(),
            root,
        })
    }

    /// The delay in milliseconds after `retried` earlier retries (0 before the first retry). Negative or
    /// non-finite results count as 0.
    pub fn millis(&self, retried: u32) -> u64 {
        let value = evaluate(&self.root, f64::from(retried));
        if value.is_finite() && value > 0.0 {
            // Saturating float-to-int conversion; delays are capped by the caller anyway.
            value as u64
        } else {
            0
        }
    }

    /// The expression as written.
    pub fn source(&self) -> &str {
        &self.source
    }
}

impl PartialEq for RetryDelay {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl Eq for RetryDelay {}

impl serde::Serialize for RetryDelay {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.source)
    }
}

impl<'de> serde::Deserialize<'de> for RetryDelay {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let source = String::deserialize(deserializer)?;
        RetryDelay::parse(&source).map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for RetryDelay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn millis(source: &str, retried: u32) -> u64 {
        RetryDelay::parse(source).unwrap().millis(retried)
    }

    #[test]
    fn arithmetic_follows_precedence_and_parentheses() {
        assert_eq!(millis("1000 * retried", 3), 3000);
        assert_eq!(millis("1000 + 2 * 3", 0), 1006);
        assert_eq!(millis("(1000 + 2) * 3", 0), 3006);
        assert_eq!(millis("-5 + 10", 0), 5);
        assert_eq!(millis("10 % 4", 0), 2);
    }

    #[test]
    fn functions_compute_as_named() {
        assert_eq!(millis("pow(2, retried) * 1000", 3), 8000);
        assert_eq!(millis("min(86400000, 1000 * exp(retried))", 1), 2718);
        assert_eq!(millis("max(sqrt(16), abs(-3))", 0), 4);
        assert_eq!(millis("floor(2.7) + ceil(2.1) + round(2.5)", 0), 8);
    }

    #[test]
    fn negative_and_undefined_results_are_zero() {
        assert_eq!(millis("0 - 1000", 0), 0);
        assert_eq!(millis("1 / 0 - 1 / 0", 0), 0);
    }

    #[test]
    fn malformed_expressions_name_the_problem() {
        assert!(
            RetryDelay::parse("1000 *")
                .unwrap_err()
                .contains("end of expression")
        );
        assert!(
            RetryDelay::parse("system(1)")
                .unwrap_err()
                .contains("unknown name `system`")
        );
        assert!(RetryDelay::parse("pow(2)").unwrap_err().contains("takes 2"));
        assert!(
            RetryDelay::parse("1 2")
                .unwrap_err()
                .contains("after the expression")
        );
        assert!(RetryDelay::parse(&"(".repeat(100)).is_err());
    }
}
