//! Every integration test of the `quiver` crate, in one binary so CI links once: the real server on
//! port 0 (the test kit), the `quiver` executable, and the official SDKs.

mod auth_matrix;
mod backup;
mod cli;
mod console;
mod delivery_errors;
mod delivery_slots;
mod delivery_threads;
mod events_log;
mod flow_control;
mod limits;
mod llm;
mod management;
mod nodes;
mod operations;
mod query_keys;
mod queue;
mod queue_filters;
mod queues;
mod restart;
mod retention;
mod run_starts;
mod schedules;
mod sdk;
mod search;
mod ssrf;
mod stats;
mod url_groups;
mod vector;
mod vector_sparse;
mod vector_text;
mod waiters;
mod workflows;
