//! Plain HTTP/1.1 on connections that the delivery's own task writes and reads.
//!
//! A pooled client such as hyper's runs each connection as a task of its own and passes every request
//! and answer between that task and the caller's through channels: two tasks woken per exchange, a pool
//! checkout future, and the dispatch around them. A delivery sends one request with a body it already
//! holds and reads one answer, so this client does it in place: it takes an idle connection to the
//! destination (or opens one through the destination policy), writes the request, reads and frames the
//! answer (`Content-Length`, chunked, or up to the close), and puts the connection back when the answer
//! leaves it reusable.
//!
//! The answer is read while the request is written: a destination may answer before it has read the
//! whole request (a 413 before a large body) and then stop reading, and its answer is the exchange's.
//!
//! A connection that was idle may have been closed by the destination in the meantime. When an exchange
//! on such a connection fails before any byte of an answer came back, it is made once more on a new
//! connection, as hyper does for requests it could not send.

use std::collections::HashMap;
use std::io::{IoSlice, Write as _};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::{Buf, BytesMut};
use reqwest::header::{
    CONNECTION, CONTENT_LENGTH, HOST, HeaderMap, HeaderName, HeaderValue, TRANSFER_ENCODING,
};
use reqwest::{Method, StatusCode};
use tokio::net::TcpStream;

use crate::ssrf::{DestinationPolicy, guarded_lookup};

/// Most headers an answer may have (hyper's default).
const MAX_HEADERS: usize = 100;
/// Largest head (status line and headers) an answer may have.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// How often idle connections of every destination are looked over for ones kept too long.
const SWEEP_EVERY: Duration = Duration::from_secs(30);

/// A destination's answer, its body cut at the size limit.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Vec<u8>,
}

/// Where a connection goes: a host and port.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Authority {
    host: String,
    port: u16,
}

#[derive(Debug)]
struct Idle {
    stream: TcpStream,
    since: Instant,
}

#[derive(Debug)]
struct Pool {
    idle: HashMap<Authority, Vec<Idle>>,
    swept: Instant,
}

/// Plain HTTP/1.1 deliveries with connections kept alive per destination.
#[derive(Debug, Clone)]
pub(crate) struct PlainClient {
    policy: Arc<DestinationPolicy>,
    pool: Arc<Mutex<Pool>>,
    idle_per_host: usize,
    idle_timeout: Duration,
}

/// One exchange's failure, and whether the request can have reached the destination's application.
struct Failure {
    text: String,
    /// Nothing of an answer came back: on a connection that was idle, the destination most likely
    /// closed it before it read the request.
    unanswered: bool,
}

impl Failure {
    fn unanswered(text: String) -> Failure {
        Failure {
            text,
            unanswered: true,
        }
    }

    fn answered(text: String) -> Failure {
        Failure {
            text,
            unanswered: false,
        }
    }
}

impl PlainClient {
    /// A client that resolves names under `policy` and keeps up to `idle_per_host` idle connections to
    /// each destination, each for at most `idle_timeout`.
    pub(crate) fn new(
        policy: Arc<DestinationPolicy>,
        idle_per_host: usize,
        idle_timeout: Duration,
    ) -> PlainClient {
        PlainClient {
            policy,
            pool: Arc::new(Mutex::new(Pool {
                idle: HashMap::new(),
                swept: Instant::now(),
            })),
            idle_per_host,
            idle_timeout,
        }
    }

    /// Sends `body` to the `http` URL `url` with `headers`, and reads the answer, keeping its body up to
    /// `limit` bytes. The caller bounds the time it takes.
    ///
    /// # Errors
    /// What failed: the name, the connection, or the exchange.
    pub(crate) async fn send(
        &self,
        method: &Method,
        url: &url::Url,
        headers: &HeaderMap,
        body: &[u8],
        limit: usize,
    ) -> Result<Answer, String> {
        let host = url.host_str().ok_or_else(|| format!("`{url}` names no host"))?;
        let authority = Authority {
            host: host.trim_start_matches('[').trim_end_matches(']').to_owned(),
            // An `http` URL always has a port, its own or 80.
            port: url.port_or_known_default().unwrap_or(80),
        };
        let head = request_head(method, url, headers, body.len());
        if let Some(stream) = self.checkout(&authority) {
            match exchange(stream, method, &head, body, limit).await {
                Ok((answer, reusable)) => return Ok(self.done(&authority, answer, reusable)),
                // The destination closed the idle connection: try once on a new one.
                Err(failure) if failure.unanswered => {}
                Err(failure) => return Err(failure.text),
            }
        }
        let stream = self.connect(&authority).await?;
        match exchange(stream, method, &head, body, limit).await {
            Ok((answer, reusable)) => Ok(self.done(&authority, answer, reusable)),
            Err(failure) => Err(failure.text),
        }
    }

    fn done(&self, authority: &Authority, answer: Answer, reusable: Option<TcpStream>) -> Answer {
        if let Some(stream) = reusable {
            self.checkin(authority, stream);
        }
        answer
    }

    /// The most recently used idle connection to `authority` that is not too old.
    fn checkout(&self, authority: &Authority) -> Option<TcpStream> {
        let mut pool = self.pool.lock().unwrap_or_else(PoisonError::into_inner);
        let idle = pool.idle.get_mut(authority)?;
        while let Some(connection) = idle.pop() {
            if connection.since.elapsed() < self.idle_timeout {
                return Some(connection.stream);
            }
        }
        None
    }

    fn checkin(&self, authority: &Authority, stream: TcpStream) {
        let mut pool = self.pool.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        if now.duration_since(pool.swept) >= SWEEP_EVERY {
            let timeout = self.idle_timeout;
            pool.idle.retain(|_, idle| {
                idle.retain(|c| now.duration_since(c.since) < timeout);
                !idle.is_empty()
            });
            pool.swept = now;
        }
        let kept = Idle { stream, since: now };
        // The host is copied only for a destination's first kept connection.
        match pool.idle.get_mut(authority) {
            Some(idle) if idle.len() < self.idle_per_host => idle.push(kept),
            Some(_) => {}
            None if self.idle_per_host == 0 => {}
            None => {
                pool.idle.insert(authority.clone(), vec![kept]);
            }
        }
    }

    async fn connect(&self, authority: &Authority) -> Result<TcpStream, String> {
        let addresses = guarded_lookup(&self.policy, &authority.host)
            .await
            .map_err(|e| format!("could not resolve `{}`: {e}", authority.host))?;
        let mut last = None;
        for address in addresses {
            let address = SocketAddr::new(address.ip(), authority.port);
            match TcpStream::connect(address).await {
                Ok(stream) => {
                    stream
                        .set_nodelay(true)
                        .map_err(|e| format!("could not set up the connection to {address}: {e}"))?;
                    return Ok(stream);
                }
                Err(error) => last = Some(format!("could not connect to {address}: {error}")),
            }
        }
        Err(last.unwrap_or_else(|| format!("`{}` resolves to no address", authority.host)))
    }
}

/// The request line and headers: the caller's headers, `Host` unless they name one, and the body's
/// length. Framing headers the caller gave are left out: this client frames the body itself.
fn request_head(method: &Method, url: &url::Url, headers: &HeaderMap, body_len: usize) -> Vec<u8> {
    let mut head = Vec::with_capacity(256 + headers.len() * 48);
    head.extend_from_slice(method.as_str().as_bytes());
    head.push(b' ');
    head.extend_from_slice(url.path().as_bytes());
    if let Some(query) = url.query() {
        head.push(b'?');
        head.extend_from_slice(query.as_bytes());
    }
    head.extend_from_slice(b" HTTP/1.1\r\n");
    // `send` has checked that the URL names a host.
    if let (false, Some(host)) = (headers.contains_key(HOST), url.host_str()) {
        head.extend_from_slice(b"host: ");
        head.extend_from_slice(host.as_bytes());
        if let Some(port) = url.port() {
            let _ = write!(head, ":{port}");
        }
        head.extend_from_slice(b"\r\n");
    }
    for (name, value) in headers {
        if name == CONTENT_LENGTH || name == TRANSFER_ENCODING {
            continue;
        }
        head.extend_from_slice(name.as_str().as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    // As hyper does: no length for an empty body of a method that usually has none.
    let bodiless = matches!(
        *method,
        Method::GET | Method::HEAD | Method::DELETE | Method::OPTIONS | Method::CONNECT | Method::TRACE
    );
    if body_len > 0 || !bodiless {
        // Writing to a `Vec` cannot fail.
        let _ = write!(head, "content-length: {body_len}\r\n");
    }
    head.extend_from_slice(b"\r\n");
    head
}

/// Writes the request and reads the answer; gives the connection back when the answer leaves it
/// reusable.
async fn exchange(
    stream: TcpStream,
    method: &Method,
    head: &[u8],
    body: &[u8],
    limit: usize,
) -> Result<(Answer, Option<TcpStream>), Failure> {
    let mut reader = Reader {
        stream: &stream,
        buffer: BytesMut::with_capacity(8 * 1024),
        ended: false,
    };
    // A destination may answer before it has read the whole request (a 413 before a large body), then
    // stop reading or reset the connection: the answer is read while the request is written, and
    // writing stops once it has come. Bytes of the request never written would be read as the next
    // request's, so the connection is then not reused.
    let (head, whole_request) = {
        let write = write_request(&stream, head, body);
        tokio::pin!(write);
        tokio::select! {
            biased;
            written = &mut write => match written {
                Ok(()) => (reader.read_head().await, true),
                Err(error) => {
                    let head = reader.read_head().await.map_err(|failure| {
                        if failure.unanswered {
                            Failure::unanswered(format!("could not send the request: {error}"))
                        } else {
                            failure
                        }
                    });
                    (head, false)
                }
            },
            head = reader.read_head() => (head, false),
        }
    };
    let (status, headers, version_11) = head?;
    let framing = framing(method, status, &headers)?;
    let (body, complete) = match framing {
        Framing::Empty => (Vec::new(), true),
        Framing::Length(length) => reader.read_length(length, limit).await?,
        Framing::Chunked => reader.read_chunked(limit).await?,
        Framing::UntilClose => {
            let (body, _) = reader.read_until_close(limit).await?;
            (body, false)
        }
    };
    let keep_alive = version_11
        && !headers
            .get_all(CONNECTION)
            .iter()
            .any(|v| has_token(v.as_bytes(), b"close"));
    // Bytes past the answer would be taken for the next one's, and a connection that switched
    // protocols speaks HTTP no more: such a connection is not reused.
    let reusable = (complete
        && whole_request
        && keep_alive
        && status != StatusCode::SWITCHING_PROTOCOLS
        && reader.buffer.is_empty()
        && !reader.ended)
        .then_some(stream);
    Ok((
        Answer {
            status,
            headers,
            body,
        },
        reusable,
    ))
}

async fn write_request(stream: &TcpStream, head: &[u8], body: &[u8]) -> std::io::Result<()> {
    let (mut head, mut body) = (head, body);
    while !head.is_empty() || !body.is_empty() {
        stream.writable().await?;
        let written = match stream.try_write_vectored(&[IoSlice::new(head), IoSlice::new(body)]) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        };
        let from_head = written.min(head.len());
        head = &head[from_head..];
        body = &body[written - from_head..];
    }
    Ok(())
}

/// How an answer's body is delimited.
#[derive(Debug, PartialEq, Eq)]
enum Framing {
    Empty,
    Length(u64),
    Chunked,
    UntilClose,
}

fn framing(method: &Method, status: StatusCode, headers: &HeaderMap) -> Result<Framing, Failure> {
    if *method == Method::HEAD
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED
        || status.is_informational()
    {
        return Ok(Framing::Empty);
    }
    if let Some(last) = headers.get_all(TRANSFER_ENCODING).iter().next_back() {
        let chunked = last
            .as_bytes()
            .rsplit(|&b| b == b',')
            .next()
            .is_some_and(|coding| coding.trim_ascii().eq_ignore_ascii_case(b"chunked"));
        return Ok(if chunked {
            Framing::Chunked
        } else {
            Framing::UntilClose
        });
    }
    let mut length = None;
    for value in &headers.get_all(CONTENT_LENGTH) {
        for part in value.as_bytes().split(|&b| b == b',') {
            let parsed = std::str::from_utf8(part.trim_ascii())
                .ok()
                .and_then(|t| t.parse::<u64>().ok())
                .ok_or_else(|| Failure::answered("the answer has an invalid Content-Length".into()))?;
            if length.is_some_and(|l| l != parsed) {
                return Err(Failure::answered(
                    "the answer has conflicting Content-Length values".into(),
                ));
            }
            length = Some(parsed);
        }
    }
    Ok(length.map_or(Framing::UntilClose, Framing::Length))
}

/// Whether the comma-separated header value `value` holds `token` (any case).
fn has_token(value: &[u8], token: &[u8]) -> bool {
    value
        .split(|&b| b == b',')
        .any(|part| part.trim_ascii().eq_ignore_ascii_case(token))
}

/// An answer being read: its connection and the bytes read but not yet taken.
struct Reader<'a> {
    stream: &'a TcpStream,
    buffer: BytesMut,
    /// The destination closed its side.
    ended: bool,
}

impl Reader<'_> {
    /// Reads more bytes into the buffer; `false` at the end of the stream.
    async fn fill(&mut self) -> std::io::Result<bool> {
        if self.ended {
            return Ok(false);
        }
        if self.buffer.capacity() - self.buffer.len() < 4 * 1024 {
            self.buffer.reserve(16 * 1024);
        }
        loop {
            self.stream.readable().await?;
            match self.stream.try_read_buf(&mut self.buffer) {
                Ok(0) => {
                    self.ended = true;
                    return Ok(false);
                }
                Ok(_) => return Ok(true),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// The status, headers and whether the answer is HTTP/1.1; informational answers are skipped.
    async fn read_head(&mut self) -> Result<(StatusCode, HeaderMap, bool), Failure> {
        let mut answered = false;
        loop {
            let parsed = {
                let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
                let mut response = httparse::Response::new(&mut slots);
                match response.parse(&self.buffer) {
                    Ok(httparse::Status::Complete(length)) => {
                        let status = response
                            .code
                            .and_then(|c| StatusCode::from_u16(c).ok())
                            .ok_or_else(|| Failure::answered("the answer has an invalid status".into()))?;
                        let mut headers = HeaderMap::with_capacity(response.headers.len());
                        for header in response.headers.iter() {
                            let (Ok(name), Ok(value)) = (
                                HeaderName::from_bytes(header.name.as_bytes()),
                                HeaderValue::from_bytes(header.value),
                            ) else {
                                return Err(Failure::answered(format!(
                                    "the answer has an invalid header `{}`",
                                    header.name
                                )));
                            };
                            headers.append(name, value);
                        }
                        Some((length, status, headers, response.version == Some(1)))
                    }
                    Ok(httparse::Status::Partial) => None,
                    Err(error) => {
                        return Err(Failure::answered(format!(
                            "the answer is not valid HTTP: {error}"
                        )));
                    }
                }
            };
            match parsed {
                Some((length, status, _, _))
                    if status.is_informational() && status != StatusCode::SWITCHING_PROTOCOLS =>
                {
                    self.buffer.advance(length);
                    continue;
                }
                Some((length, status, headers, version_11)) => {
                    self.buffer.advance(length);
                    return Ok((status, headers, version_11));
                }
                None if self.buffer.len() > MAX_HEAD_BYTES => {
                    return Err(Failure::answered("the answer's head is too large".into()));
                }
                None => {}
            }
            let more = self.fill().await.map_err(|e| {
                let text = format!("could not read the answer: {e}");
                if answered || !self.buffer.is_empty() {
                    Failure::answered(text)
                } else {
                    Failure::unanswered(text)
                }
            })?;
            if !more {
                let text = "the destination closed the connection before it answered".to_owned();
                return Err(if self.buffer.is_empty() && !answered {
                    Failure::unanswered(text)
                } else {
                    Failure::answered(text)
                });
            }
            answered = true;
        }
    }

    /// Takes up to `wanted` bytes from the buffer into `body`, keeping at most `limit` bytes.
    fn take(&mut self, wanted: u64, body: &mut Vec<u8>, limit: usize) -> u64 {
        let n = usize::try_from(wanted)
            .unwrap_or(usize::MAX)
            .min(self.buffer.len());
        let room = limit.saturating_sub(body.len());
        body.extend_from_slice(&self.buffer[..n.min(room)]);
        self.buffer.advance(n);
        n as u64
    }

    async fn more(&mut self) -> Result<(), Failure> {
        match self.fill().await {
            Ok(true) => Ok(()),
            Ok(false) => Err(Failure::answered(
                "the destination closed the connection in the middle of its answer".into(),
            )),
            Err(e) => Err(Failure::answered(format!("could not read the answer: {e}"))),
        }
    }

    /// A body of `length` bytes; whether it was read to its end (it is not once `limit` is reached).
    async fn read_length(&mut self, length: u64, limit: usize) -> Result<(Vec<u8>, bool), Failure> {
        let mut body = Vec::with_capacity(usize::try_from(length).unwrap_or(limit).min(limit));
        let mut left = length;
        loop {
            left -= self.take(left, &mut body, limit);
            if left == 0 {
                return Ok((body, true));
            }
            if body.len() >= limit {
                return Ok((body, false));
            }
            self.more().await?;
        }
    }

    /// A body up to the end of the stream.
    async fn read_until_close(&mut self, limit: usize) -> Result<(Vec<u8>, bool), Failure> {
        let mut body = Vec::new();
        loop {
            self.take(u64::MAX, &mut body, limit);
            if body.len() >= limit {
                return Ok((body, false));
            }
            match self.fill().await {
                Ok(true) => {}
                Ok(false) => return Ok((body, true)),
                Err(e) => return Err(Failure::answered(format!("could not read the answer: {e}"))),
            }
        }
    }

    /// One line (without its CRLF) from the buffer, reading more as needed.
    async fn line(&mut self) -> Result<BytesMut, Failure> {
        loop {
            if let Some(end) = self.buffer.windows(2).position(|w| w == b"\r\n") {
                let line = self.buffer.split_to(end);
                self.buffer.advance(2);
                return Ok(line);
            }
            if self.buffer.len() > MAX_HEAD_BYTES {
                return Err(Failure::answered(
                    "the answer has a chunk line that is too long".into(),
                ));
            }
            self.more().await?;
        }
    }

    /// A chunked body; whether it was read to its end (it is not once `limit` is reached).
    async fn read_chunked(&mut self, limit: usize) -> Result<(Vec<u8>, bool), Failure> {
        let mut body = Vec::new();
        loop {
            let line = self.line().await?;
            // `split` yields at least one part: the size, before any extension.
            let size = line[..]
                .split(|&b| b == b';')
                .next()
                .unwrap_or_default()
                .trim_ascii();
            let size = std::str::from_utf8(size)
                .ok()
                .and_then(|s| u64::from_str_radix(s, 16).ok())
                .ok_or_else(|| Failure::answered("the answer has an invalid chunk size".into()))?;
            if size == 0 {
                // Trailers, up to the empty line.
                while !self.line().await?.is_empty() {}
                return Ok((body, true));
            }
            let mut left = size;
            loop {
                left -= self.take(left, &mut body, limit);
                if left == 0 {
                    break;
                }
                if body.len() >= limit {
                    return Ok((body, false));
                }
                self.more().await?;
            }
            if !self.line().await?.is_empty() {
                return Err(Failure::answered(
                    "the answer has a chunk without its line end".into(),
                ));
            }
            if body.len() >= limit {
                return Ok((body, false));
            }
        }
    }
}

#[cfg(test)]
mod tests;
