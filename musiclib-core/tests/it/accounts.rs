//! Registration, login and tokens.

use crate::backend_test;
use crate::support::*;
use musiclib_core::ErrorKind;

backend_test! {
    async fn registration_rules(backend: Backend) {
        let library = TestLibrary::new(backend).await;
        let token = library.accounts().register("Alice", "long enough").await.expect("register");
        assert!(!token.user.is_admin, "registered users are never superusers");
        let caller = library.accounts().authenticate(&token.token).await.expect("token works");
        assert_eq!(caller.user.username, "Alice");

        let taken = library.accounts().register("alice", "another password").await.unwrap_err();
        assert_eq!(taken.kind(), ErrorKind::Conflict);
        let short = library.accounts().register("bob", "short").await.unwrap_err();
        assert_eq!((short.kind(), short.field()), (ErrorKind::InvalidInput, Some("password")));

        let login = library.accounts().login("ALICE", "long enough").await.expect("login is case-insensitive on names");
        assert_eq!(login.user.id, token.user.id);
        let wrong = library.accounts().login("alice", "wrong password").await.unwrap_err();
        assert_eq!(wrong.kind(), ErrorKind::Unauthenticated);
        let unknown = library.accounts().login("nobody", "whatever1").await.unwrap_err();
        assert_eq!(unknown.kind(), ErrorKind::Unauthenticated);
        let forged = library.accounts().authenticate("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.bad").await.unwrap_err();
        assert_eq!(forged.kind(), ErrorKind::Unauthenticated);
    }
}

backend_test! {
    async fn registration_can_be_closed(backend: Backend) {
        let library = TestLibrary::builder(backend).config(|config| config.allow_registration = false).build().await;
        let error = library.accounts().register("carol", "long enough").await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Forbidden);
        // Superusers still create accounts.
        library.accounts().create_user("carol", "long enough", false).await.expect("admin-created account");
    }
}
