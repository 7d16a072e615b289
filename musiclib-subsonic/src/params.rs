//! Request parameters: the query string and, for a form POST (OpenSubsonic `formPost`), the
//! body, merged in that order. Keys may repeat (`id=a&id=b`).

use musiclib_core::auth::legacy::LegacyCredentials;

use crate::response::SubsonicError;

/// Who a request says it is, read from its parameters before any account is looked up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credentials<'a> {
    /// OpenSubsonic `apiKey` (the app password), alone.
    ApiKey(&'a str),
    /// `u` with `t` + `s`, or with `p`.
    Legacy {
        /// `u`.
        username: &'a str,
        /// The token and salt, or the password.
        credentials: LegacyCredentials,
    },
}

/// The parameters of one request.
#[derive(Debug, Clone, Default)]
pub struct Params(Vec<(String, String)>);

impl Params {
    /// Parses a query string and a form body.
    pub fn parse(query: Option<&str>, form: Option<&[u8]>) -> Params {
        let mut pairs: Vec<(String, String)> = Vec::new();
        if let Some(query) = query {
            pairs.extend(form_urlencoded::parse(query.as_bytes()).into_owned());
        }
        if let Some(form) = form {
            pairs.extend(form_urlencoded::parse(form).into_owned());
        }
        Params(pairs)
    }

    /// The first value of `name`, if present and not empty.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(key, value)| key == name && !value.is_empty())
            .map(|(_, value)| value.as_str())
    }

    /// Every non-empty value of `name`, in order.
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(key, value)| key == name && !value.is_empty())
            .map(|(_, value)| value.as_str())
            .collect()
    }

    /// Whether `name` was sent at all (even empty).
    pub fn has(&self, name: &str) -> bool {
        self.0.iter().any(|(key, _)| key == name)
    }

    /// The value of a required parameter; error 10 when it is missing or empty.
    pub fn required(&self, name: &str) -> Result<&str, SubsonicError> {
        self.get(name).ok_or_else(|| SubsonicError::missing(name))
    }

    /// The credentials: `apiKey` alone (error 43 beside `u`, `p` or `t`), else `u` with
    /// `t` and `s` (`t` wins over `p`) or with `p`; error 10 names what is missing.
    pub fn credentials(&self) -> Result<Credentials<'_>, SubsonicError> {
        if let Some(api_key) = self.get("apiKey") {
            if self.has("u") || self.has("p") || self.has("t") {
                return Err(SubsonicError {
                    code: 43,
                    message: "apiKey cannot be combined with u, p or t".into(),
                });
            }
            return Ok(Credentials::ApiKey(api_key));
        }
        let username = self.required("u")?;
        let credentials = match (self.get("t"), self.get("p")) {
            (Some(token), _) => LegacyCredentials::Token {
                token: token.to_string(),
                salt: self.required("s")?.to_string(),
            },
            (None, Some(password)) => LegacyCredentials::Password(password.to_string()),
            (None, None) => return Err(SubsonicError::missing("t and s, or p")),
        };
        Ok(Credentials::Legacy {
            username,
            credentials,
        })
    }

    /// An integer parameter.
    pub fn int(&self, name: &str) -> Result<Option<i64>, SubsonicError> {
        self.get(name).map(|value| integer(name, value)).transpose()
    }

    /// Every value of a repeatable integer parameter.
    pub fn ints(&self, name: &str) -> Result<Vec<i64>, SubsonicError> {
        self.all(name)
            .into_iter()
            .map(|value| integer(name, value))
            .collect()
    }

    /// A number of seconds that may have a fraction.
    pub fn float(&self, name: &str) -> Result<Option<f64>, SubsonicError> {
        self.get(name)
            .map(|value| {
                value
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|number| number.is_finite())
                    .ok_or_else(|| {
                        SubsonicError::invalid(name, format!("{value:?} is not a number"))
                    })
            })
            .transpose()
    }

    /// A boolean: `true`/`false` in any case (some clients send `True`), or `1`/`0`.
    pub fn bool(&self, name: &str) -> Result<Option<bool>, SubsonicError> {
        self.get(name)
            .map(|value| match value.trim().to_ascii_lowercase().as_str() {
                "true" | "1" => Ok(true),
                "false" | "0" => Ok(false),
                _ => Err(SubsonicError::invalid(
                    name,
                    format!("{value:?} is not true or false"),
                )),
            })
            .transpose()
    }
}

fn integer(name: &str, value: &str) -> Result<i64, SubsonicError> {
    value
        .trim()
        .parse::<i64>()
        .map_err(|_| SubsonicError::invalid(name, format!("{value:?} is not an integer")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_and_form_merge_and_keys_repeat() {
        let params = Params::parse(
            Some("u=ann&id=a&id=b&empty="),
            Some(b"id=c&submission=True"),
        );
        assert_eq!(params.get("u"), Some("ann"));
        assert_eq!(params.all("id"), vec!["a", "b", "c"]);
        assert_eq!(params.get("empty"), None);
        assert!(params.has("empty"));
        assert_eq!(params.bool("submission").unwrap(), Some(true));
        assert_eq!(params.required("p").unwrap_err().code, 10);
        assert_eq!(params.int("u").unwrap_err().code, 0);
    }

    #[test]
    fn credentials_are_read_as_the_protocol_says() {
        let params = |query: &str| Params::parse(Some(query), None);
        assert_eq!(
            params("apiKey=k").credentials().unwrap(),
            Credentials::ApiKey("k")
        );
        // A key stands alone, even beside an empty u.
        assert_eq!(params("apiKey=k&u=").credentials().unwrap_err().code, 43);
        assert_eq!(
            params("apiKey=k&t=x&s=y").credentials().unwrap_err().code,
            43
        );
        // An empty key is no key.
        assert_eq!(params("apiKey=&p=x").credentials().unwrap_err().code, 10);
        assert_eq!(params("t=x&s=y").credentials().unwrap_err().code, 10);
        assert_eq!(params("u=ann&t=x").credentials().unwrap_err().code, 10);
        assert_eq!(params("u=ann").credentials().unwrap_err().code, 10);
        // The token wins over a password.
        assert_eq!(
            params("u=ann&p=clear&t=ABC&s=salt").credentials().unwrap(),
            Credentials::Legacy {
                username: "ann",
                credentials: LegacyCredentials::Token {
                    token: "ABC".into(),
                    salt: "salt".into()
                }
            }
        );
        assert_eq!(
            params("u=ann&p=enc%3A736573616d65").credentials().unwrap(),
            Credentials::Legacy {
                username: "ann",
                credentials: LegacyCredentials::Password("enc:736573616d65".into())
            }
        );
    }

    /// The hardest inputs of the `subsonic_params` fuzz target, kept here: many repeated
    /// keys, long values, broken escapes and bytes that are not UTF-8.
    #[test]
    fn many_repeated_keys_and_broken_escapes_parse() {
        let query = "id=x&".repeat(50_000);
        let form = format!("id=y&count={}", "9".repeat(100_000));
        let params = Params::parse(Some(&query), Some(form.as_bytes()));
        let ids = params.all("id");
        assert_eq!(ids.len(), 50_001);
        assert_eq!((ids[0], ids[50_000]), ("x", "y"));
        assert_eq!(params.int("count").unwrap_err().code, 0);
        assert_eq!(params.ints("id").unwrap_err().code, 0);

        let params = Params::parse(
            Some("u=%ZZ&p=%&t=%e2%82&=&&=x&s"),
            Some(b"\xff\xfe=\x00&time=1e400&size=-0&submission=TRUE"),
        );
        assert_eq!(params.get("u"), Some("%ZZ"));
        assert_eq!(params.get("p"), Some("%"));
        assert_eq!(params.get("t"), Some("\u{fffd}"));
        assert!(params.has("s") && params.get("s").is_none());
        assert_eq!(params.get("\u{fffd}\u{fffd}"), Some("\0"));
        assert_eq!(params.float("time").unwrap_err().code, 0);
        assert_eq!(params.int("size").unwrap(), Some(0));
        assert_eq!(params.bool("submission").unwrap(), Some(true));
        assert_eq!(params.credentials().unwrap_err().code, 10);
    }
}
