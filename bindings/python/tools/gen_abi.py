"""Writes bindings/python/rcip/_abi.py from include/rcip.h (issue 36 item 1).

The header is the one description of the C ABI; the Python binding's ctypes
declarations are generated from it instead of copied by hand. One run reads
every callback typedef (``typedef R (*rcip_NAME_callback)(...)``), every
function declaration and the ``RCIP_RESULT_*`` values, and writes:

- ``NAME_CALLBACK = CFUNCTYPE(...)`` for each callback typedef;
- ``PROTOTYPES``: every export with its ``(restype, [argtypes])``;
- ``Result``: the ``rcip_result`` values as an ``enum.IntEnum``, each member
  the name without ``RCIP_RESULT_`` (``rcip.errors`` re-exports it).

The C to ctypes rules (one place):

- ``rcip_result`` is ``c_uint32``; ``void`` as a return is ``None``;
- any handle (``struct rcip_X *``, const or not) and ``void *`` are
  ``c_void_p``, and so is a ``char *`` the library gave out and takes back
  (``rcip_string_free``): ctypes passes the address it was read as;
- an out-parameter (``struct rcip_X **``, ``char **``) is ``POINTER(c_void_p)``
  (strings returned through it are read as addresses and freed);
- ``const char *`` is ``c_char_p``, ``const char *const *`` is
  ``POINTER(c_char_p)``, ``T *`` of a scalar is ``POINTER(c_T)``;
- ``bool``, ``double``, ``size_t``, ``[u]int{32,64}_t`` are their ctypes;
- a ``rcip_NAME_callback`` is ``NAME_CALLBACK`` (upper case).

``python3 bindings/python/tools/gen_abi.py`` rewrites the file (``make
header`` runs it after copying the header); ``--check`` exits 1 when the
file differs from what the header gives (``make test-python-abi``, part of
``make test-abi``).
"""

from __future__ import annotations

import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
HEADER = os.path.join(ROOT, "include", "rcip.h")
OUTPUT = os.path.join(ROOT, "bindings", "python", "rcip", "_abi.py")

SCALARS = {
    "bool": "c_bool",
    "double": "c_double",
    "size_t": "c_size_t",
    "int32_t": "c_int32",
    "int64_t": "c_int64",
    "uint32_t": "c_uint32",
    "uint64_t": "c_uint64",
    "rcip_result": "c_uint32",
}


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def ctype(c: str, callbacks: set[str]) -> str:
    """The ctypes expression of a C parameter or return type (no name)."""
    t = " ".join(c.replace("*", " * ").split())
    stars = t.count("*")
    base = t.replace("*", " ").replace("const", " ").replace("struct", " ").split()
    if len(base) != 1:
        raise SystemExit("gen_abi.py: cannot read the C type %r" % c)
    name = base[0]
    if name in callbacks and stars == 0:
        return name[len("rcip_") : -len("_callback")].upper() + "_CALLBACK"
    if stars == 0:
        if name == "void":
            return "None"
        if name in SCALARS:
            return SCALARS[name]
        raise SystemExit("gen_abi.py: no ctypes rule for %r" % c)
    if name == "char":
        if stars == 2 and t.count("const") == 2:
            return "POINTER(c_char_p)"  # const char *const *: an array of strings
        if stars == 2:
            return "POINTER(c_void_p)"  # char **: a string out-parameter
        if "const" in t.split():
            return "c_char_p"
        return "c_void_p"  # char *: a string the library gave out, passed back
    if name == "void" or name.startswith("rcip_"):
        return "c_void_p" if stars == 1 else "POINTER(c_void_p)"
    if name in SCALARS and stars == 1:
        return "POINTER(%s)" % SCALARS[name]
    raise SystemExit("gen_abi.py: no ctypes rule for %r" % c)


def split_params(params: str) -> list[str]:
    """C parameter types, names removed (`void` alone is no parameter)."""
    params = params.strip()
    if params in ("", "void"):
        return []
    out = []
    for p in params.split(","):
        p = p.strip()
        m = re.match(r"^(.*?)([A-Za-z_][A-Za-z0-9_]*)$", p)
        if not m or not m.group(1).strip():
            raise SystemExit("gen_abi.py: cannot read the parameter %r" % p)
        out.append(m.group(1).strip())
    return out


def read_header(text: str):
    code = strip_comments(text)
    callbacks: dict[str, tuple[str, list[str]]] = {}
    for m in re.finditer(r"typedef\s+([^;(]+?)\s*\(\s*\*\s*(rcip_\w+_callback)\s*\)\s*\(([^)]*)\)\s*;", code):
        callbacks[m.group(2)] = (m.group(1), split_params(m.group(3)))
    names = set(callbacks)
    functions: list[tuple[str, str, list[str]]] = []
    for m in re.finditer(r"^([A-Za-z_][^;(){}#]*?[\s*])(rcip_\w+)\s*\(([^)]*)\)\s*;", code, flags=re.M):
        ret = m.group(1).strip()
        if ret.startswith("typedef"):
            continue
        functions.append((m.group(2), ret, split_params(m.group(3))))
    results: list[tuple[str, int]] = []
    for m in re.finditer(r"\bRCIP_RESULT_([A-Z0-9_]+)\s*=\s*(\d+)", code):
        results.append((m.group(1), int(m.group(2))))
    if not functions or not callbacks or not results:
        raise SystemExit("gen_abi.py: %s has no functions, callbacks or results (not rcip.h?)" % HEADER)
    seen = set()
    for fn, _, _ in functions:
        if fn in seen:
            raise SystemExit("gen_abi.py: %s declared twice" % fn)
        seen.add(fn)
    return callbacks, functions, results, names


def render(text: str) -> str:
    callbacks, functions, results, names = read_header(text)
    lines = [
        '"""The C ABI of include/rcip.h as ctypes declarations: GENERATED, do not edit.',
        "",
        "Written by bindings/python/tools/gen_abi.py from the header (`make header`",
        "runs it; `make test-abi` checks it). _lib.py applies PROTOTYPES to the",
        "loaded library and re-exports the callback types; errors.py re-exports",
        "Result.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "import enum",
        "from ctypes import (",
    ]
    used = set()
    body: list[str] = []
    body.append("# Callback types, in the header's order.")
    for name, (ret, params) in callbacks.items():
        parts = [ctype(ret, names)] + [ctype(p, names) for p in params]
        body.append("%s = CFUNCTYPE(%s)" % (name[len("rcip_") : -len("_callback")].upper() + "_CALLBACK", ", ".join(parts)))
        used.update(parts)
    body.append("")
    body.append("# Every export, in the header's order: name -> (restype, [argtypes]).")
    body.append("PROTOTYPES = {")
    for fn, ret, params in functions:
        parts = [ctype(p, names) for p in params]
        r = ctype(ret, names)
        used.update(parts + [r])
        body.append('    "%s": (%s, [%s]),' % (fn, r, ", ".join(parts)))
    body.append("}")
    body.append("")
    imports = {"CFUNCTYPE"}
    for expr in used:
        for token in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", expr):
            if token != "None" and not token.endswith("_CALLBACK"):
                imports.add(token)
    for name in sorted(imports):
        lines.append("    %s," % name)
    lines.append(")")
    lines.append("")
    lines.extend(body)
    cb_names = [n[len("rcip_") : -len("_callback")].upper() + "_CALLBACK" for n in callbacks]
    lines.append("")
    lines.append("__all__ = [")
    for n in cb_names + ["PROTOTYPES", "Result"]:
        lines.append('    "%s",' % n)
    lines.append("]")
    lines.append("")
    lines.append("")
    lines.append("class Result(enum.IntEnum):")
    lines.append('    """``rcip_result`` values (include/rcip.h), in its order; never renumbered."""')
    lines.append("")
    for name, value in results:
        lines.append("    %s = %d" % (name, value))
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    with open(HEADER, encoding="utf-8") as f:
        text = render(f.read())
    if "--check" in argv:
        try:
            with open(OUTPUT, encoding="utf-8") as f:
                current = f.read()
        except FileNotFoundError:
            current = ""
        if current != text:
            sys.stderr.write(
                "%s is not what include/rcip.h gives: run python3 bindings/python/tools/gen_abi.py\n"
                % os.path.relpath(OUTPUT, ROOT)
            )
            return 1
        return 0
    with open(OUTPUT, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
