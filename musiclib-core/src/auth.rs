//! Accounts: users, argon2id login passwords, HS256 access tokens, registration, and who may
//! do what.
//!
//! - [`Accounts`]: the service (registration, login, token checks, users).
//! - [`policy`]: every permission decision, as methods of [`Caller`]; services call them, so
//!   adapters never decide.
//! - [`legacy`]: the app passwords of the legacy (Subsonic) interface.
//! - `secrets`: encryption at rest of secrets the server must read back (app passwords).
//! - `throttle`: sign-in attempts counted (before any password is checked) per account and
//!   address, per address and per account; failures keep their count, successes give it back,
//!   and a spent budget refuses sign-ins before any password is checked.
//! - `hashing`: password work (argon2) in bounded slots, one per core.

mod hashing;
pub mod legacy;
mod manage;
pub mod policy;
pub(crate) mod secrets;
mod throttle;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use argon2::password_hash::phc::PasswordHash;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use argon2::Argon2;
use jsonwebtoken::{DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use unicode_normalization::UnicodeNormalization;

use crate::cache::TtlCache;
use crate::db::Db;
use crate::{Error, Result, Timestamp, UserId};

/// Shortest accepted login password.
pub const MIN_PASSWORD_LEN: usize = 8;
/// Longest accepted login password (argon2 hashes anything, but bound the work).
pub const MAX_PASSWORD_LEN: usize = 1024;
/// Longest accepted user name.
pub const MAX_USERNAME_LEN: usize = 64;

pub use crate::config::random_secret;

/// A user account, without its credentials.
#[derive(Debug, Clone)]
pub struct User {
    /// Id.
    pub id: UserId,
    /// Name as registered.
    pub username: String,
    /// Superuser flag.
    pub is_admin: bool,
    /// Creation time.
    pub created_at: Timestamp,
    /// Since when the account is disabled (it cannot sign in), if it is.
    pub disabled_at: Option<Timestamp>,
}

/// The authenticated caller of an operation. What it may do is decided by [`policy`].
#[derive(Debug, Clone)]
pub struct Caller {
    /// The caller's account.
    pub user: User,
}

/// What a successful login or registration answers.
#[derive(Debug, Clone)]
pub struct AccessToken {
    /// The signed bearer token.
    pub token: String,
    /// Seconds until it expires.
    pub expires_in: u64,
    /// The logged-in user.
    pub user: User,
}

#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    sub: String,
    iat: u64,
    exp: u64,
    /// The account's `token_version` when issued (absent in tokens of older releases: 0).
    #[serde(default)]
    ver: i64,
}

/// Validated user name: trimmed, NFC, 1–64 characters, no control characters.
pub fn validate_username(raw: &str) -> Result<String> {
    let name: String = raw.trim().nfc().collect();
    if name.is_empty() {
        return Err(Error::invalid("username", "must not be empty"));
    }
    // Counted as sent, before trimming, so the documented maxLength is exact.
    if raw.chars().count() > MAX_USERNAME_LEN {
        return Err(Error::invalid(
            "username",
            format!("must be at most {MAX_USERNAME_LEN} characters"),
        ));
    }
    if name.chars().any(|c| c.is_control()) {
        return Err(Error::invalid(
            "username",
            "must not contain control characters",
        ));
    }
    Ok(name)
}

fn validate_password(password: &str) -> Result<()> {
    let length = password.chars().count();
    if length < MIN_PASSWORD_LEN {
        return Err(Error::invalid(
            "password",
            format!("must be at least {MIN_PASSWORD_LEN} characters"),
        ));
    }
    if length > MAX_PASSWORD_LEN {
        return Err(Error::invalid(
            "password",
            format!("must be at most {MAX_PASSWORD_LEN} characters"),
        ));
    }
    Ok(())
}

/// Hashes a password with argon2id and a random salt (CPU-bound: call off the runtime).
pub fn hash_password(password: &str) -> Result<String> {
    // A random salt per hash (argon2's `getrandom` feature).
    Argon2::default()
        .hash_password(password.as_bytes())
        .map(|hash| hash.to_string())
        .map_err(|error| Error::internal_with("password hashing failed", error))
}

/// Checks a password against a stored PHC hash.
pub fn verify_password(password: &str, hash: &str) -> bool {
    match PasswordHash::new(hash) {
        Ok(parsed) => Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok(),
        Err(_) => false,
    }
}

/// A hash of a random password, verified against when the user does not exist, so a login's
/// timing does not tell which names are taken.
fn dummy_hash() -> &'static str {
    static HASH: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HASH.get_or_init(|| hash_password("not a real password, only for timing").unwrap_or_default())
}

#[derive(Clone, sqlx::FromRow)]
struct UserRow {
    id: String,
    username: String,
    is_admin: i64,
    created_at: i64,
    password_hash: String,
    disabled_at: Option<i64>,
    token_version: i64,
}

impl From<UserRow> for User {
    fn from(row: UserRow) -> User {
        User {
            id: UserId::from_db(row.id),
            username: row.username,
            is_admin: crate::db::flag(row.is_admin),
            created_at: Timestamp::from_micros(row.created_at),
            disabled_at: row.disabled_at.map(Timestamp::from_micros),
        }
    }
}

const USER_COLUMNS: &str =
    "id, username, is_admin, created_at, password_hash, disabled_at, token_version";

/// How long a request may reuse an account read by an earlier one. Changes made in this
/// process apply at once; other replicas see them within this time.
const LOOKUP_TTL: Duration = Duration::from_secs(5);

/// What the accounts service is configured with.
#[derive(Clone)]
pub(crate) struct AccountSettings {
    pub(crate) allow_registration: bool,
    pub(crate) jwt_secret: Vec<u8>,
    pub(crate) token_ttl: Duration,
    pub(crate) legacy_secret_key: Vec<u8>,
    pub(crate) sign_in_throttle: crate::config::SignInThrottleConfig,
}

/// The accounts service.
#[derive(Clone)]
pub struct Accounts {
    db: Db,
    settings: Arc<AccountSettings>,
    /// Accounts of recent tokens with their token versions (see [`Accounts::authenticate`]).
    users: Arc<TtlCache<UserId, (User, i64)>>,
    /// Legacy-interface accounts with their app passwords, by name or key digest.
    legacy: Arc<TtlCache<String, legacy::LegacyAccount>>,
    /// Sign-in attempts of this process.
    throttle: Arc<throttle::SignInThrottle>,
    /// The slots password hashes and checks run in.
    password_work: hashing::PasswordWork,
}

impl std::fmt::Debug for Accounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Accounts").finish_non_exhaustive()
    }
}

impl Accounts {
    pub(crate) fn new(db: Db, settings: AccountSettings) -> Accounts {
        Accounts {
            db,
            throttle: Arc::new(throttle::SignInThrottle::new(&settings.sign_in_throttle)),
            password_work: hashing::PasswordWork::per_core(),
            settings: Arc::new(settings),
            users: Arc::new(TtlCache::new("accounts", LOOKUP_TTL, 10_000)),
            legacy: Arc::new(TtlCache::new("app_passwords", LOOKUP_TTL, 10_000)),
        }
    }

    /// Public self-registration from `client` (when the adapter knows the address): gated by
    /// `allow_registration`, never creates a superuser, and logs the new user in at once.
    ///
    /// Each registration spends from its address's sign-in budget, whatever its outcome (it
    /// costs a password hash), so a crowd of registrations is refused like a crowd of guesses.
    pub async fn register(
        &self,
        username: &str,
        password: &str,
        client: Option<IpAddr>,
    ) -> Result<AccessToken> {
        if !self.settings.allow_registration {
            return Err(Error::Forbidden(
                "registration is disabled on this server".into(),
            ));
        }
        let username = validate_username(username)?;
        validate_password(password)?;
        let attempt = self.throttle.begin(throttle::Who {
            door: throttle::Door::Login,
            account: None,
            address: client,
            proven: false,
        })?;
        let user = self.insert_user(&username, password, false).await;
        // A refusal for want of a slot spent no hash.
        match &user {
            Err(Error::Busy { .. }) => attempt.cancelled(),
            _ => drop(attempt),
        }
        let user = user?;
        self.throttle.proved(&user.id, client);
        self.issue_token(user, 0)
    }

    /// Creates an account on the server's own authority: the CLI's `user create` and the
    /// start-up `ADMIN_USERNAME`, which run with access to the server's settings.
    pub async fn create_user(
        &self,
        username: &str,
        password: &str,
        is_admin: bool,
    ) -> Result<User> {
        self.insert_user(username, password, is_admin).await
    }

    async fn insert_user(&self, username: &str, password: &str, is_admin: bool) -> Result<User> {
        let username = validate_username(username)?;
        validate_password(password)?;
        let username_key = crate::text::name_key(&username);
        let password = password.to_string();
        let password_hash = self
            .password_work
            .run(move || hash_password(&password))
            .await??;
        let id = UserId::new();
        let inserted = self
            .db
            .sql(
                "INSERT INTO users (id, username, username_key, password_hash, is_admin, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, {now}, {now})",
            )
            .bind(&id)
            .bind(username.as_str())
            .bind(username_key)
            .bind(password_hash)
            .bind(is_admin)
            .execute(self.db.pool())
            .await;
        match inserted {
            Ok(_) => {}
            Err(error) if error.is_unique_violation() => {
                return Err(Error::Conflict(format!(
                    "the user name {username:?} is taken"
                )));
            }
            Err(error) => return Err(error),
        }
        self.get_user(&id).await
    }

    /// Reads one user.
    pub async fn get_user(&self, id: &UserId) -> Result<User> {
        self.db
            .sql(&format!("SELECT {USER_COLUMNS} FROM users WHERE id = $1"))
            .bind(id)
            .fetch_optional::<UserRow, _>(self.db.pool())
            .await?
            .map(User::from)
            .ok_or_else(|| Error::not_found("user", id))
    }

    /// Finds a user by name (case-insensitive).
    pub async fn find_user_by_name(&self, username: &str) -> Result<Option<User>> {
        Ok(self.find_user_row(username).await?.map(User::from))
    }

    async fn find_user_row(&self, username: &str) -> Result<Option<UserRow>> {
        let key = crate::text::name_key(username.trim());
        self.db
            .sql(&format!(
                "SELECT {USER_COLUMNS} FROM users WHERE username_key = $1"
            ))
            .bind(key)
            .fetch_optional(self.db.pool())
            .await
    }

    /// Number of accounts (to decide whether to create the start-up admin).
    pub async fn user_count(&self) -> Result<i64> {
        self.db
            .sql("SELECT COUNT(*) FROM users")
            .fetch_scalar(self.db.pool())
            .await
    }

    /// Checks a name and password and issues an access token. `client` is the address the
    /// attempt comes from, when the adapter knows it.
    ///
    /// Attempts are counted before the password is checked, per account and address, per
    /// address and per account (`Config::sign_in_throttle`), and given back when they succeed:
    /// once a budget is spent, attempts fail with [`Error::SignInThrottled`] (kind
    /// `RateLimited`) without the password being checked, until it returns. A client that
    /// proved itself recently from its address is refused only by its own pair budget. The
    /// check itself waits for a password slot; with too many waiting, it is refused as
    /// [`Error::Busy`] and spends nothing.
    pub async fn login(
        &self,
        username: &str,
        password: &str,
        client: Option<IpAddr>,
    ) -> Result<AccessToken> {
        let account = crate::text::name_key(username.trim());
        let row = self.find_user_row(username).await?;
        let proven = row.as_ref().is_some_and(|row| {
            self.throttle
                .is_proven(&UserId::from_db(row.id.clone()), client)
        });
        let attempt = self.throttle.begin(throttle::Who {
            door: throttle::Door::Login,
            account: Some(&account),
            address: client,
            proven,
        })?;
        let hash = row.as_ref().map(|row| row.password_hash.clone());
        let password = password.to_string();
        let checked = self
            .password_work
            .run(move || {
                verify_password(&password, hash.as_deref().unwrap_or_else(|| dummy_hash()))
            })
            .await;
        let valid = match checked {
            Ok(valid) => valid,
            Err(error) => {
                attempt.cancelled();
                return Err(error);
            }
        };
        match row {
            Some(row) if valid && row.disabled_at.is_some() => {
                attempt.succeeded();
                Err(Error::Unauthenticated(
                    "this account is disabled; ask an admin".into(),
                ))
            }
            Some(row) if valid => {
                attempt.succeeded();
                let version = row.token_version;
                let user = User::from(row);
                self.throttle.proved(&user.id, client);
                self.issue_token(user, version)
            }
            // The attempt stays counted.
            _ => Err(Error::Unauthenticated("wrong user name or password".into())),
        }
    }

    fn issue_token(&self, user: User, version: i64) -> Result<AccessToken> {
        let ttl = self.settings.token_ttl;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or(Duration::ZERO)
            .as_secs();
        let claims = Claims {
            sub: user.id.to_string(),
            iat: now,
            exp: now + ttl.as_secs(),
            ver: version,
        };
        let token = jsonwebtoken::encode(
            &Header::default(),
            &claims,
            &EncodingKey::from_secret(&self.settings.jwt_secret),
        )
        .map_err(|error| Error::internal_with("cannot sign an access token", error))?;
        Ok(AccessToken {
            token,
            expires_in: ttl.as_secs(),
            user,
        })
    }

    /// Verifies an access token and returns its caller. Expired, forged or orphaned tokens,
    /// tokens of a disabled account and tokens issued before a password change fail with
    /// `Unauthenticated`. The account is read from the database at most every few seconds
    /// per process (a short cache, cleared by every change made in this process), so a
    /// change made through another replica applies there within that time.
    pub async fn authenticate(&self, token: &str) -> Result<Caller> {
        self.authenticate_from(token, None).await
    }

    /// [`Accounts::authenticate`] for a request from `client`: a valid token proves its
    /// client, whose sign-ins from that address are then not refused for others' failures.
    pub async fn authenticate_from(&self, token: &str, client: Option<IpAddr>) -> Result<Caller> {
        let validation = Validation {
            leeway: 5,
            ..Validation::default()
        };
        let claims = jsonwebtoken::decode::<Claims>(
            token,
            &DecodingKey::from_secret(&self.settings.jwt_secret),
            &validation,
        )
        .map_err(|error| match error.kind() {
            jsonwebtoken::errors::ErrorKind::ExpiredSignature => {
                Error::Unauthenticated("the access token has expired".into())
            }
            _ => Error::Unauthenticated("the access token is invalid".into()),
        })?
        .claims;
        let user_id = UserId::parse(&claims.sub)
            .map_err(|_| Error::Unauthenticated("the access token is invalid".into()))?;
        // Every stream and segment request authenticates: reuse a recent lookup.
        let (user, version) = match self.users.get(&user_id) {
            Some(account) => account,
            None => {
                let row = self
                    .db
                    .sql(&format!("SELECT {USER_COLUMNS} FROM users WHERE id = $1"))
                    .bind(&user_id)
                    .fetch_optional::<UserRow, _>(self.db.pool())
                    .await?
                    .ok_or_else(|| {
                        Error::Unauthenticated("the account of this token no longer exists".into())
                    })?;
                let account = (User::from(row.clone()), row.token_version);
                self.users.insert(user_id, account.clone());
                account
            }
        };
        if user.disabled_at.is_some() {
            return Err(Error::Unauthenticated("this account is disabled".into()));
        }
        if claims.ver != version {
            return Err(Error::Unauthenticated(
                "the access token was revoked by a password change; sign in again".into(),
            ));
        }
        self.throttle.proved(&user.id, client);
        Ok(Caller { user })
    }

    /// Forgets every cached account, after a change to one.
    fn forget_accounts(&self) {
        self.users.clear();
        self.legacy.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn password_hash_verifies_and_rejects() {
        let hash = hash_password("correct horse").unwrap();
        assert!(hash.starts_with("$argon2id$"));
        assert!(verify_password("correct horse", &hash));
        assert!(!verify_password("wrong horse", &hash));
    }

    #[test]
    fn username_rules() {
        assert_eq!(validate_username("  alice ").unwrap(), "alice");
        assert!(validate_username("").is_err());
        assert!(validate_username("a\u{7}b").is_err());
        assert!(validate_username(&"x".repeat(65)).is_err());
    }
}
