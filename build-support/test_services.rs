// Included by the build scripts of the crates whose tests need the services the README test
// command starts (PostgreSQL, an S3-compatible server, the generated corpus, ffmpeg, xmllint).
//
// `.ci/test.sh` sets MUSICLIB_TEST_SERVICES=1, which turns on `cfg(musiclib_services)`: the
// tests that need those services run, and a missing one fails them. Without it (a plain
// `cargo test`), those tests are compiled as `#[ignore]`d, so a skip shows in the count as
// "ignored" instead of passing silently.
{
    println!("cargo::rustc-check-cfg=cfg(musiclib_services)");
    println!("cargo::rerun-if-env-changed=MUSICLIB_TEST_SERVICES");
    if std::env::var("MUSICLIB_TEST_SERVICES").is_ok_and(|value| value == "1") {
        println!("cargo::rustc-cfg=musiclib_services");
    }
}
