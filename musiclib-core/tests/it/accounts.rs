//! accounts tests.
