use std::collections::BTreeSet;

use super::*;

/// The routers' sources: what they register is read from them, so that a route added without its
/// description (or the other way round) fails here.
const ROUTERS: [&str; 4] = [
    include_str!("../router.rs"),
    include_str!("../management/mod.rs"),
    include_str!("../queue/mod.rs"),
    include_str!("../vector/mod.rs"),
];

/// A path with its parameters' names erased (`{}`, and `{*}` for a catch-all), for comparing.
fn erased(path: &str) -> String {
    let mut out = String::new();
    let mut rest = path;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = rest[open..].find('}').map_or(rest.len(), |c| open + c + 1);
        out.push_str(if rest[open..].starts_with("{*") {
            "{*}"
        } else {
            "{}"
        });
        rest = &rest[close..];
    }
    out.push_str(rest);
    out
}

/// The text of the call whose arguments start at `start` (just after its `(`), up to its `)`.
fn call_arguments(source: &str, start: usize) -> &str {
    let mut depth = 1;
    for (offset, c) in source[start..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return &source[start..start + offset];
                }
            }
            _ => {}
        }
    }
    &source[start..]
}

/// The methods a method router names (`get(..).post(..)`, `axum::routing::delete(..)`, `any(..)`).
fn methods_in(handler: &str) -> BTreeSet<String> {
    ["get", "post", "put", "patch", "delete", "any"]
        .into_iter()
        .filter(|method| {
            handler
                .match_indices(&format!("{method}("))
                .any(|(at, _)| at == 0 || !handler[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_'))
        })
        .map(str::to_ascii_uppercase)
        .collect()
}

/// Every (method, erased path) the routers register; `ANY` for a route that takes every method.
fn registered() -> BTreeSet<(String, String)> {
    let mut routes = BTreeSet::new();
    for source in ROUTERS {
        for (at, _) in source.match_indices(".route(") {
            let arguments = call_arguments(source, at + ".route(".len());
            let Some(path) = arguments
                .trim_start()
                .strip_prefix('"')
                .and_then(|rest| rest.split('"').next())
            else {
                continue; // the vector routes made in a loop, read below
            };
            for method in methods_in(arguments) {
                routes.insert((method, erased(path)));
            }
        }
        // The vector routes that act on a namespace: `("upsert", any(records::upsert)),` in a list.
        for (at, _) in source.match_indices("(\"") {
            let entry = &source[at + 2..];
            if let Some((name, rest)) = entry.split_once('"')
                && rest.starts_with(", any(")
                && !name.starts_with('/')
            {
                routes.insert(("ANY".to_owned(), format!("/{name}")));
                routes.insert(("ANY".to_owned(), format!("/{name}/{{}}")));
            }
        }
    }
    routes
}

/// Whether a documented path is served by a route of this (erased) path.
fn serves(route: &str, documented: &str) -> bool {
    route == documented
        || route
            .strip_suffix("{*}")
            .is_some_and(|prefix| documented.len() > prefix.len() && documented.starts_with(prefix))
}

#[test]
fn the_description_lists_exactly_the_routes_the_routers_register() {
    let routes = registered();
    assert!(routes.len() > 60, "the routers' sources were read: {routes:?}");
    let documented: Vec<(BTreeSet<String>, String)> = operations()
        .iter()
        .map(|op| {
            let mut methods: BTreeSet<String> = op.also.iter().map(|m| (*m).to_owned()).collect();
            methods.insert(op.method.to_owned());
            (methods, erased(&op.path))
        })
        .collect();
    for (method, route) in &routes {
        assert!(
            documented
                .iter()
                .any(|(methods, path)| serves(route, path) && (method == "ANY" || methods.contains(method))),
            "{method} {route} is served but not described"
        );
    }
    for (methods, path) in &documented {
        for method in methods {
            assert!(
                routes
                    .iter()
                    .any(|(m, route)| serves(route, path) && (m == "ANY" || m == method)),
                "{method} {path} is described but not served"
            );
        }
    }
}

#[test]
fn operations_are_described_once_with_every_path_parameter() {
    let mut seen = BTreeSet::new();
    for op in operations() {
        assert!(
            seen.insert((op.method, op.path.clone())),
            "{} {} twice",
            op.method,
            op.path
        );
        let described = op.to_json();
        let declared: BTreeSet<&str> = described["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["in"] == "path")
            .filter_map(|p| p["name"].as_str())
            .collect();
        let in_path: BTreeSet<&str> = op
            .path
            .split('/')
            .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
            .collect();
        assert_eq!(declared, in_path, "{} {}", op.method, op.path);
    }
}

#[test]
fn the_committed_description_is_what_the_code_describes() {
    let committed_path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/openapi.json");
    if std::env::var_os("QUIVER_BLESS").is_some() {
        std::fs::write(committed_path, document()).expect("docs/openapi.json is written");
    }
    let committed = std::fs::read_to_string(committed_path).unwrap_or_default();
    assert!(
        committed == document(),
        "docs/openapi.json differs from the description the code makes; \
         run `QUIVER_BLESS=1 cargo test -p quiver-http openapi` and commit it"
    );
}
