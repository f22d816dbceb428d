//! Search indexes' documents through real HTTP, with the real all-MiniLM-L6-v2 weights: they survive a
//! restart, the read-only token only reads, statistics count them, and deleting the index drops them.

use quiver_testkit::TestServer;
use quiver_testkit::calls::{VectorIndex, call, ok, search_index, send};
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::vector_text::ids;

#[tokio::test]
async fn documents_are_searched_after_a_restart_and_dropped_with_their_index() {
    let mut server = TestServer::embedded().await;
    let index = search_index(
        &server,
        json!({"name": "docs", "region": "eu-west-1", "type": "payg"}),
    )
    .await;
    let documents = json!([
        {"id": "cat", "content": {"title": "Cats", "body": "A cat is sleeping on the warm windowsill."}, "metadata": {"shelf": 1}},
        {"id": "rates", "content": {"title": "Banks", "body": "The central bank raised interest rates again."}},
        {"id": "soup", "content": {"title": "Soup", "body": "Tomato soup is best served with grilled cheese."}, "metadata": {"shelf": 2}}
    ]);
    assert_eq!(
        ok(&server, &index, "/upsert-data/library", documents).await,
        "Success"
    );
    let search = json!({"query": "my kitten naps in the sun", "topK": 2, "includeData": true, "includeMetadata": true});
    let before = ok(&server, &index, "/search/library", search.clone()).await;
    assert_eq!(ids(&before)[0], "cat");
    assert_eq!(
        before[0]["content"],
        json!({"title": "Cats", "body": "A cat is sleeping on the warm windowsill."})
    );
    assert_eq!(before[0]["metadata"], json!({"shelf": 1}));
    assert!(before[0]["score"].as_f64().unwrap() > before[1]["score"].as_f64().unwrap());

    // A filter tests content fields; the read-only token searches but does not write.
    let filtered = ok(
        &server,
        &index,
        "/search/library",
        json!({"query": "food", "filter": "title = 'Banks'"}),
    )
    .await;
    assert_eq!(ids(&filtered), ["rates"]);
    let reader = VectorIndex {
        token: index.read_only.clone(),
        ..index.clone()
    };
    assert_eq!(
        ids(&ok(&server, &reader, "/search/library", json!({"query": "soup"})).await)[0],
        "soup"
    );
    let (status, _, text) = call(
        &server,
        &reader,
        "/upsert-data/library",
        json!({"id": "x", "content": {"a": "b"}}),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{text}");

    server.restart().await;
    let after = ok(&server, &index, "/search/library", search).await;
    assert_eq!(ids(&after), ids(&before));

    let (status, stats) =
        send(server.management(Method::GET, &format!("/v2/search/{}/stats", index.id))).await;
    assert_eq!(status, StatusCode::OK, "{stats}");
    assert_eq!(stats["current_vector_count"], 3, "{stats}");

    let (status, _) = send(server.management(Method::DELETE, &format!("/v2/search/{}", index.id))).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, _) = call(&server, &index, "/info", json!(null)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    server.stop().await;
}
