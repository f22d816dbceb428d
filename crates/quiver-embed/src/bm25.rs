//! The BM25 sparse embedder.

use std::collections::BTreeMap;

use rust_stemmers::{Algorithm, Stemmer};
use unicode_segmentation::UnicodeSegmentation;

use crate::murmur3::murmur3_32;

/// English stop words, removed before stemming.
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// A sparse embedding: indices ascending, with their weights.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SparseEmbedding {
    /// Token indices, ascending.
    pub indices: Vec<u32>,
    /// Weights.
    pub values: Vec<f32>,
}

/// The BM25 embedder with its fixed parameters.
pub struct Bm25 {
    stemmer: Stemmer,
    k1: f32,
    b: f32,
    average_length: f32,
}

impl std::fmt::Debug for Bm25 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bm25")
            .field("k1", &self.k1)
            .field("b", &self.b)
            .finish_non_exhaustive()
    }
}

impl Default for Bm25 {
    fn default() -> Self {
        Bm25 {
            stemmer: Stemmer::create(Algorithm::English),
            k1: 1.2,
            b: 0.75,
            average_length: 32.0,
        }
    }
}

/// The index of a stemmed token.
pub fn token_index(token: &str) -> u32 {
    murmur3_32(token.as_bytes(), 0) & 0x7fff_ffff
}

impl Bm25 {
    /// The stemmed tokens of `text`, stop words removed, in order.
    pub fn tokens(&self, text: &str) -> Vec<String> {
        text.unicode_words()
            .map(str::to_lowercase)
            .filter(|word| !STOP_WORDS.contains(&word.as_str()))
            .map(|word| self.stemmer.stem(&word).into_owned())
            .collect()
    }

    /// A document's sparse vector: each term weighted `tf (k1 + 1) / (tf + k1 (1 - b + b len / avg))`.
    pub fn document(&self, text: &str) -> SparseEmbedding {
        let tokens = self.tokens(text);
        let length = tokens.len() as f32;
        let mut frequencies: BTreeMap<u32, f32> = BTreeMap::new();
        for token in &tokens {
            *frequencies.entry(token_index(token)).or_default() += 1.0;
        }
        let norm = self.k1 * (1.0 - self.b + self.b * length / self.average_length);
        let (indices, values) = frequencies
            .into_iter()
            .map(|(index, tf)| (index, tf * (self.k1 + 1.0) / (tf + norm)))
            .unzip();
        SparseEmbedding { indices, values }
    }

    /// A query's sparse vector: weight 1.0 for each distinct term.
    pub fn query(&self, text: &str) -> SparseEmbedding {
        let mut indices: Vec<u32> = self.tokens(text).iter().map(|t| token_index(t)).collect();
        indices.sort_unstable();
        indices.dedup();
        let values = vec![1.0; indices.len()];
        SparseEmbedding { indices, values }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_lowercased_stemmed_and_free_of_stop_words() {
        let bm25 = Bm25::default();
        assert_eq!(
            bm25.tokens("The Cats are RUNNING over the hills!"),
            ["cat", "run", "hill"]
        );
    }

    #[test]
    fn the_same_text_always_gives_the_same_indices() {
        let bm25 = Bm25::default();
        assert_eq!(
            bm25.document("vector search engines"),
            bm25.document("vector search engines")
        );
        assert_eq!(token_index("vector"), murmur3_32(b"vector", 0) & 0x7fff_ffff);
        assert!(bm25.document("x").indices.iter().all(|i| *i <= i32::MAX as u32));
    }

    #[test]
    fn document_weights_follow_bm25_and_queries_weigh_terms_once() {
        let bm25 = Bm25::default();
        let doc = bm25.document("apple apple banana");
        // len 3: norm = 1.2 (0.25 + 0.75 * 3 / 32) = 0.384375
        let apple = 2.0 * 2.2 / (2.0 + 0.384_375);
        let banana = 2.2 / (1.0 + 0.384_375);
        let weight_of = |token: &str| {
            let index = token_index(token);
            doc.values[doc.indices.iter().position(|i| *i == index).unwrap()]
        };
        assert!((weight_of("appl") - apple).abs() < 1e-5);
        assert!((weight_of("banana") - banana).abs() < 1e-5);
        let query = bm25.query("apple apples banana");
        assert_eq!(query.values, vec![1.0, 1.0]);
        assert!(query.indices.windows(2).all(|w| w[0] < w[1]));
    }
}
