//! Where a session's outgoing messages go over Streamable HTTP (MCP
//! 2025-11-25, "Transports"), and the SSE bodies that carry them.
//!
//! Each session has streams: the standalone stream (id 0, what `GET`
//! opens: `list_changed`, requests not tied to a call) and one stream per
//! request answered as `text/event-stream`. A response goes to the stream
//! of its request; a request or notification on behalf of a client request
//! goes to that request's stream when it has one, else to the standalone
//! stream. Every event gets the id `<stream>-<seq>` and stays in the
//! stream's replay buffer, so a client that lost its connection resumes
//! with `Last-Event-ID` (SEP-1699); a dropped connection never loses a
//! response and never cancels the call (MCP: disconnection is not
//! cancellation).
//!
//! Bounds: at most `replay` events per stream are kept (the oldest
//! delivered go first, then undelivered notifications, counted as
//! dropped); undelivered responses and requests are always kept (their
//! number is bounded by the session's in-flight cap). Nothing here blocks:
//! the session's producers (host threads included) only queue and wake.

use crate::{McpOutput, MessageKind};
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::fmt::Write as _;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tokio::sync::oneshot;

/// The standalone stream's id.
pub(crate) const STANDALONE: u64 = 0;

struct Event {
    seq: u64,
    data: String,
    /// A response or a request: never dropped before delivery.
    keep: bool,
    list_changed: bool,
}

#[derive(Default)]
struct Stream {
    events: VecDeque<Event>,
    /// The seq of the last event queued (events start at 1).
    last_seq: u64,
    /// Events up to this seq were written to a connection.
    delivered: u64,
    /// The live connection (its number and waker), if any.
    attached: Option<(u64, Option<Waker>)>,
    /// Responses still due on this stream.
    due: usize,
    /// A request stream whose responses are all queued: its connection
    /// ends once they are written.
    finished: bool,
    /// End the current connection (the client polls back, SEP-1699).
    close_requested: bool,
}

enum Route {
    /// The answer as JSON: `None` when the request ends without one.
    Json(oneshot::Sender<Option<String>>),
    Stream(u64),
}

/// Request streams whose answers were all written, kept for a client that
/// lost the connection and resumes (a write to a dead connection looks
/// successful); the oldest beyond this many go.
const FINISHED_KEPT: usize = 64;

#[derive(Default)]
struct State {
    streams: HashMap<u64, Stream>,
    /// Finished request streams, oldest first, with the bytes of their
    /// events.
    finished: VecDeque<(u64, usize)>,
    /// The bytes of the finished streams' events, together.
    finished_bytes: usize,
    routes: HashMap<String, Route>,
    next_stream: u64,
    next_conn: u64,
    closed: bool,
    dropped: u64,
}

/// The routing table of one session; the session's [`McpOutput`].
pub(crate) struct Router {
    state: Mutex<State>,
    replay: usize,
    /// The most bytes of events the finished streams keep together (the
    /// newest finished stream is kept whatever its size).
    finished_budget: usize,
    /// The last activity: a request, an answer, a connection ending (the
    /// session's idle clock).
    last_active: Mutex<std::time::Instant>,
}

impl Router {
    #[cfg(test)]
    pub(crate) fn new(replay: usize) -> Router {
        Router::with_budget(replay, usize::MAX)
    }

    /// A router keeping `replay` events per stream and at most
    /// `finished_budget` bytes of events in its finished streams.
    pub(crate) fn with_budget(replay: usize, finished_budget: usize) -> Router {
        let mut state = State {
            next_stream: STANDALONE + 1,
            ..State::default()
        };
        state.streams.insert(STANDALONE, Stream::default());
        Router {
            state: Mutex::new(state),
            replay: replay.max(1),
            finished_budget,
            last_active: Mutex::new(std::time::Instant::now()),
        }
    }

    /// Restarts the idle clock.
    pub(crate) fn touch(&self) {
        *self.last_active.lock() = std::time::Instant::now();
    }

    /// When the session was last active.
    pub(crate) fn last_active(&self) -> std::time::Instant {
        *self.last_active.lock()
    }

    /// Routes the response to `key` into a channel (a JSON answer); None
    /// when `key` is in flight already or the router is closed.
    pub(crate) fn route_json(&self, key: String) -> Option<oneshot::Receiver<Option<String>>> {
        let (tx, rx) = oneshot::channel();
        let mut st = self.state.lock();
        if st.closed || st.routes.contains_key(&key) {
            return None;
        }
        st.routes.insert(key, Route::Json(tx));
        Some(rx)
    }

    /// Opens a stream for request `key` and routes its response there.
    /// None when `key` is in flight already or the router is closed.
    pub(crate) fn open_stream(&self, key: String) -> Option<u64> {
        let mut st = self.state.lock();
        if st.closed || st.routes.contains_key(&key) {
            return None;
        }
        let id = st.next_stream;
        st.next_stream += 1;
        st.streams.insert(
            id,
            Stream {
                due: 1,
                ..Stream::default()
            },
        );
        st.routes.insert(key, Route::Stream(id));
        Some(id)
    }

    /// Attaches a new connection to stream `id`, delivering from the
    /// event after `after` (None: the first event not yet delivered). The
    /// connection it replaces ends. None for an unknown stream or a closed
    /// router.
    pub(crate) fn attach(self: &Arc<Self>, id: u64, after: Option<u64>) -> Option<SseBody> {
        let (conn, cursor, old) = {
            let mut st = self.state.lock();
            if st.closed {
                return None;
            }
            st.next_conn += 1;
            let conn = st.next_conn;
            let stream = st.streams.get_mut(&id)?;
            let cursor = after.map_or(stream.delivered, |a| a.min(stream.last_seq));
            let old = stream.attached.replace((conn, None)).and_then(|(_, w)| w);
            stream.close_requested = false;
            (conn, cursor, old)
        };
        if let Some(w) = old {
            w.wake();
        }
        Some(SseBody {
            router: self.clone(),
            stream: id,
            conn,
            cursor,
            priming: true,
            retry_ms: None,
            keep_alive: None,
        })
    }

    /// Ends the current connection of stream `id` if its responses are
    /// still due (pollAfterMs): the client resumes with `Last-Event-ID`.
    pub(crate) fn request_close(&self, id: u64) {
        let waker = {
            let mut st = self.state.lock();
            match st.streams.get_mut(&id) {
                Some(s) if s.due > 0 && s.attached.is_some() => {
                    s.close_requested = true;
                    s.attached.as_mut().and_then(|(_, w)| w.take())
                }
                _ => None,
            }
        };
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// True while a connection is attached to any stream or a response is
    /// due (the session is not idle then).
    pub(crate) fn busy(&self) -> bool {
        let st = self.state.lock();
        !st.routes.is_empty() || st.streams.values().any(|s| s.attached.is_some())
    }

    /// [`busy`](Self::busy) without counting a connection on the
    /// standalone stream (an idle `GET`).
    pub(crate) fn busy_apart_from_standalone(&self) -> bool {
        let st = self.state.lock();
        !st.routes.is_empty()
            || st
                .streams
                .iter()
                .any(|(id, s)| *id != STANDALONE && s.attached.is_some())
    }

    /// Notifications dropped from full replay buffers.
    pub(crate) fn dropped(&self) -> u64 {
        self.state.lock().dropped
    }

    /// Ends every connection and refuses later messages; pending JSON
    /// answers are dropped (their requests answer that the session ended).
    pub(crate) fn close(&self) {
        let wakers: Vec<Waker> = {
            let mut st = self.state.lock();
            st.closed = true;
            st.routes.clear();
            st.streams
                .values_mut()
                .filter_map(|s| s.attached.as_mut().and_then(|(_, w)| w.take()))
                .collect()
        };
        for w in wakers {
            w.wake();
        }
    }

    /// Queues `data` on stream `id`, trims the replay buffer, and returns
    /// the connection's waker to wake.
    fn push(&self, st: &mut State, id: u64, data: &str, keep: bool, list_changed: bool) -> Option<Waker> {
        let replay = self.replay;
        let stream = st.streams.get_mut(&id)?;
        if list_changed && stream.events.iter().any(|e| e.list_changed && e.seq > stream.delivered) {
            return None; // one undelivered list_changed says it all
        }
        let mut dropped = 0;
        if !keep && stream.events.iter().filter(|e| e.seq > stream.delivered).count() >= replay {
            dropped += 1;
        } else {
            stream.last_seq += 1;
            stream.events.push_back(Event {
                seq: stream.last_seq,
                data: data.to_string(),
                keep,
                list_changed,
            });
            while stream.events.len() > replay {
                // Delivered events go first, then undelivered
                // notifications; undelivered responses stay.
                let delivered = stream.delivered;
                let victim = stream
                    .events
                    .iter()
                    .position(|e| e.seq <= delivered)
                    .or_else(|| stream.events.iter().position(|e| !e.keep));
                match victim {
                    Some(i) => {
                        if let Some(e) = stream.events.remove(i) {
                            if e.seq > delivered {
                                dropped += 1;
                            }
                        }
                    }
                    None => break,
                }
            }
        }
        st.dropped += dropped;
        let stream = st.streams.get_mut(&id)?;
        stream.attached.as_mut().and_then(|(_, w)| w.take())
    }

    /// The stream a message on behalf of request `related` goes to.
    fn stream_of(st: &State, related: Option<&str>) -> u64 {
        match related.and_then(|k| st.routes.get(k)) {
            Some(Route::Stream(id)) if st.streams.contains_key(id) => *id,
            _ => STANDALONE,
        }
    }

    /// Writes the events of stream `id` after `cursor` for connection
    /// `conn`, or says why there are none.
    fn poll_events(&self, id: u64, conn: u64, cursor: &mut u64, cx: &mut Context<'_>) -> Poll<Option<String>> {
        let mut st = self.state.lock();
        let closed = st.closed;
        let Some(stream) = st.streams.get_mut(&id) else {
            return Poll::Ready(None);
        };
        if stream.attached.as_ref().map(|(c, _)| *c) != Some(conn) {
            return Poll::Ready(None);
        }
        let mut out = String::new();
        let from = *cursor;
        for e in stream.events.iter().filter(|e| e.seq > from) {
            let _ = write!(out, "id: {id}-{}\nevent: message\n", e.seq);
            for line in e.data.split('\n') {
                let _ = writeln!(out, "data: {line}");
            }
            out.push('\n');
            *cursor = e.seq;
        }
        if !out.is_empty() {
            stream.delivered = stream.delivered.max(*cursor);
            return Poll::Ready(Some(out));
        }
        // Once closed, what was queued still goes out (a shutdown's aborted
        // outcomes), then the stream ends.
        if (stream.finished && *cursor >= stream.last_seq) || stream.close_requested || closed {
            stream.close_requested = false;
            stream.attached = None;
            self.retire(&mut st, id);
            return Poll::Ready(None);
        }
        stream.attached = Some((conn, Some(cx.waker().clone())));
        Poll::Pending
    }

    /// A connection went away (its body was dropped).
    fn detach(&self, id: u64, conn: u64) {
        self.touch();
        let mut st = self.state.lock();
        if let Some(s) = st.streams.get_mut(&id) {
            if s.attached.as_ref().map(|(c, _)| *c) == Some(conn) {
                s.attached = None;
            }
        }
        self.retire(&mut st, id);
    }

    /// One response of stream `id` is no longer due (answered, or its
    /// request abandoned): with none left, the stream is finished.
    fn answered(st: &mut State, id: u64) {
        if let Some(s) = st.streams.get_mut(&id) {
            s.due = s.due.saturating_sub(1);
            s.finished = s.due == 0;
        }
    }

    /// Once a request stream has all its answers and no connection, it
    /// joins the finished streams kept for resumption (the oldest beyond
    /// [`FINISHED_KEPT`] streams or beyond the byte budget go; the newest
    /// stays).
    fn retire(&self, st: &mut State, id: u64) {
        let done = st.streams.get(&id).is_some_and(|s| s.finished && s.attached.is_none());
        if id == STANDALONE || !done || st.finished.iter().any(|(f, _)| *f == id) {
            return;
        }
        let bytes = st.streams.get(&id).map_or(0, |s| {
            s.events.iter().map(|e| e.data.len()).sum::<usize>() + s.events.len() * std::mem::size_of::<Event>()
        });
        st.finished.push_back((id, bytes));
        st.finished_bytes += bytes;
        while st.finished.len() > FINISHED_KEPT || (st.finished.len() > 1 && st.finished_bytes > self.finished_budget) {
            if let Some((old, n)) = st.finished.pop_front() {
                st.finished_bytes -= n;
                st.streams.remove(&old);
            }
        }
    }
}

impl crate::server::SessionLink for Router {
    fn touch(&self) {
        Router::touch(self)
    }

    fn last_active(&self) -> std::time::Instant {
        Router::last_active(self)
    }

    fn busy(&self, listening_counts: bool) -> bool {
        if listening_counts {
            Router::busy(self)
        } else {
            self.busy_apart_from_standalone()
        }
    }

    fn dropped(&self) -> u64 {
        Router::dropped(self)
    }

    fn close(&self) {
        Router::close(self)
    }
}

impl McpOutput for Router {
    fn send(&self, message: &str) {
        self.send_message(message, MessageKind::Notification { related: None });
    }

    fn send_message(&self, message: &str, kind: MessageKind<'_>) {
        if matches!(kind, MessageKind::Response { .. } | MessageKind::Abandoned { .. }) {
            self.touch();
        }
        let waker = {
            let mut st = self.state.lock();
            if st.closed {
                return;
            }
            match kind {
                MessageKind::Abandoned { id } => match st.routes.remove(id) {
                    Some(Route::Json(tx)) => {
                        drop(st);
                        let _ = tx.send(None);
                        return;
                    }
                    Some(Route::Stream(sid)) => {
                        Router::answered(&mut st, sid);
                        let waker = st
                            .streams
                            .get_mut(&sid)
                            .and_then(|s| s.attached.as_mut().and_then(|(_, w)| w.take()));
                        self.retire(&mut st, sid);
                        waker
                    }
                    None => None,
                },
                MessageKind::Response { id } => match st.routes.remove(id) {
                    Some(Route::Json(tx)) => {
                        drop(st);
                        let _ = tx.send(Some(message.to_string()));
                        return;
                    }
                    Some(Route::Stream(sid)) => {
                        Router::answered(&mut st, sid);
                        let waker = self.push(&mut st, sid, message, true, false);
                        self.retire(&mut st, sid);
                        waker
                    }
                    // A response without a route (an invalid message's
                    // error): the standalone stream, within its bound.
                    None => self.push(&mut st, STANDALONE, message, false, false),
                },
                MessageKind::Request { related } => {
                    let sid = Router::stream_of(&st, related);
                    self.push(&mut st, sid, message, true, false)
                }
                MessageKind::Notification { related } => {
                    let sid = Router::stream_of(&st, related);
                    let list_changed = related.is_none() && message.contains("notifications/tools/list_changed");
                    self.push(&mut st, sid, message, false, list_changed)
                }
            }
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

/// The body of a `text/event-stream` response: a priming event (an id and
/// empty data, with the `retry` field) and then the stream's events as
/// they come. Ends when its stream's responses are all written, when a
/// newer connection takes the stream over, when the server asks the
/// client to poll, or when the session ends.
pub(crate) struct SseBody {
    router: Arc<Router>,
    stream: u64,
    conn: u64,
    cursor: u64,
    priming: bool,
    retry_ms: Option<u64>,
    /// The keep-alive period, and the timer of the next comment (made on
    /// the first poll, on the connection's task).
    keep_alive: Option<(Duration, Option<Pin<Box<tokio::time::Sleep>>>)>,
}

impl SseBody {
    /// Sends an SSE comment (`: keep-alive`) after every `ms` without an
    /// event (**rcip**), so proxies with a read timeout keep the stream
    /// open while a call runs; SSE readers ignore comments. 0: none.
    pub(crate) fn with_keep_alive(mut self, ms: u64) -> SseBody {
        self.keep_alive = (ms > 0).then(|| (Duration::from_millis(ms), None));
        self
    }

    /// No priming event: a stateless (2026-07-28) response stream is not
    /// resumable ("Streamable HTTP", "Receiving Messages"), so it carries
    /// only the request's notifications and its response.
    pub(crate) fn without_priming(mut self) -> SseBody {
        self.priming = false;
        self
    }

    /// Sends `retry: ms` with the priming event.
    pub(crate) fn with_retry(mut self, retry_ms: u64) -> SseBody {
        self.retry_ms = Some(retry_ms);
        self
    }
}

impl Body for SseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = &mut *self;
        if this.priming {
            this.priming = false;
            let mut text = format!("id: {}-{}\n", this.stream, this.cursor);
            if let Some(ms) = this.retry_ms {
                let _ = writeln!(text, "retry: {ms}");
            }
            text.push_str("data: \n\n");
            return Poll::Ready(Some(Ok(Frame::data(Bytes::from(text)))));
        }
        match this.router.poll_events(this.stream, this.conn, &mut this.cursor, cx) {
            Poll::Ready(Some(text)) => {
                if let Some((period, Some(timer))) = &mut this.keep_alive {
                    timer.as_mut().reset(tokio::time::Instant::now() + *period);
                }
                Poll::Ready(Some(Ok(Frame::data(Bytes::from(text)))))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => {
                let Some((period, timer)) = &mut this.keep_alive else {
                    return Poll::Pending;
                };
                let timer = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep(*period)));
                if timer.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                timer.as_mut().reset(tokio::time::Instant::now() + *period);
                Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b": keep-alive\n\n")))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        false
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

impl Drop for SseBody {
    fn drop(&mut self) {
        self.router.detach(self.stream, self.conn);
    }
}

/// Parses a `Last-Event-ID` of this server (`<stream>-<seq>`).
pub(crate) fn parse_event_id(text: &str) -> Option<(u64, u64)> {
    let (stream, seq) = text.trim().split_once('-')?;
    Some((stream.parse().ok()?, seq.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(body: &mut SseBody) -> Vec<String> {
        let waker = Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut out = Vec::new();
        loop {
            match Pin::new(&mut *body).poll_frame(&mut cx) {
                Poll::Ready(Some(Ok(f))) => {
                    out.push(String::from_utf8(f.into_data().unwrap().to_vec()).unwrap());
                }
                Poll::Ready(None) => {
                    out.push("<end>".into());
                    return out;
                }
                Poll::Pending => return out,
                Poll::Ready(Some(Err(e))) => match e {},
            }
        }
    }

    #[test]
    fn a_response_goes_to_its_stream_and_survives_a_lost_connection() {
        let r = Arc::new(Router::new(8));
        let sid = r.open_stream("7".into()).unwrap();
        let mut body = r.attach(sid, Some(0)).unwrap().with_retry(500);
        let first = drain(&mut body);
        assert_eq!(first, vec![format!("id: {sid}-0\nretry: 500\ndata: \n\n")]);
        // A progress notification for the call, then the connection drops.
        r.send_message("{\"n\":1}", MessageKind::Notification { related: Some("7") });
        drop(body);
        r.send_message("{\"r\":2}", MessageKind::Response { id: "7" });
        // Resumed after event 0: both events, then the end.
        let mut resumed = r.attach(sid, Some(0)).unwrap();
        let got = drain(&mut resumed);
        assert_eq!(
            got[1],
            format!(
                "id: {sid}-1\nevent: message\ndata: {{\"n\":1}}\n\nid: {sid}-2\nevent: message\ndata: {{\"r\":2}}\n\n"
            )
        );
        assert_eq!(got.last().unwrap(), "<end>");
    }

    #[test]
    fn finished_streams_are_kept_for_resumption_but_bounded() {
        let r = Arc::new(Router::new(8));
        for i in 0..1000 {
            let key = format!("{i}");
            let sid = r.open_stream(key.clone()).unwrap();
            let body = r.attach(sid, Some(0)).unwrap();
            drop(body); // the client went away before the answer
            r.send_message("{}", MessageKind::Response { id: &key });
        }
        let st = r.state.lock();
        assert_eq!(
            st.streams.len(),
            FINISHED_KEPT + 1,
            "the standalone stream and the kept ones"
        );
        assert!(st.routes.is_empty());
    }

    #[test]
    fn finished_streams_keep_at_most_their_byte_budget() {
        let big = format!("{{\"x\":\"{}\"}}", "y".repeat(100_000));
        let r = Arc::new(Router::with_budget(8, 250_000));
        for i in 0..10 {
            let key = format!("{i}");
            let sid = r.open_stream(key.clone()).unwrap();
            drop(r.attach(sid, Some(0)).unwrap());
            r.send_message(&big, MessageKind::Response { id: &key });
        }
        let st = r.state.lock();
        assert_eq!(st.finished.len(), 2, "two answers of 100 KB fit in 250 KB");
        assert!(st.finished_bytes <= 250_000);
        assert_eq!(st.streams.len(), 3);
        drop(st);
        // One answer beyond the budget alone is still kept (the newest).
        let r = Arc::new(Router::with_budget(8, 1024));
        let sid = r.open_stream("a".into()).unwrap();
        drop(r.attach(sid, Some(0)).unwrap());
        r.send_message(&big, MessageKind::Response { id: "a" });
        assert_eq!(r.state.lock().finished.len(), 1);
    }

    #[test]
    fn replay_is_bounded_but_responses_are_kept() {
        let r = Arc::new(Router::new(4));
        r.send_message("{\"id\":\"x\"}", MessageKind::Response { id: "unrouted" });
        for i in 0..100 {
            r.send_message(
                &format!("{{\"p\":{i}}}"),
                MessageKind::Notification { related: Some("none") },
            );
        }
        assert!(r.dropped() >= 96);
        let mut body = r.attach(STANDALONE, None).unwrap();
        let got = drain(&mut body).join("");
        assert!(got.contains("{\"id\":\"x\"}"), "{got}");
        assert!(got.matches("event: message").count() <= 4, "{got}");
    }

    #[test]
    fn list_changed_is_coalesced_and_a_newer_connection_takes_over() {
        let r = Arc::new(Router::new(8));
        let lc = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}";
        for _ in 0..5 {
            r.send_message(lc, MessageKind::Notification { related: None });
        }
        let mut a = r.attach(STANDALONE, None).unwrap();
        let mut b = r.attach(STANDALONE, None).unwrap();
        assert_eq!(drain(&mut a).last().unwrap(), "<end>", "the older connection ends");
        let got = drain(&mut b).join("");
        assert_eq!(got.matches("list_changed").count(), 1, "{got}");
        assert_eq!(parse_event_id("0-3"), Some((0, 3)));
        assert_eq!(parse_event_id("zz"), None);
    }
}
