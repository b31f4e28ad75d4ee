//! Pub/sub over the core's subscriber (core/README.md, "Pub/sub"): [`PubSub`] is an
//! [`Iterator`] of [`Message`]s (blocking), and [`PubSub::into_stream`] a runtime-agnostic
//! stream ([`MessageStream::poll_next`], the signature of `futures::Stream`, and
//! [`MessageStream::recv`]). The core owns the subscriber's connections and a thread; it
//! keeps what was subscribed across lost connections, failovers and slot moves, and says so
//! in-band: [`MessageKind::Resubscribed`] ends a gap (messages of the gap were missed),
//! [`MessageKind::ConnectionLost`] starts one, [`MessageKind::Overflow`] counts the newest
//! messages the bounded queue dropped.
//!
//! ```
//! # let url = slotlane_testing::url();
//! let mut sub = slotlane::PubSub::connect(url.as_str())?;
//! sub.subscribe("doc:news")?;
//! let confirmed = sub.next().unwrap()?;
//! assert_eq!(confirmed.kind, slotlane::MessageKind::Subscribe);
//! # Ok::<(), slotlane::Error>(())
//! ```
use crate::{Client, ConnectOptions, Error};
use slotlane_sys as sys;
use std::collections::VecDeque;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::future::Future;
use std::pin::Pin;
use std::ptr::{self, NonNull};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// What a subscription is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubKind {
    /// `SUBSCRIBE`
    Channel,
    /// `PSUBSCRIBE`
    Pattern,
    /// `SSUBSCRIBE`: on the channel's slot owner, followed across slot moves.
    Shard,
}

/// What a record is (the type names of bindings/spec/errors.json's `pubsub_records`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageKind {
    /// A message of a channel (`channel`, `payload`).
    Message,
    /// A message of a pattern (`pattern`, `channel`, `payload`).
    PMessage,
    /// A message of a shard channel.
    SMessage,
    /// The server confirmed a channel (`count`: its subscriptions on that connection).
    Subscribe,
    /// ... a pattern.
    PSubscribe,
    /// ... a shard channel.
    SSubscribe,
    /// A channel is no longer subscribed (as asked).
    Unsubscribe,
    /// ... a pattern.
    PUnsubscribe,
    /// ... a shard channel.
    SUnsubscribe,
    /// The channel is subscribed again after a gap: its messages of the gap were missed.
    Resubscribed(SubKind),
    /// `count` of the newest messages were dropped here by the bounded queue.
    Overflow,
    /// A subscriber connection broke (`payload`: node and reason).
    ConnectionLost,
    /// A server refused a subscription (`payload`: its error); the core retries it.
    Error,
}

/// One record: a message (`channel`, `pattern` of a pmessage, `payload`) or an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// What the record is.
    pub kind: MessageKind,
    /// The channel (of a message or a confirmation; the pattern of a psubscribe).
    pub channel: Vec<u8>,
    /// The pattern of a pmessage, else empty.
    pub pattern: Vec<u8>,
    /// The message; the reason of a connection loss or an error; else empty.
    pub payload: Vec<u8>,
    /// The server's subscription count of a confirmation; the messages an overflow dropped.
    pub count: i64,
}

/// Tuning of a subscriber; `Default` is the core's defaults.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PubSubOptions {
    /// Bytes the core queues before the newest messages are dropped (default 64 MiB).
    pub max_queue_bytes: Option<u64>,
    /// Silence before a health-check PING (default 30 s); `Some(Duration::ZERO)`: never.
    pub health_check_interval: Option<Duration>,
}

/// The core subscriber's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PubSubStats {
    /// Messages queued.
    pub messages: u64,
    /// Messages dropped by the queue bound.
    pub dropped: u64,
    /// Connection-lost records.
    pub connection_losses: u64,
    /// Resubscribed records.
    pub resubscribed: u64,
    /// Health-check PINGs sent.
    pub pings: u64,
    /// Topology refreshes the subscriber asked for.
    pub refreshes: u64,
    /// Subscriptions the servers confirm now.
    pub confirmed: u64,
    /// Bytes in the queue now.
    pub queued_bytes: u64,
    /// Bytes read from the subscriber's connections.
    pub bytes_read: u64,
}

struct Raw(NonNull<sys::sl_subscriber>);
// SAFETY: every sl_subscriber_* call but free may be made from any thread (slotlane.h).
unsafe impl Send for Raw {}
unsafe impl Sync for Raw {}

impl Drop for Raw {
    fn drop(&mut self) {
        // SAFETY: the last reference: no call runs or follows.
        unsafe { sys::sl_subscriber_free(self.0.as_ptr()) };
    }
}

/// A subscriber on connections of its own; an iterator of its records (blocking).
pub struct PubSub {
    raw: Arc<Raw>,
    msgs: Vec<sys::sl_message>,
    data: Vec<u8>,
    pending: VecDeque<Message>,
}

fn kind_of(k: u8, flags: u8) -> MessageKind {
    let sub = match flags {
        1 => SubKind::Pattern,
        2 => SubKind::Shard,
        _ => SubKind::Channel,
    };
    match k as c_int {
        sys::SL_MSG_MESSAGE => MessageKind::Message,
        sys::SL_MSG_PMESSAGE => MessageKind::PMessage,
        sys::SL_MSG_SMESSAGE => MessageKind::SMessage,
        sys::SL_MSG_SUBSCRIBE => MessageKind::Subscribe,
        sys::SL_MSG_PSUBSCRIBE => MessageKind::PSubscribe,
        sys::SL_MSG_SSUBSCRIBE => MessageKind::SSubscribe,
        sys::SL_MSG_UNSUBSCRIBE => MessageKind::Unsubscribe,
        sys::SL_MSG_PUNSUBSCRIBE => MessageKind::PUnsubscribe,
        sys::SL_MSG_SUNSUBSCRIBE => MessageKind::SUnsubscribe,
        sys::SL_MSG_RESUBSCRIBED => MessageKind::Resubscribed(sub),
        sys::SL_MSG_OVERFLOW => MessageKind::Overflow,
        sys::SL_MSG_CONNECTION_LOST => MessageKind::ConnectionLost,
        _ => MessageKind::Error,
    }
}

impl PubSub {
    /// Connects a subscriber to the servers of `opts` (discovers a cluster) with the
    /// default [`PubSubOptions`].
    pub fn connect<O: Into<ConnectOptions>>(opts: O) -> Result<PubSub, Error> {
        PubSub::with_options(opts, PubSubOptions::default())
    }

    /// Connects a subscriber with `sopts`.
    pub fn with_options<O: Into<ConnectOptions>>(
        opts: O,
        sopts: PubSubOptions,
    ) -> Result<PubSub, Error> {
        let o: ConnectOptions = opts.into();
        let mut so = sys::sl_subscriber_options {
            version: sys::SL_SUBSCRIBER_OPTIONS_VERSION,
            size: std::mem::size_of::<sys::sl_subscriber_options>() as u32,
            max_queue_bytes: sopts.max_queue_bytes.unwrap_or(0),
            health_check_interval_ms: 0,
        };
        if let Some(d) = sopts.health_check_interval {
            let ms = d.as_millis();
            so.health_check_interval_ms = if ms == 0 {
                -1
            } else {
                ms.min(c_int::MAX as u128) as c_int
            };
        }
        let raw = Client::with_options(&o, None, None, |c| {
            let mut raw: *mut sys::sl_subscriber = ptr::null_mut();
            let mut msg = [0 as c_char; 512];
            // SAFETY: c and so outlive the call; msg is writable for its length.
            let rc =
                unsafe { sys::sl_subscriber_new(&mut raw, c, &so, msg.as_mut_ptr(), msg.len()) };
            if rc != 0 {
                // SAFETY: the core NUL-terminates msg.
                let m = unsafe { CStr::from_ptr(msg.as_ptr()) }.to_string_lossy();
                return Err(Error::from_code(rc, &m));
            }
            NonNull::new(raw).ok_or_else(|| Error::Other {
                code: 0,
                message: "sl_subscriber_new gave NULL".into(),
            })
        })??;
        Ok(PubSub {
            raw: Arc::new(Raw(raw)),
            msgs: vec![sys::sl_message::default(); 256],
            data: vec![0; 64 << 10],
            pending: VecDeque::new(),
        })
    }

    fn op(&self, subscribe: bool, kind: SubKind, name: Option<&[u8]>) -> Result<(), Error> {
        let k = match kind {
            SubKind::Channel => sys::SL_SUB_CHANNEL,
            SubKind::Pattern => sys::SL_SUB_PATTERN,
            SubKind::Shard => sys::SL_SUB_SHARD,
        };
        let (p, len) = match name {
            Some(n) => (
                if n.is_empty() {
                    b"".as_ptr()
                } else {
                    n.as_ptr()
                } as *const c_void,
                n.len(),
            ),
            None => (ptr::null(), 0),
        };
        // SAFETY: the subscriber is live; name is only read during the call.
        let rc = unsafe {
            if subscribe {
                sys::sl_subscriber_subscribe(self.raw.0.as_ptr(), k, p, len)
            } else {
                sys::sl_subscriber_unsubscribe(self.raw.0.as_ptr(), k, p, len)
            }
        };
        if rc != 0 {
            return Err(Error::from_code(rc, ""));
        }
        Ok(())
    }

    /// `SUBSCRIBE`: the confirmation comes as a [`MessageKind::Subscribe`] record.
    pub fn subscribe(&self, channel: impl AsRef<[u8]>) -> Result<(), Error> {
        self.op(true, SubKind::Channel, Some(channel.as_ref()))
    }
    /// `PSUBSCRIBE`
    pub fn psubscribe(&self, pattern: impl AsRef<[u8]>) -> Result<(), Error> {
        self.op(true, SubKind::Pattern, Some(pattern.as_ref()))
    }
    /// `SSUBSCRIBE`: on the channel's slot owner, followed across slot moves.
    pub fn ssubscribe(&self, channel: impl AsRef<[u8]>) -> Result<(), Error> {
        self.op(true, SubKind::Shard, Some(channel.as_ref()))
    }
    /// Ends a subscription of `kind` (`None`: every one of that kind).
    pub fn unsubscribe(&self, kind: SubKind, name: Option<&[u8]>) -> Result<(), Error> {
        self.op(false, kind, name)
    }

    /// The core subscriber's counters.
    pub fn stats(&self) -> PubSubStats {
        let mut s = sys::sl_subscriber_stats {
            version: sys::SL_SUBSCRIBER_STATS_VERSION,
            size: std::mem::size_of::<sys::sl_subscriber_stats>() as u32,
            ..Default::default()
        };
        // SAFETY: live subscriber, a stats struct of this version and size.
        unsafe { sys::sl_subscriber_stats_get(self.raw.0.as_ptr(), &mut s) };
        PubSubStats {
            messages: s.messages,
            dropped: s.dropped,
            connection_losses: s.connection_losses,
            resubscribed: s.resubscribed,
            pings: s.pings,
            refreshes: s.refreshes,
            confirmed: s.confirmed,
            queued_bytes: s.queued_bytes,
            bytes_read: s.bytes_read,
        }
    }

    /// Stops the subscriber: its connections close; the records still queued can be read,
    /// then the iterator ends.
    pub fn close(&self) {
        // SAFETY: live subscriber; close may be called from any thread.
        unsafe { sys::sl_subscriber_close(self.raw.0.as_ptr()) };
    }

    /// Drains one batch (waiting up to `timeout_ms`, -1: no limit) into `pending`; `Ok(false)`
    /// when the subscriber is closed and empty.
    fn fill(&mut self, timeout_ms: c_int) -> Result<bool, Error> {
        loop {
            let (mut n, mut used) = (0usize, 0usize);
            // SAFETY: the buffers are writable for their lengths; the subscriber is live.
            let rc = unsafe {
                sys::sl_subscriber_drain(
                    self.raw.0.as_ptr(),
                    timeout_ms,
                    self.msgs.as_mut_ptr(),
                    self.msgs.len(),
                    self.data.as_mut_ptr() as *mut c_void,
                    self.data.len(),
                    &mut n,
                    &mut used,
                )
            };
            match rc {
                0 => {
                    for m in &self.msgs[..n] {
                        let off = m.offset as usize;
                        let (c, p, l) = (
                            m.channel_len as usize,
                            m.pattern_len as usize,
                            m.payload_len as usize,
                        );
                        self.pending.push_back(Message {
                            kind: kind_of(m.kind, m.flags),
                            channel: self.data[off..off + c].to_vec(),
                            pattern: self.data[off + c..off + c + p].to_vec(),
                            payload: self.data[off + c + p..off + c + p + l].to_vec(),
                            count: m.count,
                        });
                    }
                    return Ok(true);
                }
                sys::SL_ETOOSMALL => self.data.resize(used.max(self.data.len() * 2), 0),
                sys::SL_ESTATE => return Ok(false),
                _ => return Err(Error::from_code(rc, "")),
            }
        }
    }

    /// The next record within `timeout` (`None`: no limit); `Ok(None)` on a timeout or
    /// when closed and drained.
    pub fn next_timeout(&mut self, timeout: Option<Duration>) -> Result<Option<Message>, Error> {
        if self.pending.is_empty() {
            let ms = timeout.map_or(-1, |t| t.as_millis().min(c_int::MAX as u128) as c_int);
            self.fill(ms)?;
        }
        Ok(self.pending.pop_front())
    }

    /// A runtime-agnostic stream of the records: a thread of its own drains the core's queue
    /// (at most 1024 records ahead of the reader; beyond, the core's bound applies) and wakes
    /// the task.
    pub fn into_stream(self) -> MessageStream {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            room: Condvar::new(),
        });
        let raw = self.raw.clone();
        let s2 = shared.clone();
        let mut me = self;
        std::thread::spawn(move || loop {
            let more = me.fill(-1);
            let mut st = s2.state.lock().unwrap();
            match more {
                Ok(true) => st.buf.extend(me.pending.drain(..)),
                Ok(false) => st.done = true,
                Err(e) => {
                    st.error = Some(e);
                    st.done = true;
                }
            }
            if let Some(w) = st.waker.take() {
                w.wake();
            }
            if st.done {
                return;
            }
            while st.buf.len() >= 1024 && !st.dropped {
                st = s2.room.wait(st).unwrap();
            }
            if st.dropped {
                return;
            }
        });
        MessageStream { shared, raw }
    }
}

impl Iterator for PubSub {
    type Item = Result<Message, Error>;

    /// The next record (blocking); `None` once the subscriber is closed and drained.
    fn next(&mut self) -> Option<Self::Item> {
        while self.pending.is_empty() {
            match self.fill(-1) {
                Ok(true) => {}
                Ok(false) => return None,
                Err(e) => return Some(Err(e)),
            }
        }
        self.pending.pop_front().map(Ok)
    }
}

#[derive(Default)]
struct State {
    buf: VecDeque<Message>,
    waker: Option<Waker>,
    done: bool,
    dropped: bool,
    error: Option<Error>,
}

struct Shared {
    state: Mutex<State>,
    room: Condvar,
}

/// [`PubSub::into_stream`]: poll it from any executor.
pub struct MessageStream {
    shared: Arc<Shared>,
    raw: Arc<Raw>,
}

impl MessageStream {
    /// `futures::Stream::poll_next`'s signature: the next record, `Ready(None)` once the
    /// subscriber is closed and drained.
    pub fn poll_next(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Message, Error>>> {
        let mut st = self.shared.state.lock().unwrap();
        if let Some(m) = st.buf.pop_front() {
            if st.buf.len() < 512 {
                self.shared.room.notify_one();
            }
            return Poll::Ready(Some(Ok(m)));
        }
        if let Some(e) = st.error.take() {
            return Poll::Ready(Some(Err(e)));
        }
        if st.done {
            return Poll::Ready(None);
        }
        st.waker = Some(cx.waker().clone());
        Poll::Pending
    }

    /// The next record, as a future.
    pub fn recv(&mut self) -> impl Future<Output = Option<Result<Message, Error>>> + '_ {
        std::future::poll_fn(move |cx| Pin::new(&mut *self).poll_next(cx))
    }

    /// Stops the subscriber (the stream ends after what is queued).
    pub fn close(&self) {
        // SAFETY: live subscriber; close may be called from any thread.
        unsafe { sys::sl_subscriber_close(self.raw.0.as_ptr()) };
    }
}

impl Drop for MessageStream {
    fn drop(&mut self) {
        self.close();
        let mut st = self.shared.state.lock().unwrap();
        st.dropped = true;
        self.shared.room.notify_one();
    }
}
