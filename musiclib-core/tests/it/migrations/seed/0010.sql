-- A play of Alice's waiting for Last.fm, which failed twice.
INSERT INTO scrobble_queue (user_id, service, play_id, track_id, played_at, queued_at, attempts, last_error) VALUES
    ('018b0000-0000-7000-8000-00000000a001', 'lastfm', 'play-0003', '018b0000-0000-7000-8000-00000000d001', 1700003600000000, 1700003600000000, 2, 'Last.fm answered 503');
