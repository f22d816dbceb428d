//! The language-model routes through real HTTP: without a provider a 501 that names the key; with one,
//! a real local HTTP server answering like an OpenAI-compatible API, plain and streamed.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use quiver_testkit::calls::{publish, send};
use quiver_testkit::{Receiver, Reply, TestServer};
use reqwest::{Method, StatusCode};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(20);

#[tokio::test]
async fn without_a_language_model_provider_the_llm_routes_are_a_501_naming_the_key() {
    let server = TestServer::embedded().await;
    let (status, answer) = send(
        server
            .queue(Method::POST, "/llm/v1/chat/completions")
            .json(&json!({"model": "m", "messages": []})),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_IMPLEMENTED, "{answer}");
    assert!(
        answer["error"].as_str().unwrap().contains("queue.llm_url"),
        "{answer}"
    );
    let (status, answer) = publish(
        &server,
        "api/llm",
        &[("Upstash-Callback", "http://127.0.0.1:9/cb")],
        "{}",
    )
    .await;
    assert_eq!(status, StatusCode::NOT_IMPLEMENTED, "{answer}");
}

#[tokio::test]
async fn the_llm_routes_reach_the_configured_openai_compatible_provider_streaming_included() {
    let provider = Receiver::start().await;
    let base = provider.url("");
    let server = TestServer::with_config(|config| {
        config.queue.llm_url = base;
        config.queue.llm_api_key = "sk-local".into();
    })
    .await;
    let completion = r#"{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"42"},"finish_reason":"stop"}]}"#;
    provider.reply_next(
        Reply::status(200)
            .with_header("Content-Type", "application/json")
            .with_body(completion),
    );
    let (status, answer) = send(
        server
            .queue(Method::POST, "/llm/v1/chat/completions")
            .json(&json!({
                "model": "local-model",
                "messages": [{"role": "user", "content": "the answer?"}],
                "provider": {"owner": "upstash", "baseUrl": "https://qstash.upstash.io/llm"},
            })),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["choices"][0]["message"]["content"], "42");
    let asked = provider.wait_for(1, WAIT).await.remove(0);
    assert_eq!(asked.uri.path(), "/v1/chat/completions");
    assert_eq!(asked.header("authorization"), Some("Bearer sk-local"));
    let sent = asked.json();
    assert_eq!(sent["model"], "local-model");
    assert!(
        sent.get("provider").is_none(),
        "only the SDK reads `provider`: {sent}"
    );

    let events = "data: {\"choices\":[{\"delta\":{\"content\":\"4\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"2\"}}]}\n\ndata: [DONE]\n\n";
    provider.reply_next(
        Reply::status(200)
            .with_header("Content-Type", "text/event-stream")
            .with_body(events),
    );
    let streamed = server
        .queue(Method::POST, "/llm/v1/chat/completions")
        .json(&json!({"model": "local-model", "messages": [], "stream": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(streamed.status(), StatusCode::OK);
    assert_eq!(
        streamed.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    assert_eq!(streamed.text().await.unwrap(), events);

    // A publish to api/llm is delivered to the provider with its token; the answer goes to the callback.
    provider.respond_with(
        Reply::status(200)
            .with_header("Content-Type", "application/json")
            .with_body(completion),
    );
    let callback = provider.url("/callback");
    let (status, published) = publish(
        &server,
        "api/llm",
        &[
            ("Upstash-Callback", callback.as_str()),
            ("Content-Type", "application/json"),
        ],
        r#"{"model":"local-model","messages":[{"role":"user","content":"hi"}]}"#,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{published}");
    let requests = provider.wait_for(4, WAIT).await;
    let delivered = &requests[2];
    assert_eq!(delivered.uri.path(), "/v1/chat/completions");
    assert_eq!(delivered.header("authorization"), Some("Bearer sk-local"));
    let called_back = &requests[3];
    assert_eq!(called_back.uri.path(), "/callback");
    let body = called_back.json();
    assert_eq!(body["status"], 200);
    assert_eq!(
        STANDARD.decode(body["body"].as_str().unwrap()).unwrap(),
        completion.as_bytes()
    );
    let message_id = published["messageId"].as_str().unwrap();
    let (_, log) = send(server.queue(Method::GET, &format!("/v2/events?messageId={message_id}"))).await;
    let token = log["events"][0]["header"]["Authorization"][0].as_str().unwrap();
    assert!(
        token.starts_with("REDACTED:"),
        "the provider's key never reads back: {token}"
    );
}
