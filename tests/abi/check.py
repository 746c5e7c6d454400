#!/usr/bin/env python3
"""The ABI cannot drift unseen: librcip.so and include/rcip.h against the
committed lists in crates/rcip-capi/abi/.

  exports.txt       every function librcip.so exports and include/rcip.h
                    declares, one name a line, sorted
  header-names.txt  every other name include/rcip.h defines, as
                    `KIND NAME` lines, sorted: macro, enum, enumerator,
                    struct (opaque handle types) and typedef

The check fails when the library exports a symbol the list lacks (or lacks
one it lists), when the header declares a function the list lacks (or
lacks one), and when the header's other names differ from their list.

Which dynamic symbols to expect: a Rust cdylib exports only its
`#[no_mangle]` items (rustc's version script makes every other symbol
local, the standard library's and the allocator's included), and the only
`#[no_mangle]` items in rcip are the `rcip_` exports of crates/rcip-capi.
So librcip.so exports exactly the names of exports.txt; any other defined
dynamic symbol (a dependency's `#[no_mangle]` function, say) fails the
check as well. Undefined symbols (libc, libgcc_s) are imports, not checked.

`--write` rewrites both lists from the library and the header instead (what
`make abi-list` runs); review the change with `git diff` before committing.
"""

import argparse
import re
import subprocess
import sys

HOW_TO_EXTEND = """\
If the ABI is meant to change:
  1. run `make abi-list` (rewrites crates/rcip-capi/abi/*.txt from the
     library and include/rcip.h) and check `git diff crates/rcip-capi/abi`
     shows exactly the change you meant;
  2. record it in CHANGELOG.md under `Unreleased` (Added, Changed or
     Removed; a removal or a changed signature breaks C hosts built
     against the previous library);
  3. commit the lists and the CHANGELOG entry with the change."""


def dynamic_symbols(so):
    """Defined dynamic symbols of the shared library `so`."""
    out = subprocess.run(
        ["nm", "-D", "--defined-only", so], check=True, capture_output=True, text=True
    ).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3:
            # `nm -D` prints versioned names as NAME@VERSION (or @@).
            names.add(parts[2].split("@")[0])
    return names


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def header_functions(text):
    """Names of the functions the header declares (`TYPE name(...);`)."""
    code = strip_comments(text)
    names = set()
    for m in re.finditer(r"(?<!\w)(rcip_\w+)\s*\(", code):
        names.add(m.group(1))
    return names


def header_names(text):
    """Every other name the header defines, as `KIND NAME` strings."""
    code = strip_comments(text)
    names = set()
    for m in re.finditer(r"^\s*#\s*define\s+(\w+)", code, flags=re.M):
        names.add(f"macro {m.group(1)}")
    for m in re.finditer(r"\benum\s+(\w+)[^;{]*\{(.*?)\}", code, flags=re.S):
        names.add(f"enum {m.group(1)}")
        for e in re.finditer(r"^\s*(\w+)\s*(?:=[^,]*)?,", m.group(2), flags=re.M):
            names.add(f"enumerator {e.group(1)}")
    for m in re.finditer(r"\btypedef\s+struct\s+(\w+)\s+(\w+)\s*;", code):
        names.add(f"struct {m.group(1)}")
        names.add(f"typedef {m.group(2)}")
    for m in re.finditer(r"\btypedef\s+(?!struct\b)[^;(]*?\b(\w+)\s*;", code):
        names.add(f"typedef {m.group(1)}")
    for m in re.finditer(r"\btypedef\s+[^;]*?\(\s*\*\s*(\w+)\s*\)\s*\(", code):
        names.add(f"typedef {m.group(1)}")
    return names


def read_list(path):
    with open(path) as f:
        lines = [line.rstrip("\n") for line in f if line.strip() and not line.startswith("#")]
    return lines


def write_list(path, comment, names):
    with open(path, "w") as f:
        f.write(comment)
        for name in sorted(names):
            f.write(name + "\n")


def compare(what, actual, listed, list_path):
    problems = []
    for name in sorted(actual - listed):
        problems.append(f"{what} has {name}, which {list_path} does not list")
    for name in sorted(listed - actual):
        problems.append(f"{list_path} lists {name}, which {what} lacks")
    return problems


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--so", required=True, help="the shared library (target/release/librcip.so)")
    p.add_argument("--header", required=True, help="the committed header (include/rcip.h)")
    p.add_argument("--exports", required=True, help="the list of exported functions")
    p.add_argument("--names", required=True, help="the list of the header's other names")
    p.add_argument("--write", action="store_true", help="rewrite both lists instead of checking")
    a = p.parse_args()

    with open(a.header) as f:
        header = f.read()
    symbols = dynamic_symbols(a.so)
    functions = header_functions(header)
    names = header_names(header)

    if a.write:
        write_list(
            a.exports,
            "# The functions librcip exports (tests/abi/check.py; `make abi-list` rewrites this).\n",
            {s for s in symbols if s.startswith("rcip_")} | functions,
        )
        write_list(
            a.names,
            "# The other names include/rcip.h defines (tests/abi/check.py; `make abi-list` rewrites this).\n",
            names,
        )
        for name in sorted(s for s in symbols if not s.startswith("rcip_")):
            print(f"not listed: {a.so} exports {name}, which is not an rcip_ function", file=sys.stderr)
        print(f"wrote {a.exports} and {a.names}: review with git diff")
        return 0

    exports = read_list(a.exports)
    listed_names = read_list(a.names)
    problems = []
    for path, lines in [(a.exports, exports), (a.names, listed_names)]:
        if lines != sorted(set(lines)):
            problems.append(f"{path} is not sorted or has a duplicate line")
    for name in exports:
        if not re.fullmatch(r"rcip_[a-z0-9_]+", name):
            problems.append(f"{a.exports}: {name!r} is not an rcip_ function name")
    listed = set(exports)
    for name in sorted(s for s in symbols if not s.startswith("rcip_")):
        problems.append(
            f"{a.so} exports {name}, which is not an rcip_ function: only the #[no_mangle] "
            "exports of crates/rcip-capi may reach the dynamic symbol table"
        )
    rcip_symbols = {s for s in symbols if s.startswith("rcip_")}
    problems += compare(f"{a.so} (nm -D --defined-only)", rcip_symbols, listed, a.exports)
    problems += compare(f"{a.header} (function declarations)", functions, listed, a.exports)
    problems += compare(f"{a.header} (other names)", names, set(listed_names), a.names)

    if problems:
        print("ABI check failed:", file=sys.stderr)
        for problem in problems:
            print("  " + problem, file=sys.stderr)
        print(HOW_TO_EXTEND, file=sys.stderr)
        return 1
    print(f"ABI check: {len(listed)} functions and {len(listed_names)} header names as listed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
