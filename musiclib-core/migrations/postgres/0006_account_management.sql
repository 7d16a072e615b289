-- Accounts managed by admins.
-- disabled_at: set while the account is disabled; it cannot sign in and its tokens fail.
-- token_version: carried in every access token; a password change or a disable moves it on,
-- so tokens issued before stop working.
ALTER TABLE users ADD COLUMN disabled_at BIGINT;
ALTER TABLE users ADD COLUMN token_version BIGINT NOT NULL DEFAULT 0;
