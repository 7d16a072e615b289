//! Request parameters: the query string and, for a form POST (OpenSubsonic `formPost`), the
//! body, merged in that order. Keys may repeat (`id=a&id=b`).

use crate::response::SubsonicError;

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
}
