//! blobs tests.
