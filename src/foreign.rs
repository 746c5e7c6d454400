//! Foreign data and one-shot foreign callbacks: the neutral bottom layer
//! that lets the runtime keep what a C host registered without naming the C
//! ABI (DESIGN.md, "Layers"; docs/ARCHITECTURE.md).
//!
//! The runtime stores these values on its fast paths (an invocation's
//! outcome callback kept inline, a binding's availability callback called
//! without a trait object); the C ABI module (`src/ffi`) builds them from the exported
//! callback types, which are the same function-pointer types under their C
//! names. This module names no other module of the crate.
//!
//! Thread safety: the C header tells the host that user data is used from
//! any thread (concurrently for callbacks documented so); that promise is
//! what makes these types `Send` and `Sync`.

use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::{AtomicBool, Ordering};

/// The release function of host data (`rcip_user_data_free_callback`).
pub(crate) type FreeFn = Option<unsafe extern "C" fn(user_data: *mut c_void)>;

/// Host data and its release function, called exactly once when the value
/// drops (on the dropping thread, after the last callback that used the
/// data), unless [`UserData::disarm`] ran first.
pub(crate) struct UserData {
    ptr: *mut c_void,
    free: FreeFn,
    armed: AtomicBool,
}

// Safety: see the module documentation.
unsafe impl Send for UserData {}
unsafe impl Sync for UserData {}

impl UserData {
    pub(crate) fn new(ptr: *mut c_void, free: FreeFn) -> UserData {
        UserData {
            ptr,
            free,
            armed: AtomicBool::new(true),
        }
    }

    /// After a failed registration: the host keeps its data, so the release
    /// function must never run.
    pub(crate) fn disarm(&self) {
        self.armed.store(false, Ordering::SeqCst);
    }

    pub(crate) fn ptr(&self) -> *mut c_void {
        self.ptr
    }

    /// Releases the data now (once; the drop then does nothing), for data
    /// whose registration ends before its holder goes (an MCP server
    /// session's data, released when the session ends while a host handle
    /// may still hold the session's runtime).
    pub(crate) fn release(&self) {
        if self.armed.swap(false, Ordering::SeqCst) {
            if let Some(free) = self.free {
                // Safety: the host registered this pair; it is called once.
                unsafe { free(self.ptr) };
            }
        }
    }
}

impl Drop for UserData {
    fn drop(&mut self) {
        if !self.armed.load(Ordering::SeqCst) {
            return;
        }
        if let Some(free) = self.free {
            // Safety: the host registered this pair; it is called once.
            unsafe { free(self.ptr) };
        }
    }
}

/// A one-shot text callback (an outcome or a preflight report:
/// `rcip_outcome_callback`, `rcip_report_callback`) and its user data.
/// [`OnceText::call`] consumes it, so it runs at most once; the user data is
/// released right after the call, or never when [`OnceText::disarm`] ran.
pub(crate) struct OnceText {
    cb: unsafe extern "C" fn(*mut c_void, *const c_char),
    user_data: UserData,
}

impl OnceText {
    pub(crate) fn new(cb: unsafe extern "C" fn(*mut c_void, *const c_char), user_data: UserData) -> OnceText {
        OnceText { cb, user_data }
    }

    /// Calls the callback with `text` (valid during the call only), then
    /// releases the user data.
    pub(crate) fn call(self, text: &CStr) {
        // Safety: the host's function with the host's data; the text lives
        // across the call.
        unsafe { (self.cb)(self.user_data.ptr(), text.as_ptr()) };
        // `self` drops here: the release function runs after the callback.
    }

    /// The registering call failed: the host keeps its data.
    pub(crate) fn disarm(self) {
        self.user_data.disarm();
    }
}

/// A foreign function that answers through a slot of type `S` the caller
/// lends for the call (an availability callback writing into its sink), and
/// its user data pointer. Copyable: the user data is owned elsewhere (the
/// binding record that registered it), which outlives every copy the
/// runtime keeps.
pub(crate) struct SlotFn<S> {
    cb: unsafe extern "C" fn(*mut c_void, *mut S) -> i32,
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
    /// # Safety
    /// `user_data` stays valid for as long as any copy of the result may be
    /// called, and `cb` may be called with it from any thread.
    pub(crate) unsafe fn new(
        cb: unsafe extern "C" fn(*mut c_void, *mut S) -> i32,
        user_data: *mut c_void,
    ) -> SlotFn<S> {
        SlotFn { cb, user_data }
    }

    /// Calls the function with `slot` lent for the call; its return value
    /// (0 for an answer, anything else for a failure).
    pub(crate) fn call(self, slot: &mut S) -> i32 {
        // Safety: `new`'s contract; the slot lives across the call.
        unsafe { (self.cb)(self.user_data, slot) }
    }
}
