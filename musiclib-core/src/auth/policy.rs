//! Who may do what: every permission decision of the library, as methods of [`Caller`].
//!
//! Services call these before they act, so the rules hold for every adapter and every
//! embedding program; adapters only map the resulting error onto their wire (403, 404, or
//! the legacy interface's error 50). Where knowing that a thing exists would itself leak
//! (another user's job, a private playlist), the answer is "not found", not "forbidden".
//!
//! | operation | anyone signed in | owner | admin |
//! |---|---|---|---|
//! | read the catalogue, stream, search | yes | | |
//! | edit or delete a track | | the uploader | yes |
//! | read a job | | who queued it | yes |
//! | search remote sources, save a hit, materialize, download | yes | | |
//! | read or cancel a download | | who asked for it | yes |
//! | read a playlist | if public | yes | if public |
//! | change a playlist | | yes | |
//! | reveal / rotate an app password | | their own | rotate anyone's |
//! | scan a source, server settings, metrics | | | yes |
//! | add, list, disable, delete accounts | | | yes, not their own |
//! | change a login password | | their own | |

use super::Caller;
use crate::{Error, Result, UserId};

/// How the caller stands towards a playlist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlaylistAccess {
    /// Their own: read and change.
    Owner,
    /// Someone else's public one: read only.
    Reader,
    /// Someone else's private one: it does not exist for them.
    None,
}

impl Caller {
    /// Whether the caller is a superuser.
    pub fn is_admin(&self) -> bool {
        self.user.is_admin
    }

    /// Fails with `Forbidden` unless the caller is a superuser.
    pub fn require_admin(&self) -> Result<()> {
        if self.user.is_admin {
            Ok(())
        } else {
            Err(Error::Forbidden(
                "this operation needs an admin account".into(),
            ))
        }
    }

    /// Admins may change any track; other users only the tracks they uploaded (imports
    /// have no uploader).
    pub fn may_change_track(&self, added_by: Option<&UserId>) -> Result<()> {
        if self.user.is_admin || added_by == Some(&self.user.id) {
            Ok(())
        } else {
            Err(Error::Forbidden(
                "only an admin or the user who uploaded a track may change it".into(),
            ))
        }
    }

    /// Whether the caller may read a job queued by `created_by`: their own, or any for an
    /// admin.
    pub fn may_see_job(&self, created_by: Option<&UserId>) -> bool {
        self.user.is_admin || created_by == Some(&self.user.id)
    }

    /// Whether the caller may read or cancel a download asked for by `owner`: their own, or
    /// any for an admin.
    pub fn may_see_download(&self, owner: Option<&UserId>) -> bool {
        self.user.is_admin || owner == Some(&self.user.id)
    }

    /// Whether the caller may change or unsubscribe a podcast channel, or delete its
    /// downloads: who subscribed, or an admin (channels are the server's; anyone may
    /// subscribe, refresh and download).
    pub fn may_manage_podcast(&self, subscribed_by: Option<&UserId>) -> Result<()> {
        if self.user.is_admin || subscribed_by == Some(&self.user.id) {
            Ok(())
        } else {
            Err(Error::Forbidden(
                "only the user who subscribed to a podcast or an admin may change it".into(),
            ))
        }
    }

    /// Whether the caller may manage `user`'s credentials: their own, or anyone's for an
    /// admin.
    pub fn may_manage_user(&self, user: &UserId) -> Result<()> {
        if &self.user.id == user {
            Ok(())
        } else {
            self.require_admin()
        }
    }

    /// Whether the caller may disable, enable or delete `user`'s account: an admin may,
    /// but not their own (a server must keep an admin who can sign in).
    pub fn may_administer_account(&self, user: &UserId) -> Result<()> {
        self.require_admin()?;
        if &self.user.id == user {
            return Err(Error::Conflict(
                "admins cannot disable or delete their own account".into(),
            ));
        }
        Ok(())
    }

    /// Whether the caller may list the playlists of the user named `username` (Subsonic
    /// `getPlaylists?username=`): their own, or anyone's for an admin. Names compare as
    /// names do everywhere ([`crate::text::name_key`]).
    pub fn may_list_playlists_of(&self, username: &str) -> Result<()> {
        let own = crate::text::name_key(username) == crate::text::name_key(&self.user.username);
        if own || self.user.is_admin {
            Ok(())
        } else {
            Err(Error::Forbidden(
                "only an admin may list another user's playlists".into(),
            ))
        }
    }

    /// How the caller stands towards a playlist of `owner`.
    pub fn playlist_access(&self, owner: &str, public: bool) -> PlaylistAccess {
        if owner == self.user.id.as_str() {
            PlaylistAccess::Owner
        } else if public {
            PlaylistAccess::Reader
        } else {
            PlaylistAccess::None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::User;
    use crate::Timestamp;

    fn caller(is_admin: bool) -> Caller {
        Caller {
            user: User {
                id: UserId::new(),
                username: "someone".into(),
                is_admin,
                created_at: Timestamp::from_micros(0),
                disabled_at: None,
            },
        }
    }

    #[test]
    fn only_admins_list_the_playlists_of_others() {
        let (someone, admin) = (caller(false), caller(true));
        assert!(someone.may_list_playlists_of("Someone").is_ok());
        assert_eq!(
            someone.may_list_playlists_of("other").unwrap_err().code(),
            "forbidden"
        );
        assert!(admin.may_list_playlists_of("other").is_ok());
    }

    #[test]
    fn decisions_follow_the_table() {
        let (owner, other, admin) = (caller(false), caller(false), caller(true));
        let mine = Some(&owner.user.id);
        assert!(owner.may_change_track(mine).is_ok());
        assert_eq!(
            other.may_change_track(mine).unwrap_err().code(),
            "forbidden"
        );
        assert!(admin.may_change_track(mine).is_ok());
        assert_eq!(
            owner.may_change_track(None).unwrap_err().code(),
            "forbidden"
        );
        assert!(admin.may_change_track(None).is_ok());

        assert!(owner.may_see_job(mine) && !other.may_see_job(mine) && admin.may_see_job(mine));

        assert!(owner.may_manage_user(&owner.user.id).is_ok());
        assert!(other.may_manage_user(&owner.user.id).is_err());
        assert!(admin.may_manage_user(&owner.user.id).is_ok());

        assert!(admin.may_administer_account(&owner.user.id).is_ok());
        assert_eq!(
            owner
                .may_administer_account(&other.user.id)
                .unwrap_err()
                .code(),
            "forbidden"
        );
        assert_eq!(
            admin
                .may_administer_account(&admin.user.id)
                .unwrap_err()
                .code(),
            "conflict"
        );

        let id = owner.user.id.as_str();
        assert_eq!(owner.playlist_access(id, false), PlaylistAccess::Owner);
        assert_eq!(other.playlist_access(id, false), PlaylistAccess::None);
        assert_eq!(other.playlist_access(id, true), PlaylistAccess::Reader);
        assert_eq!(admin.playlist_access(id, false), PlaylistAccess::None);
    }
}
