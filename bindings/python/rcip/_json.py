"""``json.loads`` and ``json.dumps`` for payloads as deep as the library
accepts.

The library's default nesting limit is 1000 (PIPELINE.md section 8: 300
must work, 1000 is the default), and the records that carry a payload
(an outcome, a policy request) wrap it a level or two deeper. CPython's
``json`` recurses once per level against ``sys.getrecursionlimit()``
(1000 by default, minus the frames already on the stack), so such a
payload raised ``RecursionError``. These helpers try the plain call first;
on ``RecursionError`` they retry once with the limit raised just enough for
the library's default depth, then put it back. Deeper payloads (a host that
raised the limit) still raise ``RecursionError``: turning them into Python
objects needs more C stack than a thread may have.
"""

from __future__ import annotations

import json
import sys
import threading
from types import FrameType
from typing import Any, Callable, Optional, TypeVar

__all__ = ["loads", "dumps"]

T = TypeVar("T")

# The library's default nesting limit, plus the levels of the records that
# wrap a payload (outcome, policy request, notice) and some slack.
_DEPTH = 1000 + 16
_raising = threading.Lock()


def _frames() -> int:
    n = 0
    f: Optional[FrameType] = sys._getframe()
    while f is not None:
        n += 1
        f = f.f_back
    return n


def _with_room(call: Callable[[], T]) -> T:
    try:
        return call()
    except RecursionError:
        pass
    with _raising:
        old = sys.getrecursionlimit()
        needed = _frames() + _DEPTH + 50
        if needed <= old:
            return call()  # not a matter of the limit: raise as it is
        sys.setrecursionlimit(needed)
        try:
            return call()
        finally:
            sys.setrecursionlimit(old)


def loads(text: Any) -> Any:
    """``json.loads(text)``, for text nested as deep as the library accepts."""
    return _with_room(lambda: json.loads(text))


def dumps(value: Any, **options: Any) -> str:
    """``json.dumps(value, **options)``, for values nested as deep as the
    library accepts."""
    return _with_room(lambda: json.dumps(value, **options))
