//! The closed vocabularies of index settings. Each parses from its wire spelling and prints it back.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A value outside a closed vocabulary. Its message lists what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{value}` is not allowed; expected one of: {allowed}")]
pub struct UnknownValue {
    /// The rejected text.
    pub value: String,
    /// The allowed spellings, comma separated.
    pub allowed: String,
}

macro_rules! vocabulary {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $text:literal $(| $alias:literal)*),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vdoc])* #[serde(rename = $text $(, alias = $alias)*)] $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The wire spelling.
            pub const fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = UnknownValue;
            fn from_str(text: &str) -> Result<Self, UnknownValue> {
                match text {
                    $($text $(| $alias)* => Ok($name::$variant),)+
                    other => Err(UnknownValue {
                        value: other.to_owned(),
                        allowed: [$($text),+].join(", "),
                    }),
                }
            }
        }
    };
}

vocabulary!(
    /// Where a vector index is deployed.
    VectorRegion {
        /// Europe (Ireland).
        EuWest1 = "eu-west-1",
        /// US East (Virginia).
        UsEast1 = "us-east-1",
        /// US Central (Iowa).
        UsCentral1 = "us-central1",
    }
);

vocabulary!(
    /// Where a search index is deployed.
    SearchRegion {
        /// Europe (Ireland).
        EuWest1 = "eu-west-1",
        /// US Central (Iowa).
        UsCentral1 = "us-central1",
    }
);

vocabulary!(
    /// How dense vectors are compared.
    SimilarityFunction {
        /// Cosine of the angle.
        Cosine = "COSINE",
        /// Euclidean distance.
        Euclidean = "EUCLIDEAN",
        /// Dot product.
        DotProduct = "DOT_PRODUCT",
    }
);

vocabulary!(
    /// Which parts a vector index has.
    IndexType {
        /// Dense vectors only.
        Dense = "DENSE",
        /// Sparse vectors only.
        Sparse = "SPARSE",
        /// Both, fused at query time.
        Hybrid = "HYBRID",
    }
);

vocabulary!(
    /// A hosted dense text-embedding model.
    DenseModel {
        /// BAAI/bge-small-en-v1.5.
        BgeSmallEnV15 = "BGE_SMALL_EN_V1_5",
        /// BAAI/bge-base-en-v1.5.
        BgeBaseEnV15 = "BGE_BASE_EN_V1_5",
        /// BAAI/bge-large-en-v1.5.
        BgeLargeEnV15 = "BGE_LARGE_EN_V1_5",
        /// BAAI/bge-m3.
        BgeM3 = "BGE_M3",
        /// sentence-transformers/all-MiniLM-L6-v2.
        AllMiniLmL6V2 = "ALL_MINILM_L6_V2",
    }
);

impl DenseModel {
    /// The number of dimensions the model produces.
    pub const fn dimensions(self) -> u32 {
        match self {
            DenseModel::BgeSmallEnV15 | DenseModel::AllMiniLmL6V2 => 384,
            DenseModel::BgeBaseEnV15 => 768,
            DenseModel::BgeLargeEnV15 | DenseModel::BgeM3 => 1024,
        }
    }
}

vocabulary!(
    /// A hosted sparse embedding model.
    SparseModel {
        /// BM25 term weights.
        Bm25 = "BM25",
        /// BAAI/bge-m3 sparse output.
        BgeM3 = "BGE_M3",
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vocabularies_round_trip_their_wire_spelling() {
        for region in VectorRegion::ALL {
            assert_eq!(region.as_str().parse::<VectorRegion>().unwrap(), *region);
        }
        assert_eq!(
            "DOT_PRODUCT".parse::<SimilarityFunction>().unwrap(),
            SimilarityFunction::DotProduct
        );
    }

    #[test]
    fn an_unknown_value_lists_the_allowed_ones() {
        let error = "us-east-1".parse::<SearchRegion>().unwrap_err();
        assert_eq!(
            error.to_string(),
            "`us-east-1` is not allowed; expected one of: eu-west-1, us-central1"
        );
    }
}
