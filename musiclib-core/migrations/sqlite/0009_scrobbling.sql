-- Scrobbling credentials, per user, encrypted like the app passwords (AES-256-GCM under a key
-- derived from LEGACY_SECRET_KEY for this purpose, bound to the user and the service):
-- scrobble_session_key_enc (0001) holds the Last.fm session key, listenbrainz_token_enc the
-- ListenBrainz user token. *_state: the service's last answer, as JSON
-- {"state": "unknown" | "ok" | "failing" | "revoked", "detail", "at"}.
ALTER TABLE user_settings ADD COLUMN listenbrainz_token_enc TEXT;
ALTER TABLE user_settings ADD COLUMN lastfm_state TEXT;
ALTER TABLE user_settings ADD COLUMN listenbrainz_state TEXT;
