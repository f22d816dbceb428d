//! The HTTP methods a message may be delivered with.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A delivery's HTTP method. Stored and shown in upper case, as the wire writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum HttpMethod {
    /// `GET`.
    Get,
    /// `POST`, the default.
    #[default]
    Post,
    /// `PUT`.
    Put,
    /// `PATCH`.
    Patch,
    /// `DELETE`.
    Delete,
    /// `HEAD`.
    Head,
}

impl HttpMethod {
    /// Every method, in the order error messages list them.
    pub const ALL: [HttpMethod; 6] = [
        HttpMethod::Get,
        HttpMethod::Post,
        HttpMethod::Put,
        HttpMethod::Patch,
        HttpMethod::Delete,
        HttpMethod::Head,
    ];

    /// The wire spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            HttpMethod::Get => "GET",
            HttpMethod::Post => "POST",
            HttpMethod::Put => "PUT",
            HttpMethod::Patch => "PATCH",
            HttpMethod::Delete => "DELETE",
            HttpMethod::Head => "HEAD",
        }
    }

    /// The method for the HTTP client.
    pub fn to_reqwest(self) -> reqwest::Method {
        match self {
            HttpMethod::Get => reqwest::Method::GET,
            HttpMethod::Post => reqwest::Method::POST,
            HttpMethod::Put => reqwest::Method::PUT,
            HttpMethod::Patch => reqwest::Method::PATCH,
            HttpMethod::Delete => reqwest::Method::DELETE,
            HttpMethod::Head => reqwest::Method::HEAD,
        }
    }
}

impl fmt::Display for HttpMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for HttpMethod {
    type Err = String;

    /// Reads a method in any case, surrounding blanks ignored.
    fn from_str(text: &str) -> Result<HttpMethod, String> {
        let wanted = text.trim();
        HttpMethod::ALL
            .into_iter()
            .find(|method| method.as_str().eq_ignore_ascii_case(wanted))
            .ok_or_else(|| {
                let names: Vec<&str> = HttpMethod::ALL.iter().map(|m| m.as_str()).collect();
                format!("`{text}` is not one of {}", names.join(", "))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_read_in_any_case_and_store_in_upper_case() {
        assert_eq!(" put ".parse::<HttpMethod>(), Ok(HttpMethod::Put));
        assert!("TRACE".parse::<HttpMethod>().is_err());
        assert_eq!(serde_json::to_string(&HttpMethod::Delete).unwrap(), "\"DELETE\"");
        assert_eq!(
            serde_json::from_str::<HttpMethod>("\"PATCH\"").unwrap(),
            HttpMethod::Patch
        );
    }
}
