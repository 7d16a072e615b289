//! subsonic
