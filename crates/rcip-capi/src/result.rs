//! Result codes and the per-thread error message (docs/C-ABI.md, "Errors").

use super::guard::ffi_guard_or;
use std::cell::{Cell, RefCell};
use std::ffi::{c_char, CStr, CString};

/// The result of every fallible rcip function. `RCIP_RESULT_OK` is 0, so
/// `if (rc)` tests for failure. Values are grouped and never renumbered:
/// 1xx argument errors, 2xx host configuration, 3xx state, 9xx internal.
///
/// Protocol results (denied, failed, validation issues, RCIP error codes)
/// never appear here: they are outcome JSON delivered to outcome callbacks.
/// After a failing call, `rcip_last_error_message()` says what was wrong.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum rcip_result {
    /// Success.
    Ok = 0,
    /// A required pointer argument was NULL.
    NullArgument = 100,
    /// An identifier or text argument (capability id, invocation id,
    /// confirmation id, reason, availability reason) is not valid UTF-8. A
    /// JSON argument that is not UTF-8 is `RCIP_RESULT_INVALID_JSON`
    /// instead (a catalog: `RCIP_RESULT_INVALID_CATALOG`); capability input
    /// and handler output that are not UTF-8 are protocol outcomes
    /// (`INPUT_INVALID`, `OUTPUT_INVALID`), not result codes.
    InvalidUtf8 = 101,
    /// A JSON argument (context, filter, decision, schema, instance, MCP
    /// options) is not JSON text, or not UTF-8.
    InvalidJson = 102,
    /// An argument has the wrong shape or is out of range.
    InvalidArgument = 103,
    /// The catalog text is not a valid `RcipApplicationDefinition` (PIPELINE.md
    /// section 1), or a schema in it does not compile.
    InvalidCatalog = 200,
    /// The capability id is not declared in the catalog.
    NotInCatalog = 201,
    /// The capability already has a live binding.
    AlreadyBound = 202,
    /// A context names a scope the catalog does not declare.
    UnknownScope = 203,
    /// A context's `primaryScopeId` is not among its `activeScopeIds`.
    PrimaryNotActive = 204,
    /// The object is already in use or used up: an MCP session already
    /// serving standard input (`rcip_mcp_session_serve_stdio` called while
    /// another thread serves it); a pending outcome already handed over, or
    /// with a ready callback attached (`rcip_pending_wait`,
    /// `rcip_pending_on_ready`). A built builder is freed, so using it
    /// again is undefined rather than this code.
    AlreadyUsed = 300,
    /// The completion handle was settled before.
    AlreadyCompleted = 301,
    /// The runtime is closed (`rcip_runtime_close`, or freed while this
    /// handle lives); the handle can no longer act on it.
    Closed = 302,
    /// A preflight batch does not hold 1 to 16 proposals.
    PreflightBatchInvalid = 303,
    /// A runtime call from inside the runtime's clock or id generator; or a
    /// blocking wait for a pending outcome (`rcip_pending_wait`) where it
    /// could deadlock: inside a callback of the same runtime, or on the
    /// thread that runs its manual timers.
    WrongContext = 304,
    /// No live object has that id: an MCP server session that ended (or
    /// never existed); a confirmation that is not pending in the runtime
    /// (`rcip_host_carry_confirmation`).
    NotFound = 305,
    /// The operating system refused: an address that cannot be bound (in
    /// use, not local, no permission), or threads that cannot be started.
    Io = 306,
    /// A wait ended at its timeout before the outcome arrived
    /// (`rcip_pending_wait`); the outcome may still come.
    TimedOut = 307,
    /// The consumer of the invocation cannot do what the handler asked
    /// (**rcip**): `rcip_invocation_elicit` / `rcip_invocation_create_message`
    /// without an MCP client request (an approved re-run, an in-process
    /// consumer) or with a client that did not declare form elicitation /
    /// sampling.
    Unsupported = 310,
    /// An internal error (a caught panic). The call had no effect, or its
    /// effect is reported through the usual outcome. Any function returning
    /// `rcip_result` may return it, though no Errors list repeats it; a
    /// function returning a value returns its empty value then (NULL, false,
    /// 0), and one returning nothing just returns.
    Panic = 900,
}

impl rcip_result {
    /// Every code, in the order of the enum: the one table the library
    /// reads (`rcip_result_str`) and tests/bindings.rs checks the header and
    /// the bindings against. The enum above is the one definition: its
    /// values and C names go into include/rcip.h, and `rcip_result::text`
    /// matches on it exhaustively, so a new code without a text does not
    /// compile; one missing here fails tests/bindings.rs.
    /// (A function, not an associated constant: cbindgen would put a
    /// constant into the header.)
    pub fn all() -> &'static [rcip_result] {
        &ALL
    }

    /// The code with this value, if there is one.
    pub fn from_code(code: u32) -> Option<rcip_result> {
        ALL.into_iter().find(|r| *r as u32 == code)
    }

    /// The fixed sentence `rcip_result_str` gives for the code.
    pub fn text(self) -> &'static CStr {
        match self {
            rcip_result::Ok => c"success",
            rcip_result::NullArgument => c"a required pointer argument was NULL",
            rcip_result::InvalidUtf8 => c"a string argument is not valid UTF-8",
            rcip_result::InvalidJson => c"a JSON argument is not JSON text",
            rcip_result::InvalidArgument => c"an argument has the wrong shape or is out of range",
            rcip_result::InvalidCatalog => c"the catalog is not a valid RcipApplicationDefinition",
            rcip_result::NotInCatalog => c"the capability id is not declared in the catalog",
            rcip_result::AlreadyBound => c"the capability already has a live binding",
            rcip_result::UnknownScope => c"the context names a scope the catalog does not declare",
            rcip_result::PrimaryNotActive => c"the context's primaryScopeId is not among its activeScopeIds",
            rcip_result::AlreadyUsed => c"the object was already consumed",
            rcip_result::AlreadyCompleted => c"the completion handle was already settled",
            rcip_result::Closed => c"the runtime is closed",
            rcip_result::PreflightBatchInvalid => c"a preflight batch must hold 1 to 16 proposals",
            rcip_result::WrongContext => {
                c"not allowed here: a runtime call from the clock or id generator, or a wait that could deadlock"
            }
            rcip_result::NotFound => c"no live object has that id",
            rcip_result::Io => c"the operating system refused (address, threads)",
            rcip_result::TimedOut => c"the wait ended at its timeout before the outcome arrived",
            rcip_result::Unsupported => c"the invocation's consumer cannot do that (no client that supports it)",
            rcip_result::Panic => c"internal error (a panic was caught)",
        }
    }
}

const ALL: [rcip_result; 20] = [
    rcip_result::Ok,
    rcip_result::NullArgument,
    rcip_result::InvalidUtf8,
    rcip_result::InvalidJson,
    rcip_result::InvalidArgument,
    rcip_result::InvalidCatalog,
    rcip_result::NotInCatalog,
    rcip_result::AlreadyBound,
    rcip_result::UnknownScope,
    rcip_result::PrimaryNotActive,
    rcip_result::AlreadyUsed,
    rcip_result::AlreadyCompleted,
    rcip_result::Closed,
    rcip_result::PreflightBatchInvalid,
    rcip_result::WrongContext,
    rcip_result::NotFound,
    rcip_result::Io,
    rcip_result::TimedOut,
    rcip_result::Unsupported,
    rcip_result::Panic,
];

thread_local! {
    /// The message.
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
    /// Whether there is a message, and a count of its changes. Kept apart
    /// from the message: a cell of plain data needs no destructor, so every
    /// export's entry reads it without the registration check and borrow
    /// that the message's cell costs (about 30 instructions a call; a
    /// refresh makes one call per availability check, BENCHMARKS.md (h2)).
    static LAST_ERROR_STATE: Cell<(bool, u64)> = const { Cell::new((false, 0)) };
}

/// Clears this thread's last error message (every fallible export does it on
/// entry).
pub(crate) fn clear_last_error() {
    let (has, n) = LAST_ERROR_STATE.get();
    if has {
        LAST_ERROR.with(|e| *e.borrow_mut() = None);
        LAST_ERROR_STATE.set((false, n + 1));
    }
}

/// The message (copied when there is one) and its change count.
pub(crate) fn save_last_error() -> (Option<CString>, u64) {
    let (has, n) = LAST_ERROR_STATE.get();
    if has {
        (LAST_ERROR.with(|e| e.borrow().clone()), n)
    } else {
        (None, n)
    }
}

/// Puts a saved message back if it changed since it was saved.
pub(crate) fn restore_last_error(saved: (Option<CString>, u64)) {
    let (_, n) = LAST_ERROR_STATE.get();
    if n != saved.1 {
        let has = saved.0.is_some();
        LAST_ERROR.with(|e| *e.borrow_mut() = saved.0);
        LAST_ERROR_STATE.set((has, n + 1));
    }
}

/// Records this thread's last error message.
pub(crate) fn set_last_error(message: &str) {
    let text = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = Some(text));
    let (_, n) = LAST_ERROR_STATE.get();
    LAST_ERROR_STATE.set((true, n + 1));
}

/// Static text describing a result code.
///
/// Shape: one English sentence, never NULL; an unknown value gives
/// "unknown rcip_result value".
/// Ownership: the returned string is static; do not free it.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub extern "C" fn rcip_result_str(code: u32) -> *const c_char {
    ffi_guard_or!(c"unknown rcip_result value".as_ptr(), {
        rcip_result::from_code(code)
            .map_or(c"unknown rcip_result value", rcip_result::text)
            .as_ptr()
    })
}

/// The message of the latest failing rcip call on this thread.
///
/// Shape: one sentence naming the argument, JSON pointer or rule that
/// failed (never payload values or secrets); NULL when the rcip function
/// returning `rcip_result` that returned last on this thread returned
/// `RCIP_RESULT_OK`, also when callbacks it ran made calls that failed.
/// Ownership: owned by the library; valid until an rcip function that
/// returns `rcip_result` next starts or returns on this thread (each clears
/// or sets it; functions returning a value or nothing, `_free` included,
/// leave it as it was). Copy it if you need it longer; do not free it.
/// Thread safety: per OS thread (thread-local storage). A binding whose
/// language moves its tasks between OS threads (Go goroutines, async
/// runtimes) must read it on the thread of the failing call, before that
/// thread makes another call (Go: `runtime.LockOSThread` around both). A
/// failing call made inside a callback sets it until the call that ran the
/// callback returns, so read it right after the failing call.
#[unsafe(no_mangle)]
pub extern "C" fn rcip_last_error_message() -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        if !LAST_ERROR_STATE.get().0 {
            return std::ptr::null();
        }
        LAST_ERROR.with(|e| match &*e.borrow() {
            Some(s) => s.as_ptr(),
            None => std::ptr::null(),
        })
    })
}
