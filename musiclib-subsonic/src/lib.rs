//! musiclib-subsonic: the legacy Subsonic 1.16.1 / OpenSubsonic interface of musiclib, as an
//! adapter over [`musiclib_core::Library`], mounted by the binary at `/rest`.
//!
//! Not implemented yet: it arrives with its own issue (authentication by app password with
//! `t`/`s`/`p`/`enc:`, XML and JSON envelopes, browsing, media, playlists and annotations).
//! The crate exists now so the workspace has its final shape and the dependency rule
//! (adapters depend on core only, never on sqlx) is checked from the start.
