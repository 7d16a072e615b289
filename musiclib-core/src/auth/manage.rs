//! Account management: admins add, list, disable and delete accounts; every user changes
//! their own login password.
//!
//! A password change or a disable moves the account's `token_version` on, which every access
//! token carries, so tokens issued before stop working (on other replicas within the account
//! cache's few seconds). Deleting an account is a workflow (`Library::delete_user`): the
//! account's personal data goes with it, the tracks it uploaded stay in the library.

use super::throttle::{Door, Who};
use super::{hash_password, validate_password, verify_password, AccessToken};
use super::{Accounts, Caller, User, UserRow, USER_COLUMNS};
use crate::db::Tx;
use crate::domain::{Page, Paged};
use crate::{Error, Result, UserId};

impl Accounts {
    /// Admin only: creates an account (a superuser when `is_admin`). A taken name is a
    /// conflict; a weak password or a bad name is invalid.
    pub async fn add_user(
        &self,
        caller: &Caller,
        username: &str,
        password: &str,
        is_admin: bool,
    ) -> Result<User> {
        caller.require_admin()?;
        self.insert_user(username, password, is_admin).await
    }

    /// Admin only: every account, by name.
    pub async fn list_users(&self, caller: &Caller, page: Page) -> Result<Paged<User>> {
        caller.require_admin()?;
        self.db
            .sql("")
            .fetch_page::<UserRow, _>(
                self.db.pool(),
                "SELECT COUNT(*) FROM users",
                &format!("SELECT {USER_COLUMNS} FROM users"),
                "username_key, id",
                page,
            )
            .await
    }

    /// A user by name: the caller's own account, or anyone's for an admin (another user's
    /// is forbidden to others; an unknown name is not found, for admins).
    pub async fn user_by_name(&self, caller: &Caller, username: &str) -> Result<User> {
        if crate::text::name_key(username.trim()) == crate::text::name_key(&caller.user.username) {
            return Ok(caller.user.clone());
        }
        caller.require_admin()?;
        self.find_user_by_name(username)
            .await?
            .ok_or_else(|| Error::not_found("user", username))
    }

    /// Every account, by name, without paging (for the legacy interface's `getUsers`);
    /// admin only.
    pub async fn all_users(&self, caller: &Caller) -> Result<Vec<User>> {
        caller.require_admin()?;
        let rows: Vec<UserRow> = self
            .db
            .sql(&format!(
                "SELECT {USER_COLUMNS} FROM users ORDER BY username_key, id"
            ))
            .fetch_all(self.db.pool())
            .await?;
        Ok(rows.into_iter().map(User::from).collect())
    }

    /// Admin only, never their own account: disables `user` (it cannot sign in, on either
    /// interface, and its tokens stop working) or enables it again.
    pub async fn set_disabled(
        &self,
        caller: &Caller,
        user: &UserId,
        disabled: bool,
    ) -> Result<User> {
        caller.may_administer_account(user)?;
        let statement = if disabled {
            // A disable revokes the account's tokens; enabling again does not bring them back.
            "UPDATE users SET disabled_at = COALESCE(disabled_at, {now}),
                 token_version = token_version + 1, updated_at = {now} WHERE id = $1"
        } else {
            "UPDATE users SET disabled_at = NULL, updated_at = {now} WHERE id = $1"
        };
        let changed = self
            .db
            .sql(statement)
            .bind(user)
            .execute(self.db.pool())
            .await?;
        if changed == 0 {
            return Err(Error::not_found("user", user));
        }
        self.forget_accounts();
        self.get_user(user).await
    }

    /// Changes the caller's own login password, from `client` when the adapter knows the
    /// address. The current one must be given (forbidden when wrong); the new one follows the
    /// registration rules. Every token issued before stops working; the answer is a fresh one
    /// for the caller's session.
    ///
    /// The current password is checked as a sign-in is: counted against the caller's own
    /// budget for its address before it is checked (so it is no unthrottled oracle of the
    /// current password) and in a password slot.
    pub async fn change_password(
        &self,
        caller: &Caller,
        current_password: &str,
        new_password: &str,
        client: Option<std::net::IpAddr>,
    ) -> Result<AccessToken> {
        validate_password(new_password)
            .map_err(|_| Error::invalid("new_password", password_rule()))?;
        let id = &caller.user.id;
        let account = crate::text::name_key(&caller.user.username);
        // The caller's token proved it: only its own budget can refuse it.
        let attempt = self.throttle.begin(Who {
            door: Door::Login,
            account: Some(&account),
            address: client,
            proven: true,
        })?;
        let stored: String = self
            .db
            .sql("SELECT password_hash FROM users WHERE id = $1")
            .bind(id)
            .fetch_scalar_optional(self.db.pool())
            .await?
            .ok_or_else(|| Error::not_found("user", id))?;
        let current = current_password.to_string();
        match self
            .password_work
            .run(move || verify_password(&current, &stored))
            .await
        {
            Ok(true) => attempt.succeeded(),
            Ok(false) => return Err(Error::Forbidden("the current password is wrong".into())),
            Err(error) => {
                attempt.cancelled();
                return Err(error);
            }
        }
        let new_password = new_password.to_string();
        let hash = self
            .password_work
            .run(move || hash_password(&new_password))
            .await??;
        let mut tx = self.db.begin().await?;
        self.db
            .sql(
                "UPDATE users SET password_hash = $2, token_version = token_version + 1,
                 updated_at = {now} WHERE id = $1",
            )
            .bind(id)
            .bind(hash)
            .execute(&mut *tx)
            .await?;
        let version: i64 = self
            .db
            .sql("SELECT token_version FROM users WHERE id = $1")
            .bind(id)
            .fetch_scalar(&mut *tx)
            .await?;
        tx.commit().await?;
        self.forget_accounts();
        let user = self.get_user(id).await?;
        self.issue_token(user, version)
    }

    /// Deletes `user`'s row inside the deletion workflow's transaction (the caller's right
    /// was checked by the workflow). Not found when there is no such account.
    pub(crate) async fn delete_in(&self, tx: &mut Tx, user: &UserId) -> Result<()> {
        let deleted = self
            .db
            .sql("DELETE FROM users WHERE id = $1")
            .bind(user)
            .execute(&mut **tx)
            .await?;
        if deleted == 0 {
            return Err(Error::not_found("user", user));
        }
        Ok(())
    }

    /// Forgets cached accounts after a deletion committed.
    pub(crate) fn forget_deleted(&self) {
        self.forget_accounts();
    }
}

fn password_rule() -> String {
    format!(
        "must be between {} and {} characters",
        super::MIN_PASSWORD_LEN,
        super::MAX_PASSWORD_LEN
    )
}
