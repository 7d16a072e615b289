//! App passwords of the legacy (Subsonic) interface.
//!
//! Subsonic clients authenticate with `t = md5(password + s)`, so the server must know the
//! password itself: a one-way hash cannot check a salted token. Each user therefore has a
//! separate, random app password (never their login password), stored encrypted with
//! AES-256-GCM under a key derived by HKDF-SHA256 from the `LEGACY_SECRET_KEY` setting, which
//! is never stored in the database. The user id is the ciphertext's associated data, so a
//! ciphertext copied onto another account does not decrypt. A dump of the database shows the
//! ciphertext and a SHA-256 digest of the password (the OpenSubsonic `apiKey` lookup), never
//! the password.

use std::net::IpAddr;

use md5::{Digest as _, Md5};
use rand::RngExt;
use sha2::Sha256;

use super::secrets::SecretBox;
use super::throttle::{Door, Who};
use super::{Accounts, Caller, User, UserRow, USER_COLUMNS};
use crate::{Error, Result, UserId};

/// Length of a generated app password: 24 characters of a 56-letter alphabet, about 139 bits.
pub const APP_PASSWORD_LEN: usize = 24;

/// Letters and digits without the ones people confuse (0/O, 1/l/I), since users type these
/// into phone apps.
const ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789";

/// The key-derivation label of app passwords (unchanged since the first release: stored
/// ciphertexts depend on it).
const PURPOSE: &[u8] = b"musiclib legacy app passwords";

/// What a legacy client sent to prove who it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LegacyCredentials {
    /// `t` (md5 hex of password + salt) and `s` (the salt).
    Token {
        /// The token, hex (either case).
        token: String,
        /// The salt.
        salt: String,
    },
    /// `p`: the password in clear, or `enc:` and its UTF-8 bytes in hex (either case).
    Password(String),
}

impl LegacyCredentials {
    /// The clear password of a `p` parameter, decoding `enc:` hex. Bad hex is a wrong
    /// password, not a malformed request: clients cannot do anything else about it.
    pub fn clear_password(raw: &str) -> Option<String> {
        match raw.strip_prefix("enc:") {
            Some(encoded) => String::from_utf8(hex::decode(encoded).ok()?).ok(),
            None => Some(raw.to_string()),
        }
    }

    /// Whether these credentials prove knowledge of `password`.
    pub(crate) fn matches(&self, password: &str) -> bool {
        match self {
            LegacyCredentials::Token { token, salt } => {
                let expected = hex::encode(Md5::digest(format!("{password}{salt}").as_bytes()));
                constant_time_eq(expected.as_bytes(), token.to_ascii_lowercase().as_bytes())
            }
            LegacyCredentials::Password(raw) => Self::clear_password(raw)
                .is_some_and(|clear| constant_time_eq(clear.as_bytes(), password.as_bytes())),
        }
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A new random app password.
fn generate() -> String {
    let mut rng = rand::rng();
    (0..APP_PASSWORD_LEN)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

/// The cipher of app passwords, keyed from `LEGACY_SECRET_KEY`.
fn secrets(secret: &[u8]) -> SecretBox {
    SecretBox::new(secret, PURPOSE)
}

fn encrypt(secret: &[u8], user: &UserId, password: &str) -> Result<String> {
    secrets(secret).seal(user.as_str(), password)
}

fn decrypt(secret: &[u8], user: &UserId, stored: &str) -> Result<String> {
    secrets(secret).open(user.as_str(), stored).ok_or_else(|| {
        Error::internal(format!(
            "the app password of user {user} cannot be decrypted: LEGACY_SECRET_KEY differs from the key it was stored with (rotate it to make a new one)"
        ))
    })
}

/// SHA-256 hex of an app password: the indexed `apiKey` lookup.
fn key_digest(password: &str) -> String {
    hex::encode(Sha256::digest(password.as_bytes()))
}

#[derive(sqlx::FromRow)]
struct LegacyRow {
    #[sqlx(flatten)]
    user: UserRow,
    legacy_password_enc: Option<String>,
}

/// A legacy account as cached for a few seconds: clients authenticate every request.
#[derive(Debug, Clone)]
pub(crate) struct LegacyAccount {
    user: User,
    password: Option<String>,
}

impl LegacyAccount {
    /// The caller, when the account has an app password and `check` accepts it.
    fn caller_if(self, check: impl FnOnce(&str) -> bool) -> Option<Caller> {
        if self.user.disabled_at.is_some() {
            return None;
        }
        let password = self.password?;
        check(&password).then_some(Caller { user: self.user })
    }
}

impl Accounts {
    /// The caller's app password, made on first use.
    pub async fn legacy_password(&self, caller: &Caller) -> Result<String> {
        let id = &caller.user.id;
        let secret = &self.settings.legacy_secret_key;
        if let Some(stored) = self.stored_legacy_password(id).await? {
            return decrypt(secret, id, &stored);
        }
        let password = generate();
        // Only fills an empty slot: of two first reveals racing, both answer the winner's.
        self.db
            .sql(
                "UPDATE users SET legacy_password_enc = $2, legacy_key_digest = $3
                 WHERE id = $1 AND legacy_password_enc IS NULL",
            )
            .bind(id)
            .bind(encrypt(secret, id, &password)?)
            .bind(key_digest(&password))
            .execute(self.db.pool())
            .await?;
        let stored = self
            .stored_legacy_password(id)
            .await?
            .ok_or_else(|| Error::not_found("user", id))?;
        decrypt(secret, id, &stored)
    }

    /// Replaces `user`'s app password (the caller's own, or anyone's for an admin) with a
    /// new random one, which is returned. Clients using the old one fail
    /// authentication from now on (within the lookup cache's few seconds on other replicas).
    pub async fn rotate_legacy_password(&self, caller: &Caller, user: &UserId) -> Result<String> {
        caller.may_manage_user(user)?;
        let password = generate();
        let encrypted = encrypt(&self.settings.legacy_secret_key, user, &password)?;
        let changed = self
            .db
            .sql(
                "UPDATE users SET legacy_password_enc = $2, legacy_key_digest = $3, updated_at = {now}
                 WHERE id = $1",
            )
            .bind(user)
            .bind(encrypted)
            .bind(key_digest(&password))
            .execute(self.db.pool())
            .await?;
        if changed == 0 {
            return Err(Error::not_found("user", user));
        }
        self.legacy.clear();
        Ok(password)
    }

    /// Admin only: creates an account for the Subsonic `createUser` method, whose one
    /// password is both the login password and the app password (the app that creates the
    /// account signs in with it at once, and its user may also use the web player).
    pub async fn add_app_user(
        &self,
        caller: &Caller,
        username: &str,
        password: &str,
        is_admin: bool,
    ) -> Result<User> {
        caller.require_admin()?;
        let user = self.insert_user(username, password, is_admin).await?;
        self.store_app_password(&user.id, password).await?;
        Ok(user)
    }

    /// Sets `user`'s app password to `password` (the caller's own, or anyone's for an
    /// admin): the Subsonic `changePassword` and `updateUser` methods.
    ///
    /// Only the app password changes, never the login password: an app holds its password
    /// (in clear, to make tokens), so whoever holds the app credential must not be able to
    /// turn it into the web login, where the login password is what changes the account.
    /// The same length rules as a login password apply.
    pub async fn set_app_password(
        &self,
        caller: &Caller,
        user: &UserId,
        password: &str,
    ) -> Result<()> {
        caller.may_manage_user(user)?;
        super::validate_password(password)?;
        self.store_app_password(user, password).await
    }

    /// Admin only, never their own account: makes `user` an admin or a plain user. Their
    /// tokens are revoked (a token does not outlive the rights it was issued with).
    pub async fn set_admin(&self, caller: &Caller, user: &UserId, is_admin: bool) -> Result<User> {
        caller.may_administer_account(user)?;
        let changed = self
            .db
            .sql(
                "UPDATE users SET is_admin = $2, token_version = token_version + 1,
                 updated_at = {now} WHERE id = $1 AND is_admin <> $2",
            )
            .bind(user)
            .bind(is_admin)
            .execute(self.db.pool())
            .await?;
        if changed > 0 {
            self.forget_accounts();
        }
        self.get_user(user).await
    }

    /// Admin only: the Subsonic `updateUser` method. `password` sets the app password (as
    /// [`Accounts::set_app_password`]); `is_admin` the superuser flag, where it changes
    /// (apps send every flag: an admin's own unchanged flag is no attempt to demote
    /// themselves, while a change of their own is refused as [`Accounts::set_admin`] does).
    pub async fn update_app_user(
        &self,
        caller: &Caller,
        user: &UserId,
        password: Option<&str>,
        is_admin: Option<bool>,
    ) -> Result<User> {
        caller.require_admin()?;
        let current = self.get_user(user).await?;
        if let Some(password) = password {
            super::validate_password(password)?;
        }
        if let Some(flag) = is_admin.filter(|flag| *flag != current.is_admin) {
            self.set_admin(caller, user, flag).await?;
        }
        if let Some(password) = password {
            self.store_app_password(user, password).await?;
        }
        self.get_user(user).await
    }

    async fn store_app_password(&self, user: &UserId, password: &str) -> Result<()> {
        let encrypted = encrypt(&self.settings.legacy_secret_key, user, password)?;
        let changed = self
            .db
            .sql(
                "UPDATE users SET legacy_password_enc = $2, legacy_key_digest = $3, updated_at = {now}
                 WHERE id = $1",
            )
            .bind(user)
            .bind(encrypted)
            .bind(key_digest(password))
            .execute(self.db.pool())
            .await?;
        if changed == 0 {
            return Err(Error::not_found("user", user));
        }
        self.legacy.clear();
        Ok(())
    }

    async fn stored_legacy_password(&self, id: &UserId) -> Result<Option<String>> {
        let row: Option<(Option<String>,)> = self
            .db
            .sql("SELECT legacy_password_enc FROM users WHERE id = $1")
            .bind(id)
            .fetch_optional(self.db.pool())
            .await?;
        match row {
            Some((stored,)) => Ok(stored),
            None => Err(Error::not_found("user", id)),
        }
    }

    /// Authenticates a legacy request by user name and token or password, from `client`
    /// when the adapter knows the address. Unknown users, users who never revealed an app
    /// password and wrong credentials all fail alike, and are throttled as logins are
    /// ([`Accounts::login`]), with budgets of their own: the attempt is counted before the
    /// credentials are checked and given back when they are right; over budget, the request
    /// fails with [`Error::SignInThrottled`] before the credentials are checked.
    pub async fn authenticate_legacy(
        &self,
        username: &str,
        credentials: &LegacyCredentials,
        client: Option<IpAddr>,
    ) -> Result<Caller> {
        let name_key = crate::text::name_key(username.trim());
        let account = self
            .legacy_account(format!("name:{name_key}"), "username_key", &name_key)
            .await?;
        let proven = account
            .as_ref()
            .is_some_and(|account| self.throttle.is_proven(&account.user.id, client));
        let attempt = self.throttle.begin(Who {
            door: Door::Legacy,
            account: Some(&name_key),
            address: client,
            proven,
        })?;
        let caller =
            account.and_then(|account| account.caller_if(|password| credentials.matches(password)));
        match caller {
            Some(caller) => {
                attempt.succeeded();
                self.throttle.proved(&caller.user.id, client);
                Ok(caller)
            }
            None => Err(Error::Unauthenticated("wrong username or password".into())),
        }
    }

    /// Authenticates an OpenSubsonic `apiKey`, which is the user's app password. A wrong key
    /// names no account, so its attempts are counted by the address alone.
    pub async fn authenticate_api_key(
        &self,
        api_key: &str,
        client: Option<IpAddr>,
    ) -> Result<Caller> {
        let attempt = self.throttle.begin(Who {
            door: Door::Legacy,
            account: None,
            address: client,
            proven: false,
        })?;
        let digest = key_digest(api_key);
        let account = self
            .legacy_account(format!("key:{digest}"), "legacy_key_digest", &digest)
            .await?;
        let caller = account.and_then(|account| {
            account.caller_if(|password| constant_time_eq(password.as_bytes(), api_key.as_bytes()))
        });
        match caller {
            Some(caller) => {
                attempt.succeeded();
                self.throttle.proved(&caller.user.id, client);
                Ok(caller)
            }
            None => Err(Error::Unauthenticated("invalid API key".into())),
        }
    }

    /// The account whose `column` is `value`, with its decrypted app password; reused for a
    /// few seconds (every request of a legacy client authenticates).
    async fn legacy_account(
        &self,
        cache_key: String,
        column: &'static str,
        value: &str,
    ) -> Result<Option<LegacyAccount>> {
        if let Some(account) = self.legacy.get(&cache_key) {
            return Ok(Some(account));
        }
        let Some(row) = self
            .db
            .sql(&format!(
                "SELECT {USER_COLUMNS}, legacy_password_enc FROM users WHERE {column} = $1"
            ))
            .bind(value)
            .fetch_optional::<LegacyRow, _>(self.db.pool())
            .await?
        else {
            return Ok(None);
        };
        let user = User::from(row.user);
        let password = row
            .legacy_password_enc
            .map(|stored| decrypt(&self.settings.legacy_secret_key, &user.id, &stored))
            .transpose()?;
        let account = LegacyAccount { user, password };
        self.legacy.insert(cache_key, account.clone());
        Ok(Some(account))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn app_passwords_decrypt_only_for_their_user_and_key() {
        let user = UserId::new();
        let stored = encrypt(b"secret-one-0123456789", &user, "hunter2hunter2").unwrap();
        assert_eq!(
            decrypt(b"secret-one-0123456789", &user, &stored).unwrap(),
            "hunter2hunter2"
        );
        assert!(decrypt(b"secret-two-0123456789", &user, &stored).is_err());
        assert!(decrypt(b"secret-one-0123456789", &UserId::new(), &stored).is_err());
    }

    #[test]
    fn tokens_plain_and_hex_passwords_are_checked() {
        let password = "sesame";
        // md5("sesame" + "c19b2d") from the Subsonic API documentation.
        let token = LegacyCredentials::Token {
            token: "26719A1196D2A940705A59634EB18EAB".into(),
            salt: "c19b2d".into(),
        };
        assert!(token.matches(password));
        assert!(!token.matches("sesame2"));
        assert!(LegacyCredentials::Password("sesame".into()).matches(password));
        assert!(LegacyCredentials::Password("enc:736573616d65".into()).matches(password));
        assert!(LegacyCredentials::Password("enc:736573616D65".into()).matches(password));
        assert!(!LegacyCredentials::Password("enc:zz".into()).matches(password));
        assert!(!LegacyCredentials::Password("Sesame".into()).matches(password));
    }

    #[test]
    fn generated_passwords_use_the_alphabet() {
        let password = generate();
        assert_eq!(password.len(), APP_PASSWORD_LEN);
        assert!(password.bytes().all(|byte| ALPHABET.contains(&byte)));
        assert_ne!(password, generate());
    }
}
