//! The session's serving loop over a message connection: stdio and any
//! [`Transport`](crate::server::Transport) of the host's, with
//! backpressure, the over-long message answer and the end-of-input drain.

use super::*;

impl McpSession {
    /// An output that writes each message as one line to the process's
    /// standard output and flushes it (the MCP stdio transport). Write
    /// errors (the client went away) are ignored.
    pub fn stdout_output() -> Arc<dyn McpOutput> {
        Arc::new(|message: &str| {
            let mut out = std::io::stdout().lock();
            let _ = out
                .write_all(message.as_bytes())
                .and_then(|()| out.write_all(b"\n"))
                .and_then(|()| out.flush());
        })
    }

    /// Reads newline-delimited messages from `input` until it ends, passing
    /// each to [`receive`](Self::receive); blank lines are skipped, a line
    /// longer than the message limit is answered with `-32700`. Then closes
    /// the session (the client is gone). A second concurrent call returns
    /// an `AlreadyExists` error at once. The same as
    /// [`serve_transport`](Self::serve_transport) with a
    /// [`LineTransport`](crate::server::LineTransport).
    pub fn serve<R: BufRead>(&self, input: R) -> std::io::Result<()> {
        self.claim_serving()?;
        self.serve_claimed(&mut crate::server::LineTransport::new(input))
    }

    /// Serves a message connection of the host's own (**rcip**): reads
    /// each message from `transport` and passes it to
    /// [`receive`](Self::receive) until the transport reports its end or
    /// fails; the replies go to the session's [`McpOutput`], the
    /// connection's sending half. Reading waits while the session has its
    /// most requests in flight or its outgoing queue is full
    /// (backpressure); a message of only whitespace is skipped and one
    /// longer than the message limit is answered with `-32700`. At the end
    /// what was already asked gets a moment to finish, then the session
    /// closes and [`Transport::close`](crate::server::Transport::close) is
    /// called. Returns the transport's error, if any. A second concurrent
    /// call (or one during [`serve`](Self::serve)) returns an
    /// `AlreadyExists` error at once.
    pub fn serve_transport(&self, transport: &mut dyn crate::server::Transport) -> std::io::Result<()> {
        self.claim_serving()?;
        self.serve_claimed(transport)
    }

    /// Marks the session as serving; `AlreadyExists` if it already is.
    fn claim_serving(&self) -> std::io::Result<()> {
        if self.inner.serving.swap(true, Ordering::SeqCst) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "the session is already serving",
            ));
        }
        Ok(())
    }

    /// The loop of [`serve_transport`](Self::serve_transport), after the
    /// claim.
    fn serve_claimed(&self, transport: &mut dyn crate::server::Transport) -> std::io::Result<()> {
        use crate::server::Received;
        let max = self.inner.limits.max_bytes;
        let mut message = Vec::new();
        let result = loop {
            // Backpressure: a client that stops reading (or floods the
            // session) is not read from until requests are answered and
            // the outgoing queue has room.
            self.inner.wait_for_capacity();
            if self.is_closed() {
                break Ok(());
            }
            message.clear();
            match transport.receive(&mut message, max) {
                Ok(Received::End) => break Ok(()),
                Ok(Received::TooLong) => {
                    let text = format!("Parse error: the message is longer than {max} bytes");
                    self.inner.outbox.send(
                        error_response(&Value::Null, jsonrpc::PARSE_ERROR, &text),
                        Kind::Response("null".into()),
                    );
                }
                Ok(Received::Message) => {
                    if !message.iter().all(u8::is_ascii_whitespace) {
                        self.inner.receive(&message, &[]);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => break Err(e),
            }
        };
        // The client closed its input: what it already asked for still
        // gets answered, for a moment (a call waiting for the user or a
        // stuck handler does not hold the close up longer).
        self.inner.drain(END_OF_INPUT_GRACE);
        self.inner.close();
        transport.close();
        self.inner.serving.store(false, Ordering::SeqCst);
        result
    }

    /// [`serve`](Self::serve) on the process's standard input. Pair it with
    /// [`stdout_output`](Self::stdout_output); the host must write nothing
    /// else to standard output.
    pub fn serve_stdio(&self) -> std::io::Result<()> {
        // Claimed before standard input is locked: a second call must fail
        // at once, not wait for the first one's lock of standard input.
        self.claim_serving()?;
        self.serve_claimed(&mut crate::server::LineTransport::new(std::io::stdin().lock()))
    }
}
