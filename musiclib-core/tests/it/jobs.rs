//! jobs tests.
