//! The client's framing, and exchanges with real local servers that answer in each way HTTP/1.1 allows.

use super::*;

#[test]
fn the_head_names_the_host_and_frames_the_body_itself() {
    let url = url::Url::parse("http://example.com:8080/a%20b/c?x=1&y=2#part").unwrap();
    let mut headers = HeaderMap::new();
    headers.insert("x-one", HeaderValue::from_static("1"));
    headers.insert(CONTENT_LENGTH, HeaderValue::from_static("999"));
    headers.insert(TRANSFER_ENCODING, HeaderValue::from_static("chunked"));
    let head = String::from_utf8(request_head(&Method::POST, &url, &headers, 5)).unwrap();
    assert_eq!(
        head,
        "POST /a%20b/c?x=1&y=2 HTTP/1.1\r\nhost: example.com:8080\r\nx-one: 1\r\ncontent-length: 5\r\n\r\n"
    );
    let get = String::from_utf8(request_head(&Method::GET, &url, &HeaderMap::new(), 0)).unwrap();
    assert_eq!(
        get,
        "GET /a%20b/c?x=1&y=2 HTTP/1.1\r\nhost: example.com:8080\r\n\r\n"
    );
    let mut own_host = HeaderMap::new();
    own_host.insert(HOST, HeaderValue::from_static("other.example"));
    let put = String::from_utf8(request_head(&Method::PUT, &url, &own_host, 0)).unwrap();
    assert_eq!(
        put,
        "PUT /a%20b/c?x=1&y=2 HTTP/1.1\r\nhost: other.example\r\ncontent-length: 0\r\n\r\n"
    );
}

#[test]
fn an_answer_is_framed_by_its_headers() {
    let headers = |pairs: &[(&'static str, &'static str)]| {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_static(value));
        }
        map
    };
    let ok = StatusCode::OK;
    let framed = |method: &Method, status, pairs| framing(method, status, &headers(pairs)).ok();
    assert_eq!(
        framed(&Method::POST, ok, &[("content-length", "12")]),
        Some(Framing::Length(12))
    );
    assert_eq!(
        framed(&Method::POST, ok, &[("content-length", "12, 12")]),
        Some(Framing::Length(12))
    );
    assert_eq!(
        framed(
            &Method::POST,
            ok,
            &[("content-length", "1"), ("content-length", "2")]
        ),
        None
    );
    assert_eq!(framed(&Method::POST, ok, &[("content-length", "x")]), None);
    assert_eq!(
        framed(
            &Method::POST,
            ok,
            &[("transfer-encoding", "gzip, Chunked"), ("content-length", "3")]
        ),
        Some(Framing::Chunked)
    );
    assert_eq!(
        framed(&Method::POST, ok, &[("transfer-encoding", "gzip")]),
        Some(Framing::UntilClose)
    );
    assert_eq!(framed(&Method::POST, ok, &[]), Some(Framing::UntilClose));
    assert_eq!(
        framed(&Method::HEAD, ok, &[("content-length", "12")]),
        Some(Framing::Empty)
    );
    assert_eq!(
        framed(&Method::POST, StatusCode::NO_CONTENT, &[]),
        Some(Framing::Empty)
    );
    assert_eq!(
        framed(&Method::POST, StatusCode::NOT_MODIFIED, &[]),
        Some(Framing::Empty)
    );
}

#[test]
fn connection_tokens_are_read_from_a_list_in_any_case() {
    assert!(has_token(b"keep-alive, Close", b"close"));
    assert!(!has_token(b"closed", b"close"));
}

/// A local server that reads each request whole and answers with the next of `answers` (raw bytes),
/// closing the connection after it when the answer's entry says so. Counts the connections it accepted.
struct RawServer {
    address: SocketAddr,
    accepted: Arc<std::sync::atomic::AtomicUsize>,
    requests: Arc<Mutex<Vec<String>>>,
}

impl RawServer {
    async fn start(answers: Vec<(&'static [u8], bool)>) -> RawServer {
        use std::sync::atomic::Ordering;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let answers = Arc::new(Mutex::new(answers.into_iter()));
        let (count, seen) = (Arc::clone(&accepted), Arc::clone(&requests));
        tokio::spawn(async move {
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                count.fetch_add(1, Ordering::SeqCst);
                let (answers, seen) = (Arc::clone(&answers), Arc::clone(&seen));
                tokio::spawn(async move {
                    let mut reader = Reader {
                        stream: &stream,
                        buffer: BytesMut::new(),
                        ended: false,
                    };
                    loop {
                        // The request's head, then its body by its length.
                        let head = loop {
                            if let Some(end) = reader.buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                                break reader.buffer.split_to(end + 4);
                            }
                            if !reader.fill().await.unwrap_or(false) {
                                return;
                            }
                        };
                        let head = String::from_utf8(head.to_vec()).unwrap();
                        let length = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length: "))
                            .map_or(0, |n| n.trim().parse::<u64>().unwrap());
                        let (body, _) = reader.read_length(length, usize::MAX).await.ok().unwrap();
                        seen.lock()
                            .unwrap()
                            .push(format!("{head}{}", String::from_utf8(body).unwrap()));
                        let Some((answer, close)) = answers.lock().unwrap().next() else {
                            return;
                        };
                        write_request(&stream, answer, b"").await.unwrap();
                        if close {
                            return;
                        }
                    }
                });
            }
        });
        RawServer {
            address,
            accepted,
            requests,
        }
    }

    fn url(&self, path: &str) -> url::Url {
        url::Url::parse(&format!("http://{}{path}", self.address)).unwrap()
    }

    fn accepted(&self) -> usize {
        self.accepted.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// Where a test server on this machine's 127.0.0.1 at `port` is reached.
fn loopback(port: u16) -> Authority {
    Authority {
        host: "127.0.0.1".into(),
        port,
    }
}

fn client() -> PlainClient {
    let policy = Arc::new(DestinationPolicy {
        allow_internal: true,
        allowed_hosts: Vec::new(),
    });
    PlainClient::new(policy, 4, Duration::from_secs(90))
}

async fn post(client: &PlainClient, url: &url::Url, limit: usize) -> Result<Answer, String> {
    let mut headers = HeaderMap::new();
    headers.insert("x-test", HeaderValue::from_static("yes"));
    client.send(&Method::POST, url, &headers, b"payload", limit).await
}

#[tokio::test]
async fn a_chunked_answer_after_a_continue_is_read_whole_and_its_connection_reused() {
    let chunked: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\nX-Answer: a\r\n\r\n5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nTrailer: t\r\n\r\n";
    let server = RawServer::start(vec![(chunked, false), (chunked, false)]).await;
    let client = client();
    for _ in 0..2 {
        let answer = post(&client, &server.url("/hook?x=1"), 1024).await.unwrap();
        assert_eq!(answer.status, StatusCode::CREATED);
        assert_eq!(answer.body, b"hello, world");
        assert_eq!(answer.headers["x-answer"], "a");
    }
    assert_eq!(server.accepted(), 1, "the second exchange reused the connection");
    let requests = server.requests.lock().unwrap().clone();
    assert_eq!(
        requests[0],
        format!(
            "POST /hook?x=1 HTTP/1.1\r\nhost: {}\r\nx-test: yes\r\ncontent-length: 7\r\n\r\npayload",
            server.address
        )
    );
}

#[tokio::test]
async fn an_answer_without_a_length_runs_to_the_close_and_its_connection_is_not_reused() {
    let until_close: &[u8] = b"HTTP/1.1 200 OK\r\n\r\nall of it";
    let closing: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
    let server = RawServer::start(vec![(until_close, true), (closing, true), (closing, true)]).await;
    let client = client();
    let answer = post(&client, &server.url("/"), 1024).await.unwrap();
    assert_eq!(answer.body, b"all of it");
    for _ in 0..2 {
        assert_eq!(post(&client, &server.url("/"), 1024).await.unwrap().body, b"ok");
    }
    assert_eq!(server.accepted(), 3, "no connection was reused");
}

#[tokio::test]
async fn a_kept_connection_the_destination_closed_is_replaced_and_the_request_sent_once() {
    // Each answer says nothing of closing, but the server closes after it: the pooled connection is dead.
    let answer: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    let server = RawServer::start(vec![(answer, true), (answer, true)]).await;
    let client = client();
    assert_eq!(post(&client, &server.url("/"), 1024).await.unwrap().body, b"ok");
    let kept = client
        .pool
        .lock()
        .unwrap()
        .idle
        .get(&loopback(server.address.port()))
        .map(Vec::len);
    assert_eq!(
        kept,
        Some(1),
        "the answer left the connection reusable, so it was kept"
    );
    // Let the close arrive, so that the kept connection is known to be dead or fails on use.
    tokio::task::yield_now().await;
    assert_eq!(post(&client, &server.url("/"), 1024).await.unwrap().body, b"ok");
    assert_eq!(server.accepted(), 2);
    assert_eq!(
        server.requests.lock().unwrap().len(),
        2,
        "each request reached the server once"
    );
}

#[tokio::test]
async fn a_long_body_is_kept_cut_at_the_limit() {
    let long: &[u8] =
        b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 26\r\n\r\nabcdefghijklmnopqrstuvwxyz";
    let server = RawServer::start(vec![(long, false), (long, false)]).await;
    let client = client();
    for _ in 0..2 {
        let answer = post(&client, &server.url("/"), 10).await.unwrap();
        assert_eq!(answer.status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(answer.body, b"abcdefghij");
    }
    assert_eq!(
        server.accepted(),
        1,
        "a body read to its end leaves the connection reusable"
    );
}

#[tokio::test]
async fn answers_that_are_not_http_or_end_early_fail_saying_so() {
    let garbage: &[u8] = b"SMTP ready\r\n\r\n";
    let short: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc";
    let server = RawServer::start(vec![(garbage, true), (short, true)]).await;
    let client = client();
    let error = post(&client, &server.url("/"), 1024).await.unwrap_err();
    assert!(error.contains("not valid HTTP"), "{error}");
    let error = post(&client, &server.url("/"), 1024).await.unwrap_err();
    assert!(error.contains("in the middle of its answer"), "{error}");
    let closed = url::Url::parse("http://127.0.0.1:9/").unwrap();
    let error = post(&client, &closed, 1024).await.unwrap_err();
    assert!(error.contains("could not connect to 127.0.0.1:9"), "{error}");
}

#[tokio::test]
async fn an_answer_that_comes_before_the_body_is_read_is_the_exchanges_answer() {
    // The destination reads the head only, answers 413, and then neither reads nor closes: a client
    // that finished writing before it read would wait for ever on a body too large for the sockets.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let mut reader = Reader {
            stream: &stream,
            buffer: BytesMut::new(),
            ended: false,
        };
        while !reader.buffer.windows(4).any(|w| w == b"\r\n\r\n") {
            assert!(reader.fill().await.unwrap());
        }
        let answer = b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 9\r\n\r\ntoo large";
        write_request(&stream, answer, b"").await.unwrap();
        std::future::pending::<()>().await;
    });
    let client = client();
    let url = url::Url::parse(&format!("http://{address}/")).unwrap();
    let (body, headers) = (vec![b'x'; 64 << 20], HeaderMap::new());
    let sent = client.send(&Method::POST, &url, &headers, &body, 1024);
    let answer = tokio::time::timeout(Duration::from_secs(30), sent)
        .await
        .expect("the early answer ends the exchange")
        .unwrap();
    assert_eq!(answer.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(answer.body, b"too large");
    assert!(
        client.checkout(&loopback(address.port())).is_none(),
        "a connection with part of a request unwritten is not kept"
    );
}

#[tokio::test]
async fn a_large_body_on_a_kept_connection_is_written_whole() {
    let ok: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    let server = RawServer::start(vec![(ok, false), (ok, false)]).await;
    let client = client();
    assert_eq!(post(&client, &server.url("/"), 1024).await.unwrap().body, b"ok");
    let body = vec![b'y'; 16 << 20];
    let answer = client
        .send(&Method::POST, &server.url("/"), &HeaderMap::new(), &body, 1024)
        .await
        .unwrap();
    assert_eq!(answer.body, b"ok");
    assert_eq!(server.accepted(), 1, "the kept connection carried the large body");
    let requests = server.requests.lock().unwrap();
    assert!(requests[1].ends_with(&"y".repeat(1 << 10)));
    assert_eq!(
        requests[1].len() - requests[1].find("\r\n\r\n").unwrap() - 4,
        16 << 20
    );
}
