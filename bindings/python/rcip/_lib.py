"""Loads librcip once and declares every C function (docs/C-ABI.md, "Bindings").

The library comes from the ``RCIP_LIBRARY`` environment variable when it is
set, else from the file shipped beside this package (``pip install`` puts it
there). There is no ``find_library`` fallback: a library picked up from some
other place could be another version.

Every function gets ``argtypes`` and ``restype`` here, at import: ctypes
would otherwise assume ``int`` and truncate 64-bit pointers. Handles are
``c_void_p``; strings the library returns through ``char **`` are read as
``c_void_p`` (so the pointer is not lost) and freed with ``rcip_string_free``.
``CDLL`` releases the GIL during every call, so a call that waits for a
callback running on another Python thread cannot deadlock on the GIL.
"""

from __future__ import annotations

import ctypes
import os
import sys
from ctypes import c_void_p

# The callback types (every callback's first argument is the user data: an
# integer key into the registry, _registry.py, passed as a void pointer) and
# every export's ctypes signature are generated from the header into _abi.py
# (bindings/python/tools/gen_abi.py; `make test-abi` checks the file), and
# re-exported here for the modules that build callbacks.
from ._abi import (
    ASK_CALLBACK,
    AVAILABILITY_CALLBACK,
    CANCEL_CALLBACK,
    CLOCK_CALLBACK,
    CONFIRMATION_CALLBACK,
    ELICIT_CALLBACK,
    EVENT_CALLBACK,
    HANDLER_CALLBACK,
    ID_GENERATOR_CALLBACK,
    MCP_ACCESS_CALLBACK,
    MCP_MESSAGE_CALLBACK,
    MCP_REQUEST_FACTORY_CALLBACK,
    MCP_SESSION_FACTORY_CALLBACK,
    MCP_TOKEN_CALLBACK,
    OUTCOME_CALLBACK,
    POLICY_CALLBACK,
    PROGRESS_CALLBACK,
    PROTOTYPES,
    REPORT_CALLBACK,
    SAMPLING_CALLBACK,
    SUBSCRIBER_CALLBACK,
    USER_DATA_FREE_CALLBACK,
)

# The ABI this package was written against (include/rcip.h RCIP_ABI_VERSION).
EXPECTED_ABI_VERSION = 100


def _library_file_name() -> str:
    if sys.platform == "darwin":
        return "librcip.dylib"
    if sys.platform == "win32":
        return "rcip.dll"
    return "librcip.so"


def _library_path() -> str:
    configured = os.environ.get("RCIP_LIBRARY")
    if configured:
        return configured
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), _library_file_name())


def _compatible(found: int, expected: int) -> bool:
    """Same major version; while the major is 0, the minor is the breaking
    part (0.x semantics). A newer patch (or, from 1.0, a newer minor) is
    compatible."""
    if expected // 10000 == 0:
        return found // 100 == expected // 100 and found >= expected
    return found // 10000 == expected // 10000 and found >= expected


LIBRARY_PATH = _library_path()
try:
    lib = ctypes.CDLL(LIBRARY_PATH)
except OSError as exc:  # pragma: no cover - exercised by packaging mistakes
    raise ImportError(
        "rcip: cannot load the native library %r (%s). Set RCIP_LIBRARY to the path of "
        "librcip, or install the package with `pip install bindings/python`, which builds "
        "and bundles it." % (LIBRARY_PATH, exc)
    ) from exc

__all__ = [
    "ASK_CALLBACK",
    "AVAILABILITY_CALLBACK",
    "CANCEL_CALLBACK",
    "CLOCK_CALLBACK",
    "CONFIRMATION_CALLBACK",
    "ELICIT_CALLBACK",
    "EVENT_CALLBACK",
    "HANDLER_CALLBACK",
    "ID_GENERATOR_CALLBACK",
    "MCP_MESSAGE_CALLBACK",
    "MCP_REQUEST_FACTORY_CALLBACK",
    "MCP_SESSION_FACTORY_CALLBACK",
    "MCP_TOKEN_CALLBACK",
    "OUTCOME_CALLBACK",
    "POLICY_CALLBACK",
    "PROGRESS_CALLBACK",
    "REPORT_CALLBACK",
    "SAMPLING_CALLBACK",
    "SUBSCRIBER_CALLBACK",
    "USER_DATA_FREE_CALLBACK",
    "ABI_VERSION",
    "EXPECTED_ABI_VERSION",
    "LIBRARY_PATH",
    "LIBRARY_VERSION",
    "borrowed_string",
    "lib",
    "take_string",
]

for _name, (_restype, _argtypes) in PROTOTYPES.items():
    try:
        _fn = getattr(lib, _name)
    except AttributeError as exc:
        raise ImportError("rcip: %s has no function %s (an older library?)" % (LIBRARY_PATH, _name)) from exc
    _fn.restype = _restype
    _fn.argtypes = _argtypes

ABI_VERSION = int(lib.rcip_abi_version())
if not _compatible(ABI_VERSION, EXPECTED_ABI_VERSION):
    raise ImportError(
        "rcip: %s has ABI version %d, this package needs %d (same major%s)"
        % (
            LIBRARY_PATH,
            ABI_VERSION,
            EXPECTED_ABI_VERSION,
            ", and same minor while the major is 0" if EXPECTED_ABI_VERSION < 10000 else "",
        )
    )

LIBRARY_VERSION = lib.rcip_version().decode("utf-8")


def take_string(pointer: c_void_p) -> str | None:
    """Reads a string the library returned through ``char **`` and frees it
    (``rcip_string_free``), even when decoding fails."""
    address = pointer.value
    if not address:
        return None
    try:
        return ctypes.string_at(address).decode("utf-8")
    finally:
        lib.rcip_string_free(address)


def borrowed_string(value: bytes | None) -> str | None:
    """A ``const char *`` owned by the library (c_char_p restype gives bytes)."""
    return None if value is None else value.decode("utf-8")
