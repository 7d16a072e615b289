-- A podcast Alice subscribed to: one episode downloaded (where she stopped listening), one
-- only announced.
INSERT INTO podcast_channels (id, feed_url, title, description, author, site_url, image_url, image_uri, image_source, keep_newest, etag, last_modified, refreshed_at, refresh_error, created_by, created_at, updated_at) VALUES
    ('018b0000-0000-7000-8000-00000000f001', 'https://podcasts.example.com/night-radio.xml', 'Night Radio', 'Music for the small hours', 'The Midnight Owls', 'https://podcasts.example.com/', NULL, NULL, NULL, NULL,
     '"night-radio-42"', 'Tue, 14 Nov 2023 22:00:00 GMT', 1700012000000000, NULL, '018b0000-0000-7000-8000-00000000a001', 1700012000000000, 1700012000000000);

INSERT INTO podcast_episodes (id, channel_id, guid, title, description, published_at, duration_ms, episode_number, season, enclosure_url, enclosure_type, enclosure_length, image_url, transcript_url, transcript_type, chapters_url, status, error, job_id, downloaded_bytes, storage_uri, size_bytes, mime_type, content_sha256, bitrate_kbps, downloaded_at, created_at, updated_at) VALUES
    ('018b0000-0000-7000-8000-00000000f101', '018b0000-0000-7000-8000-00000000f001', 'night-radio-1', 'Episode 1: Dusk', NULL, 1699900000000000, 1800000, 1, 1,
     'https://podcasts.example.com/episodes/1.mp3', 'audio/mpeg', 28800000, NULL, NULL, NULL, NULL, 'downloaded', NULL, NULL, 28800000,
     'podcasts/018b0000-0000-7000-8000-00000000f001/018b0000-0000-7000-8000-00000000f101.mp3', 28800000, 'audio/mpeg', 'f101f101f101f101f101f101f101f101f101f101f101f101f101f101f101f101', 128, 1700012100000000, 1700012000000000, 1700012100000000),
    ('018b0000-0000-7000-8000-00000000f102', '018b0000-0000-7000-8000-00000000f001', 'night-radio-2', 'Episode 2: Midnight', NULL, 1700000000000000, 2100000, 2, 1,
     'https://podcasts.example.com/episodes/2.mp3', 'audio/mpeg', 33600000, NULL, NULL, NULL, NULL, 'new', NULL, NULL, 0,
     NULL, NULL, NULL, NULL, NULL, NULL, 1700012000000000, 1700012000000000);

INSERT INTO podcast_positions (user_id, episode_id, position_ms, updated_at) VALUES
    ('018b0000-0000-7000-8000-00000000a001', '018b0000-0000-7000-8000-00000000f101', 600000, 1700012500000000);
