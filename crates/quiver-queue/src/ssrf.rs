//! The SSRF guard: deliveries never reach loopback, private, link-local or metadata addresses unless
//! configuration allows them. Names are checked when they resolve, at connect time, so DNS cannot be
//! used to slip past a check made earlier.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Whether an address is internal: loopback, private, link-local (cloud metadata), shared, unspecified,
/// multicast or documentation ranges.
pub fn is_internal(address: IpAddr) -> bool {
    match address {
        IpAddr::V4(v4) => is_internal_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_internal_v4(v4),
            None => is_internal_v6(v6),
        },
    }
}

fn is_internal_v4(address: Ipv4Addr) -> bool {
    let [a, b, ..] = address.octets();
    address.is_loopback()
        || address.is_private()
        || address.is_link_local()
        || address.is_unspecified()
        || address.is_broadcast()
        || address.is_multicast()
        || address.is_documentation()
        || (a == 100 && (64..128).contains(&b))
        || a == 0
}

fn is_internal_v6(address: Ipv6Addr) -> bool {
    let segments = address.segments();
    let first = segments[0];
    // IPv4 carried inside IPv6: compatible (`::a.b.c.d`), NAT64 (`64:ff9b::/96`) and 6to4
    // (`2002:AABB:CCDD::/16`) reach the IPv4 address through a gateway, so they are judged by it.
    let embedded = |high: u16, low: u16| {
        let [a, b] = high.to_be_bytes();
        let [c, d] = low.to_be_bytes();
        Ipv4Addr::new(a, b, c, d)
    };
    let compatible = segments[..6] == [0; 6] && !address.is_loopback() && !address.is_unspecified();
    let nat64 = segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0];
    let carried = if compatible || nat64 {
        Some(embedded(segments[6], segments[7]))
    } else if first == 0x2002 {
        Some(embedded(segments[1], segments[2]))
    } else {
        None
    };
    address.is_loopback()
        || address.is_unspecified()
        || address.is_multicast()
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        // Site-local (deprecated, still routed inside some networks).
        || (first & 0xffc0) == 0xfec0
        || carried.is_some_and(is_internal_v4)
}

/// Which destinations deliveries may reach.
#[derive(Debug, Clone, Default)]
pub struct DestinationPolicy {
    /// Allow every internal address.
    pub allow_internal: bool,
    /// Hosts allowed even when internal.
    pub allowed_hosts: Vec<String>,
}

impl DestinationPolicy {
    fn host_allowed(&self, host: &str) -> bool {
        self.allow_internal
            || self
                .allowed_hosts
                .iter()
                .any(|allowed| allowed.eq_ignore_ascii_case(host))
    }

    /// Checks a URL's host as written: an internal literal address, or `localhost`, is refused.
    ///
    /// # Errors
    /// A message naming the host.
    pub fn check_url(&self, url: &str) -> Result<(), String> {
        self.checked_url(url).map(drop)
    }

    /// [`DestinationPolicy::check_url`], giving the parsed URL back for a request to it.
    ///
    /// # Errors
    /// A message naming the URL, or the host.
    pub fn checked_url(&self, url: &str) -> Result<url::Url, String> {
        let parsed = url::Url::parse(url).map_err(|e| format!("`{url}` is not a valid URL: {e}"))?;
        self.check_parsed(&parsed)?;
        Ok(parsed)
    }

    /// [`DestinationPolicy::check_url`] for a URL already parsed.
    ///
    /// # Errors
    /// A message naming the host.
    pub fn check_parsed(&self, parsed: &url::Url) -> Result<(), String> {
        let host = parsed.host_str().unwrap_or_default();
        if self.host_allowed(host) {
            return Ok(());
        }
        let literal = host.trim_start_matches('[').trim_end_matches(']');
        let internal = match literal.parse::<IpAddr>() {
            Ok(address) => is_internal(address),
            Err(_) => {
                host.eq_ignore_ascii_case("localhost") || host.to_ascii_lowercase().ends_with(".localhost")
            }
        };
        if internal {
            Err(format!(
                "`{host}` is an internal address; allow it with queue.allowed_hosts or --dev"
            ))
        } else {
            Ok(())
        }
    }
}

/// The destination URLs a policy allowed lately, parsed: most deliveries go to a few destinations, and
/// parsing a URL (its host through IDNA, even an IP literal) was 5.6 % of the delivery side's CPU in a
/// drain (BENCHMARKS.md, queue throughput, session 7).
/// Holds at most [`CheckedUrls::CAPACITY`] of them, and starts afresh when full.
#[derive(Debug)]
pub struct CheckedUrls {
    policy: Arc<DestinationPolicy>,
    allowed: std::sync::Mutex<std::collections::HashMap<String, url::Url>>,
}

impl CheckedUrls {
    /// How many URLs are kept.
    pub const CAPACITY: usize = 1_024;

    /// None yet, checked against `policy`.
    pub fn new(policy: Arc<DestinationPolicy>) -> CheckedUrls {
        CheckedUrls {
            policy,
            allowed: std::sync::Mutex::default(),
        }
    }

    /// [`DestinationPolicy::checked_url`], answered from the URLs kept where it was allowed before
    /// (the policy does not change while the server runs).
    ///
    /// # Errors
    /// As [`DestinationPolicy::checked_url`].
    pub fn checked_url(&self, url: &str) -> Result<url::Url, String> {
        let lock = || {
            self.allowed
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        if let Some(parsed) = lock().get(url) {
            return Ok(parsed.clone());
        }
        let parsed = self.policy.checked_url(url)?;
        let mut allowed = lock();
        if allowed.len() >= Self::CAPACITY {
            allowed.clear();
        }
        allowed.insert(url.to_owned(), parsed.clone());
        Ok(parsed)
    }
}

/// A resolver that drops internal addresses unless the policy allows the host.
#[derive(Debug, Clone)]
pub struct GuardedResolver {
    policy: Arc<DestinationPolicy>,
}

impl GuardedResolver {
    /// A resolver enforcing `policy`.
    pub fn new(policy: Arc<DestinationPolicy>) -> GuardedResolver {
        GuardedResolver { policy }
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = Arc::clone(&self.policy);
        Box::pin(async move {
            let kept = guarded_lookup(&policy, name.as_str()).await?;
            let addresses: Addrs = Box::new(kept.into_iter());
            Ok(addresses)
        })
    }
}

/// The addresses `host` resolves to that `policy` lets deliveries reach (every one, for a host it
/// allows); an error when none is left.
pub(crate) async fn guarded_lookup(
    policy: &DestinationPolicy,
    host: &str,
) -> Result<Vec<SocketAddr>, Box<dyn std::error::Error + Send + Sync>> {
    let resolved = tokio::net::lookup_host((host, 0)).await?;
    let allowed_all = policy.host_allowed(host);
    let kept: Vec<SocketAddr> = resolved
        .filter(|address| allowed_all || !is_internal(address.ip()))
        .collect();
    if kept.is_empty() {
        return Err(format!("`{host}` resolves only to internal addresses, which are not allowed").into());
    }
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_urls_answer_as_the_policy_does_however_often_and_however_many() {
        let urls = CheckedUrls::new(Arc::new(DestinationPolicy {
            allow_internal: false,
            allowed_hosts: vec!["10.0.0.7".into()],
        }));
        for _ in 0..2 {
            assert!(
                urls.checked_url("http://127.0.0.1/hook").is_err(),
                "a refusal is not kept as allowed"
            );
            assert_eq!(
                urls.checked_url("http://10.0.0.7:8080/a?b=1").unwrap().as_str(),
                "http://10.0.0.7:8080/a?b=1"
            );
        }
        for n in 0..=CheckedUrls::CAPACITY + 1 {
            let url = format!("https://example.com/{n}");
            assert_eq!(urls.checked_url(&url).unwrap().as_str(), url);
        }
        assert!(urls.checked_url("http://localhost/").is_err());
        assert!(urls.checked_url("not a url").is_err());
    }

    #[test]
    fn internal_ranges_are_recognised() {
        for internal in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:c0a8:101::1",
            "fec0::1",
        ] {
            assert!(is_internal(internal.parse().unwrap()), "{internal}");
        }
        for public in [
            "8.8.8.8",
            "1.1.1.1",
            "2606:4700::1111",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert!(!is_internal(public.parse().unwrap()), "{public}");
        }
    }

    #[test]
    fn literal_internal_hosts_are_refused_unless_allowed() {
        let strict = DestinationPolicy::default();
        assert!(strict.check_url("http://127.0.0.1:8080/x").is_err());
        assert!(strict.check_url("http://[::1]/x").is_err());
        assert!(strict.check_url("http://localhost/x").is_err());
        assert!(strict.check_url("https://example.com/x").is_ok());
        let listed = DestinationPolicy {
            allow_internal: false,
            allowed_hosts: vec!["127.0.0.1".into()],
        };
        assert!(listed.check_url("http://127.0.0.1:8080/x").is_ok());
        let dev = DestinationPolicy {
            allow_internal: true,
            allowed_hosts: vec![],
        };
        assert!(dev.check_url("http://localhost/x").is_ok());
    }
}
