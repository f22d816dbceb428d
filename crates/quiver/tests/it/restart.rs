//! Indexes and credentials survive a restart on the same data directory.

use quiver_testkit::TestServer;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

#[tokio::test]
async fn indexes_and_credentials_survive_a_restart() {
    let mut server = TestServer::embedded().await;
    let account = server.account().clone();
    let other = server.create_account("second@example.com").await;
    let created: Value = server
        .management(Method::POST, "/v2/vector/index")
        .json(&json!({"name": "durable", "region": "eu-west-1", "similarity_function": "EUCLIDEAN", "dimension_count": 8}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let search: Value = server
        .management(Method::POST, "/v2/search")
        .json(&json!({"name": "durable search", "region": "eu-west-1", "type": "fixed"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();

    server.restart().await;

    assert_eq!(
        server.account(),
        &account,
        "the bootstrap account kept its credentials"
    );
    let listed: Value = server
        .management(Method::GET, "/v2/vector/index")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed, json!([created]));
    let searches: Value = server
        .management(Method::GET, "/v2/search")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(searches, json!([search]));
    let response = server
        .management_as(&other, Method::GET, "/v2/vector/index")
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.status(),
        StatusCode::OK,
        "a second account's credentials survive too"
    );
    server.stop().await;
}
