//! Turns on `cfg(musiclib_services)` for the tests when the README test command runs them,
//! and rebuilds the crate when a migration changes (`sqlx::migrate!` embeds them).

fn main() {
    println!("cargo::rerun-if-changed=migrations");
    include!("../build-support/test_services.rs");
}
