//! Issue 27, item 6: `rcip_record_parse` and `rcip_record_free` on records
//! nested up to the documented 100,000 levels, on host threads with a
//! 64 KiB stack. Before the fix, nested preflight `outcomes` and nested
//! arrays overflowed such a stack (SIGSEGV) far below that bound: the
//! record's value was read, written and dropped by recursion, one frame per
//! level, and the record's entries freed the same way.

use rcip_capi::record::*;
use rcip_capi::result::*;
use std::ffi::{c_char, CStr, CString};
use std::ptr;

/// The stack the tests' host threads get (what the issue measured on).
const SMALL_STACK: usize = 64 * 1024;

/// Runs `f` on a thread with a 64 KiB stack and waits for it.
fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(SMALL_STACK)
        .spawn(f)
        .unwrap()
        .join()
        .expect("the small-stack thread panicked");
}

unsafe fn text(p: *const c_char) -> Option<String> {
    (!p.is_null()).then(|| CStr::from_ptr(p).to_str().unwrap().to_string())
}

/// A record that nests `levels` levels of arrays and objects in all: an
/// outcome whose output is `levels - 1` nested arrays around `1`.
fn nested_output(levels: usize) -> CString {
    let n = levels - 1;
    CString::new(format!(
        r#"{{"status": "succeeded", "output": {}1{}}}"#,
        "[".repeat(n),
        "]".repeat(n)
    ))
    .unwrap()
}

/// A preflight report whose first entry holds a report, whose entry holds a
/// report... `entries` reports deep (2 JSON levels each, plus the innermost
/// entry object): the innermost entry is `blocked` with one issue.
fn nested_outcomes(entries: usize) -> CString {
    let mut s = String::new();
    for _ in 0..entries {
        s.push_str(r#"{"status": "ready", "capabilityId": "a.b", "outcomes": ["#);
    }
    s.push_str(
        r#"{"status": "blocked", "error": {"code": "INPUT_INVALID", "message": "m",
            "validationIssues": [{"instancePath": "/x", "keyword": "type", "message": "t"}]}}"#,
    );
    for _ in 0..entries {
        s.push_str("]}");
    }
    CString::new(s).unwrap()
}

unsafe fn parse(json: &CStr) -> *mut rcip_record {
    let mut rec = ptr::null_mut();
    let rc = rcip_record_parse(json.as_ptr(), &mut rec);
    assert_eq!(rc, rcip_result::Ok);
    assert!(!rec.is_null());
    rec
}

/// Nested arrays at every depth from shallow to the documented bound read,
/// and read back whole (the output text is every bracket), and free, all
/// on a 64 KiB stack; one level more is refused as not JSON.
#[test]
fn nested_arrays_up_to_the_documented_depth_read_and_free_on_a_64_kib_stack() {
    on_small_stack(|| unsafe {
        for levels in [2, 8, 9, 17, 64, 500, 999, 1000, 1001, 5000, 100_000] {
            let json = nested_output(levels);
            let rec = parse(&json);
            let out = text(rcip_record_output(rec)).unwrap();
            assert_eq!(out.len(), 2 * (levels - 1) + 1, "{levels} levels");
            assert!(out.starts_with("[[") || levels < 3);
            assert_eq!(text(rcip_record_status(rec)).as_deref(), Some("succeeded"));
            rcip_record_free(rec);
        }
        let mut rec = ptr::null_mut();
        let too_deep = nested_output(100_001);
        assert_eq!(rcip_record_parse(too_deep.as_ptr(), &mut rec), rcip_result::InvalidJson);
        assert!(rec.is_null());
        // Unclosed deep text is refused too, without a crash (10,000
        // levels: serde_json works out the error's line once per level on
        // the way out, so refusing 99,000 took 44 s in a debug build).
        let unclosed = CString::new(format!(r#"{{"output": {}"#, "[".repeat(10_000))).unwrap();
        assert_eq!(rcip_record_parse(unclosed.as_ptr(), &mut rec), rcip_result::InvalidJson);
        assert!(rec.is_null());
    });
}

/// Short text (read by serde_json without its stack guard) at every
/// length up to where the guard starts, as deep as it can be: arrays,
/// objects, closed and unclosed.
#[test]
fn short_deep_text_reads_or_is_refused_on_a_64_kib_stack() {
    on_small_stack(|| unsafe {
        let mut rec = ptr::null_mut();
        for n in 1..=200 {
            let unclosed = CString::new("[".repeat(n)).unwrap();
            assert_eq!(rcip_record_parse(unclosed.as_ptr(), &mut rec), rcip_result::InvalidJson);
            let arrays = CString::new(format!("{}{}", "[".repeat(n), "]".repeat(n))).unwrap();
            assert_eq!(
                rcip_record_parse(arrays.as_ptr(), &mut rec),
                rcip_result::InvalidArgument
            );
            let objects = CString::new(format!(r#"{}1{}"#, r#"{"":"#.repeat(n), "}".repeat(n))).unwrap();
            let r = parse(&objects);
            rcip_record_free(r);
        }
    });
}

/// Objects nest the same way as arrays (the output of a record whose
/// keys hold objects).
#[test]
fn nested_objects_read_and_free_on_a_64_kib_stack() {
    on_small_stack(|| unsafe {
        for n in [100, 999, 20_000, 99_998] {
            let json = CString::new(format!(
                r#"{{"status": "succeeded", "output": {}"z"{}}}"#,
                r#"{"k":"#.repeat(n),
                "}".repeat(n)
            ))
            .unwrap();
            let rec = parse(&json);
            let out = text(rcip_record_output(rec)).unwrap();
            assert_eq!(out.len(), 5 * n + 3 + n, "{n} levels");
            rcip_record_free(rec);
        }
    });
}

/// Preflight reports nested in their entries (hostile text: rcip never
/// makes one) read entry by entry down to the innermost, and free, on a
/// 64 KiB stack, up to the documented depth.
#[test]
fn nested_preflight_outcomes_read_and_free_on_a_64_kib_stack() {
    on_small_stack(|| unsafe {
        // 49,998 reports: 99,997 JSON levels with the innermost entry.
        for entries in [1, 8, 249, 499, 2500, 20_000, 49_998] {
            let json = nested_outcomes(entries);
            let rec = parse(&json);
            let mut at: *const rcip_record = rec;
            for _ in 0..entries {
                assert_eq!(rcip_record_entry_count(at), 1);
                assert_eq!(text(rcip_record_status(at)).as_deref(), Some("ready"));
                at = rcip_record_entry(at, 0);
                assert!(!at.is_null());
            }
            assert_eq!(rcip_record_entry_count(at), 0);
            assert_eq!(text(rcip_record_status(at)).as_deref(), Some("blocked"));
            assert_eq!(text(rcip_record_error_code(at)).as_deref(), Some("INPUT_INVALID"));
            assert_eq!(rcip_record_issue_count(at), 1);
            assert_eq!(text(rcip_record_issue_keyword(at, 0)).as_deref(), Some("type"));
            rcip_record_free(rec);
        }
        let mut rec = ptr::null_mut();
        let too_deep = nested_outcomes(50_000);
        assert_eq!(rcip_record_parse(too_deep.as_ptr(), &mut rec), rcip_result::InvalidJson);
        assert!(rec.is_null());
    });
}

/// A deep record parsed on one thread is freed on another whose stack is
/// 64 KiB (records are shared; the host frees where it likes).
#[test]
fn a_deep_record_frees_on_a_64_kib_stack_after_parsing_elsewhere() {
    let json = nested_outcomes(49_998);
    let rec = unsafe { parse(&json) } as usize;
    on_small_stack(move || unsafe { rcip_record_free(rec as *mut rcip_record) });
}

/// Deep text with an error costs what a success does, not a scan of the
/// text per level: serde_json works out the error's line once per level on
/// the way out, which over a slice scanned from the start each time (8 MB
/// of text with an error 99,990 levels deep took 38 s in a release build).
#[test]
fn a_deep_error_after_long_text_is_refused_in_linear_time() {
    let pad = "a".repeat(4_000_000);
    let bad = CString::new(format!(r#"{{"pad": "{pad}", "output": {}x"#, "[".repeat(99_990))).unwrap();
    let good = CString::new(format!(
        r#"{{"pad": "{pad}", "output": {}1{}}}"#,
        "[".repeat(99_990),
        "]".repeat(99_990)
    ))
    .unwrap();
    on_small_stack(move || unsafe {
        let t = std::time::Instant::now();
        let rec = parse(&good);
        rcip_record_free(rec);
        let success = t.elapsed();
        let t = std::time::Instant::now();
        let mut rec = ptr::null_mut();
        assert_eq!(rcip_record_parse(bad.as_ptr(), &mut rec), rcip_result::InvalidJson);
        assert!(rec.is_null());
        let refusal = t.elapsed();
        // Generous (a loaded machine, a debug build): the scan per level
        // took minutes here.
        assert!(
            refusal < success * 4 + std::time::Duration::from_secs(2),
            "refused in {refusal:?}, read in {success:?}"
        );
    });
}
