//! Regular expressions in the reference's dialect: ECMAScript with the `u`
//! flag (`new RegExp(pattern, "u")`, then `test`, an unanchored search).
//!
//! The `regress` crate implements ECMAScript regular expressions; the
//! jsonschema crate's own engines (fancy-regex, regex) use a Perl-style
//! dialect that accepts patterns the reference refuses (`\-` outside a
//! class, `[\w-.]`) and matches differently (`\d` and `\w` are ASCII only in
//! JavaScript).

use std::fmt;

/// A compiled `u`-flag ECMAScript regular expression.
#[derive(Clone)]
pub(crate) struct JsRegex {
    source: String,
    regex: regress::Regex,
}

impl fmt::Debug for JsRegex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "/{}/u", self.source)
    }
}

impl JsRegex {
    /// Compiles `pattern`; the error is the engine's reason.
    pub fn new(pattern: &str) -> Result<JsRegex, String> {
        let flags = regress::Flags {
            unicode: true,
            ..Default::default()
        };
        match regress::Regex::with_flags(pattern, flags) {
            Ok(regex) => Ok(JsRegex {
                source: pattern.to_string(),
                regex,
            }),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Whether `pattern` without the `u` flag matches `text`: the reference
    /// uses that dialect for one thing only, checking whether a
    /// `patternProperties` pattern matches a name declared in `properties`.
    /// `None` when the pattern does not compile in that dialect.
    pub fn matches_without_u(pattern: &str, text: &str) -> Option<bool> {
        regress::Regex::with_flags(pattern, regress::Flags::default())
            .ok()
            .map(|r| r.find(text).is_some())
    }

    /// True when the pattern matches somewhere in `text` (JavaScript `test`).
    pub fn is_match(&self, text: &str) -> bool {
        self.regex.find(text).is_some()
    }

    pub fn source(&self) -> &str {
        &self.source
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_the_javascript_u_dialect() {
        // Errors in `u` mode.
        assert!(JsRegex::new(r"^[\w-.]+$").is_err());
        assert!(JsRegex::new("(unclosed").is_err());
        assert!(JsRegex::new(r"\-").is_err());
        assert!(JsRegex::new(r"\:").is_err());
        // Accepted.
        assert!(JsRegex::new(r"^\p{Letter}+$").is_ok());
        assert!(JsRegex::new(r"^(?=.*\d)[a-z\d]+$").is_ok());
        // Matching: unanchored, ASCII `\d`.
        let digits = JsRegex::new(r"^\d+$").unwrap();
        assert!(digits.is_match("123"));
        assert!(!digits.is_match("١٢٣"));
        assert!(JsRegex::new("b").unwrap().is_match("abc"));
        let letters = JsRegex::new(r"^\p{L}+$").unwrap();
        assert!(letters.is_match("héllo"));
        // `$` does not match before a final newline.
        assert!(!JsRegex::new("^abc$").unwrap().is_match("abc\n"));
    }
}
