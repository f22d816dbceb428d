use quiver_store_pg::PgDatabase;

use crate::TestSchema;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_starting_together_migrate_once() {
    let schema = TestSchema::new();
    let opened = open_four_at_once(&schema).await;
    assert!(opened.iter().all(Result::is_ok), "{opened:?}");
    let database = opened.into_iter().next().unwrap().unwrap();
    let applied: i64 = database
        .client()
        .await
        .unwrap()
        .query_one("SELECT COUNT(*) FROM schema_migrations WHERE version = 1", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(applied, 1, "the first migration is applied once");
}

/// Four nodes open the same fresh schema at once.
async fn open_four_at_once(schema: &TestSchema) -> Vec<Result<PgDatabase, quiver_core::StoreError>> {
    let opens = (0..4).map(|_| {
        let options = schema.options.clone();
        tokio::spawn(async move { PgDatabase::open(&options).await })
    });
    let mut opened = Vec::new();
    for open in opens.collect::<Vec<_>>() {
        opened.push(open.await.expect("the task ends"));
    }
    opened
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_from_a_newer_build_is_refused() {
    let schema = TestSchema::new();
    let database = PgDatabase::open(&schema.options).await.unwrap();
    database
        .client()
        .await
        .unwrap()
        .execute(
            "INSERT INTO schema_migrations (version, name) VALUES (999, 'from the future')",
            &[],
        )
        .await
        .unwrap();
    let refused = PgDatabase::open(&schema.options).await.unwrap_err();
    assert!(
        refused.to_string().contains("newer than this build knows"),
        "{refused}"
    );
}

/// The storage URL of `schema` with `keys` added to its query.
fn with_keys(schema: &TestSchema, keys: &str) -> quiver_store_pg::PgOptions {
    let url = &schema.options.url;
    let separator = if url.contains('?') { '&' } else { '?' };
    quiver_store_pg::PgOptions {
        url: format!("{url}{separator}{keys}"),
        ..schema.options.clone()
    }
}

/// Whether the pool's connections to `database` are encrypted, as the server sees them.
async fn encrypted(database: &PgDatabase) -> bool {
    database
        .client()
        .await
        .unwrap()
        .query_one("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", &[])
        .await
        .unwrap()
        .get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_are_encrypted_and_the_server_checked_as_sslmode_asks() {
    let schema = TestSchema::new();
    let plain = PgDatabase::open(&with_keys(&schema, "sslmode=disable"))
        .await
        .unwrap();
    assert!(!encrypted(&plain).await);
    let client = plain.client().await.unwrap();
    let offers: String = client.query_one("SHOW ssl", &[]).await.unwrap().get(0);
    assert_eq!(
        offers, "on",
        "the test server must offer TLS (`ssl = on`, as Debian's packages set it)"
    );
    // The server's own (self-signed) certificate, read where the server keeps it: the test server runs here.
    let certificate: String = client.query_one("SHOW ssl_cert_file", &[]).await.unwrap().get(0);
    assert!(
        std::fs::metadata(&certificate).is_ok(),
        "the test server's certificate {certificate} must be readable here"
    );

    let required = PgDatabase::open(&with_keys(&schema, "sslmode=require"))
        .await
        .unwrap();
    assert!(encrypted(&required).await, "require encrypts");
    let preferred = PgDatabase::open(&schema.options).await.unwrap();
    assert!(
        encrypted(&preferred).await,
        "prefer, the default, encrypts when the server offers it"
    );
    let chain = format!("sslmode=verify-ca&sslrootcert={certificate}");
    let verified = PgDatabase::open(&with_keys(&schema, &chain)).await.unwrap();
    assert!(
        encrypted(&verified).await,
        "verify-ca takes a chain that leads to sslrootcert"
    );

    // Debian's certificate names `localhost`; the test URL names an address or another host.
    let full = format!("sslmode=verify-full&sslrootcert={certificate}");
    let host = schema
        .options
        .url
        .split('@')
        .nth(1)
        .and_then(|rest| rest.split([':', '/']).next())
        .unwrap_or_default()
        .to_owned();
    if host != "localhost" {
        let refused = PgDatabase::open(&with_keys(&schema, &full))
            .await
            .unwrap_err()
            .to_string();
        assert!(refused.contains("not valid for name"), "{refused}");
        let mut by_name = with_keys(&schema, &full);
        by_name.url = by_name.url.replacen(&format!("@{host}"), "@localhost", 1);
        let named = PgDatabase::open(&by_name).await.unwrap();
        assert!(
            encrypted(&named).await,
            "verify-full takes the host the certificate names"
        );
    }
    // A CA that did not sign the server's certificate vouches for nothing: the first of the system's.
    let bundle = std::fs::read_to_string("/etc/ssl/certs/ca-certificates.crt").unwrap_or_default();
    let end = "-----END CERTIFICATE-----";
    let other_ca = bundle
        .split_inclusive(end)
        .next()
        .filter(|pem| pem.ends_with(end));
    let other_ca = other_ca.expect("the system's CA bundle (Debian's ca-certificates) is installed");
    let file = std::env::temp_dir().join(format!("quiver-other-ca-{}.pem", uuid::Uuid::new_v4().simple()));
    std::fs::write(&file, other_ca).unwrap();
    let keys = format!("sslmode=verify-ca&sslrootcert={}", file.display());
    let unknown = PgDatabase::open(&with_keys(&schema, &keys))
        .await
        .unwrap_err()
        .to_string();
    let _ = std::fs::remove_file(&file);
    assert!(unknown.contains("UnknownIssuer"), "{unknown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_keep_the_urls_options_and_run_without_jit() {
    let schema = TestSchema::new();
    let database = PgDatabase::open(&with_keys(&schema, "options=-c%20work_mem%3D7MB"))
        .await
        .unwrap();
    let client = database.client().await.unwrap();
    let setting = |name: &'static str| {
        let client = &client;
        async move {
            let row = client.query_one(&format!("SHOW {name}"), &[]).await.unwrap();
            row.get::<_, String>(0)
        }
    };
    assert_eq!(setting("work_mem").await, "7MB", "the URL's own options stay");
    assert_eq!(setting("jit").await, "off");
    assert_eq!(
        setting("search_path").await,
        schema.options.schema.clone().unwrap(),
        "the store's schema is the search path"
    );
}
