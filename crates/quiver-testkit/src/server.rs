//! The real server, on port 0, over a temporary data directory, driven by a manual clock.

use std::sync::Arc;

use quiver_admin::{Account, BootstrapCredentials, Email};
use quiver_core::ManualClock;
use quiver_server::{App, AppOptions, Config};
use reqwest::{Method, RequestBuilder};
use tempfile::TempDir;

/// A running Quiver for one test. Dropping it without [`TestServer::stop`] abandons the process's
/// tasks with the test's runtime; the data directory is removed either way.
#[derive(Debug)]
pub struct TestServer {
    app: Option<App>,
    data_dir: TempDir,
    clock: ManualClock,
    client: reqwest::Client,
    config: Config,
}

impl TestServer {
    /// A server with the default configuration and generated credentials.
    ///
    /// # Panics
    /// When the server cannot start: the test cannot proceed.
    pub async fn embedded() -> TestServer {
        Self::with_config(|_| {}).await
    }

    /// A server whose configuration `adjust` may change (the bind address and data directory are set
    /// by the test kit; the models directory comes from `QUIVER_MODELS_DIR` when it is set).
    ///
    /// # Panics
    /// When the server cannot start.
    pub async fn with_config(adjust: impl FnOnce(&mut Config)) -> TestServer {
        let data_dir = tempfile::tempdir().expect("a temporary data directory");
        let mut config = Config::default();
        // Test receivers listen on loopback; SSRF tests turn this back off in `adjust`.
        config.queue.allow_private_destinations = true;
        // The models `scripts/test` installed (ALL_MINILM_L6_V2); without it, dense models are missing.
        if let Some(dir) = std::env::var_os("QUIVER_MODELS_DIR") {
            config.embeddings.models_dir = dir.into();
        }
        adjust(&mut config);
        config.server.bind = "127.0.0.1:0".parse().expect("a valid address");
        config.server.data_dir = data_dir.path().to_owned();
        let clock = ManualClock::starting_now();
        let client = reqwest::Client::builder()
            .no_proxy()
            .build()
            .expect("an HTTP client");
        let mut server = TestServer {
            app: None,
            data_dir,
            clock,
            client,
            config,
        };
        server.start().await;
        server
    }

    async fn start(&mut self) {
        let options = AppOptions {
            config: self.config.clone(),
            clock: Arc::new(self.clock.clone()),
            bootstrap: BootstrapCredentials::default(),
            request_lines: None,
        };
        self.app = Some(App::start(options).await.expect("the test server starts"));
    }

    fn app(&self) -> &App {
        self.app.as_ref().expect("the server is running")
    }

    /// Waits until the scheduler, retention and the delivery worker have nothing to do at the current
    /// manual time: each has looked for due work since its last wake-up and sleeps until a time still
    /// ahead. Tests that assert that something did *not* happen wait for this, never for real time.
    /// Deliveries already started may still be on their way.
    ///
    /// # Panics
    /// When they are still busy after 20 seconds.
    pub async fn settle(&self) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while !self.app().queue().is_idle() {
            assert!(
                std::time::Instant::now() < deadline,
                "the scheduler, retention or the delivery worker did not settle"
            );
            tokio::task::yield_now().await;
        }
    }

    /// The catalogue store, for tests that lay down history (usage) the API cannot create.
    pub fn admin_store(&self) -> std::sync::Arc<dyn quiver_admin::AdminStore> {
        self.app().admin_store()
    }

    /// `http://127.0.0.1:PORT` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.app().local_addr())
    }

    /// The clock every scheduled action of the server reads.
    pub fn clock(&self) -> &ManualClock {
        &self.clock
    }

    /// The bootstrap account, with its credentials.
    pub fn account(&self) -> &Account {
        &self.app().bootstrap().account
    }

    /// The server's data directory.
    pub fn data_dir(&self) -> &std::path::Path {
        self.data_dir.path()
    }

    /// A plain HTTP client that sends traffic to loopback only.
    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// A request to `path` authenticated as the bootstrap account (HTTP Basic).
    pub fn management(&self, method: Method, path: &str) -> RequestBuilder {
        self.management_as(self.account(), method, path)
    }

    /// A request to `path` authenticated as `account` (HTTP Basic).
    pub fn management_as(&self, account: &Account, method: Method, path: &str) -> RequestBuilder {
        self.client
            .request(method, self.url(path))
            .basic_auth(account.email.as_str(), Some(&account.api_key))
    }

    /// A request to `path` with the bootstrap account's queue token (Bearer).
    pub fn queue(&self, method: Method, path: &str) -> RequestBuilder {
        self.client
            .request(method, self.url(path))
            .bearer_auth(&self.account().queue_token)
    }

    /// A request to a vector endpoint with an index token (Bearer).
    pub fn vector(&self, token: &str, method: Method, path: &str) -> RequestBuilder {
        self.client.request(method, self.url(path)).bearer_auth(token)
    }

    /// Creates a vector index for the bootstrap account and returns its record.
    ///
    /// # Panics
    /// When the index cannot be created.
    pub async fn create_vector_index(&self, body: serde_json::Value) -> serde_json::Value {
        let response = self
            .management(Method::POST, "/v2/vector/index")
            .json(&body)
            .send()
            .await
            .expect("the server answers");
        assert!(
            response.status().is_success(),
            "creating an index failed: {}",
            response.status()
        );
        response.json().await.expect("an index record")
    }

    /// Adds an account, as `quiver accounts create` does.
    ///
    /// # Panics
    /// When the email is invalid or taken.
    pub async fn create_account(&self, email: &str) -> Account {
        let email = Email::try_from(email.to_owned()).expect("a valid email");
        self.app()
            .admin()
            .create_account(email)
            .await
            .expect("the account is created")
    }

    /// Shuts the server down in order and starts it again on the same data directory (on a new port).
    pub async fn restart(&mut self) {
        if let Some(app) = self.app.take() {
            app.shutdown().await;
        }
        self.start().await;
    }

    /// Like [`TestServer::restart`], with the configuration changed by `adjust` first.
    pub async fn restart_with(&mut self, adjust: impl FnOnce(&mut Config)) {
        if let Some(app) = self.app.take() {
            app.shutdown().await;
        }
        adjust(&mut self.config);
        self.start().await;
    }

    /// Shuts the server down in order.
    pub async fn stop(mut self) {
        if let Some(app) = self.app.take() {
            app.shutdown().await;
        }
    }
}
