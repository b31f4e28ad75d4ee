//! [`Pipeline`]: many commands, one round trip per node, one crossing into the core.
use crate::client::Segment;
use crate::cmd::{write_array_header, write_bulk, write_usize};
use crate::{Client, Cmd, Error, Route, ToArg, Value};
use std::time::Duration;

/// Commands sent together: encoded as RESP as they are added, then run in one
/// execution — the core routes each by its key, writes every node before reading any,
/// follows redirects, and answers in the order of the commands.
///
/// [`exec`](Pipeline::exec) gives one `Result` per command: a command that fails (an
/// error reply, its node gone, its redirects exhausted) fails alone. Replies borrow the
/// client's reply memory (no copy) until the client's next call; use
/// [`Value::into_owned`] to keep them longer. A pipeline can be run again, or
/// [`clear`](Pipeline::clear)ed and refilled without allocating.
///
/// ```
/// use slotlane::{Client, Pipeline, Value};
/// # let url = slotlane_testing::url(); // SLOTLANE_URL, else a slotlane-server of its own
/// let mut client = Client::connect(url.as_str())?;
/// let mut pipe = Pipeline::new();
/// pipe.set("doc:p:a", "1", None);
/// let n = pipe.incr("doc:p:a"); // a typed method: its Slot reads the reply after exec
/// pipe.cmd("LPOP").arg("doc:p:a");
/// pipe.get("doc:p:a");
/// let replies = pipe.exec(&mut client);
/// assert_eq!(replies.len(), 4);
/// assert_eq!(n.get(&replies), Ok(2));
/// assert_eq!(replies[1], Ok(Value::Int(2)));
/// // A WRONGTYPE error fails its command only:
/// assert_eq!(replies[2].as_ref().unwrap_err().response_kind(), Some("WRONGTYPE"));
/// assert_eq!(replies[3].as_ref().unwrap().as_bytes(), Some(&b"2"[..]));
/// # Ok::<(), slotlane::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct Pipeline {
    pub(crate) buf: Vec<u8>,
    /// Byte offset where each command starts.
    starts: Vec<usize>,
    /// The open command built by `cmd`/`arg`: its argument count and the header's length.
    open_argc: usize,
    open_hdr: usize,
    /// Commands with a routing override: (index, route).
    routes: Vec<(usize, Route)>,
    timeout: Option<Duration>,
}

impl Pipeline {
    /// An empty pipeline.
    pub fn new() -> Pipeline {
        Pipeline::default()
    }

    /// An empty pipeline with room for about `commands` small commands.
    pub fn with_capacity(commands: usize) -> Pipeline {
        Pipeline {
            buf: Vec::with_capacity(commands * 64),
            starts: Vec::with_capacity(commands),
            ..Default::default()
        }
    }

    /// Commands queued.
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    /// Whether no command is queued.
    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// Drops every command, keeping the memory.
    pub fn clear(&mut self) -> &mut Self {
        self.buf.clear();
        self.starts.clear();
        self.routes.clear();
        self.open_argc = 0;
        self.open_hdr = 0;
        self
    }

    /// The deadline of this pipeline's whole execution (default: the client's command
    /// timeout). Rounded to milliseconds; at least 1 ms.
    pub fn timeout(&mut self, t: Duration) -> &mut Self {
        self.timeout = Some(t);
        self
    }

    /// The queued commands as RESP.
    pub fn as_resp(&self) -> &[u8] {
        &self.buf
    }

    /// Whether a command has a routing override (`slotlane::aio` refuses those).
    pub(crate) fn has_routes(&self) -> bool {
        !self.routes.is_empty()
    }

    /// The timeout as the core takes it: milliseconds, 0 for the client's default.
    pub(crate) fn timeout_ms(&self) -> i32 {
        match self.timeout {
            None => 0,
            Some(t) => t.as_millis().clamp(1, i32::MAX as u128) as i32,
        }
    }

    /// Starts a command named `name`; [`arg`](Pipeline::arg) adds its arguments.
    pub fn cmd(&mut self, name: &str) -> &mut Self {
        self.starts.push(self.buf.len());
        self.buf.extend_from_slice(b"*1\r\n");
        self.open_argc = 1;
        self.open_hdr = 4;
        write_bulk(&mut self.buf, name.as_bytes());
        self
    }

    /// Adds an argument to the command started last with [`cmd`](Pipeline::cmd).
    ///
    /// # Panics
    /// When no command was started with `cmd` since the pipeline was created or cleared,
    /// or the last command was added whole (`add`, a typed method).
    pub fn arg<T: ToArg>(&mut self, a: T) -> &mut Self {
        assert!(
            self.open_argc > 0,
            "Pipeline::arg: no command started with Pipeline::cmd"
        );
        a.write_arg(&mut self.buf);
        self.open_argc += 1;
        // Rewrite the header "*<argc>\r\n" in place; it grows by one byte at 10, 100...
        let start = *self.starts.last().unwrap();
        let mut hdr = Vec::with_capacity(24);
        write_array_header(&mut hdr, self.open_argc);
        if hdr.len() != self.open_hdr {
            let grow = hdr.len() - self.open_hdr;
            let old_len = self.buf.len();
            self.buf.resize(old_len + grow, 0);
            self.buf
                .copy_within(start + self.open_hdr..old_len, start + hdr.len());
            self.open_hdr = hdr.len();
        }
        self.buf[start..start + hdr.len()].copy_from_slice(&hdr);
        self
    }

    /// Sends the command added last where `route` says instead of by its key.
    ///
    /// # Panics
    /// When the pipeline is empty.
    pub fn route(&mut self, route: Route) -> &mut Self {
        let idx = self
            .starts
            .len()
            .checked_sub(1)
            .expect("Pipeline::route: the pipeline is empty");
        match self.routes.last_mut() {
            Some((i, r)) if *i == idx => *r = route,
            _ => self.routes.push((idx, route)),
        }
        self
    }

    /// Adds a whole command (and its routing override, if any).
    pub fn add(&mut self, cmd: &Cmd) -> &mut Self {
        self.starts.push(self.buf.len());
        self.open_argc = 0;
        cmd.write_resp(&mut self.buf);
        if let Some(r) = &cmd.route {
            self.routes.push((self.starts.len() - 1, r.clone()));
        }
        self
    }

    /// Adds a command from its arguments, the name first.
    pub fn add_args<T: ToArg>(&mut self, args: &[T]) -> &mut Self {
        self.begin(args.len());
        for a in args {
            a.write_arg(&mut self.buf);
        }
        self
    }

    /// Starts a command whose header and name are `head` (`*2\r\n$3\r\nGET\r\n`).
    #[inline]
    pub(crate) fn begin_with(&mut self, head: &[u8]) {
        self.starts.push(self.buf.len());
        self.open_argc = 0;
        self.buf.extend_from_slice(head);
    }

    #[inline]
    fn begin(&mut self, argc: usize) {
        self.starts.push(self.buf.len());
        self.open_argc = 0;
        self.buf.push(b'*');
        write_usize(&mut self.buf, argc);
        self.buf.extend_from_slice(b"\r\n");
    }

    /// Queues a typed method's command (`commands.rs`); its index.
    pub(crate) fn queue(&mut self, cmd: &Cmd) -> usize {
        self.add(cmd);
        self.len() - 1
    }

    /// Runs every command in one execution; one result per command, in order. The
    /// replies borrow `client` until its next call. When the whole execution fails (a
    /// timeout, a cancel, no node reachable) each unfinished command holds that error.
    pub fn exec<'c>(&self, client: &'c mut Client) -> Vec<Result<Value<'c>, Error>> {
        let count = self.starts.len();
        if count == 0 {
            return Vec::new();
        }
        let timeout_ms = self.timeout_ms();
        if self.routes.is_empty() {
            return client.run_all(&self.buf, count, None, timeout_ms);
        }
        // Segments: runs of commands by key, and each command with an override alone.
        let mut segs = Vec::with_capacity(self.routes.len() * 2 + 1);
        let end_of = |i: usize| {
            if i + 1 < count {
                self.starts[i + 1]
            } else {
                self.buf.len()
            }
        };
        let mut next = 0;
        for (idx, route) in &self.routes {
            if *idx > next {
                segs.push(Segment {
                    start: self.starts[next],
                    end: self.starts[*idx],
                    count: idx - next,
                    route: None,
                });
            }
            segs.push(Segment {
                start: self.starts[*idx],
                end: end_of(*idx),
                count: 1,
                route: Some(route),
            });
            next = idx + 1;
        }
        if next < count {
            segs.push(Segment {
                start: self.starts[next],
                end: self.buf.len(),
                count: count - next,
                route: None,
            });
        }
        client.run_all(&self.buf, count, Some(&segs), timeout_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd;

    #[test]
    fn builds_the_same_bytes_every_way() {
        let mut a = Pipeline::new();
        a.cmd("SET").arg("k").arg("v");
        a.get("k");
        a.add(cmd("DEL").arg("k")).add_args(&["INCR", "n"]);
        let mut want = Vec::new();
        for c in [
            cmd("SET").arg("k").arg("v").clone(),
            cmd("GET").arg("k").clone(),
            cmd("DEL").arg("k").clone(),
            cmd("INCR").arg("n").clone(),
        ] {
            want.extend_from_slice(&c.to_resp());
        }
        assert_eq!(a.as_resp(), &want[..]);
        assert_eq!(a.len(), 4);
        let mut b = Pipeline::new();
        // the typed methods (commands.rs) encode the same bytes
        b.set("k", "v", None);
        b.get("k");
        b.delete(&["k"]);
        b.incr("n");
        assert_eq!(b.as_resp(), &want[..]);
        b.clear();
        assert!(b.is_empty() && b.as_resp().is_empty());
    }

    #[test]
    fn header_grows_past_nine_and_ninety_nine_arguments() {
        let mut p = Pipeline::new();
        p.cmd("DEL");
        let mut c = cmd("DEL");
        for i in 0..150 {
            p.arg(i);
            c.arg(i);
        }
        p.get("after");
        let mut want = c.to_resp();
        want.extend_from_slice(&cmd("GET").arg("after").to_resp());
        assert_eq!(p.as_resp(), &want[..]);
        assert!(p.as_resp().starts_with(b"*151\r\n$3\r\nDEL\r\n$1\r\n0\r\n"));
    }

    #[test]
    #[should_panic(expected = "no command started")]
    fn arg_without_cmd_panics_clearly() {
        Pipeline::new().arg("x");
    }

    #[test]
    #[should_panic(expected = "no command started")]
    fn arg_after_a_whole_command_panics_clearly() {
        let mut p = Pipeline::new();
        p.get("k");
        p.arg("x");
    }

    #[test]
    fn routes_attach_to_the_last_command() {
        let mut p = Pipeline::new();
        p.get("a");
        p.cmd("DBSIZE").route(Route::AllPrimaries);
        p.get("b");
        p.route(Route::Slot(5)).route(Route::Random);
        assert_eq!(p.routes, vec![(1, Route::AllPrimaries), (2, Route::Random)]);
    }
}
