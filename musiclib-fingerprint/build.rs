//! Turns on `cfg(musiclib_services)` for the tests when the README test command runs them.

fn main() {
    include!("../build-support/test_services.rs");
}
