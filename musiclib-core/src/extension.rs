//! What an embedding program plugs into the library: an external recommender, asked
//! alongside the radio's own signals ([`crate::recommend`] guards the call and mixes the
//! answers in). Handed over in [`crate::config::RecommendConfig::external`].

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// What the external recommender is asked.
#[derive(Debug, Clone, Serialize)]
pub struct ExternalRequest {
    /// The user the feed is for.
    pub user_id: String,
    /// The seed track, or the liked tracks a feed without one starts from.
    pub seeds: Vec<ExternalSeed>,
    /// How many items the batch will hold.
    pub count: usize,
}

/// A seed as the external recommender sees it.
#[derive(Debug, Clone, Serialize)]
pub struct ExternalSeed {
    /// Its id in this library.
    pub track_id: String,
    /// Title.
    pub title: String,
    /// Artist name.
    pub artist: Option<String>,
    /// Album title.
    pub album: Option<String>,
    /// MusicBrainz recording id, when known.
    pub musicbrainz_recording_id: Option<String>,
}

/// One suggestion: a track of this library, by id or MusicBrainz recording id.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExternalSuggestion {
    /// The track's id here.
    #[serde(default)]
    pub track_id: Option<String>,
    /// Or its MusicBrainz recording id.
    #[serde(default)]
    pub musicbrainz_recording_id: Option<String>,
    /// Weight, 0 to 1 (1 when absent).
    #[serde(default)]
    pub score: Option<f64>,
}

/// A recommender outside the library. Failures are messages: the radio never fails for
/// them.
#[async_trait]
pub trait ExternalRecommender: Send + Sync {
    /// Suggestions for `request`, best first.
    async fn suggest(&self, request: &ExternalRequest) -> Result<Vec<ExternalSuggestion>, String>;
}

/// An [`ExternalRecommender`] handed over in [`crate::config::RecommendConfig::external`]
/// (for embedders; the binary sets `RECOMMENDER_URL` instead).
#[derive(Clone)]
pub struct ExternalPlugin(pub Arc<dyn ExternalRecommender>);

impl std::fmt::Debug for ExternalPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ExternalPlugin")
    }
}
