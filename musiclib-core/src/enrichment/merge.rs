//! The enrichment decision, as a pure function: what a track becomes, given what it has,
//! its embedded tags, and the best fingerprint match (spec: Enrichment rules 1–3).
//!
//! - Tags are preferred and the lookup fills gaps, except when the match scores at or above
//!   the trust score: then the lookup wins for title, artist, album and year, and the tags
//!   are the fallback.
//! - Nothing is erased: a field that has a value keeps one.

use super::acoustid::{credit_name, Match, Recording, ReleaseGroup};
use crate::probe::EmbeddedTags;
use crate::text::name_key;

/// The fields of a track that enrichment may set, as they are now.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Current {
    /// Title (never empty; the file name when the file has no title tag).
    pub title: String,
    /// Track artist.
    pub artist: Option<String>,
    /// Album title.
    pub album: Option<String>,
    /// Album artist.
    pub album_artist: Option<String>,
    /// Year.
    pub year: Option<i64>,
    /// Genre.
    pub genre: Option<String>,
    /// Track number.
    pub track_number: Option<i64>,
    /// Disc number.
    pub disc_number: Option<i64>,
    /// MusicBrainz recording id.
    pub recording_id: Option<String>,
    /// Length in seconds, to choose between recordings of one match.
    pub duration_secs: Option<f64>,
}

/// The best match of a lookup, reduced to the recording and release group it stands for.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Chosen {
    /// AcoustID track id.
    pub acoustid_id: String,
    /// Score, 0–1.
    pub score: f64,
    /// Recording MBID.
    pub recording_id: String,
    /// Recording title.
    pub title: Option<String>,
    /// Recording artist credit.
    pub artist: Option<String>,
    /// Release-group title.
    pub album: Option<String>,
    /// Release-group artist credit (the recording's when the group has none of its own).
    pub album_artist: Option<String>,
    /// Release-group MBID.
    pub releasegroup_id: Option<String>,
    /// Whether the release group is a compilation.
    pub compilation: bool,
    /// Year, when the lookup had one.
    pub year: Option<i64>,
}

/// What the track becomes.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// Title.
    pub title: String,
    /// Track artist.
    pub artist: Option<String>,
    /// Album title.
    pub album: Option<String>,
    /// Album artist (set only with an album).
    pub album_artist: Option<String>,
    /// Year.
    pub year: Option<i64>,
    /// Genre.
    pub genre: Option<String>,
    /// Track number.
    pub track_number: Option<i64>,
    /// Disc number.
    pub disc_number: Option<i64>,
    /// MusicBrainz recording id.
    pub recording_id: Option<String>,
    /// MusicBrainz release-group id for the album, from tags or lookup.
    pub releasegroup_id: Option<String>,
    /// Whether tags or lookup identified the track (a title and an artist, or a match).
    pub identified: bool,
    /// Whether the lookup won over the tags.
    pub trusted_lookup: bool,
}

/// Turns the lookup's matches into one choice: the best-scoring match with a titled
/// recording; among its recordings the one closest in length; among its release groups the
/// one the tags name, else a plain album, else the first.
pub fn choose(matches: &[Match], current: &Current, tags: &EmbeddedTags) -> Option<Chosen> {
    let best = matches
        .iter()
        .filter(|m| m.recordings.iter().any(|r| r.title.is_some()))
        .max_by(|a, b| a.score.total_cmp(&b.score))?;
    let recording = best
        .recordings
        .iter()
        .filter(|r| r.title.is_some())
        .min_by(|a, b| length_gap(a, current).total_cmp(&length_gap(b, current)))?;
    Some(chosen_from(best, recording, tags))
}

/// Every titled recording of every match, best score first: the candidates a user picks from.
pub fn candidates(matches: &[Match], current: &Current, tags: &EmbeddedTags) -> Vec<Chosen> {
    let mut all: Vec<(f64, Chosen)> = matches
        .iter()
        .flat_map(|m| {
            m.recordings
                .iter()
                .filter(|r| r.title.is_some())
                .map(move |r| (length_gap(r, current), chosen_from(m, r, tags)))
        })
        .collect();
    all.sort_by(|a, b| b.1.score.total_cmp(&a.1.score).then(a.0.total_cmp(&b.0)));
    all.into_iter().map(|(_, chosen)| chosen).collect()
}

fn length_gap(recording: &Recording, current: &Current) -> f64 {
    match (recording.duration, current.duration_secs) {
        (Some(theirs), Some(ours)) => (theirs - ours).abs(),
        _ => f64::MAX / 2.0,
    }
}

fn chosen_from(found: &Match, recording: &Recording, tags: &EmbeddedTags) -> Chosen {
    let group = pick_release_group(&recording.releasegroups, tags);
    let artist = credit_name(&recording.artists);
    let album_artist = group
        .and_then(|group| group.artists.as_deref())
        .and_then(credit_name)
        .or_else(|| artist.clone());
    Chosen {
        acoustid_id: found.id.clone(),
        score: found.score,
        recording_id: recording.id.clone(),
        title: recording.title.clone(),
        artist,
        album: group.and_then(|group| group.title.clone()),
        album_artist,
        releasegroup_id: group.map(|group| group.id.clone()),
        compilation: group.is_some_and(|group| {
            group
                .secondarytypes
                .iter()
                .any(|kind| kind.eq_ignore_ascii_case("compilation"))
        }),
        year: None,
    }
}

fn pick_release_group<'a>(
    groups: &'a [ReleaseGroup],
    tags: &EmbeddedTags,
) -> Option<&'a ReleaseGroup> {
    if let Some(album) = &tags.album {
        let key = name_key(album);
        if let Some(group) = groups
            .iter()
            .find(|group| group.title.as_deref().map(name_key).as_deref() == Some(key.as_str()))
        {
            return Some(group);
        }
    }
    groups
        .iter()
        .find(|group| {
            group.primary_type.as_deref() == Some("Album") && group.secondarytypes.is_empty()
        })
        .or_else(|| groups.first())
}

/// Decides the track's fields.
pub fn decide(
    current: &Current,
    tags: &EmbeddedTags,
    lookup: Option<&Chosen>,
    trust_score: f64,
) -> Decision {
    let trusted = lookup.is_some_and(|chosen| chosen.score >= trust_score);
    let from_lookup = |field: fn(&Chosen) -> Option<String>| lookup.and_then(field);
    // Title: the current title is a file-name placeholder when the file has no title tag.
    let lookup_title = from_lookup(|c| c.title.clone());
    let title = if trusted {
        lookup_title.or(tags.title.clone())
    } else {
        tags.title.clone().or(lookup_title)
    }
    .unwrap_or_else(|| current.title.clone());

    let prefer = |mine: Option<String>, tagged: Option<String>, looked_up: Option<String>| {
        if trusted {
            looked_up.or(mine).or(tagged)
        } else {
            mine.or(tagged).or(looked_up)
        }
    };
    let artist = prefer(
        current.artist.clone(),
        tags.artist.clone(),
        from_lookup(|c| c.artist.clone()),
    );
    let lookup_album = from_lookup(|c| c.album.clone());
    let album_from_lookup =
        lookup_album.is_some() && (trusted || (current.album.is_none() && tags.album.is_none()));
    let album = prefer(current.album.clone(), tags.album.clone(), lookup_album);
    let album_artist = album.as_ref().and({
        let from_tags = current
            .album_artist
            .clone()
            .or(tags.album_artist.clone())
            .or_else(|| tags.compilation.then(|| "Various Artists".to_string()));
        let looked_up = lookup.and_then(|c| {
            if c.compilation && c.album_artist.is_none() {
                Some("Various Artists".to_string())
            } else {
                c.album_artist.clone()
            }
        });
        if album_from_lookup {
            looked_up.or(from_tags).or(artist.clone())
        } else {
            from_tags.or(artist.clone())
        }
    });
    let year = if trusted {
        lookup.and_then(|c| c.year).or(current.year).or(tags.year)
    } else {
        current.year.or(tags.year).or(lookup.and_then(|c| c.year))
    };
    let recording_id = if trusted {
        lookup
            .map(|c| c.recording_id.clone())
            .or(current.recording_id.clone())
    } else {
        current
            .recording_id
            .clone()
            .or(tags.musicbrainz_recording_id.clone())
            .or(lookup.map(|c| c.recording_id.clone()))
    }
    .or(tags.musicbrainz_recording_id.clone());
    let releasegroup_id = if album_from_lookup {
        lookup.and_then(|c| c.releasegroup_id.clone())
    } else {
        tags.musicbrainz_releasegroup_id.clone()
    };
    let identified_by_tags =
        tags.title.is_some() && (tags.artist.is_some() || current.artist.is_some());
    let identified_by_lookup = lookup.is_some_and(|c| c.title.is_some());
    Decision {
        title,
        artist,
        album,
        album_artist,
        year,
        genre: current.genre.clone().or(tags.genre.clone()),
        track_number: current.track_number.or(tags.track_number),
        disc_number: current.disc_number.or(tags.disc_number),
        recording_id,
        releasegroup_id,
        identified: identified_by_tags || identified_by_lookup,
        trusted_lookup: trusted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn chosen(score: f64) -> Chosen {
        Chosen {
            acoustid_id: "acoustid".into(),
            score,
            recording_id: "rec".into(),
            title: Some("Lookup Title".into()),
            artist: Some("Lookup Artist".into()),
            album: Some("Lookup Album".into()),
            album_artist: Some("Lookup Artist".into()),
            releasegroup_id: Some("rg".into()),
            compilation: false,
            year: Some(1999),
        }
    }

    fn tagged() -> (Current, EmbeddedTags) {
        let tags = EmbeddedTags {
            title: Some("Tag Title".into()),
            artist: Some("Tag Artist".into()),
            album: Some("Tag Album".into()),
            year: Some(2020),
            ..EmbeddedTags::default()
        };
        let current = Current {
            title: "Tag Title".into(),
            artist: Some("Tag Artist".into()),
            album: Some("Tag Album".into()),
            year: Some(2020),
            ..Current::default()
        };
        (current, tags)
    }

    #[test]
    fn a_match_below_the_trust_score_only_fills_gaps() {
        let (current, tags) = tagged();
        let decision = decide(&current, &tags, Some(&chosen(0.52)), 0.85);
        assert_eq!(decision.title, "Tag Title");
        assert_eq!(decision.artist.as_deref(), Some("Tag Artist"));
        assert_eq!(decision.album.as_deref(), Some("Tag Album"));
        assert_eq!(decision.year, Some(2020));
        assert_eq!(decision.recording_id.as_deref(), Some("rec"));
        assert_eq!(decision.releasegroup_id, None, "the album is the tags' one");
        assert!(!decision.trusted_lookup);
    }

    #[test]
    fn a_match_at_the_trust_score_wins() {
        let (current, tags) = tagged();
        let decision = decide(&current, &tags, Some(&chosen(0.85)), 0.85);
        assert_eq!(decision.title, "Lookup Title");
        assert_eq!(decision.artist.as_deref(), Some("Lookup Artist"));
        assert_eq!(decision.album.as_deref(), Some("Lookup Album"));
        assert_eq!(decision.year, Some(1999));
        assert_eq!(decision.releasegroup_id.as_deref(), Some("rg"));
        assert!(decision.trusted_lookup);
    }

    #[test]
    fn a_trusted_match_without_an_album_keeps_the_tag_album() {
        let (current, tags) = tagged();
        let mut found = chosen(0.97);
        found.album = None;
        found.releasegroup_id = None;
        let decision = decide(&current, &tags, Some(&found), 0.85);
        assert_eq!(decision.album.as_deref(), Some("Tag Album"));
        assert_eq!(decision.year, Some(1999));
    }

    #[test]
    fn untagged_files_take_everything_from_a_weak_match() {
        let current = Current {
            title: "untitled".into(),
            ..Current::default()
        };
        let decision = decide(&current, &EmbeddedTags::default(), Some(&chosen(0.4)), 0.85);
        assert_eq!(decision.title, "Lookup Title");
        assert_eq!(decision.album.as_deref(), Some("Lookup Album"));
        assert_eq!(decision.releasegroup_id.as_deref(), Some("rg"));
        assert!(decision.identified);
    }

    #[test]
    fn no_tags_and_no_match_is_not_identified() {
        let current = Current {
            title: "untitled".into(),
            ..Current::default()
        };
        let decision = decide(&current, &EmbeddedTags::default(), None, 0.85);
        assert_eq!(decision.title, "untitled");
        assert!(!decision.identified);
    }

    fn text() -> impl Strategy<Value = Option<String>> {
        proptest::option::of("[a-zA-Z ]{1,8}")
    }

    proptest! {
        /// Gap-filling never erases: whatever the inputs, a field that had a value has one.
        #[test]
        fn never_erases_a_field(
            artist in text(), album in text(), album_artist in text(), genre in text(),
            year in proptest::option::of(1900i64..2100), track in proptest::option::of(1i64..30),
            tag_title in text(), tag_artist in text(), tag_album in text(),
            tag_year in proptest::option::of(1900i64..2100),
            score in proptest::option::of(0.0f64..1.0), lookup_has_album in any::<bool>(),
        ) {
            let current = Current {
                title: "file".into(), artist, album, album_artist, genre, year,
                track_number: track, ..Current::default()
            };
            let tags = EmbeddedTags {
                title: tag_title, artist: tag_artist, album: tag_album, year: tag_year,
                ..EmbeddedTags::default()
            };
            let lookup = score.map(|score| {
                let mut found = chosen(score);
                if !lookup_has_album { found.album = None; found.releasegroup_id = None; }
                found
            });
            let decision = decide(&current, &tags, lookup.as_ref(), 0.85);
            prop_assert!(!decision.title.is_empty());
            prop_assert!(current.artist.is_none() || decision.artist.is_some());
            prop_assert!(tags.artist.is_none() || decision.artist.is_some());
            prop_assert!(current.album.is_none() || decision.album.is_some());
            prop_assert!(tags.album.is_none() || decision.album.is_some());
            prop_assert!(decision.album.is_none() || decision.album_artist.is_some() || decision.artist.is_none());
            prop_assert!(current.year.is_none() || decision.year.is_some());
            prop_assert!(current.genre.is_none() || decision.genre == current.genre);
            prop_assert!(current.track_number.is_none() || decision.track_number == current.track_number);
            prop_assert!(tags.title.is_none() || decision.title == tags.title.clone().unwrap() || decision.trusted_lookup);
        }
    }
}
