//! One set of typed conversions for every opaque handle (docs/C-ABI.md,
//! "Names and handles"): each handle type of the header is an opaque marker struct, and the
//! kind of pointer it stands for is declared once with [`handle_kind!`]:
//!
//! - **owned**: a `Box<Target>` the host owns and frees once with the type's
//!   `_free` ([`into_owned`], [`owned`], [`owned_mut`], [`clone_owned`],
//!   [`free_owned`], [`take_owned`], [`lend_owned`], [`owned_arg`]);
//! - **counted**: one reference of a reference-counted `Target` (an
//!   [`Counted::Target`] that is a single counted pointer, as `Arc<T>`);
//!   each handle is freed once ([`into_counted`], [`counted`],
//!   [`free_counted`], [`counted_arg`]);
//! - **lent**: a view of a `Target` that another object owns (a sink lent
//!   to a callback, a runtime's client surface); never freed by the host
//!   ([`lend_mut`], [`view_of`], [`lent`], [`lent_mut`], [`lent_arg`]).
//!
//! The functions take the marker type, so reading or freeing a handle as
//! another type, or freeing a lent handle, does not compile. NULL reads as
//! `None` and frees as a no-op everywhere.

use super::guard::{FfiError, FfiResult};
use std::mem::ManuallyDrop;

/// A handle type whose pointers are `Box<Self::Target>`.
///
/// # Safety
/// Implemented through [`handle_kind!`] for an opaque marker type only;
/// every pointer of the type comes from [`into_owned`] (or, lent by the
/// library, from [`lend_owned`]).
pub(crate) unsafe trait Owned {
    type Target;
}

/// A value that is one counted reference held as a single pointer (an
/// `Arc<T>`, or a runtime type around one).
///
/// # Safety
/// `from_raw(into_raw(v))` gives back `v`; the pointer stays valid while
/// the reference is held.
pub(crate) unsafe trait RawCount: Sized {
    /// What the pointer points at.
    type Pointee;
    fn into_raw(self) -> *const Self::Pointee;
    /// # Safety
    /// `raw` came from `into_raw` and is given back once.
    unsafe fn from_raw(raw: *const Self::Pointee) -> Self;
}

unsafe impl<T> RawCount for std::sync::Arc<T> {
    type Pointee = T;
    fn into_raw(self) -> *const T {
        std::sync::Arc::into_raw(self)
    }
    unsafe fn from_raw(raw: *const T) -> Self {
        std::sync::Arc::from_raw(raw)
    }
}

/// A handle type whose pointers are each one reference of `Self::Target`.
///
/// # Safety
/// As [`Owned`]; every pointer comes from [`into_counted`] or
/// a library-made reference.
pub(crate) unsafe trait Counted {
    type Target: RawCount;
}

/// A handle type whose pointers are borrowed `&Self::Target`, valid for as
/// long as the lending object documents.
///
/// # Safety
/// As [`Owned`]; every pointer comes from [`lend_mut`] or [`view_of`].
pub(crate) unsafe trait Lent {
    type Target;
}

/// Declares the kind of an opaque handle type:
/// `handle_kind!(owned rcip_catalog => Catalog)`,
/// `handle_kind!(counted rcip_snapshot => Arc<Snapshot>)`,
/// `handle_kind!(lent rcip_client => Runtime)`.
macro_rules! handle_kind {
    (owned $handle:ty => $target:ty) => {
        // Safety: the marker is opaque and built only by `into_owned`.
        unsafe impl $crate::handle::Owned for $handle {
            type Target = $target;
        }
    };
    (counted $handle:ty => $target:ty) => {
        // Safety: the marker is opaque and built only by `into_counted`.
        unsafe impl $crate::handle::Counted for $handle {
            type Target = $target;
        }
    };
    (lent $handle:ty => $target:ty) => {
        // Safety: the marker is opaque and built only by `lend_mut`/`view_of`.
        unsafe impl $crate::handle::Lent for $handle {
            type Target = $target;
        }
    };
}
pub(crate) use handle_kind;

/// A new owned handle; the host frees it with the type's `_free`.
pub(crate) fn into_owned<H: Owned>(value: H::Target) -> *mut H {
    Box::into_raw(Box::new(value)).cast()
}

/// Reads an owned handle for the length of a call.
///
/// # Safety
/// `handle` is NULL or a live handle of type `H`.
pub(crate) unsafe fn owned<'a, H: Owned>(handle: *const H) -> Option<&'a H::Target> {
    handle.cast::<H::Target>().as_ref()
}

/// As [`owned`], mutably (a handle documented "one thread at a time").
///
/// # Safety
/// As [`owned`], and no other reference to it is in use.
pub(crate) unsafe fn owned_mut<'a, H: Owned>(handle: *mut H) -> Option<&'a mut H::Target> {
    handle.cast::<H::Target>().as_mut()
}

/// A new owned handle holding a clone of what `handle` holds (for a
/// `Target` that is itself shared, as a cancellation token).
///
/// # Safety
/// As [`owned`].
pub(crate) unsafe fn clone_owned<H: Owned>(handle: *const H) -> Option<*mut H>
where
    H::Target: Clone,
{
    owned(handle).map(|t| into_owned::<H>(t.clone()))
}

/// Takes an owned handle back (NULL gives `None`).
///
/// # Safety
/// `handle` is NULL or a live handle of type `H`, given back once.
pub(crate) unsafe fn take_owned<H: Owned>(handle: *mut H) -> Option<Box<H::Target>> {
    (!handle.is_null()).then(|| Box::from_raw(handle.cast::<H::Target>()))
}

/// Frees an owned handle (NULL does nothing).
///
/// # Safety
/// As [`take_owned`].
pub(crate) unsafe fn free_owned<H: Owned>(handle: *mut H) {
    drop(take_owned(handle));
}

/// The address an owned handle of `target` would have, for a value the
/// library keeps itself and lends out (the host must not free it; the
/// lending function says so).
pub(crate) fn lend_owned<H: Owned>(target: &H::Target) -> *const H {
    (target as *const H::Target).cast()
}

/// The lent view `V` of an owned handle (the same address: a runtime's
/// client and host surfaces). No memory is read, so NULL gives NULL and a
/// safe export may call it.
pub(crate) fn view_of<H: Owned, V: Lent<Target = H::Target>>(handle: *const H) -> *const V {
    handle.cast()
}

/// A new counted handle holding the reference `value`.
pub(crate) fn into_counted<H: Counted>(value: H::Target) -> *mut H {
    value.into_raw().cast_mut().cast()
}

/// Borrows a counted handle for the length of a call (dropping the result
/// does not release the reference).
///
/// # Safety
/// `handle` is NULL or a live handle of type `H`; the result does not
/// outlive it.
pub(crate) unsafe fn counted<H: Counted>(handle: *const H) -> Option<ManuallyDrop<H::Target>> {
    (!handle.is_null()).then(|| ManuallyDrop::new(H::Target::from_raw(handle.cast())))
}

/// Releases the reference a counted handle holds (NULL does nothing).
///
/// # Safety
/// `handle` is NULL or a live handle of type `H`, freed once.
pub(crate) unsafe fn free_counted<H: Counted>(handle: *const H) {
    if !handle.is_null() {
        drop(H::Target::from_raw(handle.cast()));
    }
}

/// Lends `target` as a handle of type `H` that may be written through.
pub(crate) fn lend_mut<H: Lent>(target: &mut H::Target) -> *mut H {
    (target as *mut H::Target).cast()
}

/// Reads a lent handle for the length of a call.
///
/// # Safety
/// `handle` is NULL or a handle of type `H` that is still valid.
pub(crate) unsafe fn lent<'a, H: Lent>(handle: *const H) -> Option<&'a H::Target> {
    handle.cast::<H::Target>().as_ref()
}

/// As [`lent`], mutably (a sink written during its callback).
///
/// # Safety
/// As [`lent`], and no other reference to it is in use.
pub(crate) unsafe fn lent_mut<'a, H: Lent>(handle: *mut H) -> Option<&'a mut H::Target> {
    handle.cast::<H::Target>().as_mut()
}

/// A required owned-handle argument: `RCIP_RESULT_NULL_ARGUMENT` naming
/// `name` when NULL.
///
/// # Safety
/// As [`owned`].
pub(crate) unsafe fn owned_arg<'a, H: Owned>(handle: *const H, name: &str) -> FfiResult<&'a H::Target> {
    owned(handle).ok_or_else(|| FfiError::null(name))
}

/// A required lent-handle argument (as [`owned_arg`]).
///
/// # Safety
/// As [`lent`].
pub(crate) unsafe fn lent_arg<'a, H: Lent>(handle: *const H, name: &str) -> FfiResult<&'a H::Target> {
    lent(handle).ok_or_else(|| FfiError::null(name))
}

/// A required counted-handle argument (as [`owned_arg`]).
///
/// # Safety
/// As [`counted`].
pub(crate) unsafe fn counted_arg<H: Counted>(handle: *const H, name: &str) -> FfiResult<ManuallyDrop<H::Target>> {
    counted(handle).ok_or_else(|| FfiError::null(name))
}
