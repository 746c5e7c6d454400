//! JSON read as deep as the library accepts: serde_json's own recursion
//! guard (128 levels) is off, and the parser grows its stack on the heap as
//! it descends (serde_stacker), so a scenario or an outcome nested to the
//! library's default limit of 1000 levels, or to a limit a scenario raises,
//! is read instead of refused.

use serde_json::Value;

/// The stack of the runner's thread (main.rs): printing, comparing and
/// dropping a value recurse once per level, a few hundred bytes each, so
/// this covers nesting of about a million levels. Only the pages used are
/// touched.
pub const STACK_BYTES: usize = 1 << 30;

pub fn parse(text: &str) -> Result<Value, serde_json::Error> {
    parse_bytes(text.as_bytes())
}

pub fn parse_bytes(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    de.disable_recursion_limit();
    let value = <Value as serde::Deserialize>::deserialize(serde_stacker::Deserializer::new(&mut de))?;
    de.end()?;
    Ok(value)
}
