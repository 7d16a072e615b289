//! Examples live beside this file; see Cargo.toml.
