"""Exceptions: ``RcipError`` for result codes (misuse and host configuration),
``Aborted`` for handlers that give up, ``DeadlockError`` for a blocking call
that could never return."""

from __future__ import annotations

from typing import Dict, Type

# ``Result``: the ``rcip_result`` values, generated from include/rcip.h into
# _abi.py (bindings/python/tools/gen_abi.py); tests/bindings.rs checks
# ``_BY_CODE`` below against the header.
from ._abi import Result as Result
from ._lib import lib


class RcipError(Exception):
    """A non-OK ``rcip_result``. ``code`` is the value (an ``int``; a
    ``Result`` when known), ``message`` the library's detail
    (``rcip_last_error_message``) or the code's fixed text."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        try:
            self.code: int = Result(code)
        except ValueError:
            self.code = code
        self.message = message

    def __str__(self) -> str:
        name = self.code.name if isinstance(self.code, Result) else str(self.code)
        return "%s: %s" % (name, self.message)


class NullArgumentError(RcipError):
    pass


class InvalidUtf8Error(RcipError):
    pass


class InvalidJsonError(RcipError):
    pass


class InvalidArgumentError(RcipError):
    pass


class InvalidCatalogError(RcipError):
    pass


class NotInCatalogError(RcipError):
    pass


class AlreadyBoundError(RcipError):
    pass


class UnknownScopeError(RcipError):
    pass


class PrimaryNotActiveError(RcipError):
    pass


class AlreadyUsedError(RcipError):
    pass


class AlreadyCompletedError(RcipError):
    pass


class ClosedError(RcipError):
    pass


class PreflightBatchInvalidError(RcipError):
    pass


class WrongContextError(RcipError):
    pass


class NotFoundError(RcipError):
    pass


class IoError(RcipError):
    pass


class TimedOutError(RcipError):
    pass
class UnsupportedError(RcipError):
    """The invocation's consumer cannot do what the handler asked: an
    elicitation without an MCP client that supports form elicitation
    (**rcip**)."""


class PanicError(RcipError):
    pass


_BY_CODE: Dict[int, Type[RcipError]] = {
    Result.NULL_ARGUMENT: NullArgumentError,
    Result.INVALID_UTF8: InvalidUtf8Error,
    Result.INVALID_JSON: InvalidJsonError,
    Result.INVALID_ARGUMENT: InvalidArgumentError,
    Result.INVALID_CATALOG: InvalidCatalogError,
    Result.NOT_IN_CATALOG: NotInCatalogError,
    Result.ALREADY_BOUND: AlreadyBoundError,
    Result.UNKNOWN_SCOPE: UnknownScopeError,
    Result.PRIMARY_NOT_ACTIVE: PrimaryNotActiveError,
    Result.ALREADY_USED: AlreadyUsedError,
    Result.ALREADY_COMPLETED: AlreadyCompletedError,
    Result.CLOSED: ClosedError,
    Result.PREFLIGHT_BATCH_INVALID: PreflightBatchInvalidError,
    Result.WRONG_CONTEXT: WrongContextError,
    Result.NOT_FOUND: NotFoundError,
    Result.IO: IoError,
    Result.TIMED_OUT: TimedOutError,
    Result.UNSUPPORTED: UnsupportedError,
    Result.PANIC: PanicError,
}


def result_str(code: int) -> str:
    """The library's fixed sentence for a result code."""
    text: bytes = lib.rcip_result_str(code)
    return text.decode("utf-8")


def error_for(code: int) -> RcipError:
    """The exception for a failed call; reads ``rcip_last_error_message`` at
    once (the next rcip call on this thread replaces it)."""
    detail = lib.rcip_last_error_message()
    message = detail.decode("utf-8", "replace") if detail else result_str(code)
    return _BY_CODE.get(code, RcipError)(code, message)


def check(code: int) -> None:
    """Raises the ``RcipError`` subclass for a non-OK result."""
    if code:
        raise error_for(code)


class Aborted(Exception):
    """Raise it from a handler to fail the invocation as an abort
    (``EXECUTION_ABORTED``). ``asyncio.CancelledError`` does the same."""


class DeadlockError(RuntimeError):
    """A blocking call (``invoke``, ``preflight``, ``resolve_confirmation``)
    was made on the thread running the runtime's asyncio loop while coroutine
    callbacks are registered: the outcome would need that loop, which the call
    blocks. Use the ``*_async`` variant there. Also a blocking approval
    (``approve``, ``resolve_confirmation(id, True)``) inside the confirmation
    callback's ``opened`` notice: the approved run starts only when that
    notice returns. Use ``submit_confirmation`` there."""
