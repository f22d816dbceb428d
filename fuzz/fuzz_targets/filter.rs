//! The metadata filter language: parsing any text, and evaluating what parses against nested
//! metadata, never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use quiver_vector::filter::Filter;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(Some(filter)) = Filter::parse(text) {
        let metadata = serde_json::json!({
            "city": "Istanbul", "population": 15_460_000, "is_capital": false,
            "geography": {"continent": "Asia", "coordinates": {"latitude": 41.0, "longitude": 28.9}},
            "tags": ["a", "b", 3, null], "nested": [{"x": 1}, {"x": [1, 2]}], "empty": {}
        });
        let _ = filter.matches(&metadata);
        let _ = filter.matches(&serde_json::Value::Null);
    }
});
