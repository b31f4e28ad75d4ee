//! [`Session`] and [`Client::transaction`]: WATCH ... MULTI ... EXEC on a connection of
//! their own, thin over the core's `sl_session_*` (slotlane.h, "Blocking commands and
//! sessions"), which pins the connection, refuses CROSSSLOT batches before sending, and
//! sends UNWATCH/DISCARD when a session ends.
use crate::client::{batch_replies, reply_slices};
use crate::value::decode;
use crate::{Client, Cmd, Error, FromValue, Pipeline, ToArg, Value};
use slotlane_sys as sys;
use std::ffi::c_int;
use std::ptr::{self, NonNull};

const MULTI: &[u8] = b"*1\r\n$5\r\nMULTI\r\n";
const EXEC: &[u8] = b"*1\r\n$4\r\nEXEC\r\n";

/// A transaction session: one connection, leased for it, to the primary of one slot (the
/// slot of the first key it sees; in plain mode the one server), for WATCH ... MULTI ...
/// EXEC. From [`Client::session`]; [`Client::transaction`] runs the usual retry loop on
/// one.
///
/// Every command of a session must hash to its slot: a command or pipeline with keys of
/// another slot is refused before anything is sent ([`Error::Cluster`], "CROSSSLOT ...").
/// Commands run at once with [`command`](Session::command) / [`query`](Session::query)
/// (the reads of a transaction, while its keys are watched);
/// [`multi_exec`](Session::multi_exec) sends a [`Pipeline`]'s commands as one MULTI ... EXEC.
///
/// Errors: EXEC answering nil (a watched key changed, nothing applied) is [`Error::Watch`];
/// the slot moving (MOVED/ASK) while keys are watched or a MULTI is open is
/// [`Error::WatchMoved`] and breaks the session (drop it and start over: a new session
/// pins the slot's new owner). A timeout, cancel or I/O error breaks it too.
///
/// Dropping the session (or [`close`](Session::close)) ends it: the core sends UNWATCH
/// (keys watched) or DISCARD (a MULTI open) when needed and returns the connection clean
/// to the client's pool of leased connections, or closes it when the session is broken.
///
/// ```
/// use slotlane::{cmd, Client, Error, Pipeline};
/// # let url = slotlane_testing::url(); // SLOTLANE_URL, else a slotlane-server of its own
/// let mut client = Client::connect(url.as_str())?;
/// client.set("doc:session:n", 41, None)?;
/// let mut s = client.session()?;
/// s.watch(&["doc:session:n"])?;
/// let n: i64 = s.query(cmd("GET").arg("doc:session:n"))?;
/// let mut pipe = Pipeline::new();
/// pipe.set("doc:session:n", n + 1, None);
/// let now = pipe.get("doc:session:n");
/// match s.multi_exec(&pipe) {
///     Ok(replies) => assert_eq!(now.get(&replies)?, Some(b"42".to_vec())),
///     Err(Error::Watch(_)) => { /* someone changed it: nothing applied, try again */ }
///     Err(e) => return Err(e),
/// }
/// # Ok::<(), slotlane::Error>(())
/// ```
pub struct Session<'c> {
    client: &'c mut Client,
    /// NULL once closed.
    raw: *mut sys::sl_session,
}

// SAFETY: as Client: the core's session has no thread affinity; one thread uses it at a
// time (&mut self), and it borrows its client mutably.
unsafe impl Send for Session<'_> {}

impl Client {
    /// A new [`Session`] on this client (nothing is sent until its first command). It
    /// borrows the client until it is dropped.
    pub fn session(&mut self) -> Result<Session<'_>, Error> {
        let mut raw: *mut sys::sl_session = ptr::null_mut();
        // SAFETY: the client is live; raw is written by the call.
        let rc = unsafe { sys::sl_session_new(self.raw.as_ptr(), &mut raw) };
        if rc != 0 || raw.is_null() {
            return Err(Error::from_code(
                if rc != 0 { rc } else { sys::SL_ENOMEM },
                &self.errmsg(),
            ));
        }
        Ok(Session { client: self, raw })
    }

    /// Runs a transaction with `keys` watched, redis-rs's shape: on a [`Session`], WATCH
    /// `keys`, then `f(session, pipe)` — it reads with the session (the reads are
    /// watched) and queues the transaction's commands in `pipe` (typed methods give
    /// [`Slot`](crate::Slot)s) — then MULTI, `pipe`, EXEC. When a watched key changed
    /// before EXEC ([`Error::Watch`]) it starts again from the WATCH, with `pipe` cleared;
    /// when the slot moved ([`Error::WatchMoved`]) it starts again on a new session (on the
    /// slot's new owner). Returns `f`'s value of the attempt that committed and EXEC's
    /// replies, one per queued command (so a [`Slot`](crate::Slot) reads its reply from
    /// them). An error of `f` or any other error ends it (UNWATCH sent by the session's
    /// end). `keys` must share one slot (a `{hash tag}`), else [`Error::Cluster`].
    ///
    /// ```
    /// use slotlane::{cmd, Client};
    /// # let url = slotlane_testing::url(); // SLOTLANE_URL, else a slotlane-server of its own
    /// let mut client = Client::connect(url.as_str())?;
    /// client.delete(&["doc:tx:{a}:from", "doc:tx:{a}:to"])?;
    /// client.set("doc:tx:{a}:from", 10, None)?;
    /// let (moved, replies) = client.transaction(&["doc:tx:{a}:from"], |s, pipe| {
    ///     let from: i64 = s.query(cmd("GET").arg("doc:tx:{a}:from"))?;
    ///     pipe.decrby("doc:tx:{a}:from", from);
    ///     Ok((from, pipe.incrby("doc:tx:{a}:to", from)))
    /// })?;
    /// assert_eq!(moved.0, 10);
    /// assert_eq!(moved.1.get(&replies)?, 10);
    /// # Ok::<(), slotlane::Error>(())
    /// ```
    pub fn transaction<K, R, F>(
        &mut self,
        keys: &[K],
        mut f: F,
    ) -> Result<(R, Vec<Result<Value<'static>, Error>>), Error>
    where
        K: ToArg,
        F: FnMut(&mut Session<'_>, &mut Pipeline) -> Result<R, Error>,
    {
        if keys.is_empty() {
            return Err(Error::InvalidArgument(
                "transaction() needs at least one key to watch".into(),
            ));
        }
        let mut pipe = Pipeline::new();
        // A MOVED of the unwatched WATCH itself, or the slot moving while watched: start
        // over on a new session (the core refreshed the map). Bounded, as redirects are.
        let mut moves = 0;
        loop {
            let mut s = self.session()?;
            loop {
                pipe.clear();
                let attempt = s
                    .watch(keys)
                    .and_then(|_| f(&mut s, &mut pipe))
                    .and_then(|r| {
                        s.multi_exec(&pipe).map(|replies| {
                            let owned = replies
                                .into_iter()
                                .map(|r| r.map(Value::into_owned))
                                .collect();
                            (r, owned)
                        })
                    });
                match attempt {
                    Ok(done) => return Ok(done),
                    Err(Error::Watch(_)) => continue,
                    Err(e) if moved(&e) && moves < 16 => {
                        moves += 1;
                        break;
                    }
                    Err(e) => return Err(e),
                }
            }
        }
    }
}

fn moved(e: &Error) -> bool {
    matches!(e, Error::WatchMoved(_)) || matches!(e.response_kind(), Some("MOVED" | "ASK"))
}

impl<'c> Session<'c> {
    /// Runs `count` commands (RESP in `bytes`) on the session: the code and the replies,
    /// or the error that left no record for every command.
    fn run(
        &mut self,
        bytes: &[u8],
        count: usize,
        timeout_ms: c_int,
    ) -> Result<(i32, &[sys::sl_reply], &[u8]), Error> {
        let b = self.client.batch.as_ptr();
        let mut sizes = sys::sl_sizes::default();
        // SAFETY: the session and the batch are live and of the same client; bytes is
        // readable for its length; NULL outputs leave the replies in the batch.
        let rc = unsafe {
            sys::sl_session_run(
                self.raw,
                b,
                bytes.as_ptr().cast(),
                bytes.len(),
                count,
                timeout_ms,
                ptr::null_mut(),
                0,
                ptr::null_mut(),
                0,
                &mut sizes,
            )
        };
        if matches!(rc, sys::SL_EWATCHMOVED | sys::SL_ESTATE) || sizes.commands != count as u64 {
            return Err(Error::from_code(
                if rc != 0 { rc } else { sys::SL_EPROTO },
                &self.client.errmsg(),
            ));
        }
        // SAFETY: b is live; its replies stay valid until its next exec/reset/free, all of
        // which need &mut self, which the returned borrow holds.
        let (recs, data) = unsafe { batch_replies(b) };
        Ok((rc, recs, data))
    }

    /// Runs `bytes` (built in the client's scratch buffer by `build`) and decodes every
    /// reply; the code too. The replies borrow the session until its next call.
    fn run_built(
        &mut self,
        count: usize,
        timeout_ms: c_int,
        build: impl FnOnce(&mut Vec<u8>),
    ) -> Result<(i32, Vec<Result<Value<'_>, Error>>), Error> {
        let mut buf = std::mem::take(&mut self.client.scratch);
        buf.clear();
        build(&mut buf);
        let r = self
            .run(&buf, count, timeout_ms)
            .map(|(rc, recs, data)| (rc, recs.as_ptr(), recs.len(), data.as_ptr(), data.len()));
        self.client.scratch = buf;
        let (rc, rp, rn, dp, dn) = r?;
        // SAFETY: the reply memory `run` returned: nothing ran since, and the result
        // borrows &mut self.
        let (recs, data) = unsafe { reply_slices(rp, rn, dp, dn) };
        let mut i = 0;
        let out = (0..count).map(|_| decode(recs, data, &mut i)).collect();
        Ok((rc, out))
    }

    /// Runs one command on the session at once; the reply borrows the session until its
    /// next call. A command with a [`Route`](crate::Route) is refused (a session has one
    /// node).
    pub fn command(&mut self, cmd: &Cmd) -> Result<Value<'_>, Error> {
        if cmd.argc == 0 {
            return Err(Error::InvalidArgument(
                "a command needs at least its name".into(),
            ));
        }
        if cmd.route.is_some() {
            return Err(Error::InvalidArgument(
                "a session's commands go to its slot's node: a route is refused".into(),
            ));
        }
        let (_, mut replies) = self.run_built(1, 0, |buf| cmd.write_resp(buf))?;
        replies
            .pop()
            .unwrap_or_else(|| Err(Error::Protocol("no reply".into())))
    }

    /// Runs one command at once and converts its reply.
    pub fn query<T: FromValue>(&mut self, cmd: &Cmd) -> Result<T, Error> {
        let v = self.command(cmd)?;
        T::from_value(v)
    }

    /// WATCH `keys` (one slot: the session's). A later EXEC of this session answers nil
    /// ([`Error::Watch`]) when one of them changed meanwhile.
    pub fn watch<K: ToArg>(&mut self, keys: &[K]) -> Result<(), Error> {
        if keys.is_empty() {
            return Err(Error::InvalidArgument(
                "watch() needs at least one key".into(),
            ));
        }
        let mut c = crate::cmd("WATCH");
        for k in keys {
            c.arg(k);
        }
        self.command(&c).map(|_| ())
    }

    /// UNWATCH: forget every watched key.
    pub fn unwatch(&mut self) -> Result<(), Error> {
        self.command(&crate::cmd("UNWATCH")).map(|_| ())
    }

    /// Runs a pipeline's commands on the session as they are (no MULTI): one result per
    /// command, as [`Pipeline::exec`].
    pub fn exec_pipeline(&mut self, pipe: &Pipeline) -> Vec<Result<Value<'_>, Error>> {
        let n = pipe.len();
        if n == 0 {
            return Vec::new();
        }
        if pipe.has_routes() {
            let e = Error::InvalidArgument(
                "a session's commands go to its slot's node: a route is refused".into(),
            );
            return vec![Err(e); n];
        }
        match self.run_built(n, pipe.timeout_ms(), |buf| {
            buf.extend_from_slice(pipe.as_resp())
        }) {
            Ok((_, out)) => out,
            Err(e) => vec![Err(e); n],
        }
    }

    /// Sends MULTI, `pipe`'s commands and EXEC as one round trip on the session: the
    /// transaction's replies, one per command of `pipe` in its order (a
    /// [`Slot`](crate::Slot) of `pipe` reads its reply from them; a command that failed
    /// inside the transaction holds its error). `Err`: [`Error::Watch`] when EXEC answered
    /// nil (a watched key changed: nothing applied), [`Error::WatchMoved`], a CROSSSLOT
    /// [`Error::Cluster`] (nothing sent), the error of the command the server refused to
    /// queue (EXECABORT: nothing applied), or the execution's error. The watch ends with
    /// the EXEC either way.
    pub fn multi_exec(&mut self, pipe: &Pipeline) -> Result<Vec<Result<Value<'_>, Error>>, Error> {
        if pipe.has_routes() {
            return Err(Error::InvalidArgument(
                "a transaction's commands go to its slot's node: a route is refused".into(),
            ));
        }
        let n = pipe.len();
        let (rc, mut replies) = self.run_built(n + 2, pipe.timeout_ms(), |buf| {
            buf.extend_from_slice(MULTI);
            buf.extend_from_slice(pipe.as_resp());
            buf.extend_from_slice(EXEC);
        })?;
        let exec = replies.pop().unwrap_or(Ok(Value::Nil));
        if rc == sys::SL_EABORTED || matches!(exec, Ok(Value::Nil)) {
            return Err(Error::Watch(
                "a watched key changed: EXEC answered nil, nothing was applied".into(),
            ));
        }
        // MULTI refused (CROSSSLOT: every command holds that error), or a command the
        // server refused to queue (then EXEC answers EXECABORT): the first error says why.
        if let Some(Err(e)) = replies.iter().find(|r| r.is_err()) {
            if rc != 0 || exec.is_err() {
                return Err(e.clone());
            }
        }
        match exec {
            Ok(Value::Array(items)) if items.len() == n => Ok(items
                .into_iter()
                .map(|v| match v {
                    Value::Error(e) => Err(*e),
                    v => Ok(v),
                })
                .collect()),
            Err(e) => Err(e),
            Ok(other) => Err(Error::UnexpectedReply(format!(
                "EXEC answered {other:?} for {n} commands"
            ))),
        }
    }

    /// The slot the session is pinned to (`None`: not yet, or plain mode).
    pub fn slot(&self) -> Option<u16> {
        // SAFETY: raw is live until close (which takes self).
        let s = unsafe { sys::sl_session_slot(self.raw) };
        u16::try_from(s).ok()
    }

    /// Whether the session holds a WATCH or an open MULTI (ending it sends UNWATCH or
    /// DISCARD).
    pub fn watching(&self) -> bool {
        // SAFETY: raw is live until close (which takes self).
        unsafe { sys::sl_session_watching(self.raw) != 0 }
    }

    /// Ends the session as dropping it does, with the result of the UNWATCH/DISCARD it
    /// sent (on an error the connection was closed instead: nothing is lost).
    pub fn close(mut self) -> Result<(), Error> {
        let raw = std::mem::replace(&mut self.raw, ptr::null_mut());
        // SAFETY: raw is live and ours; it is not used again (NULL in self).
        let rc = unsafe { sys::sl_session_close(raw) };
        if rc != 0 {
            return Err(Error::from_code(rc, &self.client.errmsg()));
        }
        Ok(())
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        if let Some(raw) = NonNull::new(self.raw) {
            // SAFETY: live and ours; closed once.
            unsafe { sys::sl_session_close(raw.as_ptr()) };
        }
    }
}

impl std::fmt::Debug for Session<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("slot", &self.slot())
            .field("watching", &self.watching())
            .finish()
    }
}
