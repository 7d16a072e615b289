//! Turns on `cfg(musiclib_services)` for the tests when the README test command runs them,
//! and rebuilds the binary when the web player's build changes.

fn main() {
    // The web player's build is carried by the binary (src/web.rs): a new build of it is a
    // new binary.
    // (A path that does not exist would rerun this script on every build: watch the
    // folder it will appear in until it does.)
    if std::path::Path::new("../web/dist").exists() {
        println!("cargo::rerun-if-changed=../web/dist");
    } else {
        println!("cargo::rerun-if-changed=../web");
    }
    include!("../build-support/test_services.rs");
}
