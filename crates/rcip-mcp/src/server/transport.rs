//! The transport interface of a message connection: a receiving half
//! ([`Transport`]: the next message, the end, close) and a sending half
//! (an [`McpOutput`]: one message at a time). stdio is
//! [`LineTransport`] over standard input with [`LineOutput`] over standard
//! output; a host's own connection (a pipe, a socket, a WebSocket)
//! implements the two traits and hands them to
//! [`McpSession::new`](crate::McpSession::new) and
//! [`McpSession::serve_transport`](crate::McpSession::serve_transport).

use crate::McpOutput;
use parking_lot::Mutex;
use std::io::{BufRead, Write};

/// What [`Transport::receive`] read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Received {
    /// One message is in the buffer (its bytes, without framing).
    Message,
    /// A message longer than the limit arrived and was dropped (the buffer
    /// is empty); the session answers it `-32700` and reads on.
    TooLong,
    /// The peer closed its side: no more messages.
    End,
}

/// The receiving half of a message connection.
///
/// Called from one thread at a time (the thread serving the session),
/// which it may block. The session reads only when it has room for
/// another request (backpressure), so a transport that reads ahead must
/// bound what it keeps.
pub trait Transport {
    /// Reads the next message into `buf` (cleared by the caller), keeping
    /// at most `max_bytes` of it; a longer message is dropped and reported
    /// as [`Received::TooLong`]. A message of nothing but whitespace may
    /// be returned; the session skips it. Errors end the serving loop and
    /// are returned from it ([`std::io::ErrorKind::Interrupted`] is
    /// retried).
    fn receive(&mut self, buf: &mut Vec<u8>, max_bytes: usize) -> std::io::Result<Received>;

    /// Called once when the session stops reading (the end, an error, or
    /// the session closed): release the connection's receiving side. The
    /// default does nothing.
    fn close(&mut self) {}
}

/// Newline-delimited messages on any reader (the MCP stdio transport's
/// framing): one message per line, `\r\n` accepted, the rest of a line
/// longer than the limit read and dropped.
#[derive(Debug)]
pub struct LineTransport<R> {
    input: R,
}

impl<R: BufRead> LineTransport<R> {
    /// Reads messages from `input`.
    pub fn new(input: R) -> LineTransport<R> {
        LineTransport { input }
    }
}

impl<R: BufRead> Transport for LineTransport<R> {
    fn receive(&mut self, buf: &mut Vec<u8>, max_bytes: usize) -> std::io::Result<Received> {
        let got = read_line(&mut self.input, buf, max_bytes)?;
        if got == Received::Message && buf.last() == Some(&b'\r') {
            buf.pop();
        }
        Ok(got)
    }
}

/// Reads one line (up to `\n`, not included) into `line`, keeping at most
/// `max` bytes; the rest of a longer line is read and dropped.
fn read_line<R: BufRead>(input: &mut R, line: &mut Vec<u8>, max: usize) -> std::io::Result<Received> {
    let mut too_long = false;
    let mut any = false;
    loop {
        let buf = input.fill_buf()?;
        if buf.is_empty() {
            return Ok(if too_long {
                Received::TooLong
            } else if any {
                Received::Message
            } else {
                Received::End
            });
        }
        any = true;
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if !too_long {
            if line.len() + chunk.len() > max {
                too_long = true;
                line.clear();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let used = done.unwrap_or(buf.len());
        input.consume(used);
        if done.is_some() {
            return Ok(if too_long { Received::TooLong } else { Received::Message });
        }
    }
}

/// The sending half of a newline-delimited connection: each message and
/// a `\n`, flushed, on any writer. Write errors (the peer went away) are
/// counted and otherwise ignored: the session goes on until its input
/// ends.
#[derive(Debug)]
pub struct LineOutput<W> {
    output: Mutex<W>,
    failed: std::sync::atomic::AtomicU64,
}

impl<W: Write + Send> LineOutput<W> {
    /// Writes messages to `output`.
    pub fn new(output: W) -> LineOutput<W> {
        LineOutput {
            output: Mutex::new(output),
            failed: Default::default(),
        }
    }

    /// Messages whose write failed.
    pub fn failed_writes(&self) -> u64 {
        self.failed.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl<W: Write + Send> McpOutput for LineOutput<W> {
    fn send(&self, message: &str) {
        let mut out = self.output.lock();
        let written = out
            .write_all(message.as_bytes())
            .and_then(|()| out.write_all(b"\n"))
            .and_then(|()| out.flush());
        if written.is_err() {
            self.failed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_framed_and_bounded() {
        let input = b"{\"a\":1}\r\n\n0123456789abc\n{}".to_vec();
        let mut t = LineTransport::new(std::io::Cursor::new(input));
        let mut buf = Vec::new();
        let mut next = |buf: &mut Vec<u8>| {
            buf.clear();
            t.receive(buf, 10).unwrap()
        };
        assert_eq!(next(&mut buf), Received::Message);
        assert_eq!(buf, b"{\"a\":1}");
        assert_eq!(next(&mut buf), Received::Message);
        assert!(buf.is_empty());
        assert_eq!(next(&mut buf), Received::TooLong);
        assert!(buf.is_empty());
        assert_eq!(next(&mut buf), Received::Message);
        assert_eq!(buf, b"{}");
        assert_eq!(next(&mut buf), Received::End);
    }

    #[test]
    fn line_output_writes_one_line_per_message() {
        let out = LineOutput::new(Vec::new());
        out.send("{\"x\":1}");
        out.send("{}");
        assert_eq!(out.output.lock().as_slice(), b"{\"x\":1}\n{}\n");
        assert_eq!(out.failed_writes(), 0);
    }
}
