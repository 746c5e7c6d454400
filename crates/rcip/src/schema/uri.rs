//! URI references as the reference resolves `$id` and `$ref`: RFC 3986
//! parsing and resolution (5.2), with the scheme and host lower-cased, and
//! Ajv's normalisation of identifiers (a trailing `#` or `#/` is dropped).

/// The five parts of a URI reference (RFC 3986, appendix B).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct UriRef {
    pub scheme: Option<String>,
    pub authority: Option<String>,
    pub path: String,
    pub query: Option<String>,
    pub fragment: Option<String>,
}

impl UriRef {
    pub fn parse(text: &str) -> UriRef {
        let mut rest = text;
        let mut out = UriRef::default();
        if let Some(i) = rest.find('#') {
            out.fragment = Some(rest[i + 1..].to_string());
            rest = &rest[..i];
        }
        if let Some(i) = rest.find('?') {
            out.query = Some(rest[i + 1..].to_string());
            rest = &rest[..i];
        }
        if let Some(i) = rest.find(':') {
            let scheme = &rest[..i];
            let valid = !scheme.is_empty()
                && scheme.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
            if valid && !scheme.contains('/') {
                out.scheme = Some(scheme.to_ascii_lowercase());
                rest = &rest[i + 1..];
            }
        }
        if let Some(after) = rest.strip_prefix("//") {
            let end = after.find('/').unwrap_or(after.len());
            out.authority = Some(lower_host(&after[..end]));
            rest = &after[end..];
        }
        out.path = rest.to_string();
        out
    }

    pub fn serialize(&self) -> String {
        let mut s = String::new();
        if let Some(scheme) = &self.scheme {
            s.push_str(scheme);
            s.push(':');
        }
        if let Some(authority) = &self.authority {
            s.push_str("//");
            s.push_str(authority);
        }
        s.push_str(&self.path);
        if let Some(q) = &self.query {
            s.push('?');
            s.push_str(q);
        }
        if let Some(f) = &self.fragment {
            s.push('#');
            s.push_str(f);
        }
        s
    }
}

fn lower_host(authority: &str) -> String {
    match authority.rfind('@') {
        Some(i) => format!("{}@{}", &authority[..i], authority[i + 1..].to_ascii_lowercase()),
        None => authority.to_ascii_lowercase(),
    }
}

fn remove_dot_segments(path: &str) -> String {
    let mut input = path.to_string();
    let mut output = String::new();
    while !input.is_empty() {
        if let Some(r) = input.strip_prefix("../") {
            input = r.to_string();
        } else if let Some(r) = input.strip_prefix("./") {
            input = r.to_string();
        } else if input.starts_with("/./") {
            input = input[2..].to_string();
        } else if input == "/." {
            input = "/".to_string();
        } else if input.starts_with("/../") || input == "/.." {
            input = if input == "/.." {
                "/".to_string()
            } else {
                input[3..].to_string()
            };
            match output.rfind('/') {
                Some(i) => output.truncate(i),
                None => output.clear(),
            }
        } else if input == "." || input == ".." {
            input.clear();
        } else {
            let start = usize::from(input.starts_with('/'));
            let end = input[start..].find('/').map(|i| i + start).unwrap_or(input.len());
            output.push_str(&input[..end]);
            input = input[end..].to_string();
        }
    }
    output
}

/// Resolves `reference` against `base` (RFC 3986, 5.2.2).
pub(crate) fn resolve(base: &str, reference: &str) -> String {
    let r = UriRef::parse(reference);
    let b = UriRef::parse(base);
    let mut t = UriRef::default();
    if r.scheme.is_some() {
        t.scheme = r.scheme;
        t.authority = r.authority;
        t.path = remove_dot_segments(&r.path);
        t.query = r.query;
    } else {
        if r.authority.is_some() {
            t.authority = r.authority;
            t.path = remove_dot_segments(&r.path);
            t.query = r.query;
        } else {
            if r.path.is_empty() {
                t.path = b.path.clone();
                t.query = if r.query.is_some() { r.query } else { b.query.clone() };
            } else {
                if r.path.starts_with('/') {
                    t.path = remove_dot_segments(&r.path);
                } else {
                    let merged = if b.authority.is_some() && b.path.is_empty() {
                        format!("/{}", r.path)
                    } else {
                        match b.path.rfind('/') {
                            Some(i) => format!("{}{}", &b.path[..=i], r.path),
                            None => r.path.clone(),
                        }
                    };
                    t.path = remove_dot_segments(&merged);
                }
                t.query = r.query;
            }
            t.authority = b.authority.clone();
        }
        t.scheme = b.scheme.clone();
    }
    t.fragment = r.fragment;
    t.serialize()
}

/// Ajv's `normalizeId`: drops a trailing `#` or `#/`.
pub(crate) fn normalize_id(id: &str) -> String {
    if let Some(s) = id.strip_suffix("#/") {
        return s.to_string();
    }
    if let Some(s) = id.strip_suffix('#') {
        return s.to_string();
    }
    id.to_string()
}

/// Ajv's `getFullPath`: the URI without its fragment, followed by `#`.
pub(crate) fn full_path(id: &str) -> String {
    let id = normalize_id(id);
    let serialized = UriRef::parse(&id).serialize();
    let head = serialized.split('#').next().unwrap_or("");
    format!("{head}#")
}

/// Whether an `$id` is a URN the reference cannot parse (`urn:NID:NSS`
/// with a 1 to 32 character NID is required).
pub(crate) fn is_bad_urn(id: &str) -> bool {
    let u = UriRef::parse(id);
    if u.scheme.as_deref() != Some("urn") {
        return false;
    }
    let path = &u.path;
    let Some(colon) = path.find(':') else { return true };
    let nid = &path[..colon];
    let nid_ok = !nid.is_empty()
        && nid.len() <= 32
        && nid.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && nid.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    !nid_ok
}

/// Decodes `%XX` escapes (as `decodeURIComponent`); `None` when malformed.
pub(crate) fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_like_rfc3986() {
        assert_eq!(resolve("http://a/b/c/d;p?q", "g"), "http://a/b/c/g");
        assert_eq!(resolve("http://a/b/c/d;p?q", "../g"), "http://a/b/g");
        assert_eq!(resolve("http://a/b/c/d;p?q", "#s"), "http://a/b/c/d;p?q#s");
        assert_eq!(resolve("http://a/b/c/d;p?q", "/g"), "http://a/g");
        assert_eq!(resolve("", "list"), "list");
        assert_eq!(resolve("", "#/a"), "#/a");
        assert_eq!(resolve("HTTP://Example.COM/x", "y"), "http://example.com/y");
        assert_eq!(
            resolve("https://e.com/ref-and-id3/base.json", "nested/foo.json"),
            "https://e.com/ref-and-id3/nested/foo.json"
        );
        assert_eq!(normalize_id("http://x/y#"), "http://x/y");
        assert_eq!(full_path("http://x/y#/a"), "http://x/y#");
        assert_eq!(full_path(""), "#");
        assert!(is_bad_urn("urn:x"));
        assert!(!is_bad_urn("urn:uuid:deadbeef"));
    }
}
