"""Owned C pointers and the callback registry (docs/C-ABI.md, "Bindings").

``Handle`` owns one pointer and its free function. Calls borrow the pointer
with ``use()``; ``close()`` frees it at once when no call is using it, else
when the last such call returns, so a close from another thread (or from a
finalizer that the garbage collector runs anywhere) never frees memory under
a running call. A handle with a ``shutdown`` function (the runtime's
``rcip_runtime_close``) runs it at once in ``close()``, even while calls use
the pointer (they see the close), and only the free waits for them. Owners
register ``weakref.finalize(owner, handle.close)``:
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
import time
import weakref
from typing import Any, Callable, Dict, Iterator, Optional, TypeVar


class Handle:
    __slots__ = ("_lock", "_ptr", "_free", "_shutdown", "_active", "_closing", "_what")

    def __init__(
        self,
        ptr: int,
        free: Optional[Callable[[int], None]],
        what: str,
        shutdown: Optional[Callable[[int], None]] = None,
    ) -> None:
        if not ptr:
            raise ValueError("rcip: a %s handle cannot be NULL" % what)
        self._lock = threading.Lock()
        self._ptr: Optional[int] = ptr
        self._free = free
        self._shutdown = shutdown
        self._active = 0
        self._closing = False
        self._what = what

    @property
    def closed(self) -> bool:
        return self._ptr is None or self._closing

    def closed_error(self) -> ValueError:
        """What a call on the closed handle raises."""
        return ValueError("rcip: the %s is closed" % self._what)

    @contextlib.contextmanager
    def use(self) -> Iterator[int]:
        """Borrows the pointer for one call; ``ValueError`` after close."""
        calls.enter()
        try:
            with self._lock:
                if self._ptr is None or self._closing:
                    raise self.closed_error()
                self._active += 1
                ptr = self._ptr
        except BaseException:
            calls.leave()
            raise
        try:
            yield ptr
        finally:
            self._release()
            calls.leave()

    def _release(self) -> None:
        """Ends one use; the last use after a close frees the pointer."""
        to_free = None
        with self._lock:
            self._active -= 1
            if self._closing and self._active == 0 and self._ptr is not None:
                to_free, self._ptr = self._ptr, None
        if to_free is not None and self._free is not None:
            self._free(to_free)

    def close(self) -> None:
        """Shuts the object down now (with a ``shutdown`` function) and frees
        the pointer now, or when the calls using it return. Idempotent; safe
        from any thread and at interpreter exit. The shutdown and the free
        are calls into the library like any other (they release user data
        through Python callbacks), so they count in ``calls``; on a thread
        the exit hook refuses, the close does nothing and the process's end
        takes the object."""
        if not calls.try_enter():
            return
        try:
            with self._lock:
                if self._ptr is None or self._closing:
                    return
                self._closing = True
                if self._active and self._shutdown is None:
                    return
                self._active += 1  # the pointer stays valid through the shutdown
                ptr = self._ptr
            try:
                if self._shutdown is not None:
                    self._shutdown(ptr)
            finally:
                self._release()
        finally:
            calls.leave()

    def detach(self) -> int:
        """Gives the pointer away (a C call consumed it): nothing is freed."""
        with self._lock:
            if self._ptr is None or self._closing or self._active:
                raise ValueError("rcip: the %s is closed or in use" % self._what)
            ptr, self._ptr = self._ptr, None
            self._closing = True
            return ptr


class _Calls:
    """Counts the calls in progress through every handle, for the exit
    hook: the interpreter stops daemon threads when it finalizes, and one
    stopped while the library is on its stack aborts the process (its
    forced unwind cannot cross the library's frames)."""

    __slots__ = ("_lock", "_active", "_refusing", "_depth")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active = 0
        self._refusing = False
        self._depth = threading.local()  # calls in progress on this thread

    def enter(self) -> None:
        if not self.try_enter():
            raise ValueError("rcip: the interpreter is exiting")

    def try_enter(self) -> bool:
        """``enter()`` that answers False instead of raising when refused."""
        depth = getattr(self._depth, "n", 0)
        with self._lock:
            # A call made from a callback (the library already on this
            # thread's stack) goes on: it lets the outer call return.
            if self._refusing and not depth and threading.current_thread() is not threading.main_thread():
                return False
            self._active += 1
        self._depth.n = depth + 1
        return True

    def leave(self) -> None:
        self._depth.n -= 1
        with self._lock:
            self._active -= 1

    def refuse_other_threads(self) -> None:
        """From now on a call on a thread other than the main one raises
        ``ValueError`` instead of entering the library (unless it is made
        from a callback)."""
        with self._lock:
            self._refusing = True

    def wait(self, timeout: float) -> bool:
        """Waits up to ``timeout`` seconds (sleeping, so without the GIL)
        until no call is in progress; True when none is."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                if not self._active:
                    return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.001)


calls = _Calls()


_O = TypeVar("_O", bound="Owner")


class Owner:
    """Base of the objects that own a handle: ``close()``, ``closed``,
    ``with``, and a finalizer safe at interpreter exit."""

    _handle: Handle
    _finalizer: "weakref.finalize[Any, Any]"

    def _own(self, ptr: int, free: Callable[[int], None], what: str) -> None:
        self._own_handle(Handle(ptr, free, what))

    def _own_handle(self, handle: Handle) -> None:
        self._handle = handle
        self._finalizer = weakref.finalize(self, handle.close)

    def close(self) -> None:
        """Releases the C object now. Using it afterwards raises ``ValueError``."""
        self._finalizer()

    @property
    def closed(self) -> bool:
        return self._handle.closed

    def __enter__(self: _O) -> _O:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self: _O) -> _O:
        """``async with``: the same as ``with`` (closing never waits for the loop)."""
        return self

    async def __aexit__(self, *exc: object) -> None:
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
