//! Who may do what through the Subsonic interface, as a table: each method that needs a
//! permission, called with wrong credentials, by the owner of the thing (ann), by another
//! user (bob) and by an admin (root), each answered ok or with its protocol error (40/41 bad
//! credentials, 50 not authorized, 70 not found: another user's private playlist does not
//! exist for them). Core decides (`musiclib_core::auth::policy`); this is its policy seen
//! through the legacy interface.
//!
//! The dispatcher's table (`musiclib_subsonic::methods()`) is the list to cover: every method
//! has a row or is named in [`OPEN`], the methods any signed-in user may call on the shared
//! catalogue or on their own data, so a new method cannot skip the table. Every method
//! refuses wrong credentials.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};

use musiclib_core::auth::Caller;
use musiclib_core::testing::Backend;
use serde_json::Value;

use crate::both_backends;
use crate::harness::Fixture;

/// The callers of every row, in this order.
const ROLES: [&str; 4] = ["wrong credentials", "owner", "other user", "admin"];

/// Methods any signed-in user may call: the shared catalogue, media and lyrics, the
/// server's own description, and what acts on the caller's own annotations (stars, ratings,
/// plays). Each still refuses wrong credentials (checked for every method).
const OPEN: &[&str] = &[
    "ping",
    "getLicense",
    "tokenInfo",
    "getMusicFolders",
    "getIndexes",
    "getMusicDirectory",
    "getGenres",
    "getArtists",
    "getArtist",
    "getAlbum",
    "getSong",
    "getArtistInfo",
    "getArtistInfo2",
    "getAlbumInfo",
    "getAlbumInfo2",
    "getSimilarSongs",
    "getSimilarSongs2",
    "getTopSongs",
    "getSonicSimilarTracks",
    "findSonicPath",
    "getAlbumList",
    "getAlbumList2",
    "getRandomSongs",
    "getSongsByGenre",
    "getNowPlaying",
    "getStarred",
    "getStarred2",
    "search2",
    "search3",
    "search",
    "hls.m3u8",
    "hls",
    "stream",
    "download",
    "getCoverArt",
    "getLyrics",
    "getLyricsBySongId",
    "getTranscodeDecision",
    "getTranscodeStream",
    "star",
    "unstar",
    "setRating",
    "scrobble",
    "reportPlayback",
    "getInternetRadioStations",
    "getAvatar",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Ok,
    /// Bad credentials: error 40 (or 41, token authentication refused).
    Refused,
    Error(i64),
}

use Expect::{Error, Ok, Refused};

/// What the rows address.
struct World {
    tracks: Vec<String>,
    /// Ann's private playlists, one per role (the first is never deleted).
    private: Vec<String>,
    /// Ann's public playlists, one per role (the first is never deleted).
    public: Vec<String>,
    /// Ann's shares, one per role (the first is never deleted).
    shares: Vec<String>,
    /// Internet radio stations (added by the admin), one per role (the first is never
    /// deleted).
    stations: Vec<String>,
    /// Podcasts ann subscribed to, one per role, each with one downloaded episode
    /// (`episodes`, protocol ids); the first of each is never deleted.
    podcasts: Vec<String>,
    episodes: Vec<String>,
}

struct Row {
    method: &'static str,
    case: &'static str,
    /// The query parameters (after the credentials) a role sends.
    params: fn(&World, usize) -> String,
    expect: [Expect; 4],
    /// For reads of one's own data: whether the answer shows the owner's thing. Only the
    /// owner may see it, admins included in "not the owner".
    shows_owners: Option<fn(&World, &Value) -> bool>,
}

fn row(
    method: &'static str,
    case: &'static str,
    params: fn(&World, usize) -> String,
    expect: [Expect; 4],
) -> Row {
    Row {
        method,
        case,
        params,
        expect,
        shows_owners: None,
    }
}

impl Row {
    fn shows(self, shows_owners: fn(&World, &Value) -> bool) -> Row {
        Row {
            shows_owners: Some(shows_owners),
            ..self
        }
    }
}

/// Whether `text` (an answer) names `id` anywhere.
fn names(answer: &Value, id: &str) -> bool {
    answer.to_string().contains(id)
}

fn rows() -> Vec<Row> {
    vec![
        // Accounts and the scan.
        row("getUsers", "list accounts", |_, _| String::new(), [Refused, Error(50), Error(50), Ok]),
        row(
            "getUser",
            "read the owner's account",
            |_, _| "username=ann".into(),
            [Refused, Ok, Error(50), Ok],
        ),
        row(
            "createUser",
            "add an account",
            |_, role| format!("username=made-by-{role}&password=long+enough+{role}&email=x%40example.org"),
            [Refused, Error(50), Error(50), Ok],
        ),
        row(
            "updateUser",
            "change an account (the one the admin made)",
            |_, _| "username=made-by-3&password=another+password&adminRole=false&streamRole=true".into(),
            [Refused, Error(50), Error(50), Ok],
        ),
        row(
            "changePassword",
            "change another account's app password (hex-encoded)",
            |_, _| format!("username=made-by-3&password=enc:{}", hex::encode("a third password")),
            [Refused, Error(50), Error(50), Ok],
        ),
        row(
            "deleteUser",
            "delete an account",
            |_, _| "username=made-by-3".into(),
            [Refused, Error(50), Error(50), Ok],
        ),
        row("startScan", "start the scan", |_, _| String::new(), [Refused, Error(50), Error(50), Ok]),
        row(
            "getScanStatus",
            "read the scan's state (anyone signed in)",
            |_, _| String::new(),
            [Refused, Ok, Ok, Ok],
        ),
        // Playlists.
        row(
            "getPlaylists",
            "list one's own and public playlists: the owner's private ones only for the owner",
            |_, _| String::new(),
            [Refused, Ok, Ok, Ok],
        )
        .shows(|world, answer| names(answer, &world.private[0])),
        row(
            "getPlaylists",
            "list the owner's playlists by name (the owner and admins)",
            |_, _| "username=ann".into(),
            [Refused, Ok, Error(50), Ok],
        )
        .shows(|world, answer| names(answer, &world.private[0])),
        row(
            "getPlaylist",
            "read a private playlist",
            |world, _| format!("id={}", world.private[0]),
            [Refused, Ok, Error(70), Error(70)],
        ),
        row(
            "getPlaylist",
            "read a public playlist",
            |world, _| format!("id={}", world.public[0]),
            [Refused, Ok, Ok, Ok],
        ),
        row(
            "updatePlaylist",
            "rename a private playlist",
            |world, _| format!("playlistId={}&name=Renamed", world.private[0]),
            [Refused, Ok, Error(70), Error(70)],
        ),
        row(
            "updatePlaylist",
            "add to a public playlist",
            |world, _| format!("playlistId={}&songIdToAdd={}", world.public[0], world.tracks[1]),
            [Refused, Ok, Error(50), Error(50)],
        ),
        row(
            "createPlaylist",
            "replace a private playlist's songs",
            |world, _| format!("playlistId={}&songId={}", world.private[0], world.tracks[1]),
            [Refused, Ok, Error(70), Error(70)],
        ),
        row(
            "createPlaylist",
            "replace a public playlist's songs",
            |world, _| format!("playlistId={}&songId={}", world.public[0], world.tracks[1]),
            [Refused, Ok, Error(50), Error(50)],
        ),
        row(
            "createPlaylist",
            "create a playlist (anyone signed in)",
            |_, role| format!("name=made+by+{role}"),
            [Refused, Ok, Ok, Ok],
        ),
        row(
            "deletePlaylist",
            "delete a private playlist",
            |world, role| format!("id={}", world.private[role]),
            [Refused, Ok, Error(70), Error(70)],
        ),
        row(
            "deletePlaylist",
            "delete a public playlist",
            |world, role| format!("id={}", world.public[role]),
            [Refused, Ok, Error(50), Error(50)],
        ),
        // Shares: each user's own; admins change and revoke anyone's.
        row("getShares", "list one's shares", |_, _| String::new(), [Refused, Ok, Ok, Ok])
            .shows(|world, answer| names(answer, &world.shares[0])),
        row("createShare", "share a song", |world, _| format!("id={}", world.tracks[0]), [Refused, Ok, Ok, Ok]),
        row(
            "updateShare",
            "change the owner's share",
            |world, _| format!("id={}&description=changed", world.shares[0]),
            [Refused, Ok, Error(70), Ok],
        ),
        row(
            "deleteShare",
            "revoke the owner's share",
            |world, role| format!("id={}", world.shares[role]),
            [Refused, Ok, Error(70), Ok],
        ),
        // Podcasts: the server's; anyone signed in subscribes, refreshes and downloads, who
        // subscribed (ann) or an admin deletes.
        row("getPodcasts", "list the podcasts", |_, _| String::new(), [Refused, Ok, Ok, Ok]),
        row("getNewestPodcasts", "the newest episodes", |_, _| String::new(), [Refused, Ok, Ok, Ok]),
        row("getPodcastEpisode", "one episode", |world, _| format!("id={}", world.episodes[0]), [Refused, Ok, Ok, Ok]),
        row("refreshPodcasts", "refresh every podcast", |_, _| String::new(), [Refused, Ok, Ok, Ok]),
        row(
            "createPodcastChannel",
            "subscribe: anyone, but a feed on loopback is refused by default",
            |_, _| "url=http://127.0.0.1:9/feed.xml".into(),
            [Refused, Error(0), Error(0), Error(0)],
        ),
        row(
            "downloadPodcastEpisode",
            "download an episode (already downloaded: nothing to do)",
            |world, _| format!("id={}", world.episodes[0]),
            [Refused, Ok, Ok, Ok],
        ),
        row(
            "deletePodcastEpisode",
            "delete an episode's download",
            |world, role| format!("id={}", world.episodes[role]),
            [Refused, Ok, Error(50), Ok],
        ),
        row(
            "deletePodcastChannel",
            "unsubscribe",
            |world, role| format!("id={}", world.podcasts[role]),
            [Refused, Ok, Error(50), Ok],
        ),
        // Internet radio stations: listed for everyone (OPEN), managed by admins.
        row(
            "createInternetRadioStation",
            "add a station",
            |_, role| format!("name=Station+{role}&streamUrl=https://radio.example/{role}.ogg"),
            [Refused, Error(50), Error(50), Ok],
        ),
        row(
            "updateInternetRadioStation",
            "change a station",
            |world, _| format!("id={}&name=Renamed&streamUrl=https://radio.example/new.mp3", world.stations[0]),
            [Refused, Error(50), Error(50), Ok],
        ),
        row(
            "deleteInternetRadioStation",
            "delete a station",
            |world, role| format!("id={}", world.stations[role]),
            [Refused, Error(50), Error(50), Ok],
        ),
        // Bookmarks: each user's own. Ann bookmarked the first and third tracks.
        row("getBookmarks", "read one's bookmarks", |_, _| String::new(), [Refused, Ok, Ok, Ok])
            .shows(|world, answer| names(answer, &world.tracks[0])),
        row(
            "createBookmark",
            "bookmark a song (one's own bookmark)",
            |world, _| format!("id={}&position=1000", world.tracks[1]),
            [Refused, Ok, Ok, Ok],
        ),
        row(
            "deleteBookmark",
            "delete a bookmark: the owner their third-track one, the others the first track's, which they do not have",
            |world, role| {
                let track = if role == 1 { 2 } else { 0 };
                format!("id={}", world.tracks[track])
            },
            [Refused, Ok, Error(70), Error(70)],
        ),
        row(
            "getBookmarks",
            "the owner's bookmark of the first track outlived the others' deletes",
            |_, _| String::new(),
            [Refused, Ok, Ok, Ok],
        )
        .shows(|world, answer| names(answer, &world.tracks[0])),
        // The play queue: each user's own. Ann's holds the first track.
        row("getPlayQueue", "read one's play queue", |_, _| String::new(), [Refused, Ok, Ok, Ok])
            .shows(|world, answer| names(answer, &world.tracks[0])),
        row(
            "savePlayQueue",
            "save one's play queue (the owner's is left as it was)",
            |world, role| {
                let track = if role == 1 { 0 } else { 1 };
                format!("id={}&current={}&position=10", world.tracks[track], world.tracks[track])
            },
            [Refused, Ok, Ok, Ok],
        ),
        row(
            "getPlayQueue",
            "the owner's queue outlived the others' saves",
            |_, _| String::new(),
            [Refused, Ok, Ok, Ok],
        )
        .shows(|world, answer| names(answer, &world.tracks[0])),
        row(
            "getPlayQueueByIndex",
            "read one's play queue by index",
            |_, _| String::new(),
            [Refused, Ok, Ok, Ok],
        )
        .shows(|world, answer| names(answer, &world.tracks[0])),
        row(
            "savePlayQueueByIndex",
            "save one's play queue by index (a song twice; the owner's is left as it was)",
            |world, role| {
                let track = if role == 1 { 0 } else { 1 };
                let id = &world.tracks[track];
                format!("id={id}&id={id}&currentIndex=1&position=10")
            },
            [Refused, Ok, Ok, Ok],
        ),
    ]
}

/// A fresh unknown account each time: wrong credentials of a real account would, called
/// this often, throttle it for the other rows.
fn wrong_credentials() -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let stranger = NEXT.fetch_add(1, Ordering::Relaxed);
    Fixture::token_auth(&format!("stranger-{stranger}"), "wrong")
}

fn outcome(answer: &Value) -> Expect {
    match answer["status"].as_str() {
        Some("ok") => Ok,
        _ => match answer["error"]["code"].as_i64() {
            Some(40 | 41) => Refused,
            Some(code) => Error(code),
            None => Error(-1),
        },
    }
}

#[test]
fn every_method_has_a_row_or_is_open() {
    let methods: BTreeSet<&str> = musiclib_subsonic::methods().iter().copied().collect();
    let rows = rows();
    let classified: BTreeSet<&str> = rows
        .iter()
        .map(|row| row.method)
        .chain(OPEN.iter().copied())
        .collect();
    let missing: Vec<&str> = methods.difference(&classified).copied().collect();
    assert!(
        missing.is_empty(),
        "methods of the dispatcher in neither the permission table nor OPEN:\n{}",
        missing.join("\n")
    );
    let unknown: Vec<&str> = classified.difference(&methods).copied().collect();
    assert!(
        unknown.is_empty(),
        "the permission table names methods the dispatcher does not run:\n{}",
        unknown.join("\n")
    );
    let both: Vec<&str> = rows
        .iter()
        .map(|row| row.method)
        .filter(|method| OPEN.contains(method))
        .collect();
    assert!(both.is_empty(), "in both the table and OPEN: {both:?}");
}

both_backends!(every_method_by_every_role, |backend: Backend| async move {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().to_path_buf();
    let app = Fixture::with_config(backend, move |config| {
        config.local_media_import_path = Some(path)
    })
    .await;
    let bob = app
        .library
        .accounts()
        .create_user("bob", "bob-password", false)
        .await
        .unwrap();
    let bob_password = app
        .library
        .accounts()
        .legacy_password(&Caller { user: bob })
        .await
        .unwrap();
    let ann = app.auth();
    let credentials = [
        None,
        Some(ann.clone()),
        Some(Fixture::token_auth("bob", &bob_password)),
        Some(app.admin_auth()),
    ];

    // Every method refuses wrong credentials, before it reads a parameter.
    for method in musiclib_subsonic::methods() {
        let answer = app.json_as(&wrong_credentials(), method, "").await;
        assert_eq!(outcome(&answer), Refused, "{method}: {answer}");
    }

    let tracks = app.track_ids.clone();
    let mut private = Vec::new();
    let mut public = Vec::new();
    for role in ROLES {
        for is_public in [false, true] {
            let created = app
                .json(
                    "createPlaylist",
                    &format!("name=for+{}&songId={}", role.replace(' ', "+"), tracks[0]),
                )
                .await;
            let id = created["playlist"]["id"].as_str().unwrap().to_string();
            if is_public {
                app.json("updatePlaylist", &format!("playlistId={id}&public=true"))
                    .await;
                public.push(id);
            } else {
                private.push(id);
            }
        }
    }
    for track in [&tracks[0], &tracks[2]] {
        app.json("createBookmark", &format!("id={track}&position=5000"))
            .await;
    }
    app.json(
        "savePlayQueue",
        &format!("id={}&current={}&position=500", tracks[0], tracks[0]),
    )
    .await;
    let mut shares = Vec::new();
    for _ in ROLES {
        let created = app
            .json(
                "createShare",
                &format!("id={}&description=for+you", tracks[0]),
            )
            .await;
        shares.push(
            created["shares"]["share"][0]["id"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    let mut stations = Vec::new();
    for role in ROLES {
        let name = role.replace(' ', "+");
        app.json_as(
            &app.admin_auth(),
            "createInternetRadioStation",
            &format!("name={name}&streamUrl=https://radio.example/{name}.mp3"),
        )
        .await;
    }
    let listed = app.json("getInternetRadioStations", "").await;
    for station in listed["internetRadioStations"]["internetRadioStation"]
        .as_array()
        .unwrap()
    {
        stations.push(station["id"].as_str().unwrap().to_string());
    }
    assert_eq!(stations.len(), ROLES.len(), "{listed}");
    let ann_id = app
        .library
        .accounts()
        .find_user_by_name(&app.user)
        .await
        .unwrap()
        .unwrap()
        .id;
    let mut podcasts = Vec::new();
    let mut episodes = Vec::new();
    for role in 0..ROLES.len() {
        let (podcast, episode) = musiclib_core::testing::insert_podcast(
            &app.library,
            &ann_id,
            &format!("http://127.0.0.1:9/feed-{role}.xml"),
            &musiclib_core::testing::wav_tone(1),
        )
        .await;
        podcasts.push(format!("pc-{podcast}"));
        episodes.push(format!("pe-{episode}"));
    }
    let world = World {
        podcasts,
        episodes,
        tracks,
        private,
        public,
        shares,
        stations,
    };

    let mut failures = Vec::new();
    for row in rows() {
        for (role, credentials) in credentials.iter().enumerate() {
            let auth = credentials.clone().unwrap_or_else(wrong_credentials);
            let params = (row.params)(&world, role);
            let answer = app.json_as(&auth, row.method, &params).await;
            let got = outcome(&answer);
            if got != row.expect[role] {
                failures.push(format!(
                    "{} ({}) by {}: {}?{params} answered {got:?} (expected {:?}): {answer}",
                    row.method, row.case, ROLES[role], row.method, row.expect[role]
                ));
            } else if let (Some(shows), true) = (row.shows_owners, got == Ok) {
                if shows(&world, &answer) != (role == 1) {
                    failures.push(format!(
                        "{} ({}) by {}: the owner's thing is {} in {answer}",
                        row.method,
                        row.case,
                        ROLES[role],
                        if role == 1 { "missing" } else { "shown" }
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "permission table:\n{}",
        failures.join("\n")
    );
});
