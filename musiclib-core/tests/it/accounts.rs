//! Registration, login and tokens.

use crate::backend_test;
use crate::support::*;
use musiclib_core::auth::legacy::LegacyCredentials;
use musiclib_core::auth::Caller;
use musiclib_core::ErrorKind;

backend_test! {
    async fn registration_rules(backend: Backend) {
        let library = TestLibrary::new(backend).await;
        let token = library.accounts().register("Alice", "long enough", None).await.expect("register");
        assert!(!token.user.is_admin, "registered users are never superusers");
        let caller = library.accounts().authenticate(&token.token).await.expect("token works");
        assert_eq!(caller.user.username, "Alice");

        let taken = library.accounts().register("alice", "another password", None).await.unwrap_err();
        assert_eq!(taken.kind(), ErrorKind::Conflict);
        let short = library.accounts().register("bob", "short", None).await.unwrap_err();
        assert_eq!((short.kind(), short.field()), (ErrorKind::InvalidInput, Some("password")));

        let login = library.accounts().login("ALICE", "long enough", None).await.expect("login is case-insensitive on names");
        assert_eq!(login.user.id, token.user.id);
        let wrong = library.accounts().login("alice", "wrong password", None).await.unwrap_err();
        assert_eq!(wrong.kind(), ErrorKind::Unauthenticated);
        let unknown = library.accounts().login("nobody", "whatever1", None).await.unwrap_err();
        assert_eq!(unknown.kind(), ErrorKind::Unauthenticated);
        let forged = library.accounts().authenticate("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.bad").await.unwrap_err();
        assert_eq!(forged.kind(), ErrorKind::Unauthenticated);
    }
}

backend_test! {
    async fn registration_can_be_closed(backend: Backend) {
        let library = TestLibrary::builder(backend).config(|config| config.allow_registration = false).build().await;
        let error = library.accounts().register("carol", "long enough", None).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Forbidden);
        // Superusers still create accounts.
        library.accounts().create_user("carol", "long enough", false).await.expect("admin-created account");
    }
}

backend_test! {
    async fn failed_sign_ins_are_throttled_before_the_password_is_checked(backend: Backend) {
        let library = TestLibrary::builder(backend)
            .config(|config| {
                config.sign_in_throttle.account_burst = 2;
                config.sign_in_throttle.address_burst = 3;
            })
            .build()
            .await;
        let accounts = library.accounts();
        accounts.create_user("dora", "right password", false).await.unwrap();
        accounts.create_user("eve", "right password", false).await.unwrap();
        let home: std::net::IpAddr = "192.0.2.10".parse().unwrap();
        let work: std::net::IpAddr = "198.51.100.20".parse().unwrap();
        // Successes spend nothing.
        for _ in 0..5 {
            accounts.login("dora", "right password", Some(home)).await.expect("signs in");
        }
        for _ in 0..2 {
            let wrong = accounts.login("dora", "wrong password", Some(work)).await.unwrap_err();
            assert_eq!(wrong.kind(), ErrorKind::Unauthenticated);
        }
        // The budget of dora at work is spent: even the right password is refused there.
        let refused = accounts.login("dora", "right password", Some(work)).await.unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::RateLimited, "{refused}");
        assert_eq!(refused.retry_after_seconds(), Some(6));
        // Dora at home, and from anywhere new, is not locked out by the guesses at work.
        accounts.login("dora", "right password", Some(home)).await.expect("home signs in");
        let cafe: std::net::IpAddr = "203.0.113.30".parse().unwrap();
        accounts.login("dora", "right password", Some(cafe)).await.expect("a new place signs in");
        // The address has one failure left: a guess at another name is checked, then it is spent.
        let wrong = accounts.login("eve", "wrong password", Some(work)).await.unwrap_err();
        assert_eq!(wrong.kind(), ErrorKind::Unauthenticated);
        let refused = accounts.login("eve", "right password", Some(work)).await.unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::RateLimited);
        accounts.login("eve", "right password", Some(home)).await.expect("another address signs in");
        // Without an address, the account's budget for unknown addresses decides.
        for _ in 0..2 {
            let wrong = accounts.login("dora", "wrong password", None).await.unwrap_err();
            assert_eq!(wrong.kind(), ErrorKind::Unauthenticated);
        }
        let refused = accounts.login("dora", "right password", None).await.unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::RateLimited);
        // The Subsonic interface checks another secret, with budgets of its own.
        let dora = Caller { user: accounts.find_user_by_name("dora").await.unwrap().unwrap() };
        let app_password = accounts.legacy_password(&dora).await.unwrap();
        let credentials = LegacyCredentials::Password(app_password);
        let library_ip: std::net::IpAddr = "198.51.100.99".parse().unwrap();
        accounts.authenticate_legacy("dora", &credentials, Some(library_ip)).await.expect("the app password works");
        let wrong = LegacyCredentials::Password("not the app password".into());
        for _ in 0..2 {
            let error = accounts.authenticate_legacy("dora", &wrong, Some(library_ip)).await.unwrap_err();
            assert_eq!(error.kind(), ErrorKind::Unauthenticated);
        }
        let refused = accounts.authenticate_legacy("dora", &credentials, Some(library_ip)).await.unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::RateLimited);
        // At home, where she proved herself, her app still signs in.
        accounts.authenticate_legacy("dora", &credentials, Some(home)).await.expect("home is not locked out");
    }
}
