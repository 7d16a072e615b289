-- A user's uploaded picture (issue 37: Subsonic getAvatar, /api/v1/users/me/avatar): the key
-- of its blob (`avatars/{user_id}/{uuid}.{ext}`), NULL when the user has none (a picture is
-- then generated from the user id). Written after the blob, as every blob reference is.
ALTER TABLE users ADD COLUMN avatar_uri TEXT;
