//! Publish options from headers and query keys: any names and values give options or an error that
//! names the setting, never a panic. Input: lines `name: value`; lines after one that is exactly `?`
//! are query keys.
#![no_main]

use libfuzzer_sys::fuzz_target;
use quiver_queue::publish::parse_publish_options;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (mut headers, mut query) = (Vec::new(), Vec::new());
    let mut in_query = false;
    for line in text.lines() {
        if line == "?" {
            in_query = true;
            continue;
        }
        let (name, value) = line.split_once(':').unwrap_or((line, ""));
        let pair = (name.trim().to_owned(), value.trim().to_owned());
        if in_query {
            query.push(pair);
        } else {
            headers.push(pair);
        }
    }
    let _ = parse_publish_options(&headers, &query);
});
