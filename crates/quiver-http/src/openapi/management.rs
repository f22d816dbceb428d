//! The management API's operations (HTTP Basic).

use serde_json::{Value, json};

use quiver_core::index::{
    DenseModel, IndexType, SearchRegion, SimilarityFunction, SparseModel, VectorRegion,
};
use quiver_core::plan::PlanType;

use super::schemas::{array, object, r, string, words};
use super::{Auth, Op};

fn op(method: &'static str, path: impl Into<String>, summary: &'static str) -> Op {
    Op::new(method, path, "management", Auth::Management, summary)
}

fn period() -> Value {
    json!({"type": "string", "enum": ["1h", "3h", "12h", "1d", "3d", "7d", "30d"], "default": "1h"})
}

fn plan() -> Value {
    words(&[PlanType::Free, PlanType::Payg, PlanType::Fixed].map(PlanType::as_str))
}

/// A vocabulary's wire spellings.
macro_rules! spellings {
    ($vocabulary:ty) => {
        words(
            &<$vocabulary>::ALL
                .iter()
                .map(|value| value.as_str())
                .collect::<Vec<_>>(),
        )
    };
}

/// What both kinds of index have: list, create, get, delete, rename, new tokens, transfer, statistics.
fn index_operations(base: &str, record: &str, create: Value) -> Vec<Op> {
    let done = || json!({"type": "string", "const": "OK"});
    let one = format!("{base}/{{id}}");
    vec![
        op("GET", base, "List the account's indexes of this kind.").ok(array(r(record))),
        op("POST", base, "Create an index.")
            .json(create, true)
            .ok(r(record)),
        op("GET", one.clone(), "Get an index.").ok(r(record)),
        op("DELETE", one.clone(), "Delete an index and its data.").ok(done()),
        op("POST", format!("{one}/rename"), "Rename an index.")
            .json(object(&[("name", string())], 1), true)
            .ok(done()),
        op(
            "POST",
            format!("{one}/reset-password"),
            "Make new tokens for an index (the old ones stop working; get the index for the new ones).",
        )
        .ok(done()),
        op(
            "POST",
            format!("{one}/transfer"),
            "Give an index to another account (by email).",
        )
        .json(object(&[("target_account", string())], 1), true)
        .ok(done()),
        op(
            "GET",
            format!("{one}/stats"),
            "An index's statistics over a period (SPEC A1).",
        )
        .query("period", period(), "The period the series cover.")
        .ok(r("IndexStats")),
    ]
}

pub(super) fn operations() -> Vec<Op> {
    let create_vector = object(
        &[
            ("name", string()),
            ("region", spellings!(VectorRegion)),
            ("similarity_function", spellings!(SimilarityFunction)),
            ("dimension_count", json!({"type": "integer", "minimum": 1})),
            ("type", plan()),
            ("index_type", spellings!(IndexType)),
            ("embedding_model", spellings!(DenseModel)),
            ("sparse_embedding_model", spellings!(SparseModel)),
        ],
        2,
    );
    let create_search = object(
        &[
            ("name", string()),
            ("region", spellings!(SearchRegion)),
            ("type", plan()),
        ],
        3,
    );
    let mut ops = index_operations("/v2/vector/index", "VectorIndex", create_vector);
    ops.extend(index_operations("/v2/search", "SearchIndex", create_search));
    ops.extend([
        op(
            "POST",
            "/v2/vector/index/{id}/setplan",
            "Change a vector index's plan.",
        )
        .json(object(&[("target_plan", plan())], 1), true)
        .ok(json!({"type": "string", "const": "OK"})),
        op(
            "GET",
            "/v2/vector/index/stats",
            "The month's totals over the account's vector indexes.",
        )
        .ok(r("GlobalStats")),
        op(
            "GET",
            "/v2/search/stats",
            "The month's totals over the account's search indexes.",
        )
        .ok(r("GlobalStats")),
    ]);
    ops
}
