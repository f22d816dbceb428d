//! Query parameters a route does not take are a 400 that names them, in every area: the queue (the
//! token's keys always accepted, a run's end taking `cancel`), the management API (the statistics taking
//! `period`) and the vector API (`reset` taking `all`).

use quiver_testkit::TestServer;
use quiver_testkit::calls::{call, dense, ok, send, send_with_text};
use reqwest::{Method, StatusCode};
use serde_json::json;

#[tokio::test]
async fn a_queue_route_names_a_query_parameter_it_does_not_take() {
    let server = TestServer::embedded().await;
    let (status, answer) = send(server.queue(Method::GET, "/v2/topics?limit=3")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        answer["error"],
        "unknown query parameter `limit`: this route takes no query parameters"
    );
    for path in ["/v2/schedules?cursor=x", "/v2/schedules/scd_1?verbose=1"] {
        let (status, answer) = send(server.queue(Method::GET, path)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {answer}");
    }
    // Ending a run takes `cancel` only; the token may always come in the query.
    let (status, answer) = send(server.queue(Method::DELETE, "/v2/workflows/runs/wfr_none?cancl=true")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert!(
        answer["error"].as_str().unwrap().contains("takes only `cancel`"),
        "{answer}"
    );
    let (status, answer) =
        send(server.queue(Method::DELETE, "/v2/workflows/runs/wfr_none?cancel=true")).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{answer}");
    let token = &server.account().queue_token;
    let (status, answer) = send(
        server
            .client()
            .get(server.url(&format!("/v2/topics?svc_token={token}"))),
    )
    .await;
    assert_eq!((status, answer), (StatusCode::OK, json!([])));
}

#[tokio::test]
async fn a_management_route_names_a_query_parameter_it_does_not_take() {
    let server = TestServer::embedded().await;
    let id = dense(&server, "COSINE", 2).await.id;
    let (status, answer) = send(server.management(Method::GET, "/v2/search?type=free")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        answer["error"],
        "unknown query parameter `type`: this route takes no query parameters"
    );
    let stats = format!("/v2/vector/index/{id}/stats");
    let (status, _) = send(server.management(Method::GET, &format!("{stats}?period=1d"))).await;
    assert_eq!(status, StatusCode::OK);
    let (status, answer) = send(server.management(Method::GET, &format!("{stats}?periods=1d"))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        answer["error"],
        "unknown query parameter `periods`: this route takes only `period`"
    );
}

#[tokio::test]
async fn a_vector_route_names_a_query_parameter_it_does_not_take() {
    let server = TestServer::embedded().await;
    let idx = dense(&server, "COSINE", 2).await;
    ok(&server, &idx, "/upsert", json!({"id": "a", "vector": [1.0, 0.0]})).await;
    let (status, error, _) = call(&server, &idx, "/query?topK=5", json!({"vector": [1.0, 0.0]})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        error["error"],
        "unknown query parameter `topK`: this route takes no query parameters"
    );
    let (status, error, _) = send_with_text(server.vector(&idx.token, Method::DELETE, "/reset/ns?al")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        error["error"],
        "unknown query parameter `al`: this route takes only `all`"
    );
    // The queue's token keys authenticate nothing here.
    let (status, error, _) =
        send_with_text(server.vector(&idx.token, Method::GET, "/info?svc_token=x")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
    let prefixed = format!("/vector/{}/info?verbose", idx.endpoint);
    let (status, error, _) = send_with_text(server.vector(&idx.token, Method::GET, &prefixed)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
    let (_, info, _) = send_with_text(server.vector(&idx.token, Method::GET, "/info")).await;
    assert_eq!(info["result"]["vectorCount"], 1, "nothing was reset");
}
