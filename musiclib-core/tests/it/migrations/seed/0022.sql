-- Sharing links: Alice's share of two tracks, Bob's album share (expired) and Alice's
-- playlist share (revoked).
INSERT INTO shares (id, owner_id, kind, target_id, description, downloadable, expires_at, revoked_at, visit_count, play_count, last_visited_at, created_at, updated_at) VALUES
    ('SharedTracksOfAlice_01', '018b0000-0000-7000-8000-00000000a001', 'tracks', NULL, 'for the drive', 0, NULL, NULL, 3, 1, 1700010500000000, 1700010000000000, 1700010000000000),
    ('BobSharesAnAlbum_00001', '018b0000-0000-7000-8000-00000000a002', 'album', '018b0000-0000-7000-8000-00000000c002', NULL, 1, 1710000000000000, NULL, 0, 0, NULL, 1700010100000000, 1700010100000000),
    ('RevokedPlaylistShare01', '018b0000-0000-7000-8000-00000000a001', 'playlist', '018b0000-0000-7000-8000-00000000e001', NULL, 0, NULL, 1700010300000000, 1, 0, 1700010250000000, 1700010200000000, 1700010300000000);

INSERT INTO share_tracks (share_id, position, track_id) VALUES
    ('SharedTracksOfAlice_01', 0, '018b0000-0000-7000-8000-00000000d001'),
    ('SharedTracksOfAlice_01', 1, '018b0000-0000-7000-8000-00000000d003');
