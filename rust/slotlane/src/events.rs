//! Topology and node [`Event`]s of a client ([`ConnectOptions::on_event`]).
//!
//! The core reports an event (`sl_client_options.on_event`) on the thread that runs the
//! client's executions, from inside the library, where it must neither block nor call the
//! client. So the binding's C callback only sends the event down a channel; a thread of the
//! binding's own (one per callback given to [`ConnectOptions::on_event`], shared by every
//! client made from those options) calls the user's callback, in order, outside every
//! execution. That thread ends once every client holding the callback is dropped and it has
//! delivered what was queued.
//!
//! [`ConnectOptions::on_event`]: crate::ConnectOptions::on_event
use crate::Error;
use slotlane_sys as sys;
use std::ffi::{c_char, c_void, CStr};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex, Weak};

/// What an [`Event`] reports (the core's `SL_EVENT_*` kinds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EventKind {
    /// A refresh changed the slot map or the replicas; the address is the node that
    /// answered the refresh.
    TopologyChanged,
    /// A working connection to the node broke, or a connect to a node that had worked
    /// failed: once per outage.
    NodeDown,
    /// The node, reported down, connected again.
    NodeUp,
    /// The node, a replica of a slot's primary, owns the slot now (a refresh or a MOVED
    /// showed it): once per promotion.
    Failover,
    /// A kind this version of the binding does not know (the core's code).
    Other(i32),
}

impl EventKind {
    fn from_raw(t: sys::sl_event_type) -> EventKind {
        match t {
            sys::SL_EVENT_TOPOLOGY_CHANGED => EventKind::TopologyChanged,
            sys::SL_EVENT_NODE_DOWN => EventKind::NodeDown,
            sys::SL_EVENT_NODE_UP => EventKind::NodeUp,
            sys::SL_EVENT_FAILOVER => EventKind::Failover,
            other => EventKind::Other(other),
        }
    }
}

/// One topology or node event of a client (see [`ConnectOptions::on_event`]).
///
/// [`ConnectOptions::on_event`]: crate::ConnectOptions::on_event
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Event {
    /// What happened.
    pub kind: EventKind,
    /// The node it happened to, `"host:port"`.
    pub addr: String,
}

type Callback = dyn Fn(Event) + Send + Sync + 'static;

/// The callback of a [`crate::ConnectOptions`]: compared by identity.
#[derive(Clone)]
pub(crate) struct OnEvent(Arc<OnEventInner>);

struct OnEventInner {
    f: Arc<Callback>,
    /// The delivery of the clients alive now (None or dead: none is).
    sink: Mutex<Weak<Sink>>,
}

impl OnEvent {
    pub(crate) fn new(f: Arc<Callback>) -> OnEvent {
        OnEvent(Arc::new(OnEventInner {
            f,
            sink: Mutex::new(Weak::new()),
        }))
    }

    /// The sink for one more core client: the live one, or a new one with its delivery
    /// thread.
    pub(crate) fn sink(&self) -> Result<Arc<Sink>, Error> {
        let mut guard = self.0.sink.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = guard.upgrade() {
            return Ok(s);
        }
        let (tx, rx) = channel::<Event>();
        let f = self.0.f.clone();
        std::thread::Builder::new()
            .name("slotlane-events".into())
            .spawn(move || {
                // Ends when every Sink (every client) is gone and the queue is empty. A
                // callback that panics loses that event only.
                for ev in rx {
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(ev)));
                }
            })
            .map_err(|e| Error::Other {
                code: 0,
                message: format!("cannot start the event thread: {e}"),
            })?;
        let s = Arc::new(Sink { tx });
        *guard = Arc::downgrade(&s);
        Ok(s)
    }
}

impl PartialEq for OnEvent {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}
impl Eq for OnEvent {}

impl std::fmt::Debug for OnEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OnEvent(..)")
    }
}

/// What a core client's `on_event_ctx` points at: held by the client until after
/// `sl_client_free`.
pub(crate) struct Sink {
    tx: Sender<Event>,
}

impl Sink {
    /// The C callback and its context for `sl_client_options`.
    pub(crate) fn raw(self: &Arc<Sink>) -> (sys::sl_event_fn, *mut c_void) {
        (Some(on_event_c), Arc::as_ptr(self) as *mut c_void)
    }
}

unsafe extern "C" fn on_event_c(ctx: *mut c_void, t: sys::sl_event_type, addr: *const c_char) {
    let _ = std::panic::catch_unwind(|| {
        if ctx.is_null() {
            return;
        }
        // SAFETY: ctx is the Arc<Sink> the client holds until after sl_client_free.
        let sink = unsafe { &*(ctx as *const Sink) };
        let addr = if addr.is_null() {
            String::new()
        } else {
            // SAFETY: the core passes a NUL-terminated string valid during the call.
            unsafe { CStr::from_ptr(addr) }
                .to_string_lossy()
                .into_owned()
        };
        let ev = Event {
            kind: EventKind::from_raw(t),
            addr,
        };
        // The delivery thread is gone only when no sink is left: never while this one is.
        let _ = sink.tx.send(ev);
    });
}
