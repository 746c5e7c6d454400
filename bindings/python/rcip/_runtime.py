"""The Pythonic API over the C ABI: catalog, runtime, client, host,
bindings, completion handles, tokens, and the module-level trampolines."""

from __future__ import annotations

import asyncio
import atexit
import builtins
import concurrent.futures
import contextlib
import ctypes
import inspect
import logging
import threading
import time
import weakref
from ctypes import byref, c_bool, c_char_p, c_int64, c_void_p
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Dict, Generic, Iterable, Iterator, List, Mapping, Literal, Optional, Protocol, Sequence, Type, TypedDict, TypeVar, Union, cast

from . import _json, _lib
from ._handle import Handle, Owner, calls, registry
from ._lib import lib, take_string
from ._schema import to_json
from .errors import (
    Aborted,
    AlreadyCompletedError,
    ClosedError,
    DeadlockError,
    InvalidArgumentError,
    RcipError,
    Result,
    check,
    error_for,
)
from .types import (
    Availability,
    CatalogProblem,
    CatalogReport,
    ConfirmationNotice,
    Decision,
    DecisionName,
    Effect,
    ElicitResult,
    Event,
    Outcome,
    Progress,
    PreflightReport,
    Proposal,
    ProposalLike,
    RawJson,
    Snapshot,
    ValidationIssue,
    ValidationResult,
)

logger = logging.getLogger("rcip")

Json = Any
"""A JSON value as ``json.loads`` returns it (payloads are the host's own
shapes, described by the catalog's schemas, so they stay ``Any``)."""

_T = TypeVar("_T")

# The capability-id type of a ``Client`` / ``Host`` view: ``str`` unless the
# host narrows it to a ``Literal`` of its catalog's ids (``Client[Ids]``), so
# a misspelt id is a type error. Contravariant (it is only taken, never
# given back), so ``runtime.client`` (a ``Client[str]``) is assignable to a
# ``Client[Ids]``; the default (PEP 696) keeps a bare ``Client`` ``Client[str]``.
if TYPE_CHECKING:
    from typing_extensions import TypeVar as _DefaultedTypeVar

    _Id = _DefaultedTypeVar("_Id", bound=str, contravariant=True, default=str)
else:
    _Id = TypeVar("_Id", bound=str, contravariant=True)

PolicyAnswer = Union[Decision, DecisionName, Mapping[str, Any], None]
"""What a policy returns: a ``Decision``, ``"allow"`` / ``"deny"`` /
``"confirm"``, a mapping ``{"decision", "reason"?}``, or None after
``request.defer()``."""


class Handler(Protocol):
    """A capability handler: ``handler(invocation)`` returns the output (a
    JSON value, a dataclass or model, ``RawJson``), raises to fail, or
    returns after ``invocation.defer()``; a coroutine function is awaited
    on the runtime's loop."""

    def __call__(self, invocation: "Invocation", /) -> object: ...


class Policy(Protocol):
    """The host policy: ``policy(request)`` returns a ``PolicyAnswer`` (or
    an awaitable of one, from a coroutine function)."""

    def __call__(self, request: "PolicyRequest", /) -> Union[PolicyAnswer, Awaitable[PolicyAnswer]]: ...


class AvailabilityCheck(Protocol):
    """A binding's availability: answers at once (never a coroutine)."""

    def __call__(self) -> Union[bool, Availability, Mapping[str, Any]]: ...

# ----- conversions --------------------------------------------------------------


def _id_bytes(value: str, what: str) -> bytes:
    if not isinstance(value, str):
        raise TypeError("rcip: %s must be a str, not %s" % (what, type(value).__name__))
    data = value.encode("utf-8")
    if b"\0" in data:
        raise ValueError("rcip: %s contains a NUL character" % what)
    return data


def _json_arg(value: Union[str, bytes, Mapping[str, Any], Sequence[Any]], what: str) -> bytes:
    """A host-supplied JSON argument (catalog, context, filter, schema)."""
    if isinstance(value, bytes):
        data = value
    elif isinstance(value, str):
        data = value.encode("utf-8")
    else:
        data = _json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
    if b"\0" in data:
        raise ValueError("rcip: %s contains a NUL character" % what)
    return data


# Payload text that is certainly not a JSON value: an invalid UTF-8 byte.
_NOT_JSON = b"\xff"


def _payload(value: Any, raw: Optional[Union[str, bytes]] = None) -> bytes:
    """Capability input or handler output text. Text that is not a JSON value
    must become an INPUT_INVALID / OUTPUT_INVALID outcome, never an error, so
    text C cannot carry (an embedded NUL, which is never valid JSON text
    either) is replaced by text that is equally not JSON."""
    if raw is None and isinstance(value, RawJson):
        raw = value.text
    if raw is not None:
        data = raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogatepass")
    else:
        data = _json.dumps(value, ensure_ascii=False, allow_nan=True, default=_json_default).encode("utf-8", "surrogatepass")
    return _NOT_JSON if b"\0" in data else data


def _json_default(value: Any) -> Any:
    """Dataclasses, enums and pydantic models in payloads (``rcip.to_json``)."""
    converted = to_json(value)
    if converted is value:
        raise TypeError("rcip: %s is not JSON-serialisable" % type(value).__name__)
    return converted


def _new_out() -> c_void_p:
    return c_void_p()


def _running_loop() -> Optional[asyncio.AbstractEventLoop]:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _is_coroutine_function(fn: Any) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)
    if call is not None and inspect.iscoroutinefunction(call):
        return True
    inner = getattr(fn, "func", None)  # functools.partial
    return inner is not None and inspect.iscoroutinefunction(inner)


# ----- per-runtime state shared with callbacks ------------------------------------


class _RuntimeState:
    """What callbacks need from their runtime, without referencing the
    ``Runtime`` object (so registry entries never keep a runtime alive)."""

    def __init__(self, loop: Optional[asyncio.AbstractEventLoop], on_error: Optional[Callable[[BaseException, str], object]]) -> None:
        self.loop = loop
        self.on_error = on_error
        self.lock = threading.Lock()
        self.async_callbacks = 0
        # Bindings and subscriptions stay in effect until closed (or the
        # runtime closes), whether or not the host keeps the returned object.
        self.live: Dict[int, Owner] = {}

    def keep(self, owner: Owner) -> None:
        with self.lock:
            self.live[id(owner)] = owner

    def forget(self, owner: Owner) -> None:
        with self.lock:
            self.live.pop(id(owner), None)

    def forget_all(self) -> None:
        with self.lock:
            live, self.live = self.live, {}
        live.clear()

    def need_loop(self, what: str) -> asyncio.AbstractEventLoop:
        if self.loop is None:
            raise ValueError(
                "rcip: %s is a coroutine function, but the runtime has no asyncio loop: "
                "create the Runtime inside a running loop or pass loop=" % what
            )
        return self.loop

    def count_async(self, delta: int) -> None:
        with self.lock:
            self.async_callbacks += delta

    def report(self, exc: BaseException, where: str) -> None:
        """A host callback raised: tell ``on_error``, else log it."""
        try:
            if self.on_error is not None:
                self.on_error(exc, where)
            else:
                logger.error("rcip: %s raised %s", where, type(exc).__name__, exc_info=(type(exc), exc, exc.__traceback__))
        except BaseException:  # noqa: BLE001 - nothing may reach C
            pass

    def schedule(self, awaitable: Awaitable[Any], done: Callable[[Optional[BaseException], Any], None], where: str) -> "_Scheduled":
        """Runs ``awaitable`` as a task on the runtime's loop (thread-safe);
        ``done(error, value)`` runs on the loop when it finishes (``error``
        is ``asyncio.CancelledError`` when the task was cancelled). The task
        catches every exception itself, so a ``KeyboardInterrupt`` or
        ``SystemExit`` raised by host code is a callback failure, not the
        loop's. If the loop is closed, ``done`` runs at once with the error."""
        loop = self.need_loop(where)
        scheduled = _Scheduled(loop)

        async def guarded() -> Any:
            try:
                return None, await awaitable
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # noqa: BLE001
                return exc, None

        def finished(task: "asyncio.Future[Any]") -> None:
            if task.cancelled():
                # A task cancelled before its first step (the runtime closed
                # while start() was queued) never ran guarded(), so nothing
                # awaited the awaitable: close it, or its collection warns
                # "coroutine ... was never awaited". A no-op once it ran.
                if inspect.iscoroutine(awaitable):
                    awaitable.close()
                done(asyncio.CancelledError(), None)
            else:
                error, value = task.result()
                done(error, value)

        def start() -> None:
            coro = guarded()
            try:
                task = asyncio.ensure_future(coro)
            except BaseException as exc:  # noqa: BLE001
                coro.close()
                done(exc, None)
                return
            scheduled._started(task)
            task.add_done_callback(finished)

        try:
            loop.call_soon_threadsafe(start)
        except BaseException as exc:  # noqa: BLE001 - a closed loop
            if inspect.iscoroutine(awaitable):
                awaitable.close()
            done(exc, None)
        return scheduled


class _Scheduled:
    """A task started on another thread's loop; ``cancel()`` from any thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._lock = threading.Lock()
        self._task: Optional[asyncio.Future[Any]] = None
        self._cancel_requested = False

    def _started(self, task: "asyncio.Future[Any]") -> None:
        with self._lock:
            self._task = task
            cancel = self._cancel_requested
        if cancel:
            task.cancel()

    def cancel(self) -> None:
        with self._lock:
            self._cancel_requested = True
            task = self._task
        if task is not None:
            try:
                self._loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:
                pass


# ----- registry entries ---------------------------------------------------------------


class _Entry:
    """A registered callback; ``released()`` runs from the user_data_free trampoline."""

    def released(self) -> None:
        pass


class _FnEntry(_Entry):
    def __init__(self, fn: Callable[..., Any], state: Optional[_RuntimeState], where: str, allow_async: bool = True) -> None:
        if not callable(fn):
            raise TypeError("rcip: %s must be callable" % where)
        self.fn = fn
        self.state = state
        self.where = where
        self.is_async = _is_coroutine_function(fn)
        if self.is_async:
            if state is None or not allow_async:
                raise TypeError("rcip: %s answers at once; it cannot be a coroutine function" % where)
            state.need_loop(where)

    def fire(self, *args: Any) -> None:
        """Calls a notification callback (events, notices, subscribers):
        coroutines are scheduled on the loop, fire and forget."""
        try:
            result = self.fn(*args)
            if inspect.isawaitable(result):
                assert self.state is not None
                self.state.schedule(result, self._done, self.where)
        except BaseException as exc:  # noqa: BLE001
            self._report(exc)

    def fire_parsed(self, parse: Callable[[str], Any], text: Optional[bytes]) -> None:
        """``fire`` with the value parsed from the library's text; text that
        cannot be parsed is reported as this callback's failure."""
        try:
            value = parse((text or b"").decode("utf-8"))
        except BaseException as exc:  # noqa: BLE001
            self._report(exc)
            return
        self.fire(value)

    def _done(self, error: Optional[BaseException], value: Any) -> None:
        if error is not None and not isinstance(error, asyncio.CancelledError):
            self._report(error)

    def _report(self, exc: BaseException) -> None:
        if self.state is not None:
            self.state.report(exc, self.where)
        else:
            _report_without_runtime(exc, self.where)


def _report_without_runtime(exc: BaseException, where: str) -> None:
    try:
        logger.error("rcip: %s raised %s", where, type(exc).__name__, exc_info=(type(exc), exc, exc.__traceback__))
    except BaseException:  # noqa: BLE001
        pass


class _ResultEntry(_Entry):
    """Delivers an outcome or report text into a future, after handing it to
    the optional ``on_result`` callback (on the settling thread, at the
    moment the library delivers it)."""

    def __init__(
        self,
        future: "concurrent.futures.Future[Any]",
        parse: Callable[[str], Any],
        on_result: Optional[Callable[[Any], Any]] = None,
        state: Optional[_RuntimeState] = None,
    ) -> None:
        if on_result is not None and not callable(on_result):
            raise TypeError("rcip: on_outcome must be callable")
        self.future = future
        self.parse = parse
        self.on_result = on_result
        self.state = state

    def deliver(self, text: str) -> None:
        try:
            value = self.parse(text)
        except BaseException as exc:  # noqa: BLE001
            _set_future(self.future, exception=exc)
            return
        if self.on_result is not None:
            try:
                self.on_result(value)
            except BaseException as exc:  # noqa: BLE001
                if self.state is not None:
                    self.state.report(exc, "an outcome callback")
                else:
                    _report_without_runtime(exc, "an outcome callback")
        _set_future(self.future, result=value)


def _set_future(future: "concurrent.futures.Future[Any]", result: Any = None, exception: Optional[BaseException] = None) -> None:
    try:
        if exception is not None:
            future.set_exception(exception)
        else:
            future.set_result(result)
    except concurrent.futures.InvalidStateError:
        pass


class _BindingEntry(_Entry):
    def __init__(self, state: _RuntimeState, capability_id: str, handler: Handler, availability: Optional[AvailabilityCheck]) -> None:
        if not callable(handler):
            raise TypeError("rcip: a handler must be callable")
        if availability is not None and not callable(availability):
            raise TypeError("rcip: an availability check must be callable")
        if availability is not None and _is_coroutine_function(availability):
            raise TypeError("rcip: an availability check answers at once; it cannot be a coroutine function")
        self.state = state
        self.capability_id = capability_id
        self.handler = handler
        self.availability = availability
        self.is_async = _is_coroutine_function(handler)
        if self.is_async:
            state.need_loop("the handler of %s" % capability_id)
            state.count_async(1)

    def released(self) -> None:
        if self.is_async:
            self.state.count_async(-1)
            self.is_async = False

    def run(self, inv: "Invocation") -> None:
        if not self.is_async and _offload(self._run_sync, inv):
            return
        self._run_sync(inv)

    def _run_sync(self, inv: "Invocation") -> None:
        where = "the handler of %s" % self.capability_id
        try:
            result = self.handler(inv)
        except BaseException as exc:  # noqa: BLE001 - KeyboardInterrupt included
            inv._settle_exception(exc, self.state, where)
            inv._finish()
            return
        if inspect.isawaitable(result):
            self._run_async(inv, result, where)
            return
        inv._settle_value(result, self.state, where)
        inv._finish()

    def _run_async(self, inv: "Invocation", awaitable: Awaitable[Any], where: str) -> None:
        def done(error: Optional[BaseException], value: Any) -> None:
            try:
                if error is not None:
                    inv._settle_exception(error, self.state, where)
                else:
                    inv._settle_value(value, self.state, where)
            except BaseException as exc:  # noqa: BLE001
                self.state.report(exc, where)
            finally:
                inv._finish()

        scheduled = self.state.schedule(awaitable, done, where)
        # Cancelling the invocation cancels the task: the coroutine sees
        # CancelledError (an abort) unless it catches it and returns.
        inv._on_cancel(scheduled.cancel)

    def check_availability(self, sink: int) -> int:
        assert self.availability is not None
        try:
            answer = self.availability()
            if isinstance(answer, bool):
                available, code, reason = answer, None, None
            elif isinstance(answer, Availability):
                available, code, reason = answer.available, answer.reason_code, answer.reason
            elif isinstance(answer, Mapping):
                flag = answer.get("available")
                if not isinstance(flag, bool):
                    raise TypeError("rcip: an availability answer needs a boolean 'available'")
                available, code, reason = flag, answer.get("reasonCode"), answer.get("reason")
            else:
                raise TypeError("rcip: an availability check returned %s" % type(answer).__name__)
            rc = lib.rcip_availability_set(
                sink,
                available,
                None if code is None else _id_bytes(code, "reasonCode"),
                None if reason is None else _id_bytes(reason, "reason"),
            )
            check(rc)
            return 0
        except BaseException as exc:  # noqa: BLE001
            self.state.report(exc, "the availability check of %s" % self.capability_id)
            return 1


def _offload(run: Callable[[Any], None], handle: Any) -> bool:
    """A plain (not coroutine) handler or policy reached on a thread that
    runs an asyncio loop (``invoke_async``, ``preflight_async``, a
    coroutine handler invoking another capability) must not block that
    loop: it runs on the loop's default executor instead (a
    ``ThreadPoolExecutor`` unless the host set another with
    ``loop.set_default_executor``), and the completion handle stays open
    until it has settled. Returns False (the caller runs it inline) on any
    other thread, or when the executor refuses the work (a loop shutting
    down)."""
    loop = _running_loop()
    if loop is None or loop.is_closed():
        return False
    try:
        loop.run_in_executor(None, run, handle)
    except RuntimeError:
        return False
    return True


class _PolicyEntry(_Entry):
    def __init__(self, state: _RuntimeState, policy: Policy) -> None:
        if not callable(policy):
            raise TypeError("rcip: a policy must be callable")
        self.state = state
        self.policy = policy
        self.is_async = _is_coroutine_function(policy)
        if self.is_async:
            state.need_loop("the policy")
            state.count_async(1)

    def released(self) -> None:
        if self.is_async:
            self.state.count_async(-1)
            self.is_async = False

    def run(self, request: "PolicyRequest") -> None:
        if not self.is_async and _offload(self._run_sync, request):
            return
        self._run_sync(request)

    def _run_sync(self, request: "PolicyRequest") -> None:
        try:
            result = self.policy(request)
        except BaseException as exc:  # noqa: BLE001
            request._settle_exception(exc, self.state)
            request._finish()
            return
        if inspect.isawaitable(result):

            def done(error: Optional[BaseException], value: Any) -> None:
                try:
                    if error is not None:
                        request._settle_exception(error, self.state)
                    else:
                        request._settle_value(value, self.state)
                except BaseException as exc:  # noqa: BLE001
                    self.state.report(exc, "the policy")
                finally:
                    request._finish()

            self.state.schedule(result, done, "the policy")
            return
        request._settle_value(result, self.state)
        request._finish()


# ----- trampolines (module level, alive for the whole process) ---------------------------

_F = TypeVar("_F", bound=Callable[..., Any])


def _c_callback(kind: Any) -> Callable[[_F], _F]:
    """``@_c_callback(CFUNCTYPE)``: the C function pointer object of a
    trampoline, typed as the Python function it calls."""

    def wrap(fn: _F) -> _F:
        return cast(_F, kind(fn))

    return wrap

# Each catches BaseException: nothing may unwind into the library.


@_c_callback(_lib.USER_DATA_FREE_CALLBACK)
def _user_data_free(key: Optional[int]) -> None:
    try:
        entry = registry.remove(key)
        if entry is not None:
            entry.released()
    except BaseException:  # noqa: BLE001
        pass


def _hand_over_runtime(
    runtime: Any,
    factory: str,
    entry: Callable[["Runtime"], "_Entry"],
    accept: Callable[[Any, Any, int, Any], int],
    setup: Any,
) -> int:
    """Moves the runtime a session or request factory (named `factory` in
    the error) returned into the library through its setup's `accept`
    (`rcip_mcp_session_setup_accept`, `rcip_mcp_request_setup_accept`):
    the library closes it when the session or request ends, then releases
    `entry(runtime)` through `_user_data_free`. Returns the factory
    callback's answer: 0 when accepted, 1 when refused (nothing is kept).
    Raises TypeError when `runtime` is not a Runtime."""
    if not isinstance(runtime, Runtime):
        raise TypeError("rcip: the %s must return an rcip.Runtime, not %r" % (factory, runtime))
    ptr = runtime._handle.detach()
    key = registry.add(entry(runtime))
    if accept(setup, ptr, key, _user_data_free) != Result.OK:
        registry.remove(key)
        return 1
    return 0


@_c_callback(_lib.OUTCOME_CALLBACK)
def _result_trampoline(key: Optional[int], text: Optional[bytes]) -> None:
    try:
        registry.get(key).deliver((text or b"").decode("utf-8"))
    except BaseException:  # noqa: BLE001
        pass


@_c_callback(_lib.SUBSCRIBER_CALLBACK)
def _subscriber_trampoline(key: Optional[int], revision: int) -> None:
    try:
        registry.get(key).fire(int(revision))
    except BaseException:  # noqa: BLE001
        pass


@_c_callback(_lib.EVENT_CALLBACK)
def _event_trampoline(key: Optional[int], text: Optional[bytes]) -> None:
    try:
        registry.get(key).fire_parsed(Event.from_json, text)
    except BaseException:  # noqa: BLE001
        pass


@_c_callback(_lib.PROGRESS_CALLBACK)
def _progress_trampoline(key: Optional[int], text: Optional[bytes]) -> None:
    try:
        registry.get(key).fire_parsed(Progress.from_json, text)
    except BaseException:  # noqa: BLE001
        pass


@_c_callback(_lib.ELICIT_CALLBACK)
def _elicit_trampoline(key: Optional[int], text: Optional[bytes]) -> None:
    try:
        registry.get(key).deliver((text or b"").decode("utf-8"))
    except BaseException:  # noqa: BLE001
        pass


@_c_callback(_lib.SAMPLING_CALLBACK)
def _sampling_trampoline(key: Optional[int], text: Optional[bytes]) -> None:
    try:
        registry.get(key).deliver((text or b"").decode("utf-8"))
    except BaseException:  # noqa: BLE001
        pass


# rcip_ask_callback has rcip_sampling_callback's signature, and ctypes
# gives equal signatures one class (ASK_CALLBACK is SAMPLING_CALLBACK): the
# reply trampoline serves both.
_ask_trampoline = _sampling_trampoline
# How many `opened` notices this thread is inside: an approval made there
# runs only once the notice returned (include/rcip.h, the confirmation
# callback's order), so a blocking approval there would wait forever.
_notice_tls = threading.local()


@_c_callback(_lib.CONFIRMATION_CALLBACK)
def _confirmation_trampoline(key: Optional[int], text: Optional[bytes]) -> None:
    opened = text is not None and text.startswith(b'{"event":"opened"')
    if opened:
        depth: int = getattr(_notice_tls, "depth", 0)
        _notice_tls.depth = depth + 1
    try:
        registry.get(key).fire_parsed(ConfirmationNotice.from_json, text)
    except BaseException:  # noqa: BLE001
        pass
    finally:
        if opened:
            _notice_tls.depth -= 1


@_c_callback(_lib.CANCEL_CALLBACK)
def _cancel_trampoline(key: Optional[int]) -> None:
    try:
        registry.get(key).fire()
    except BaseException:  # noqa: BLE001
        pass


@_c_callback(_lib.CLOCK_CALLBACK)
def _clock_trampoline(key: Optional[int]) -> int:
    try:
        return int(registry.get(key).fn())
    except BaseException as exc:  # noqa: BLE001
        try:
            entry = registry.get(key)
            entry._report(exc)
        except BaseException:  # noqa: BLE001
            pass
        return int(time.time() * 1000)  # the clock cannot fail: fall back to the system clock


@_c_callback(_lib.ID_GENERATOR_CALLBACK)
def _id_generator_trampoline(key: Optional[int], prefix: Optional[bytes], sink: Optional[int]) -> int:
    try:
        entry = registry.get(key)
        try:
            value = entry.fn((prefix or b"").decode("utf-8"))
            if value is None:
                return 1  # the built-in generator answers
            return 0 if lib.rcip_string_sink_set(sink, _id_bytes(value, "an id")) == 0 else 1
        except BaseException as exc:  # noqa: BLE001
            entry._report(exc)
            return 1
    except BaseException:  # noqa: BLE001
        return 1


def _adoption_failed(handle: Optional[Handle], ptr: Optional[int], free: Callable[[int], None], entry: Any, exc: BaseException, where: str) -> None:
    """A completion handle could not be adopted: free it exactly once (the
    ``Handle`` when one was made: a half-built owner's finalizer only
    closes the same handle again), which settles it as a failure, and
    report why."""
    try:
        if handle is not None:
            handle.close()
        elif ptr:
            free(ptr)
    finally:
        if entry is not None:
            entry.state.report(exc, where)
        else:
            _report_without_runtime(exc, where)


@_c_callback(_lib.HANDLER_CALLBACK)
def _handler_trampoline(key: Optional[int], inv_ptr: Optional[int]) -> None:
    handle = entry = inv = None
    try:
        # From here on the handle frees the invocation, and nothing else does.
        handle = Handle(inv_ptr or 0, lib.rcip_invocation_free, "invocation")
        entry = registry.get(key)
        inv = Invocation._adopt(handle)
    except BaseException as exc:  # noqa: BLE001
        try:
            where = "the handler of %s" % entry.capability_id if entry is not None else "a handler"
            _adoption_failed(handle, inv_ptr, lib.rcip_invocation_free, entry, exc, where)  # EXECUTION_FAILED
        except BaseException:  # noqa: BLE001
            pass
        return
    try:
        entry.run(inv)
    except BaseException:  # noqa: BLE001
        try:
            inv._finish()
        except BaseException:  # noqa: BLE001
            pass


@_c_callback(_lib.AVAILABILITY_CALLBACK)
def _availability_trampoline(key: Optional[int], sink: Optional[int]) -> int:
    try:
        answer: int = registry.get(key).check_availability(sink)
        return answer
    except BaseException:  # noqa: BLE001
        return 1


@_c_callback(_lib.POLICY_CALLBACK)
def _policy_trampoline(key: Optional[int], req_ptr: Optional[int]) -> None:
    handle = entry = request = None
    try:
        # From here on the handle frees the request, and nothing else does.
        handle = Handle(req_ptr or 0, lib.rcip_policy_request_free, "policy request")
        entry = registry.get(key)
        request = PolicyRequest._adopt(handle)  # parses the context: it may fail (too deep)
    except BaseException as exc:  # noqa: BLE001
        try:
            _adoption_failed(handle, req_ptr, lib.rcip_policy_request_free, entry, exc, "the policy")  # POLICY_EVALUATION_FAILED
        except BaseException:  # noqa: BLE001
            pass
        return
    try:
        entry.run(request)
    except BaseException:  # noqa: BLE001
        try:
            request._finish()
        except BaseException:  # noqa: BLE001
            pass


def _keep_forever(*trampolines: Any) -> None:
    """The library may call a trampoline until the last runtime is freed,
    which a finalizer may do late in interpreter shutdown: take one extra
    reference to each thunk so it is never deallocated."""
    incref = ctypes.pythonapi.Py_IncRef
    incref.argtypes = [ctypes.py_object]
    incref.restype = None
    for t in trampolines:
        incref(t)


_keep_forever(
    _user_data_free,
    _result_trampoline,
    _subscriber_trampoline,
    _event_trampoline,
    _progress_trampoline,
    _elicit_trampoline,
    _sampling_trampoline,
    _confirmation_trampoline,
    _cancel_trampoline,
    _clock_trampoline,
    _id_generator_trampoline,
    _handler_trampoline,
    _availability_trampoline,
    _policy_trampoline,
)


# A NULL availability callback: always available.
_NO_AVAILABILITY = _lib.AVAILABILITY_CALLBACK()


@contextlib.contextmanager
def _registering(entry: _Entry) -> Iterator[int]:
    """Registers ``entry`` for the registering C call made in the block and
    yields its key. If the block raises (an argument refused before the
    call, a closed handle or token, the call failing), the library never
    calls back, so the registration is undone here and released. Keep only
    the checks and the call in the block: once the call succeeded, the key
    is the library's."""
    key = registry.add(entry)
    try:
        yield key
    except BaseException:
        _unregister(key)
        raise


def _unregister(key: int) -> None:
    entry = registry.remove(key)
    if entry is not None:
        entry.released()


# ----- catalog and schema --------------------------------------------------------------


class Catalog(Owner):
    """A checked, compiled catalog (``RcipApplicationDefinition``). Runtimes
    keep their own reference: closing the catalog does not affect them."""

    def __init__(self, definition: Union[str, bytes, Mapping[str, Any]]) -> None:
        out = _new_out()
        check(lib.rcip_catalog_new(_json_arg(definition, "the catalog"), byref(out)))
        self._own(out.value or 0, lib.rcip_catalog_free, "catalog")

    @classmethod
    def from_file(cls, path: str) -> "Catalog":
        with open(path, "rb") as f:
            return cls(f.read())

    @staticmethod
    def check(definition: Union[str, bytes, Mapping[str, Any]]) -> CatalogReport:
        """Every problem of a catalog at once (``rcip check``); never raises
        for a bad catalog."""
        out = _new_out()
        check(lib.rcip_catalog_check(_json_arg(definition, "the catalog"), byref(out)))
        report = _json.loads(take_string(out) or "{}")
        return CatalogReport(
            bool(report.get("ok")),
            tuple(CatalogProblem(p.get("pointer", ""), p.get("rule", ""), p.get("message", ""), p.get("id")) for p in report.get("problems", [])),
        )


class Schema(Owner):
    """A strict JSON Schema 2020-12, compiled as capability schemas are."""

    def __init__(self, schema: Union[str, bytes, Mapping[str, Any], bool]) -> None:
        out = _new_out()
        text = b"true" if schema is True else b"false" if schema is False else _json_arg(cast(Mapping[str, Any], schema), "the schema")
        check(lib.rcip_schema_new(text, byref(out)))
        self._own(out.value or 0, lib.rcip_schema_free, "schema")

    def validate(self, instance: Any) -> ValidationResult:
        """Validates a value (or ``RawJson`` text); all issues (Ajv allErrors)."""
        out = _new_out()
        with self._handle.use() as ptr:
            check(lib.rcip_schema_validate(ptr, _json_arg(instance.text, "the instance") if isinstance(instance, RawJson) else _json_arg(_json.dumps(instance), "the instance"), byref(out)))
        result = _json.loads(take_string(out) or "{}")
        return ValidationResult(bool(result.get("valid")), tuple(ValidationIssue._from(i) for i in result.get("issues", [])))


# ----- cancellation ---------------------------------------------------------------------


class CancelToken(Owner):
    """A cancellation token (the seed's ``AbortSignal``). Operations keep
    their own reference: closing yours never affects them."""

    def __init__(self) -> None:
        out = _new_out()
        check(lib.rcip_cancel_token_new(byref(out)))
        self._own(out.value or 0, lib.rcip_cancel_token_free, "cancel token")

    @classmethod
    def _adopt(cls, ptr: int) -> "CancelToken":
        token = cls.__new__(cls)
        token._own(ptr, lib.rcip_cancel_token_free, "cancel token")
        return token

    def cancel(self) -> None:
        """Signals cancellation (idempotent); what it ends happens before this returns."""
        with self._handle.use() as ptr:
            check(lib.rcip_cancel_token_cancel(ptr))

    @property
    def cancelled(self) -> bool:
        with self._handle.use() as ptr:
            return bool(lib.rcip_cancel_token_is_cancelled(ptr))

    def on_cancel(self, callback: Callable[[], object]) -> None:
        """Runs ``callback()`` once on cancellation (at once if already
        cancelled). Exceptions it raises are logged."""
        with _registering(_FnEntry(callback, None, "an on_cancel callback")) as key, self._handle.use() as ptr:
            check(lib.rcip_cancel_token_on_cancel(ptr, _cancel_trampoline, key, _user_data_free))

    def clone(self) -> "CancelToken":
        """Another reference to the same token, closed independently."""
        out = _new_out()
        with self._handle.use() as ptr:
            check(lib.rcip_cancel_token_clone(ptr, byref(out)))
        return CancelToken._adopt(out.value or 0)


# ----- completion handles ------------------------------------------------------------------


class Invocation(Owner):
    """What a handler receives: one running invocation. Return the output
    from the handler (or ``RawJson``), raise to fail (``rcip.Aborted``:
    abort), or call ``defer()`` and settle it later from any thread with
    ``complete`` / ``fail``. An unsettled invocation that is closed or
    garbage-collected fails (``EXECUTION_FAILED``)."""

    def __init__(self) -> None:  # pragma: no cover - created by the runtime
        raise TypeError("rcip: invocations are created by the runtime")

    @classmethod
    def _adopt(cls, handle: Handle) -> "Invocation":
        """Takes over the handle the handler trampoline made. If this
        raises, the caller closes the handle (the finalizer, if it was
        registered, closes it again: a no-op)."""
        inv = cls.__new__(cls)
        inv._own_handle(handle)
        inv._deferred = False
        inv._settled = False
        inv._token = None
        inv.exception = None
        with handle.use() as ptr:
            inv.id = _lib.borrowed_string(lib.rcip_invocation_id(ptr)) or ""
            inv.capability_id = _lib.borrowed_string(lib.rcip_invocation_capability_id(ptr)) or ""
            inv.input_json = _lib.borrowed_string(lib.rcip_invocation_input(ptr)) or "null"
            inv._context_json = _lib.borrowed_string(lib.rcip_invocation_semantic_context(ptr)) or "{}"
        inv._input = _UNPARSED
        return inv

    id: str
    capability_id: str
    input_json: str
    exception: Optional[BaseException]
    _context_json: str
    _input: Any
    _token: Optional["CancelToken"]
    _deferred: bool
    _settled: bool

    @property
    def input(self) -> Any:
        """The handler's own copy of the input (parsed once)."""
        if self._input is _UNPARSED:
            self._input = _json.loads(self.input_json)
        return self._input

    @property
    def semantic_context(self) -> Dict[str, Any]:
        """The context captured before the policy was asked."""
        context: Dict[str, Any] = _json.loads(self._context_json)
        return context

    @property
    def cancelled(self) -> bool:
        """True once the consumer cancelled (or the runtime closed)."""
        with self._handle.use() as ptr:
            return bool(lib.rcip_cancel_token_is_cancelled(lib.rcip_invocation_cancel_token(ptr)))

    @property
    def cancel_token(self) -> CancelToken:
        """The invocation's token (a reference of your own)."""
        if self._token is None:
            out = _new_out()
            with self._handle.use() as ptr:
                check(lib.rcip_cancel_token_clone(lib.rcip_invocation_cancel_token(ptr), byref(out)))
            self._token = CancelToken._adopt(out.value or 0)
        return self._token

    @property
    def settled(self) -> bool:
        return self._settled

    def defer(self) -> "Invocation":
        """Keeps the invocation running after the handler returns; settle it
        later (any thread) with ``complete`` or ``fail``. Returns self."""
        self._deferred = True
        return self

    # --- the side channel (**rcip**, docs/MCP.md "Progress, logging and elicitation")

    def report_progress(self, progress: float, total: Optional[float] = None, message: Optional[str] = None) -> None:
        """Reports progress while the invocation is pending, from any
        thread: an MCP client whose ``tools/call`` carried
        ``_meta.progressToken`` gets ``notifications/progress`` (before the
        response), and the runtime's ``on_progress`` observer gets a
        ``Progress``. ``progress`` must be finite and greater than the last
        report (``InvalidArgumentError`` otherwise, nothing sent); after
        the invocation settled, ``AlreadyCompletedError``. Units are yours."""
        with self._handle.use() as ptr:
            check(
                lib.rcip_invocation_report_progress(
                    ptr,
                    float(progress),
                    total is not None,
                    float(total) if total is not None else 0.0,
                    message.encode("utf-8") if message is not None else None,
                )
            )

    def log(self, level: str, data: Any, logger: Optional[str] = None) -> None:
        """Sends a log message to the MCP client whose call this is
        (``notifications/message``) when ``level`` (``"debug"``, ``"info"``,
        ``"notice"``, ``"warning"``, ``"error"``, ``"critical"``,
        ``"alert"``, ``"emergency"``) is at least the client's
        ``logging/setLevel`` (``info`` until it sets one); ``data`` is any
        JSON value. Without an MCP call it goes nowhere."""
        with self._handle.use() as ptr:
            check(
                lib.rcip_invocation_log(
                    ptr,
                    level.encode("utf-8"),
                    logger.encode("utf-8") if logger is not None else None,
                    _payload(data),
                )
            )

    def elicit(self, message: str, schema: Mapping[str, Any]) -> "concurrent.futures.Future[ElicitResult]":
        """Asks the MCP client's user (``elicitation/create``, form mode)
        and returns at once: the future gets the ``ElicitResult``. Wait for
        it from a deferred handler's thread (``future.result(timeout)``) or
        ``await asyncio.wrap_future(future)`` in a coroutine handler; never
        block the thread that delivers it. ``schema`` must follow MCP's
        elicitation rules (a flat object of string, number, integer,
        boolean and enum properties, with optional defaults):
        ``InvalidArgumentError`` names what breaks them. A client that did
        not declare elicitation, or no MCP call at all (an approved re-run,
        an in-process consumer): ``UnsupportedError``. Cancelling the call
        answers ``cancel``."""
        future: "concurrent.futures.Future[ElicitResult]" = concurrent.futures.Future()
        data = _payload(schema)
        with _registering(_ResultEntry(future, ElicitResult.from_json)) as key, self._handle.use() as ptr:
            check(lib.rcip_invocation_elicit(ptr, message.encode("utf-8"), data, _elicit_trampoline, key, _user_data_free))
        return future

    def create_message(self, params: Mapping[str, Any]) -> "concurrent.futures.Future[Dict[str, Any]]":
        """Asks the MCP client whose call this is to sample its language
        model (``sampling/createMessage`` with ``params``: ``messages`` and
        ``maxTokens`` are checked, the rest goes as it is) and returns at
        once; the future gets the reply: ``{"result": CreateMessageResult}``,
        ``{"error": {"code", "message"}}`` (e.g. the user rejected it) or
        ``{"cancelled": True}`` (the call was cancelled, the handler settled
        first, the session ended). Wait for it as for ``elicit``.
        ``InvalidArgumentError`` for params without what is checked;
        ``UnsupportedError`` for a client that did not declare sampling or
        no MCP call at all."""
        future: "concurrent.futures.Future[Dict[str, Any]]" = concurrent.futures.Future()
        data = _payload(params)
        with _registering(_ResultEntry(future, _json.loads)) as key, self._handle.use() as ptr:
            check(lib.rcip_invocation_create_message(ptr, data, _sampling_trampoline, key, _user_data_free))
        return future

    def ask(
        self, method: str, params: Mapping[str, Any], key: Optional[str] = None
    ) -> "concurrent.futures.Future[Dict[str, Any]]":
        """Sends the MCP client ``method`` on the handler's behalf under the
        question key ``key`` (``None``: rcip numbers it, ``rcip/ask/1``,
        ...) and returns at once; the future gets the reply as for
        ``create_message``: ``{"result": ...}``, ``{"error": ...}`` or
        ``{"cancelled": True}``. ``method`` is ``elicitation/create``
        (``params`` ``{"message", "requestedSchema"}``),
        ``sampling/createMessage`` or ``roots/list`` (``params`` ``{}``).
        On an MCP 2026-07-28 request an unanswered question goes to the
        client in the call's ``InputRequiredResult`` (the reply is then
        ``{"cancelled": True}``) and the handler runs again with the answer
        (docs/MCP.md "Questions without sessions"): ask before doing
        anything irreversible. ``InvalidArgumentError`` for a bad key or
        params; ``UnsupportedError`` when the client did not declare the
        capability (see ``can_ask``) or there is no MCP call."""
        future: "concurrent.futures.Future[Dict[str, Any]]" = concurrent.futures.Future()
        data = _payload(params)
        raw_key = key.encode("utf-8") if key is not None else None
        with _registering(_ResultEntry(future, _json.loads)) as entry, self._handle.use() as ptr:
            check(
                lib.rcip_invocation_ask(
                    ptr, raw_key, method.encode("utf-8"), data, _ask_trampoline, entry, _user_data_free
                )
            )
        return future

    def can_ask(self, method: str) -> bool:
        """Whether ``ask`` with ``method`` would reach the client: the MCP
        call's client (or 2026-07-28 request) declared the capability it
        needs and the invocation is pending."""
        with self._handle.use() as ptr:
            return bool(lib.rcip_invocation_can_ask(ptr, method.encode("utf-8")))

    async def ask_async(
        self, method: str, params: Mapping[str, Any], key: Optional[str] = None
    ) -> Dict[str, Any]:
        """``ask`` awaited, for a coroutine handler."""
        return await asyncio.wrap_future(self.ask(method, params, key))

    async def elicit_async(self, message: str, schema: Mapping[str, Any]) -> ElicitResult:
        """``elicit`` awaited, for a coroutine handler: the user's answer.
        Cancelling the call cancels the awaiting task as usual."""
        return await asyncio.wrap_future(self.elicit(message, schema))

    async def create_message_async(self, params: Mapping[str, Any]) -> Dict[str, Any]:
        """``create_message`` awaited, for a coroutine handler."""
        return await asyncio.wrap_future(self.create_message(params))

    def complete(self, output: Any) -> None:
        """Completes with ``output`` (JSON-serialisable, or ``RawJson``).
        ``AlreadyCompletedError`` on a second settle."""
        self._complete_bytes(_payload(output))

    def complete_json(self, text: Union[str, bytes]) -> None:
        """Completes with raw output text (not JSON → ``OUTPUT_INVALID``)."""
        self._complete_bytes(_payload(None, text))

    def _complete_bytes(self, data: bytes) -> None:
        with self._handle.use() as ptr:
            rc = lib.rcip_invocation_complete(ptr, data)
            if rc:
                raise error_for(rc)
            self._settled = True

    def fail(self, aborted: bool = False) -> None:
        """Fails: ``EXECUTION_ABORTED`` when ``aborted`` or the token was
        cancelled, else ``EXECUTION_FAILED`` (no text: details stay here)."""
        with self._handle.use() as ptr:
            rc = lib.rcip_invocation_fail(ptr, bool(aborted))
            if rc:
                raise error_for(rc)
            self._settled = True

    def _on_cancel(self, callback: Callable[[], object]) -> None:
        """Runs ``callback()`` once when the invocation is cancelled. An
        invocation already settled or closed (a coroutine handler can finish
        on the loop before this runs) will not be cancelled: nothing is
        registered."""
        if self._settled or self.closed:
            return
        try:
            with _registering(_FnEntry(callback, None, "an on_cancel callback")) as key, self._handle.use() as ptr:
                token = lib.rcip_invocation_cancel_token(ptr)
                check(lib.rcip_cancel_token_on_cancel(token, _cancel_trampoline, key, _user_data_free))
        except ValueError:
            if not self.closed:
                raise  # else it was closed meanwhile: it has ended

    # --- used by the trampolines -------------------------------------------------

    def _settle_value(self, value: Any, state: _RuntimeState, where: str) -> None:
        if self._settled or self._deferred or self.closed:
            return
        try:
            data = _payload(value)
        except BaseException as exc:  # noqa: BLE001 - not serialisable: a handler failure
            self._settle_exception(exc, state, where)
            return
        try:
            self._complete_bytes(data)
        except (AlreadyCompletedError, ValueError):
            pass

    def _settle_exception(self, exc: BaseException, state: _RuntimeState, where: str) -> None:
        aborted = isinstance(exc, (Aborted, asyncio.CancelledError, concurrent.futures.CancelledError))
        self.exception = exc
        if not aborted:
            state.report(exc, where)
        if self._settled or self.closed:
            return
        try:
            self.fail(aborted)
        except (AlreadyCompletedError, ClosedError, ValueError):
            pass

    def _finish(self) -> None:
        """After the handler: free the handle unless the host deferred it."""
        if not self._deferred:
            self.close()

    def __repr__(self) -> str:
        return "Invocation(id=%r, capability_id=%r, settled=%r)" % (self.id, self.capability_id, self._settled)


class _Unparsed:
    pass


_UNPARSED = _Unparsed()


class PolicyRequest(Owner):
    """One question to the host policy. Return a decision from the policy
    (``"allow"``, ``"deny"``, ``"confirm"``, ``rcip.deny("reason")``, a mapping
    ``{"decision", "reason"?}``), raise to fail (``POLICY_EVALUATION_FAILED``),
    or ``defer()`` and decide later from any thread."""

    def __init__(self) -> None:  # pragma: no cover
        raise TypeError("rcip: policy requests are created by the runtime")

    @classmethod
    def _adopt(cls, handle: Handle) -> "PolicyRequest":
        """Takes over the handle the policy trampoline made. If this raises
        (a context nested deeper than Python's ``json`` parses), the caller
        closes the handle (the finalizer, if it was registered, closes it
        again: a no-op)."""
        req = cls.__new__(cls)
        req._own_handle(handle)
        req._deferred = False
        req._settled = False
        req._arguments = None
        req.exception = None
        with handle.use() as ptr:
            req.context_json = _lib.borrowed_string(lib.rcip_policy_request_context(ptr)) or "{}"
            req.invocation_id = _lib.borrowed_string(lib.rcip_policy_request_invocation_id(ptr))
            principal = _lib.borrowed_string(lib.rcip_policy_request_principal(ptr))
        req.context = _json.loads(req.context_json)
        req.principal = None if principal is None else _json.loads(principal)
        return req

    context: Dict[str, Any]
    context_json: str
    invocation_id: Optional[str]
    #: Who the runtime's consumer acts for (**rcip**), when the host set it
    #: (``Host.set_principal``) or the MCP server did from a validated
    #: access token (``{"issuer", "subject", "scopes", "claims",
    #: "expiresAt"}``); ``None`` otherwise. Decide tenants and records with it.
    principal: Optional[Dict[str, Any]]
    exception: Optional[BaseException]
    _deferred: bool
    _settled: bool
    _arguments: Optional[Dict[str, Any]]

    @property
    def capability(self) -> Dict[str, Any]:
        """The capability's live snapshot entry."""
        entry: Dict[str, Any] = self.context["capability"]
        return entry

    @property
    def capability_id(self) -> str:
        return str(self.context["capability"]["id"])

    @property
    def effect(self) -> Effect:
        return Effect(self.context["capability"]["effect"])

    @property
    def input(self) -> Any:
        """The input as the client sent it (JSON names, JSON values)."""
        return self.context.get("input")

    @property
    def arguments(self) -> Dict[str, Any]:
        """The input as the handler receives it: for a capability declared
        with ``@app.capability`` (a runtime ``App`` built), each parameter
        by its Python name, decoded as annotated (a dataclass, TypedDict,
        enum, pydantic model or plain value); otherwise the input's
        members as they are. ``argument(name, type)`` reads one, typed."""
        if self._arguments is not None:
            return self._arguments
        value = self.input
        return dict(value) if isinstance(value, Mapping) else {}

    def argument(self, name: str, type: Type[_T]) -> _T:
        """``arguments[name]``, checked to be a ``type`` (``TypeError``
        otherwise) and typed as one; ``KeyError`` when the call has no such
        argument (a parameter with a default the client left out)."""
        value = self.arguments[name]
        if not isinstance(value, type):
            raise TypeError("rcip: argument %r is %s, not %s" % (name, builtins.type(value).__name__, type.__name__))
        return value

    @property
    def semantic_context(self) -> Dict[str, Any]:
        semantic: Dict[str, Any] = self.context["semanticContext"]
        return semantic

    @property
    def confirmed(self) -> bool:
        """True when this is an approved confirmation's re-run."""
        return bool(self.context.get("confirmed"))

    @property
    def phase(self) -> Literal["invoke", "preflight"]:
        """``"invoke"`` or ``"preflight"``."""
        return "preflight" if self.context.get("phase") == "preflight" else "invoke"

    @property
    def settled(self) -> bool:
        return self._settled

    def defer(self) -> "PolicyRequest":
        self._deferred = True
        return self

    def decide(self, decision: Union[DecisionName, Decision, Mapping[str, Any]]) -> None:
        """Decides. A decision that is none of allow/deny/confirm settles the
        request as a policy failure and raises ``InvalidArgumentError``."""
        if isinstance(decision, str):
            body: Any = {"decision": decision}
        elif isinstance(decision, Decision):
            body = decision.to_dict()
        elif isinstance(decision, Mapping):
            body = dict(decision)
        else:
            raise TypeError("rcip: a policy decision is a str, a Decision or a mapping, not %s" % type(decision).__name__)
        data = _json_arg(body, "the decision")
        with self._handle.use() as ptr:
            rc = lib.rcip_policy_request_decide(ptr, data)
            if rc:
                error = error_for(rc)
                if body.get("decision") not in ("allow", "deny", "confirm") and isinstance(body.get("decision"), str):
                    self._settled = True  # the library settled it as a failure
                raise error
            self._settled = True

    def allow(self) -> None:
        self.decide(Decision("allow"))

    def deny(self, reason: Optional[str] = None) -> None:
        self.decide(Decision("deny", reason))

    def confirm(self, reason: Optional[str] = None) -> None:
        self.decide(Decision("confirm", reason))

    def decide_default(self) -> None:
        """Settles with the default policy's decision (read allow, confirmed
        allow, destructive confirm, write and external deny), so a policy can
        handle some capabilities and hand back the rest."""
        with self._handle.use() as ptr:
            rc = lib.rcip_policy_request_decide_default(ptr)
            if rc:
                raise error_for(rc)
            self._settled = True

    def fail(self) -> None:
        """Settles as a policy failure (``POLICY_EVALUATION_FAILED``)."""
        with self._handle.use() as ptr:
            rc = lib.rcip_policy_request_fail(ptr)
            if rc:
                raise error_for(rc)
            self._settled = True

    def _settle_value(self, value: Any, state: _RuntimeState) -> None:
        if self._settled or self._deferred or self.closed:
            return
        if value is None:
            self._settle_exception(TypeError("rcip: the policy returned None without deciding or deferring"), state)
            return
        try:
            self.decide(value)
        except AlreadyCompletedError:
            pass
        except BaseException as exc:  # noqa: BLE001
            self._settle_exception(exc, state)

    def _settle_exception(self, exc: BaseException, state: _RuntimeState) -> None:
        self.exception = exc
        state.report(exc, "the policy")
        if self._settled or self.closed:
            return
        try:
            self.fail()
        except (RcipError, ValueError):
            pass

    def _finish(self) -> None:
        if not self._deferred:
            self.close()

    def __repr__(self) -> str:
        return "PolicyRequest(capability_id=%r, phase=%r, confirmed=%r)" % (self.capability_id, self.phase, self.confirmed)


# ----- runtime, client, host --------------------------------------------------------------


class PendingOutcome(concurrent.futures.Future[_T], Generic[_T]):
    """A ``concurrent.futures.Future`` of an ``Outcome`` (``submit``,
    ``submit_confirmation``: ``PendingOutcome[Outcome]``) or a
    ``PreflightReport`` (``submit_preflight``); ``invocation_id`` is set for
    invocations. It cannot be cancelled through the future: cancel the
    invocation's ``CancelToken``."""

    invocation_id: Optional[str] = None


class RuntimeOptions(TypedDict, total=False):
    """``Runtime``'s keyword arguments, every one optional: what
    ``App.runtime(**options)`` forwards (one list, so the two cannot
    drift; a test compares it with ``Runtime.__init__``)."""

    policy: Optional[Policy]
    on_event: Optional[Callable[[Event], object]]
    on_confirmation: Optional[Callable[[ConfirmationNotice], object]]
    on_progress: Optional[Callable[[Progress], object]]
    confirmation_ttl_ms: Optional[int]
    clock: Optional[Callable[[], int]]
    id_generator: Optional[Callable[[str], Optional[str]]]
    manual_timers: bool
    max_payload_len: Optional[int]
    max_depth: Optional[int]
    max_issues: Optional[int]
    max_issue_bytes: Optional[int]
    loop: Optional[asyncio.AbstractEventLoop]
    on_error: Optional[Callable[[BaseException, str], object]]
    bindings: Optional[Mapping[str, Union[Handler, "tuple[Handler, Optional[AvailabilityCheck]]"]]]


class Runtime(Owner):
    """A runtime over one catalog: bindings, context, snapshots,
    invocations, confirmations and preflights.

    ``policy(request)``: the host policy (default: read → allow, confirmed →
    allow, destructive → confirm, write/external → deny).
    ``on_event(event)``: lifecycle events. ``on_confirmation(notice)``:
    confirmations opened and closed. ``on_progress(progress)``: every
    handler's progress report (**rcip**; also approved re-runs', which reach
    no MCP client). ``clock()``: epoch milliseconds
    (``ManualClock`` for tests). ``id_generator(prefix)``: ids, or ``None``
    for the built-in one. ``manual_timers``: no library thread; call
    ``run_due_timers()``. ``loop``: the asyncio loop coroutine callbacks run
    on (default: the loop running at creation). ``on_error(exc, where)``:
    told when a host callback raises (default: logged on the ``rcip``
    logger).

    ``max_issues`` / ``max_issue_bytes`` (**rcip**): the bound on the
    validation issues one outcome carries, in issues and in bytes of issue
    text (``rcip_runtime_builder_set_validation_issue_limit``; defaults
    1000 and 1048576). An outcome that left issues out has
    ``error.validation_issues_truncated``.

    ``bindings`` (**rcip**): ``{capability_id: handler}`` or
    ``{capability_id: (handler, availability)}``, bound on the builder
    (``rcip_runtime_builder_bind``): the runtime starts with them bound, in
    the snapshot of revision 0, without a ``Binding`` object or a refresh
    per binding (a runtime per request with every handler bound). They stay
    bound until the runtime closes and cannot be unbound; everything else
    (outcomes, events, availability) is what ``host.bind`` right after
    creation gives, except the revision history. An id the catalog does
    not declare raises ``NotInCatalogError``; the build asks each
    availability check once.
    """

    def __init__(
        self,
        catalog: Union[Catalog, str, bytes, Mapping[str, Any]],
        *,
        policy: Optional[Policy] = None,
        on_event: Optional[Callable[[Event], object]] = None,
        on_confirmation: Optional[Callable[[ConfirmationNotice], object]] = None,
        on_progress: Optional[Callable[[Progress], object]] = None,
        confirmation_ttl_ms: Optional[int] = None,
        clock: Optional[Callable[[], int]] = None,
        id_generator: Optional[Callable[[str], Optional[str]]] = None,
        manual_timers: bool = False,
        max_payload_len: Optional[int] = None,
        max_depth: Optional[int] = None,
        max_issues: Optional[int] = None,
        max_issue_bytes: Optional[int] = None,
        loop: Optional[asyncio.AbstractEventLoop] = None,
        on_error: Optional[Callable[[BaseException, str], object]] = None,
        bindings: Optional[Mapping[str, Union[Handler, "tuple[Handler, Optional[AvailabilityCheck]]"]]] = None,
    ) -> None:
        own_catalog = not isinstance(catalog, Catalog)
        cat: Catalog = catalog if isinstance(catalog, Catalog) else Catalog(catalog)
        self._state = _RuntimeState(loop if loop is not None else _running_loop(), on_error)
        builder = _new_out()
        try:
            with cat._handle.use() as cat_ptr:
                check(lib.rcip_runtime_builder_new(cat_ptr, byref(builder)))
        finally:
            if own_catalog:
                cat.close()  # the builder and runtime keep their own reference
        b = Handle(builder.value or 0, lib.rcip_runtime_builder_free, "runtime builder")
        try:
            with b.use() as bp:
                if confirmation_ttl_ms is not None:
                    check(lib.rcip_runtime_builder_set_confirmation_ttl_ms(bp, int(confirmation_ttl_ms)))
                if max_payload_len is not None or max_depth is not None:
                    for name, limit in (("max_payload_len", max_payload_len), ("max_depth", max_depth)):
                        if limit is not None and int(limit) < 1:
                            raise InvalidArgumentError(103, "%s must be at least 1, not %d" % (name, int(limit)))
                    # 0 keeps the library's default for a limit not given.
                    check(lib.rcip_runtime_builder_set_limits(bp, int(max_payload_len or 0), int(max_depth or 0)))
                if max_issues is not None or max_issue_bytes is not None:
                    for name, limit in (("max_issues", max_issues), ("max_issue_bytes", max_issue_bytes)):
                        if limit is not None and int(limit) < 1:
                            raise InvalidArgumentError(103, "%s must be at least 1, not %d" % (name, int(limit)))
                    # 0 keeps the library's default for a bound not given.
                    check(lib.rcip_runtime_builder_set_validation_issue_limit(bp, int(max_issues or 0), int(max_issue_bytes or 0)))
                if policy is not None:
                    with _registering(_PolicyEntry(self._state, policy)) as key:
                        check(lib.rcip_runtime_builder_set_policy(bp, _policy_trampoline, key, _user_data_free))
                if on_event is not None:
                    with _registering(_FnEntry(on_event, self._state, "on_event")) as key:
                        check(lib.rcip_runtime_builder_add_event_observer(bp, _event_trampoline, key, _user_data_free))
                if on_progress is not None:
                    with _registering(_FnEntry(on_progress, self._state, "on_progress")) as key:
                        check(lib.rcip_runtime_builder_set_progress_observer(bp, _progress_trampoline, key, _user_data_free))
                if on_confirmation is not None:
                    with _registering(_FnEntry(on_confirmation, self._state, "on_confirmation")) as key:
                        check(lib.rcip_runtime_builder_set_confirmation_callback(bp, _confirmation_trampoline, key, _user_data_free))
                if clock is not None:
                    with _registering(_FnEntry(clock, self._state, "the clock", allow_async=False)) as key:
                        check(lib.rcip_runtime_builder_set_clock(bp, _clock_trampoline, key, _user_data_free))
                if id_generator is not None:
                    with _registering(_FnEntry(id_generator, self._state, "the id generator", allow_async=False)) as key:
                        check(lib.rcip_runtime_builder_set_id_generator(bp, _id_generator_trampoline, key, _user_data_free))
                if manual_timers:
                    check(lib.rcip_runtime_builder_set_manual_timers(bp, True))
                for capability_id, bound in (bindings or {}).items():
                    handler, availability = bound if isinstance(bound, tuple) else (bound, None)
                    cap = _id_bytes(capability_id, "capability_id")
                    with _registering(_BindingEntry(self._state, capability_id, handler, availability)) as key:
                        check(
                            lib.rcip_runtime_builder_bind(
                                bp,
                                cap,
                                _handler_trampoline,
                                _availability_trampoline if availability is not None else _NO_AVAILABILITY,
                                key,
                                _user_data_free,
                            )
                        )
        except BaseException:
            b.close()  # releases whatever was registered on it
            raise
        runtime = _new_out()
        check(lib.rcip_runtime_builder_build(b.detach(), byref(runtime)))  # consumes the builder
        self._handle = Handle(runtime.value or 0, lib.rcip_runtime_free, "runtime", shutdown=lib.rcip_runtime_close)
        self._finalizer = weakref.finalize(self, _close_runtime, self._handle, self._state)
        _live_runtimes.add(self)
        self._client_ptr = lib.rcip_runtime_client(runtime.value)
        self._host_ptr = lib.rcip_runtime_host(runtime.value)
        self.client: Client[str] = Client(self)
        self.host: Host[str] = Host(self)

    @property
    def loop(self) -> Optional[asyncio.AbstractEventLoop]:
        return self._state.loop

    def close(self) -> None:
        """Closes the runtime at once (``rcip_runtime_close``), from any
        thread or from inside its callbacks (not the clock or the id
        generator): pending invocations end ``EXECUTION_ABORTED`` (their
        outcomes delivered during this call, running handlers see their
        token cancelled), pending confirmations end, bindings and
        subscriptions are released. Later calls raise ``ValueError``; the
        handle itself is freed when the last call still using it returns."""
        super().close()

    def next_deadline(self) -> Optional[int]:
        """The earliest ``expiresAt`` among pending confirmations, or ``None``."""
        has = c_bool()
        deadline = c_int64()
        with self._handle.use() as ptr:
            self._check(lib.rcip_runtime_next_deadline(ptr, byref(has), byref(deadline)))
        return int(deadline.value) if has.value else None

    def run_due_timers(self) -> None:
        """Expires every confirmation due by the clock's now (manual timers)."""
        with self._handle.use() as ptr:
            self._check(lib.rcip_runtime_run_due_timers(ptr))

    def stats(self) -> Dict[str, Any]:
        out = _new_out()
        with self._handle.use() as ptr:
            self._check(lib.rcip_runtime_stats(ptr, byref(out)))
        stats: Dict[str, Any] = _json.loads(take_string(out) or "{}")
        return stats

    def _check(self, rc: int) -> None:
        """``check`` for a call through the runtime. ``CLOSED`` means another
        thread closed the runtime after this call got past ``use()``: it
        raises the same ``ValueError`` as a call made after ``close()``."""
        if rc == Result.CLOSED:
            raise self._handle.closed_error()
        check(rc)

    def _check_blocking(self, what: str) -> None:
        state = self._state
        if state.loop is not None and state.async_callbacks > 0 and _running_loop() is state.loop:
            raise DeadlockError(
                "rcip: blocking %s on the thread running the runtime's asyncio loop would deadlock "
                "(coroutine callbacks need that loop); await %s_async instead" % (what, what)
            )


def _close_runtime(handle: Handle, state: _RuntimeState) -> None:
    handle.close()
    state.forget_all()


# Runtimes not yet closed: closed first thing at interpreter exit.
_live_runtimes: "weakref.WeakSet[Runtime]" = weakref.WeakSet()

# How long the exit hook waits, in all, for calls still inside the library.
_EXIT_WAIT_SECONDS = 1.0


def _close_runtimes_at_exit() -> None:
    """Closes every live runtime before the finalizers run, so that pending
    work gets its outcome (``EXECUTION_ABORTED``: a deferred invocation's
    finalizer would otherwise fail it first) and no callback of theirs
    starts any more. Then threads other than the main one (daemon threads
    still running) get ``ValueError`` in Python instead of entering the
    library, and the calls already inside it get a moment to return: a
    thread the interpreter stops while the library is on its stack cannot
    unwind through the library's frames and aborts the process."""
    try:
        for runtime in list(_live_runtimes):
            runtime.close()
        calls.refuse_other_threads()
        calls.wait(_EXIT_WAIT_SECONDS)
    except BaseException:  # noqa: BLE001 - exiting anyway
        pass


# atexit runs the handlers registered last first. weakref.finalize registers
# its exit handler (which runs the finalizers) when the first finalizer is
# created: create one (that does nothing) so that it is registered before
# this hook, which then runs before any finalizer.
weakref.finalize(_close_runtimes_at_exit, lambda: None)
atexit.register(_close_runtimes_at_exit)


class Client(Generic[_Id]):
    """The consumer surface (what an agent may do). Borrowed from its
    runtime: after ``runtime.close()`` every method raises ``ValueError``.

    Static capability ids: ``Client[Ids]`` with ``Ids`` a ``Literal`` of the
    catalog's ids (``python -m rcip ids MODULE:APP`` writes one) types the
    ``capability_id`` of ``submit``, ``invoke`` and ``invoke_async``, so a
    misspelt id is a type error: ``client: rcip.Client[Ids] =
    runtime.client``. Typing only: nothing is checked at run time beyond
    what the runtime checks (an unknown id is ``CAPABILITY_NOT_FOUND``)."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        self._snapshot_lock = threading.Lock()
        self._snapshot: Optional[Snapshot] = None
        self._snapshot_ptr = 0

    def snapshot(self) -> Snapshot:
        """The current snapshot; the same object until the revision changes."""
        out = _new_out()
        with self._runtime._handle.use():
            self._runtime._check(lib.rcip_client_snapshot(self._runtime._client_ptr, byref(out)))
        ptr = out.value or 0
        try:
            revision = int(lib.rcip_snapshot_revision(ptr))
            with self._snapshot_lock:
                cached = self._snapshot
                if cached is not None and self._snapshot_ptr == ptr and cached.revision == revision:
                    return cached
                snap = Snapshot(revision, (lib.rcip_snapshot_json(ptr) or b"{}").decode("utf-8"))
                self._snapshot, self._snapshot_ptr = snap, ptr
                return snap
        finally:
            lib.rcip_snapshot_free(ptr)

    def list_capabilities(
        self,
        filter: Optional[Union[str, Mapping[str, Any]]] = None,
        *,
        context: Optional[str] = None,
        available_only: Optional[bool] = None,
        scope_id: Optional[str] = None,
        effect: Optional[str] = None,
    ) -> List[Dict[str, Any]]:
        """Capability entries passing a filter (``{"context", "availableOnly",
        "scopeId", "effect"}``, or the keyword arguments), in catalog order."""
        body: Dict[str, Any] = {}
        if filter is not None and not isinstance(filter, (str, bytes)):
            body.update(filter)
        for key, value in (("context", context), ("availableOnly", available_only), ("scopeId", scope_id), ("effect", effect)):
            if value is not None:
                body[key] = value
        text = _json_arg(filter, "the filter") if isinstance(filter, (str, bytes)) else (_json_arg(body, "the filter") if body else None)
        out = _new_out()
        with self._runtime._handle.use():
            self._runtime._check(lib.rcip_client_list_capabilities(self._runtime._client_ptr, text, byref(out)))
        entries: List[Dict[str, Any]] = _json.loads(take_string(out) or "[]")
        return entries

    def subscribe(self, callback: Callable[[int], object]) -> "Subscription":
        """Calls ``callback(revision)`` once per refresh until the
        subscription is closed."""
        out = _new_out()
        with _registering(_FnEntry(callback, self._runtime._state, "a subscriber")) as key, self._runtime._handle.use():
            self._runtime._check(lib.rcip_client_subscribe(self._runtime._client_ptr, _subscriber_trampoline, key, _user_data_free, byref(out)))
        subscription = Subscription._adopt(out.value or 0, self._runtime._state)
        self._runtime._state.keep(subscription)
        return subscription

    def submit(
        self,
        capability_id: _Id,
        input: Any = None,
        *,
        input_json: Optional[Union[str, bytes]] = None,
        invocation_id: Optional[str] = None,
        cancel: Optional[CancelToken] = None,
        on_outcome: Optional[Callable[[Outcome], object]] = None,
    ) -> "PendingOutcome[Outcome]":
        """Starts an invocation and returns at once: a future of its
        ``Outcome`` (possibly already done). ``input_json`` passes raw text.
        ``on_outcome(outcome)`` runs when the library delivers the outcome
        (on the settling thread, possibly before this returns), before the
        future is resolved."""
        future: PendingOutcome[Outcome] = PendingOutcome()
        future.set_running_or_notify_cancel()
        cap = _id_bytes(capability_id, "capability_id")
        text = _payload(input, input_json)
        inv_id = None if invocation_id is None else _id_bytes(invocation_id, "invocation_id")
        id_out = _new_out()
        entry = _ResultEntry(future, Outcome.from_json, on_outcome, self._runtime._state)
        with _registering(entry) as key, self._runtime._handle.use(), _token_use(cancel) as token_ptr:
            self._runtime._check(
                lib.rcip_client_invoke(
                    self._runtime._client_ptr, cap, text, inv_id, token_ptr, _result_trampoline, key, _user_data_free, byref(id_out)
                )
            )
        future.invocation_id = take_string(id_out)
        return future

    def invoke(
        self,
        capability_id: _Id,
        input: Any = None,
        *,
        input_json: Optional[Union[str, bytes]] = None,
        invocation_id: Optional[str] = None,
        cancel: Optional[CancelToken] = None,
        timeout: Optional[float] = None,
    ) -> Outcome:
        """Invokes and waits for the outcome. On a timeout (``TimeoutError``,
        naming the capability, the invocation id and the timeout) or an
        interrupt (``KeyboardInterrupt``) the invocation is cancelled, then
        the exception propagates. Raises ``DeadlockError`` on the runtime's
        loop thread while coroutine callbacks exist (use ``invoke_async``)."""
        self._runtime._check_blocking("invoke")
        token = cancel if cancel is not None else CancelToken()
        try:
            future = self.submit(capability_id, input, input_json=input_json, invocation_id=invocation_id, cancel=token)
            what = "invoking %s (invocation %s)" % (capability_id, future.invocation_id)
            return _wait(future, timeout, token, what)
        finally:
            if cancel is None:
                token.close()

    async def invoke_async(
        self,
        capability_id: _Id,
        input: Any = None,
        *,
        input_json: Optional[Union[str, bytes]] = None,
        invocation_id: Optional[str] = None,
        cancel: Optional[CancelToken] = None,
    ) -> Outcome:
        """Invokes and awaits the outcome. Cancelling the awaiting task
        cancels the invocation (``cancel``, or a token of its own)."""
        token = cancel if cancel is not None else CancelToken()
        try:
            future = self.submit(capability_id, input, input_json=input_json, invocation_id=invocation_id, cancel=token)
            return await _await(future, token)
        finally:
            if cancel is None:
                token.close()

    def submit_preflight(
        self,
        proposals: Iterable[ProposalLike],
        *,
        cancel: Optional[CancelToken] = None,
        on_report: Optional[Callable[[PreflightReport], object]] = None,
    ) -> "PendingOutcome[PreflightReport]":
        """Starts a preflight of 1 to 16 proposals; a future of its
        ``PreflightReport`` (``on_report`` as ``submit``'s ``on_outcome``).
        ``PreflightBatchInvalidError`` for another count."""
        items = [_proposal(p) for p in proposals]
        ids = [_id_bytes(p.capability_id, "capability_id") for p in items]
        texts = [_payload(p.input, p.input_json) for p in items]
        n = len(items)
        id_array = (c_char_p * n)(*ids) if n else None
        text_array = (c_char_p * n)(*texts) if n else None
        future: PendingOutcome[PreflightReport] = PendingOutcome()
        future.set_running_or_notify_cancel()
        entry = _ResultEntry(future, PreflightReport.from_json, on_report, self._runtime._state)
        with _registering(entry) as key, self._runtime._handle.use(), _token_use(cancel) as token_ptr:
            self._runtime._check(
                lib.rcip_client_preflight(self._runtime._client_ptr, id_array, text_array, n, token_ptr, _result_trampoline, key, _user_data_free)
            )
        return future

    def preflight(
        self, proposals: Iterable[ProposalLike], *, cancel: Optional[CancelToken] = None, timeout: Optional[float] = None
    ) -> PreflightReport:
        """Checks proposals without running anything (no ids, events or
        notifications) and waits for the report (``TimeoutError`` after
        ``timeout`` seconds, the preflight cancelled)."""
        self._runtime._check_blocking("preflight")
        token = cancel if cancel is not None else CancelToken()
        try:
            return _wait(self.submit_preflight(proposals, cancel=token), timeout, token, "the preflight")
        finally:
            if cancel is None:
                token.close()

    async def preflight_async(self, proposals: Iterable[ProposalLike], *, cancel: Optional[CancelToken] = None) -> PreflightReport:
        token = cancel if cancel is not None else CancelToken()
        try:
            return await _await(self.submit_preflight(proposals, cancel=token), token)
        finally:
            if cancel is None:
                token.close()


class Host(Generic[_Id]):
    """The trusted host surface: bind, context, refresh, confirmation
    resolution. Borrowed from its runtime, like ``Client``.
    ``Host[Ids]`` types ``bind``'s ``capability_id`` as ``Client[Ids]``
    does (``host: rcip.Host[Ids] = runtime.host``)."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime

    def bind(self, capability_id: _Id, handler: Handler, availability: Optional[AvailabilityCheck] = None) -> "Binding":
        """Binds ``handler(invocation)`` (a plain or coroutine function) and
        an optional ``availability()`` check, then refreshes. The binding
        stays in effect until ``close()``/``unbind()`` (or the end of a
        ``with`` block, or the runtime closing), whether or not the returned
        object is kept."""
        cap = _id_bytes(capability_id, "capability_id")
        out = _new_out()
        entry = _BindingEntry(self._runtime._state, capability_id, handler, availability)
        with _registering(entry) as key, self._runtime._handle.use():
            self._runtime._check(
                lib.rcip_host_bind(
                    self._runtime._host_ptr,
                    cap,
                    _handler_trampoline,
                    _availability_trampoline if availability is not None else _NO_AVAILABILITY,
                    key,
                    _user_data_free,
                    byref(out),
                )
            )
        binding = Binding._adopt(out.value or 0, capability_id, self._runtime._state)
        self._runtime._state.keep(binding)
        return binding

    def set_context(
        self,
        active_scope_ids: Union[Sequence[str], Mapping[str, Any], str, bytes],
        primary_scope_id: Optional[str] = None,
    ) -> None:
        """Replaces the semantic context: ``set_context(["a", "b"], "a")`` or
        ``set_context({"activeScopeIds": [...], "primaryScopeId": ...})``."""
        if isinstance(active_scope_ids, (Mapping, str, bytes)):
            if primary_scope_id is not None:
                raise TypeError("rcip: give primary_scope_id inside the context mapping")
            text = _json_arg(active_scope_ids, "the context")
        else:
            body: Dict[str, Any] = {"activeScopeIds": list(active_scope_ids)}
            if primary_scope_id is not None:
                body["primaryScopeId"] = primary_scope_id
            text = _json_arg(body, "the context")
        with self._runtime._handle.use():
            self._runtime._check(lib.rcip_host_set_context(self._runtime._host_ptr, text))

    def clear_context(self) -> None:
        with self._runtime._handle.use():
            self._runtime._check(lib.rcip_host_clear_context(self._runtime._host_ptr))

    def set_principal(self, principal: Optional[Mapping[str, Any]]) -> None:
        """Sets who this runtime's consumer acts for (**rcip**): a mapping
        every later policy request sees as ``request.principal``; ``None``
        clears it. The MCP server with ``auth`` sets it for each session's
        runtime from the validated token."""
        text = None if principal is None else _json_arg(principal, "the principal")
        with self._runtime._handle.use():
            self._runtime._check(lib.rcip_host_set_principal(self._runtime._host_ptr, text))

    def refresh(self) -> None:
        """New revision: availability sampled again, subscribers notified."""
        with self._runtime._handle.use():
            self._runtime._check(lib.rcip_host_refresh(self._runtime._host_ptr))

    def submit_confirmation(
        self, confirmation_id: str, approved: bool, *, on_outcome: Optional[Callable[[Outcome], object]] = None
    ) -> "PendingOutcome[Outcome]":
        """Approves or declines a pending confirmation; a future of the
        outcome (the approved re-run's, or a decline/expiry/not-found one).
        ``on_outcome`` as for ``Client.submit``."""
        future: PendingOutcome[Outcome] = PendingOutcome()
        future.set_running_or_notify_cancel()
        cid = _id_bytes(confirmation_id, "confirmation_id")
        entry = _ResultEntry(future, Outcome.from_json, on_outcome, self._runtime._state)
        with _registering(entry) as key, self._runtime._handle.use():
            self._runtime._check(
                lib.rcip_host_resolve_confirmation(self._runtime._host_ptr, cid, bool(approved), _result_trampoline, key, _user_data_free)
            )
        return future

    def resolve_confirmation(self, confirmation_id: str, approved: bool, *, timeout: Optional[float] = None) -> Outcome:
        """Approves or declines and waits for the outcome. Inside an
        ``opened`` notice an approval raises ``DeadlockError``: its run
        starts when the notice returns; use ``submit_confirmation`` there."""
        self._runtime._check_blocking("resolve_confirmation")
        depth: int = getattr(_notice_tls, "depth", 0)
        if approved and depth > 0:
            raise DeadlockError(
                "rcip: a blocking approval inside the confirmation callback's opened notice would wait forever "
                "(the approved run starts when the notice returns); use submit_confirmation there"
            )
        what = "resolving confirmation %s" % confirmation_id
        return _wait(self.submit_confirmation(confirmation_id, approved), timeout, None, what)

    async def resolve_confirmation_async(self, confirmation_id: str, approved: bool) -> Outcome:
        return await _await(self.submit_confirmation(confirmation_id, approved), None)

    def carry_confirmation(self, confirmation_id: str) -> Dict[str, Any]:
        """The pending confirmation ``confirmation_id`` as another runtime
        of the same catalog may resume it (**rcip**, docs/PIPELINE.md section
        5, "Confirmations that cross runtimes"): ``{"confirmationId",
        "invocationId", "capabilityId", "expiresAt", "context"}``. Read it
        while the confirmation is pending (from the ``confirmation_required``
        outcome, before this runtime closes). ``NotFoundError`` when no
        confirmation of that id is pending here."""
        cid = _id_bytes(confirmation_id, "confirmation_id")
        out = _new_out()
        with self._runtime._handle.use():
            self._runtime._check(lib.rcip_host_carry_confirmation(self._runtime._host_ptr, cid, byref(out)))
        carried: Dict[str, Any] = _json.loads(take_string(out) or "{}")
        return carried

    def submit_resumed_confirmation(
        self,
        carried: Mapping[str, Any],
        approved: bool,
        input: Any = None,
        *,
        input_json: Optional[Union[str, bytes]] = None,
        cancel: Optional[CancelToken] = None,
        on_outcome: Optional[Callable[[Outcome], object]] = None,
    ) -> "PendingOutcome[Outcome]":
        """Answers a confirmation another runtime opened (``carried``, from
        its ``carry_confirmation``) with the consumer's input again
        (**rcip**, the same rule): a decline is ``denied
        CONFIRMATION_DECLINED``, an answer at or after ``expiresAt`` ``failed
        CONFIRMATION_EXPIRED``, an unbound capability or another context
        ``denied POLICY_DENIED``; an approval re-runs policy, availability
        and validation with ``confirmed`` true under the carried invocation
        id. Single use across runtimes is the caller's: resume a carried
        record once. A future of the outcome, as ``submit_confirmation``."""
        future: PendingOutcome[Outcome] = PendingOutcome()
        future.set_running_or_notify_cancel()
        record = _json.dumps(dict(carried), separators=(",", ":")).encode("utf-8")
        text = _payload(input, input_json)
        entry = _ResultEntry(future, Outcome.from_json, on_outcome, self._runtime._state)
        with _registering(entry) as key, self._runtime._handle.use(), _token_use(cancel) as token_ptr:
            self._runtime._check(
                lib.rcip_host_resume_confirmation(
                    self._runtime._host_ptr, record, bool(approved), text, token_ptr, _result_trampoline, key, _user_data_free
                )
            )
        return future

    def resume_confirmation(
        self,
        carried: Mapping[str, Any],
        approved: bool,
        input: Any = None,
        *,
        input_json: Optional[Union[str, bytes]] = None,
        cancel: Optional[CancelToken] = None,
        timeout: Optional[float] = None,
    ) -> Outcome:
        """``submit_resumed_confirmation`` and wait for the outcome."""
        self._runtime._check_blocking("resume_confirmation")
        pending = self.submit_resumed_confirmation(carried, approved, input, input_json=input_json, cancel=cancel)
        return _wait(pending, timeout, cancel, "resuming confirmation %s" % carried.get("confirmationId"))

    def approve(self, confirmation_id: str, *, timeout: Optional[float] = None) -> Outcome:
        return self.resolve_confirmation(confirmation_id, True, timeout=timeout)

    def decline(self, confirmation_id: str, *, timeout: Optional[float] = None) -> Outcome:
        return self.resolve_confirmation(confirmation_id, False, timeout=timeout)


class Binding(Owner):
    """A handler bound to a capability. ``close()`` (or leaving a ``with``
    block) unbinds if it is still the installed binding, like a React
    unmount. Valid after the runtime closes (then it raises ``ClosedError``)."""

    capability_id: str
    _state: "weakref.ReferenceType[_RuntimeState]"

    @classmethod
    def _adopt(cls, ptr: int, capability_id: str, state: _RuntimeState) -> "Binding":
        b = cls.__new__(cls)
        b._own(ptr, lib.rcip_binding_free, "binding")
        b.capability_id = capability_id
        b._state = weakref.ref(state)
        return b

    def unbind(self) -> None:
        """Removes the binding if it is still installed; a stale one changes nothing."""
        with self._handle.use() as ptr:
            check(lib.rcip_binding_unbind(ptr))
        self._forget()

    def close(self) -> None:
        """Unbinds (if still installed) and releases the handle."""
        super().close()
        self._forget()

    def _forget(self) -> None:
        state = self._state()
        if state is not None:
            state.forget(self)

    def set_revision(self, revision: int) -> None:
        """A changed revision on the installed binding refreshes (availability sampled again)."""
        with self._handle.use() as ptr:
            check(lib.rcip_binding_set_revision(ptr, int(revision)))

    @property
    def installed(self) -> bool:
        if self._handle.closed:
            return False
        with self._handle.use() as ptr:
            return bool(lib.rcip_binding_is_installed(ptr))

    def __enter__(self) -> "Binding":
        return self

    def __repr__(self) -> str:
        return "Binding(%r, installed=%r)" % (self.capability_id, self.installed)


class Subscription(Owner):
    """A snapshot subscription; ``close()`` unsubscribes. The runtime keeps
    it in effect until it is closed, whether or not you keep the object."""

    _state: "weakref.ReferenceType[_RuntimeState]"

    @classmethod
    def _adopt(cls, ptr: int, state: _RuntimeState) -> "Subscription":
        s = cls.__new__(cls)
        s._own(ptr, lib.rcip_subscription_free, "subscription")
        s._state = weakref.ref(state)
        return s

    def close(self) -> None:
        """Unsubscribes."""
        super().close()
        state = self._state()
        if state is not None:
            state.forget(self)

    def __enter__(self) -> "Subscription":
        return self


# ----- helpers -----------------------------------------------------------------------------


class _NoToken:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _token_use(token: Optional[CancelToken]) -> Any:
    if token is None:
        return _NoToken()
    if not isinstance(token, CancelToken):
        raise TypeError("rcip: cancel must be a CancelToken")
    return token._handle.use()


def _proposal(p: ProposalLike) -> Proposal:
    if isinstance(p, Proposal):
        return p
    if isinstance(p, tuple):
        capability_id, value = p
        return Proposal(capability_id, value)
    if isinstance(p, Mapping):
        if "capability_id" in p:
            return Proposal(p["capability_id"], p.get("input"), p.get("input_json"))
        return Proposal(p["capabilityId"], p.get("input"), p.get("inputRaw"))
    raise TypeError("rcip: a proposal is a Proposal, a (capability_id, input) pair or a mapping")


def _wait(future: "concurrent.futures.Future[_T]", timeout: Optional[float], token: Optional[CancelToken], what: str) -> _T:
    """The future's result; ``TimeoutError`` naming ``what`` after ``timeout`` seconds."""
    try:
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            raise TimeoutError("rcip: %s timed out after %g s" % (what, timeout or 0)) from None
    except BaseException:
        # Interrupted or timed out: stop waiting, and end the operation.
        if token is not None and not future.done():
            try:
                token.cancel()
            except BaseException:  # noqa: BLE001
                pass
        raise


async def _await(future: "concurrent.futures.Future[_T]", token: Optional[CancelToken]) -> _T:
    try:
        return await asyncio.wrap_future(future)
    except asyncio.CancelledError:
        if token is not None and not future.done():
            token.cancel()
        raise


def abi_version() -> int:
    """``rcip_abi_version()`` of the loaded library."""
    return _lib.ABI_VERSION


def library_version() -> str:
    """The loaded library's version (``rcip_version()``)."""
    return str(_lib.LIBRARY_VERSION)


def library_path() -> str:
    """The file the library was loaded from."""
    return str(_lib.LIBRARY_PATH)

