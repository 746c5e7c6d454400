//! The linear-time translation of ECMAScript `u`-flag patterns
//! (src/schema/regex.rs) against regress, the ECMAScript engine: for every
//! generated pattern that regress accepts and the translation expresses,
//! both must answer `test(text)` alike on generated texts.
//!
//! Input: pattern tokens (one byte each, an index into `TOKENS`), a 0xFF
//! byte, then text characters (one byte each, an index into `CHARS`).
//! Patterns are built from tokens so most inputs are valid patterns that
//! exercise classes, escapes, quantifiers, anchors, groups and properties;
//! regress answers under a step budget and an input it cannot finish in it
//! is skipped. A pattern with an ES2025 group modifier (`(?i:`, `(?-i:`,
//! `(?m:`, `(?s:`) outside a class must be refused as a schema `pattern`
//! (issue 27, item 4: Node 22, the reference's runtime, refuses them); inside
//! a class the same text is literal and compared as any other.
#![no_main]

use libfuzzer_sys::fuzz_target;

const TOKENS: &[&str] = &[
    "a",
    "b",
    "c",
    "A",
    "Z",
    "0",
    "9",
    "_",
    "-",
    " ",
    ".",
    "^",
    "$",
    "|",
    "(",
    ")",
    "(?:",
    "(?<g>",
    "*",
    "+",
    "?",
    "*?",
    "{2}",
    "{1,3}",
    "{0,}",
    "[",
    "]",
    "[^",
    "\\d",
    "\\D",
    "\\w",
    "\\W",
    "\\s",
    "\\S",
    "\\b",
    "\\B",
    "\\n",
    "\\r",
    "\\t",
    "\\v",
    "\\f",
    "\\0",
    "\\-",
    "\\.",
    "\\/",
    "\\\\",
    "\\^",
    "\\$",
    "\\[",
    "\\]",
    "\\(",
    "\\)",
    "\\{",
    "\\}",
    "\\|",
    "\\*",
    "\\+",
    "\\?",
    "\\x41",
    "\\u0042",
    "\\u{1F600}",
    "\\uD83D\\uDE00",
    "\\uD83D",
    "\\cJ",
    "\\p{L}",
    "\\p{Lu}",
    "\\p{Ll}",
    "\\P{L}",
    "\\p{Nd}",
    "\\p{Script=Greek}",
    "\\p{White_Space}",
    "é",
    "😀",
    "\u{2028}",
    "\u{a0}",
    "\u{feff}",
    "[]",
    "[^]",
    "a-z",
    "0-9",
    "(?=",
    "(?!",
    // ES2025 group modifiers: refused at load outside a class (checked
    // below), literal inside one.
    "(?i:",
    "(?-i:",
    "(?m:",
    "(?s:",
];

const CHARS: &[char] = &[
    'a', 'b', 'c', 'A', 'Z', '0', '9', '_', '-', ' ', '.', '\n', '\r', '\t', '\u{b}', '\u{c}', '\u{2028}', '\u{2029}',
    '\u{a0}', '\u{feff}', '\u{85}', '\u{3000}', 'é', 'É', 'α', 'Ω', '😀', '٣', '/', '\\', '!', '\u{8}', '\0', 'B',
];

fuzz_target!(|data: &[u8]| {
    let (pattern_bytes, text_bytes) = match data.iter().position(|&b| b == 0xff) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    if pattern_bytes.len() > 40 || text_bytes.len() > 64 {
        return;
    }
    let pattern: String = pattern_bytes
        .iter()
        .map(|&b| TOKENS[b as usize % TOKENS.len()])
        .collect();
    // Tokens are whole escapes, so only `[` / `[^` open a class and only
    // `]` closes one (`[]`, `[^]` are closed already).
    let mut in_class = false;
    let mut modifier = false;
    for &b in pattern_bytes {
        match TOKENS[b as usize % TOKENS.len()] {
            "[" | "[^" if !in_class => in_class = true,
            "]" if in_class => in_class = false,
            "(?i:" | "(?-i:" | "(?m:" | "(?s:" if !in_class => modifier = true,
            _ => {}
        }
    }
    if modifier {
        let schema = serde_json::json!({"type": "string", "pattern": pattern});
        assert!(
            rcip::schema::Schema::compile(&schema).is_err(),
            "/{pattern}/u has a group modifier and compiled"
        );
        return;
    }
    let text: String = text_bytes.iter().map(|&b| CHARS[b as usize % CHARS.len()]).collect();
    // The text, and each of its suffixes and prefixes, as separate texts.
    let mut texts = vec![text.clone()];
    for (i, _) in text.char_indices().skip(1) {
        texts.push(text[i..].to_string());
        texts.push(text[..i].to_string());
    }
    for t in &texts {
        if let Some((ours, reference)) = rcip::schema::compare_pattern_engines(&pattern, t, 200_000) {
            assert_eq!(
                ours, reference,
                "/{pattern}/u on {t:?}: translation {ours}, regress {reference}"
            );
        }
    }
});
