//! `rcip_mcp_session_serve_stdio` from two threads: the second call answers
//! `RCIP_RESULT_ALREADY_USED` at once instead of waiting for standard input.
//! Its own test binary, because it points the process's fd 0 at a pipe.

use rcip_capi::catalog::*;
use rcip_capi::mcp::*;
use rcip_capi::result::*;
use rcip_capi::runtime::*;
use std::ffi::CString;
use std::ptr;
use std::sync::mpsc;
use std::time::Duration;

const CATALOG: &str = r#"{"protocolVersion": "1.0",
 "application": {"id": "app", "name": "App", "description": "Test."},
 "scopes": [],
 "capabilities": [
  {"id": "items.list", "title": "List", "description": "Lists items.", "scopeIds": [], "effect": "read",
   "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}}]}"#;

/// The session pointer, moved to the serving thread (the session is
/// synchronized; the test frees it only after both calls returned).
struct Session(*mut rcip_mcp_session);
unsafe impl Send for Session {}

#[test]
fn a_second_serve_stdio_fails_at_once_while_the_first_serves() {
    unsafe {
        let mut catalog = ptr::null_mut();
        let text = CString::new(CATALOG).unwrap();
        assert_eq!(rcip_catalog_new(text.as_ptr(), &mut catalog), rcip_result::Ok);
        let mut builder = ptr::null_mut();
        assert_eq!(rcip_runtime_builder_new(catalog, &mut builder), rcip_result::Ok);
        let mut runtime = ptr::null_mut();
        assert_eq!(rcip_runtime_builder_build(builder, &mut runtime), rcip_result::Ok);
        let mut session = ptr::null_mut();
        assert_eq!(
            rcip_mcp_session_new(runtime, ptr::null(), None, ptr::null_mut(), None, &mut session),
            rcip_result::Ok
        );

        // fd 0 becomes the read end of a pipe that stays open (no input yet).
        let mut fds = [0i32; 2];
        assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
        let saved = libc::dup(0);
        assert!(saved >= 0);
        assert_eq!(libc::dup2(fds[0], 0), 0);

        let (first_done, first_rx) = mpsc::channel();
        let s = Session(session);
        let first = std::thread::spawn(move || {
            let s = s;
            let rc = rcip_mcp_session_serve_stdio(s.0);
            first_done.send(rc).unwrap();
        });
        // The first call is serving once it has nothing to read; give it time
        // to claim the session and lock standard input.
        std::thread::sleep(Duration::from_millis(200));
        assert!(
            first_rx.try_recv().is_err(),
            "the first call returned before input ended"
        );

        let (second_done, second_rx) = mpsc::channel();
        let s = Session(session);
        let second = std::thread::spawn(move || {
            let s = s;
            second_done.send(rcip_mcp_session_serve_stdio(s.0)).unwrap();
        });
        let rc = second_rx.recv_timeout(Duration::from_secs(10));
        // End the input either way, so the first call (and a blocked second
        // one) return before the test reports.
        libc::close(fds[1]);
        assert_eq!(
            rc,
            Ok(rcip_result::AlreadyUsed),
            "the second call must fail at once, not wait for standard input"
        );
        assert_eq!(first_rx.recv_timeout(Duration::from_secs(10)), Ok(rcip_result::Ok));
        first.join().unwrap();
        second.join().unwrap();

        libc::dup2(saved, 0);
        libc::close(saved);
        libc::close(fds[0]);
        rcip_mcp_session_free(session);
        rcip_runtime_free(runtime);
        rcip_catalog_free(catalog);
    }
}
