//! catalog tests.
