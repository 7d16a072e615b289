//! `POST /sync/push` bodies: any bytes go through what the route does before the database
//! (the JSON extractor, event times, core's checks of a push). A body is refused with a 422
//! naming the problem, never a panic; a body that is accepted, written back as a client
//! would write it (times as the server writes them), is accepted again with the same events.
//!
//! `fuzz/run.sh sync_push` (or `cargo fuzz run sync_push`, from `fuzz/`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use musiclib_core::social::{NewLike, NewPlay};
use musiclib_http::fuzzing::sync_push;
use serde_json::json;

fn written(likes: &[NewLike], plays: &[NewPlay]) -> Vec<u8> {
    let likes: Vec<_> = likes
        .iter()
        .map(|like| {
            json!({
                "client_event_id": like.client_event_id,
                "track_id": like.track_id,
                "liked": like.liked,
                "event_time": like.event_time.to_rfc3339(),
            })
        })
        .collect();
    let plays: Vec<_> = plays
        .iter()
        .map(|play| {
            json!({
                "client_event_id": play.client_event_id,
                "track_id": play.track_id,
                "played_at": play.played_at.to_rfc3339(),
                "seconds_played": play.seconds_played,
            })
        })
        .collect();
    serde_json::to_vec(&json!({"likes": likes, "plays": plays})).expect("JSON values serialize")
}

fuzz_target!(|data: &[u8]| {
    match sync_push(data) {
        Ok((likes, plays)) => {
            let again = sync_push(&written(&likes, &plays)).unwrap_or_else(|error| {
                panic!("an accepted push, written back, is refused: {error:?}")
            });
            assert_eq!(again, (likes, plays));
        }
        Err(error) => assert_eq!(error.status().as_u16(), 422, "{error:?}"),
    }
});
