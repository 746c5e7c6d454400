"""Owned C pointers and the callback registry (STYLE.md section 7).

``Handle`` owns one pointer and its free function. Calls borrow the pointer
with ``use()``; ``close()`` frees it at once when no call is using it, else
when the last such call returns, so a close from another thread (or from a
finalizer that the garbage collector runs anywhere) never frees memory under
a running call. Owners register ``weakref.finalize(owner, handle.close)``:
the finalizer holds the handle, never the owner, and runs at interpreter
exit while modules are still intact.

``Registry`` maps small integer keys to Python objects. The key is the
``user_data`` pointer handed to C (never ``id(obj)``, never a ``py_object``):
a key that is no longer registered finds nothing instead of a freed object.
The ``user_data_free`` trampoline removes the key, which is what keeps each
callback alive exactly as long as the library may call it.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from typing import Any, Callable, Dict, Iterator, Optional


class Handle:
    __slots__ = ("_lock", "_ptr", "_free", "_active", "_closing", "_what")

    def __init__(self, ptr: int, free: Optional[Callable[[int], None]], what: str) -> None:
        if not ptr:
            raise ValueError("rcip: a %s handle cannot be NULL" % what)
        self._lock = threading.Lock()
        self._ptr: Optional[int] = ptr
        self._free = free
        self._active = 0
        self._closing = False
        self._what = what

    @property
    def closed(self) -> bool:
        return self._ptr is None or self._closing

    @contextlib.contextmanager
    def use(self) -> Iterator[int]:
        """Borrows the pointer for one call; ``ValueError`` after close."""
        with self._lock:
            if self._ptr is None or self._closing:
                raise ValueError("rcip: the %s is closed" % self._what)
            self._active += 1
            ptr = self._ptr
        try:
            yield ptr
        finally:
            to_free = None
            with self._lock:
                self._active -= 1
                if self._closing and self._active == 0 and self._ptr is not None:
                    to_free, self._ptr = self._ptr, None
            if to_free is not None and self._free is not None:
                self._free(to_free)

    def close(self) -> None:
        """Frees the pointer (now, or when the calls using it return).
        Idempotent; safe from any thread and at interpreter exit."""
        with self._lock:
            if self._ptr is None or self._closing:
                return
            self._closing = True
            if self._active:
                return
            to_free, self._ptr = self._ptr, None
        if self._free is not None:
            self._free(to_free)

    def detach(self) -> int:
        """Gives the pointer away (a C call consumed it): nothing is freed."""
        with self._lock:
            if self._ptr is None or self._closing or self._active:
                raise ValueError("rcip: the %s is closed or in use" % self._what)
            ptr, self._ptr = self._ptr, None
            self._closing = True
            return ptr


class Owner:
    """Base of the objects that own a handle: ``close()``, ``closed``,
    ``with``, and a finalizer safe at interpreter exit."""

    _handle: Handle
    _finalizer: weakref.finalize

    def _own(self, ptr: int, free: Callable[[int], None], what: str) -> None:
        self._handle = Handle(ptr, free, what)
        self._finalizer = weakref.finalize(self, self._handle.close)

    def close(self) -> None:
        """Releases the C object now. Using it afterwards raises ``ValueError``."""
        self._finalizer()

    @property
    def closed(self) -> bool:
        return self._handle.closed

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Registry:
    __slots__ = ("_lock", "_items", "_next")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: Dict[int, Any] = {}
        self._next = 1

    def add(self, obj: Any) -> int:
        with self._lock:
            key = self._next
            self._next += 1
            self._items[key] = obj
            return key

    def get(self, key: Optional[int]) -> Any:
        with self._lock:
            return self._items[key or 0]

    def remove(self, key: Optional[int]) -> Any:
        with self._lock:
            return self._items.pop(key or 0, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


registry = Registry()
