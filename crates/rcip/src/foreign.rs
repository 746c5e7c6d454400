//! Foreign data and foreign callbacks: the neutral bottom layer that lets
//! the runtime keep what a language binding registered (a C host's function
//! pointers and user data) without naming that binding or its calling
//! convention (docs/ARCHITECTURE.md, "Crates").
//!
//! The runtime stores these values on its fast paths (an invocation's
//! outcome callback kept inline, a binding's availability callback called
//! without a trait object). A foreign function is kept as two words: the
//! binding's own function pointer, erased to a [`Code`], and a Rust
//! trampoline of the binding's that knows the pointer's real type and calls
//! it. The C ABI crate (`rcip-capi`) makes them from its exported callback
//! types; this crate never declares or calls an `extern "C"` function.
//!
//! Shapes: user data is an opaque pointer (`*mut c_void`) that this crate
//! never reads; text is lent as a NUL-terminated UTF-8 pointer, valid during
//! the call only.
//!
//! Thread safety: a binding that makes these values promises its host's
//! functions and user data may be used from any thread (concurrently where
//! it documents so; the C header says it for every callback type); that
//! promise is what makes these types `Send` and `Sync`.

use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::{AtomicBool, Ordering};

/// A binding's function pointer with its type erased. Only the trampoline
/// that was paired with it knows its real type and calls it.
pub type Code = *const ();

/// A trampoline for a release function: calls `code` with the user data.
pub type ReleaseCall = unsafe fn(code: Code, user_data: *mut c_void);

/// A trampoline for a text callback: calls `code` with the user data and a
/// NUL-terminated UTF-8 text lent for the call.
pub type TextCall = unsafe fn(code: Code, user_data: *mut c_void, text: *const c_char);

/// A trampoline for a slot callback: calls `code` with the user data and a
/// slot lent for the call; returns the foreign function's status (0 for an
/// answer, anything else for a failure).
pub type SlotCall<S> = unsafe fn(code: Code, user_data: *mut c_void, slot: *mut S) -> i32;

/// The release function of host data, called once with that data.
#[derive(Clone, Copy)]
pub struct Release {
    code: Code,
    call: ReleaseCall,
}

// Safety: see the module documentation.
unsafe impl Send for Release {}
unsafe impl Sync for Release {}

impl Release {
    /// Pairs a binding's release function with its trampoline.
    ///
    /// # Safety
    /// `call(code, data)` must be sound for the user data this release
    /// function will be given, once, from any thread.
    #[inline]
    pub unsafe fn new(code: Code, call: ReleaseCall) -> Release {
        Release { code, call }
    }
}

/// Host data and its release function, called exactly once when the value
/// drops (on the dropping thread, after the last callback that used the
/// data), unless [`UserData::disarm`] ran first.
pub struct UserData {
    ptr: *mut c_void,
    free: Option<Release>,
    armed: AtomicBool,
}

// Safety: see the module documentation.
unsafe impl Send for UserData {}
unsafe impl Sync for UserData {}

impl UserData {
    /// Host data `ptr`, released with `free` (none: nothing to release).
    #[inline]
    pub fn new(ptr: *mut c_void, free: Option<Release>) -> UserData {
        UserData {
            ptr,
            free,
            armed: AtomicBool::new(true),
        }
    }

    /// After a failed registration: the host keeps its data, so the release
    /// function must never run.
    #[inline]
    pub fn disarm(&self) {
        self.armed.store(false, Ordering::SeqCst);
    }

    /// The host's pointer, as it was registered.
    #[inline]
    pub fn ptr(&self) -> *mut c_void {
        self.ptr
    }

    /// Releases the data now (once; the drop then does nothing), for data
    /// whose registration ends before its holder goes (an MCP server
    /// session's data, released when the session ends while a host handle
    /// may still hold the session's runtime).
    #[inline]
    pub fn release(&self) {
        if self.armed.swap(false, Ordering::SeqCst) {
            self.call_free();
        }
    }

    fn call_free(&self) {
        if let Some(free) = self.free {
            // Safety: `Release::new`'s contract; called once (the armed flag).
            unsafe { (free.call)(free.code, self.ptr) };
        }
    }
}

impl Drop for UserData {
    fn drop(&mut self) {
        if self.armed.load(Ordering::SeqCst) {
            self.call_free();
        }
    }
}

/// A one-shot text callback (an outcome or a preflight report) and its user
/// data. [`OnceText::call`] consumes it, so it runs at most once; the user
/// data is released right after the call, or never when
/// [`OnceText::disarm`] ran.
pub struct OnceText {
    code: Code,
    call: TextCall,
    user_data: UserData,
}

// Safety: see the module documentation.
unsafe impl Send for OnceText {}

impl OnceText {
    /// Pairs a binding's text callback with its trampoline and user data.
    ///
    /// # Safety
    /// `call(code, user_data, text)` must be sound once, from any thread,
    /// for a text valid during the call.
    #[inline]
    pub unsafe fn new(code: Code, call: TextCall, user_data: UserData) -> OnceText {
        OnceText { code, call, user_data }
    }

    /// Calls the callback with `text` (valid during the call only), then
    /// releases the user data.
    #[inline]
    pub fn call(self, text: &CStr) {
        // Safety: `new`'s contract; the text lives across the call.
        unsafe { (self.call)(self.code, self.user_data.ptr(), text.as_ptr()) };
        // `self` drops here: the release function runs after the callback.
    }

    /// The registering call failed: the host keeps its data.
    #[inline]
    pub fn disarm(self) {
        self.user_data.disarm();
    }
}

/// A foreign function that answers through a slot of type `S` the caller
/// lends for the call (an availability callback writing into its sink), and
/// its user data pointer. Copyable: the user data is owned elsewhere (the
/// binding record that registered it), which outlives every copy the
/// runtime keeps.
pub struct SlotFn<S> {
    code: Code,
    call: SlotCall<S>,
    user_data: *mut c_void,
}

impl<S> Clone for SlotFn<S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for SlotFn<S> {}

// Safety: see the module documentation.
unsafe impl<S> Send for SlotFn<S> {}
unsafe impl<S> Sync for SlotFn<S> {}

impl<S> SlotFn<S> {
    /// Pairs a binding's slot callback with its trampoline and user data.
    ///
    /// # Safety
    /// `user_data` stays valid for as long as any copy of the result may be
    /// called, and `call(code, user_data, slot)` is sound from any thread.
    #[inline]
    pub unsafe fn new(code: Code, call: SlotCall<S>, user_data: *mut c_void) -> SlotFn<S> {
        SlotFn { code, call, user_data }
    }

    /// Calls the function with `slot` lent for the call; its return value
    /// (0 for an answer, anything else for a failure).
    #[inline]
    pub fn call(self, slot: &mut S) -> i32 {
        // Safety: `new`'s contract; the slot lives across the call.
        unsafe { (self.call)(self.code, self.user_data, slot) }
    }
}
