//! Encryption at rest of secrets the server must read back (a one-way hash cannot answer a
//! Subsonic token, and a scrobbling session key must be sent to the scrobbler).
//!
//! AES-256-GCM under a key derived by HKDF-SHA256 from a setting that is never stored in the
//! database, a fresh nonce per write, and the owning row's id as associated data (a
//! ciphertext copied onto another row does not decrypt). Stored as
//! `v1:{nonce hex}:{ciphertext hex}`.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use hkdf::Hkdf;
use sha2::Sha256;

use crate::{Error, Result};

/// Format tag of stored ciphertexts, so the scheme can change later.
const SCHEME: &str = "v1";

/// A cipher for one kind of secret.
pub(crate) struct SecretBox {
    cipher: Aes256Gcm,
}

impl SecretBox {
    /// The cipher keyed from `secret` for secrets of `purpose` (a fixed label: keys of two
    /// purposes differ even under one setting).
    pub(crate) fn new(secret: &[u8], purpose: &'static [u8]) -> SecretBox {
        let hkdf = Hkdf::<Sha256>::new(Some(purpose), secret);
        let mut key = [0u8; 32];
        hkdf.expand(b"aes-256-gcm key v1", &mut key)
            .expect("32 bytes is a valid HKDF-SHA256 output length");
        SecretBox {
            cipher: Aes256Gcm::new(&key.into()),
        }
    }

    /// Encrypts `clear`, bound to `owner`.
    pub(crate) fn seal(&self, owner: &str, clear: &str) -> Result<String> {
        let nonce: [u8; 12] = rand::random();
        let sealed = self
            .cipher
            .encrypt(
                &Nonce::from(nonce),
                Payload {
                    msg: clear.as_bytes(),
                    aad: owner.as_bytes(),
                },
            )
            .map_err(|_| Error::internal("secret encryption failed"))?;
        Ok(format!(
            "{SCHEME}:{}:{}",
            hex::encode(nonce),
            hex::encode(sealed)
        ))
    }

    /// Decrypts what [`SecretBox::seal`] stored for `owner`; `None` when it does not decrypt
    /// (another key, another owner, or damage).
    pub(crate) fn open(&self, owner: &str, stored: &str) -> Option<String> {
        let mut parts = stored.splitn(3, ':');
        let (Some(SCHEME), Some(nonce), Some(sealed)) = (parts.next(), parts.next(), parts.next())
        else {
            return None;
        };
        let nonce = Nonce::try_from(hex::decode(nonce).ok()?.as_slice()).ok()?;
        let sealed = hex::decode(sealed).ok()?;
        let clear = self
            .cipher
            .decrypt(
                &nonce,
                Payload {
                    msg: &sealed,
                    aad: owner.as_bytes(),
                },
            )
            .ok()?;
        String::from_utf8(clear).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ciphertexts_round_trip_and_are_bound_to_key_purpose_and_owner() {
        let secrets = SecretBox::new(b"secret-one-0123456789", b"test");
        let stored = secrets.seal("user-1", "hunter2hunter2").unwrap();
        assert!(!stored.contains("hunter2"));
        assert_eq!(secrets.open("user-1", &stored).unwrap(), "hunter2hunter2");
        assert!(SecretBox::new(b"secret-two-0123456789", b"test")
            .open("user-1", &stored)
            .is_none());
        assert!(SecretBox::new(b"secret-one-0123456789", b"other")
            .open("user-1", &stored)
            .is_none());
        assert!(secrets.open("user-2", &stored).is_none());
        // Fresh nonces: the same secret encrypts differently every time.
        assert_ne!(stored, secrets.seal("user-1", "hunter2hunter2").unwrap());
    }
}
