//! Tests of the `/api/v1` adapter: the router built on a test library and called with
//! `oneshot`, no sockets. Each scenario runs on SQLite + local disk and on PostgreSQL + S3.

mod api;
mod covers;
mod hls;
mod stream;
mod sync;
