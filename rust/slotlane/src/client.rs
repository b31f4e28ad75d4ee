//! [`Client`], its [`ConnectOptions`], [`Route`], [`Stats`] and [`CancelHandle`].
use crate::events::{OnEvent, Sink};
use crate::value::decode;
use crate::{Cmd, Error, Event, FromValue, Pipeline, Value};
use slotlane_sys as sys;
use std::ffi::{c_char, c_int, c_uint, CStr, CString};
use std::ptr::{self, NonNull};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How the client treats its server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Ask the seed: a node that answers `CLUSTER SLOTS` makes a cluster client.
    #[default]
    Auto,
    /// One node, no discovery and no routing: the server sees every command.
    Plain,
    /// Discover the slot map and route every command by its key.
    Cluster,
}

/// Where read-only commands go (the core's `sl_read_from`; write commands always go to
/// the slot's primary). Replica reads may see data a little behind the primary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadFrom {
    /// Every command to the slot's primary (the default).
    #[default]
    Primary,
    /// Read-only commands to the first usable replica of the slot's primary, falling
    /// back to the primary when none answers.
    PreferReplica,
    /// Read-only commands rotate over the primary's usable replicas.
    Replicas,
}

/// Where a command goes, instead of by its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// By the command's key (the default). In cluster mode the core sends `DBSIZE`,
    /// `KEYS`, `FLUSHALL`, `FLUSHDB`, `SCRIPT LOAD/EXISTS/FLUSH` and `FUNCTION
    /// LOAD/DELETE/FLUSH/RESTORE` to every primary (merged as for
    /// [`Route::AllPrimaries`]); other keyless commands go to the default node (the seed
    /// that answered discovery).
    Key,
    /// To every primary, merged as Redis's response-policy tip says (slotlane.h): `DBSIZE`
    /// summed, `KEYS` concatenated, `SCRIPT EXISTS` an AND per script, `FLUSHALL`,
    /// `SCRIPT LOAD`, `FUNCTION LOAD`, `PING`... the first reply when every node succeeded;
    /// other commands get an array with one reply per primary.
    AllPrimaries,
    /// To the node `"host:port"`.
    Node(String),
    /// To the owner of a slot (0..=16383).
    Slot(u16),
    /// To a random primary.
    Random,
}

/// The records and data of batch `b`'s last execution, as slices.
///
/// # Safety
/// `b` is a live batch that is not executing, and the slices are not used after its next
/// exec, reset or free (the caller picks the lifetime `'a` to say so).
pub(crate) unsafe fn batch_replies<'a>(b: *mut sys::sl_batch) -> (&'a [sys::sl_reply], &'a [u8]) {
    let (mut n, mut data, mut dlen) = (0usize, ptr::null::<u8>(), 0usize);
    // SAFETY: b is live (the caller's contract); the outputs are written by the call.
    let recs = unsafe { sys::sl_batch_replies(b, &mut n, &mut data, &mut dlen) };
    // SAFETY: the core's reply memory holds n records and dlen data bytes.
    let recs = if recs.is_null() || n == 0 {
        &[][..]
    } else {
        unsafe { std::slice::from_raw_parts(recs, n) }
    };
    let data = if data.is_null() || dlen == 0 {
        &[][..]
    } else {
        unsafe { std::slice::from_raw_parts(data, dlen) }
    };
    (recs, data)
}

/// Runs `f` with the C form of `route` (NULL for `None`).
pub(crate) fn with_route<R>(
    route: Option<&Route>,
    f: impl FnOnce(*const sys::sl_route) -> R,
) -> Result<R, Error> {
    let Some(route) = route else {
        return Ok(f(ptr::null()));
    };
    let mut node = None;
    let (kind, slot) = match route {
        Route::Key => (sys::SL_ROUTE_KEY, 0),
        Route::AllPrimaries => (sys::SL_ROUTE_ALL_PRIMARIES, 0),
        Route::Random => (sys::SL_ROUTE_RANDOM, 0),
        Route::Slot(s) if *s < 16384 => (sys::SL_ROUTE_SLOT, *s as c_int),
        Route::Slot(s) => {
            return Err(Error::InvalidArgument(format!(
                "slot {s} is not in 0..=16383"
            )))
        }
        Route::Node(addr) => {
            node = Some(CString::new(addr.as_str()).map_err(|_| {
                Error::InvalidArgument(format!("node address {addr:?} holds a NUL byte"))
            })?);
            (sys::SL_ROUTE_NODE, 0)
        }
    };
    let raw = sys::sl_route {
        version: sys::SL_ROUTE_VERSION,
        size: std::mem::size_of::<sys::sl_route>() as c_uint,
        kind,
        slot,
        node: node.as_ref().map_or(ptr::null(), |n| n.as_ptr()),
    };
    Ok(f(&raw))
}

/// Options of [`Client::connect`]. A `&str` or `String` converts into options with that
/// URL and every default.
///
/// ```
/// use slotlane::{Client, ConnectOptions, Mode};
/// use std::time::Duration;
/// # let url = slotlane_testing::url(); // SLOTLANE_URL, else a slotlane-server of its own
/// let opts = ConnectOptions::new(url.as_str())
///     .mode(Mode::Auto)
///     .resp3()
///     .command_timeout(Duration::from_secs(2));
/// let mut client = Client::connect(opts)?;
/// client.ping()?;
/// # Ok::<(), slotlane::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectOptions {
    url: String,
    mode: Mode,
    username: Option<String>,
    password: Option<String>,
    db: Option<i64>,
    resp: u8,
    connect_timeout: Option<Duration>,
    command_timeout: Option<Option<Duration>>,
    max_redirects: Option<i64>,
    refresh_interval: Option<Duration>,
    reconnect: Option<(Duration, Duration)>,
    max_bulk_len: Option<u64>,
    max_aggregate_len: Option<u64>,
    max_depth: Option<i64>,
    tls: Option<crate::Tls>,
    read_from: ReadFrom,
    retry_writes: bool,
    on_event: Option<OnEvent>,
}

impl ConnectOptions {
    /// Options for `url`: `"redis://[user:password@]host:port[/db]"`, `"host:port"`, or
    /// several seeds, `"h1:p1,h2:p2"`.
    pub fn new(url: &str) -> ConnectOptions {
        ConnectOptions {
            url: url.to_string(),
            mode: Mode::Auto,
            username: None,
            password: None,
            db: None,
            resp: 2,
            connect_timeout: None,
            command_timeout: None,
            max_redirects: None,
            refresh_interval: None,
            reconnect: None,
            max_bulk_len: None,
            max_aggregate_len: None,
            max_depth: None,
            tls: None,
            read_from: ReadFrom::Primary,
            retry_writes: false,
            on_event: None,
        }
    }
    /// Plain, cluster, or detect (the default).
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }
    /// ACL user name (overrides the URL's).
    pub fn username(mut self, user: &str) -> Self {
        self.username = Some(user.to_string());
        self
    }
    /// Password (overrides the URL's).
    pub fn password(mut self, password: &str) -> Self {
        self.password = Some(password.to_string());
        self
    }
    /// Database for `SELECT` in plain mode (overrides the URL's).
    pub fn db(mut self, db: u32) -> Self {
        self.db = Some(db as i64);
        self
    }
    /// RESP protocol version: 2 (the default) or 3; anything else fails at connect.
    pub fn resp_version(mut self, version: u8) -> Self {
        self.resp = version;
        self
    }
    /// RESP3 (`HELLO 3` on every connection).
    pub fn resp3(self) -> Self {
        self.resp_version(3)
    }
    /// Per connection attempt (default 2 s).
    pub fn connect_timeout(mut self, t: Duration) -> Self {
        self.connect_timeout = Some(t);
        self
    }
    /// Deadline of one execution, a command or a whole pipeline (default 5 s).
    pub fn command_timeout(mut self, t: Duration) -> Self {
        self.command_timeout = Some(Some(t));
        self
    }
    /// No execution deadline.
    pub fn no_command_timeout(mut self) -> Self {
        self.command_timeout = Some(None);
        self
    }
    /// Redirects followed per command before [`Error::RedirectsExhausted`] (default 5).
    pub fn max_redirects(mut self, n: u32) -> Self {
        self.max_redirects = Some(n as i64);
        self
    }
    /// Re-read the slot map this often (default: only after a MOVED).
    pub fn refresh_interval(mut self, t: Duration) -> Self {
        self.refresh_interval = Some(t);
        self
    }
    /// Reconnect backoff: first wait and ceiling (defaults 10 ms, 1 s).
    pub fn reconnect_backoff(mut self, min: Duration, max: Duration) -> Self {
        self.reconnect = Some((min, max));
        self
    }
    /// Largest bulk string accepted in a reply (default 512 MiB).
    pub fn max_bulk_len(mut self, n: u64) -> Self {
        self.max_bulk_len = Some(n);
        self
    }
    /// Most elements of one reply aggregate (default 2^30).
    pub fn max_aggregate_len(mut self, n: u64) -> Self {
        self.max_aggregate_len = Some(n);
        self
    }
    /// Deepest nesting of a reply (default 32).
    pub fn max_depth(mut self, n: u32) -> Self {
        self.max_depth = Some(n as i64);
        self
    }
    /// Every connection over TLS with this configuration (made once with
    /// [`TlsConfig::build`](crate::TlsConfig::build), shared by any number of clients). A
    /// `rediss://` URL without it uses the defaults: the system's CAs, full verification.
    pub fn tls(mut self, tls: crate::Tls) -> Self {
        self.tls = Some(tls);
        self
    }
    /// Where read-only commands go (default [`ReadFrom::Primary`]); replicas are sent
    /// READONLY by the core. In plain mode there are no replicas: the one node serves all.
    pub fn read_from(mut self, r: ReadFrom) -> Self {
        self.read_from = r;
        self
    }
    /// `true`: a write already sent when its connection broke is sent once more (it may
    /// then run twice). Default `false`: it fails with an I/O error saying it may have
    /// been executed.
    pub fn retry_writes(mut self, on: bool) -> Self {
        self.retry_writes = on;
        self
    }
    /// Calls `f` with each topology and node [`Event`] of the clients made from these
    /// options ([`Client`], [`aio::Client`](crate::aio::Client), every client of a
    /// [`Pool`](crate::Pool); a [`PubSub`](crate::PubSub) reports its own events in-band):
    /// a refresh that changed the slot map (also the discovery at
    /// connect), a node down or up again, a replica promoted (a failover). For logging
    /// and metrics.
    ///
    /// The core reports an event from inside an execution, where nothing may block or call
    /// the client; the binding queues it there, and `f` runs on a thread of the binding's
    /// own (`slotlane-events`, one per `on_event` call, shared by every client made from
    /// these options and their clones), one event at a time, in the order they happened.
    /// So `f` may block and may use a client, this one included (through a `Mutex`, a
    /// [`Pool`](crate::Pool) or an [`aio::Client`](crate::aio::Client)). Events queued when
    /// the last client is dropped are still delivered, then the thread ends. A panic in
    /// `f` loses that event only.
    ///
    /// ```
    /// use slotlane::{Client, ConnectOptions, EventKind};
    /// use std::sync::mpsc;
    /// # let url = slotlane_testing::url(); // SLOTLANE_URL, else a slotlane-server of its own
    /// let (tx, rx) = mpsc::channel();
    /// let tx = std::sync::Mutex::new(tx);
    /// let opts = ConnectOptions::new(url.as_str()).on_event(move |ev| {
    ///     eprintln!("slotlane: {:?} {}", ev.kind, ev.addr);
    ///     let _ = tx.lock().unwrap().send(ev.kind);
    /// });
    /// let mut client = Client::connect(opts)?;
    /// client.ping()?;
    /// # if client.mode() == slotlane::Mode::Cluster {
    /// // a cluster client's discovery of the slot map is a topology change
    /// assert_eq!(rx.recv().unwrap(), EventKind::TopologyChanged);
    /// # }
    /// # Ok::<(), slotlane::Error>(())
    /// ```
    pub fn on_event<F>(mut self, f: F) -> Self
    where
        F: Fn(Event) + Send + Sync + 'static,
    {
        self.on_event = Some(OnEvent::new(Arc::new(f)));
        self
    }
    /// The URL.
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl From<&str> for ConnectOptions {
    fn from(url: &str) -> Self {
        ConnectOptions::new(url)
    }
}
impl From<String> for ConnectOptions {
    fn from(url: String) -> Self {
        ConnectOptions::new(&url)
    }
}
impl From<&String> for ConnectOptions {
    fn from(url: &String) -> Self {
        ConnectOptions::new(url)
    }
}
impl From<&ConnectOptions> for ConnectOptions {
    fn from(o: &ConnectOptions) -> Self {
        o.clone()
    }
}

fn cstring(what: &str, s: &str) -> Result<CString, Error> {
    CString::new(s).map_err(|_| Error::InvalidArgument(format!("the {what} holds a NUL byte")))
}

fn millis(what: &str, d: Duration) -> Result<c_int, Error> {
    let ms = d.as_millis();
    if ms > c_int::MAX as u128 {
        return Err(Error::InvalidArgument(format!(
            "{what} of {d:?} is too long"
        )));
    }
    Ok(ms as c_int)
}

fn int(what: &str, v: i64) -> Result<c_int, Error> {
    c_int::try_from(v).map_err(|_| Error::InvalidArgument(format!("{what} {v} is out of range")))
}

/// Counters of a client, from [`Client::stats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Commands executed (a split command counts once).
    pub commands: u64,
    /// MOVED redirects followed.
    pub moved: u64,
    /// ASK redirects followed.
    pub ask: u64,
    /// TRYAGAIN / CLUSTERDOWN retries.
    pub tryagain: u64,
    /// Slot-map refreshes.
    pub refreshes: u64,
    /// Successful connects, the first ones included.
    pub connects: u64,
    /// Successful connects after a connection was lost.
    pub reconnects: u64,
    /// Bytes written to sockets.
    pub bytes_written: u64,
    /// Bytes read from sockets.
    pub bytes_read: u64,
    /// Nodes currently known (primaries and replicas).
    pub nodes: u64,
    /// Promotions seen ([`EventKind::Failover`](crate::EventKind::Failover) events).
    pub failovers: u64,
    /// Refreshes asked for by a MOVED, CLUSTERDOWN, READONLY...
    pub refreshes_moved: u64,
    /// Refreshes asked for by a lost node.
    pub refreshes_lost: u64,
    /// Commands sent again after a lost connection or a `-LOADING`, `-MASTERDOWN`,
    /// `-READONLY`, `-UNBLOCKED` reply.
    pub retries: u64,
    /// Read-only commands routed to a replica ([`ReadFrom`]).
    pub replica_reads: u64,
    /// [`EventKind::NodeDown`](crate::EventKind::NodeDown) events.
    pub nodes_down: u64,
}

struct CancelShared {
    client: Mutex<*mut sys::sl_client>,
}
// SAFETY: the pointer is only used for sl_client_cancel (documented as callable from any
// thread at any time) while the mutex is held, and set to NULL (under the mutex) before
// the client is freed.
unsafe impl Send for CancelShared {}
unsafe impl Sync for CancelShared {}

/// Cancels the execution running on a client from another thread: its unfinished
/// commands fail with [`Error::Cancelled`]. Cancelling when nothing runs stops the
/// client's next execution. After the client is dropped, `cancel` does nothing.
#[derive(Clone)]
pub struct CancelHandle(Arc<CancelShared>);

impl CancelHandle {
    /// Asks the client's current (or next) execution to stop as soon as possible.
    pub fn cancel(&self) {
        let guard = self.0.client.lock().unwrap_or_else(|e| e.into_inner());
        if !guard.is_null() {
            // SAFETY: non-NULL means the client is alive (Drop nulls it under this lock
            // before freeing); sl_client_cancel is thread-safe.
            unsafe { sys::sl_client_cancel(*guard) };
        }
    }
}

impl std::fmt::Debug for CancelHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CancelHandle")
    }
}

/// A connection to a Redis-protocol server or cluster: one core handle (`sl_client`)
/// and its batch. Commands go one at a time ([`Client::command`], [`Client::query`],
/// the typed methods) or many per round trip ([`Pipeline`]).
///
/// A `Client` is `Send`, not shared: one thread uses it at a time. Share clients
/// between threads with a [`Pool`](crate::Pool). Dropping it closes its connections.
///
/// ```
/// use slotlane::Client;
/// # let url = slotlane_testing::url(); // SLOTLANE_URL, else a slotlane-server of its own
/// let mut client = Client::connect(url.as_str())?;
/// assert!(client.set("doc:client", "hello", None)?);
/// assert_eq!(client.get("doc:client")?, Some(b"hello".to_vec()));
/// assert_eq!(client.delete(&["doc:client"])?, 1);
/// # Ok::<(), slotlane::Error>(())
/// ```
pub struct Client {
    pub(crate) raw: NonNull<sys::sl_client>,
    pub(crate) batch: NonNull<sys::sl_batch>,
    pub(crate) scratch: Vec<u8>,
    cancel: Option<Arc<CancelShared>>,
    /// The event callback's context: dropped after sl_client_free (a field drops after Drop).
    _events: Option<Arc<Sink>>,
}

// SAFETY: the core keeps no thread-local or global state; a handle may move between
// threads as long as one thread uses it at a time, which `&mut self` guarantees.
unsafe impl Send for Client {}

/// One segment of queued commands with the same route: bytes [start, end), count.
pub(crate) struct Segment<'a> {
    pub start: usize,
    pub end: usize,
    pub count: usize,
    pub route: Option<&'a Route>,
}

impl Client {
    /// Connects: parses the URL, connects to a seed and, for a cluster, discovers the
    /// slot map. `opts` is a URL (`&str`, `String`) or [`ConnectOptions`].
    pub fn connect<O: Into<ConnectOptions>>(opts: O) -> Result<Client, Error> {
        let o: ConnectOptions = opts.into();
        let (raw, events) = Client::new_raw(&o, None)?;
        let mut batch: *mut sys::sl_batch = ptr::null_mut();
        // SAFETY: raw is a live client.
        let rc = unsafe { sys::sl_batch_new(raw.as_ptr(), &mut batch) };
        if rc != 0 || batch.is_null() {
            // SAFETY: raw is live and has no batch.
            unsafe { sys::sl_client_free(raw.as_ptr()) };
            return Err(Error::from_code(
                if rc != 0 { rc } else { sys::SL_ENOMEM },
                "sl_batch_new",
            ));
        }
        Ok(Client {
            raw,
            batch: NonNull::new(batch).unwrap(),
            scratch: Vec::with_capacity(256),
            cancel: None,
            _events: events,
        })
    }

    /// A core client from the options (`max_inflight`: the asynchronous client's in-flight
    /// bound of batches, `None` for the core's default), and the context of its event
    /// callback, which the caller keeps until after `sl_client_free`.
    pub(crate) fn new_raw(
        o: &ConnectOptions,
        max_inflight: Option<u32>,
    ) -> Result<(NonNull<sys::sl_client>, Option<Arc<Sink>>), Error> {
        let sink = o.on_event.as_ref().map(|e| e.sink()).transpose()?;
        let raw = Client::with_options(o, max_inflight, sink.as_ref(), |c| {
            let mut raw: *mut sys::sl_client = ptr::null_mut();
            let mut msg = [0 as c_char; 512];
            // SAFETY: every pointer in c outlives the call; msg is writable for its length.
            let rc = unsafe { sys::sl_client_new(&mut raw, c, msg.as_mut_ptr(), msg.len()) };
            if rc != 0 {
                // SAFETY: the core NUL-terminates msg.
                let m = unsafe { CStr::from_ptr(msg.as_ptr()) }.to_string_lossy();
                return Err(Error::from_code(rc, &m));
            }
            NonNull::new(raw).ok_or_else(|| Error::Other {
                code: 0,
                message: "sl_client_new gave NULL".into(),
            })
        })??;
        Ok((raw, sink))
    }

    /// Runs `f` with the core's options of `o` (their strings live for the call): for
    /// clients and subscribers (crate::pubsub). `events`: the event callback's context
    /// (None: no events), which must outlive the core handle made.
    pub(crate) fn with_options<R>(
        o: &ConnectOptions,
        max_inflight: Option<u32>,
        events: Option<&Arc<Sink>>,
        f: impl FnOnce(&sys::sl_client_options) -> R,
    ) -> Result<R, Error> {
        let url = cstring("URL", &o.url)?;
        let user = o
            .username
            .as_deref()
            .map(|u| cstring("user name", u))
            .transpose()?;
        let pass = o
            .password
            .as_deref()
            .map(|p| cstring("password", p))
            .transpose()?;
        let mut c = sys::SL_CLIENT_OPTIONS_INIT;
        // SAFETY: c is a valid options struct of this version.
        let rc = unsafe { sys::sl_client_options_init(&mut c, sys::SL_CLIENT_OPTIONS_VERSION) };
        if rc != 0 {
            return Err(Error::from_code(rc, "sl_client_options_init"));
        }
        c.url = url.as_ptr();
        c.mode = match o.mode {
            Mode::Auto => sys::SL_MODE_AUTO,
            Mode::Plain => sys::SL_MODE_PLAIN,
            Mode::Cluster => sys::SL_MODE_CLUSTER,
        };
        c.username = user.as_ref().map_or(ptr::null(), |s| s.as_ptr());
        c.password = pass.as_ref().map_or(ptr::null(), |s| s.as_ptr());
        if let Some(db) = o.db {
            c.db = int("db", db)?;
        }
        c.resp_version = o.resp as c_int;
        if let Some(t) = o.connect_timeout {
            c.connect_timeout_ms = millis("connect timeout", t)?.max(1);
        }
        match o.command_timeout {
            Some(Some(t)) => c.command_timeout_ms = millis("command timeout", t)?.max(1),
            Some(None) => c.command_timeout_ms = 0,
            None => {}
        }
        if let Some(n) = o.max_redirects {
            c.max_redirects = int("max redirects", n)?;
        }
        if let Some(t) = o.refresh_interval {
            c.refresh_interval_ms = millis("refresh interval", t)?.max(1);
        }
        if let Some((min, max)) = o.reconnect {
            c.reconnect_min_ms = millis("reconnect backoff", min)?;
            c.reconnect_max_ms = millis("reconnect backoff", max)?;
        }
        if let Some(n) = o.max_bulk_len {
            c.max_bulk_len = n;
        }
        if let Some(n) = o.max_aggregate_len {
            c.max_aggregate_len = n;
        }
        if let Some(n) = o.max_depth {
            c.max_depth = int("max depth", n)?;
        }
        c.read_from = match o.read_from {
            ReadFrom::Primary => sys::SL_READ_PRIMARY,
            ReadFrom::PreferReplica => sys::SL_READ_PREFER_REPLICA,
            ReadFrom::Replicas => sys::SL_READ_REPLICAS_ROUND_ROBIN,
        };
        c.retry_writes = o.retry_writes as c_int;
        if let Some(s) = events {
            (c.on_event, c.on_event_ctx) = s.raw();
        }
        if let Some(n) = max_inflight {
            c.max_inflight_batches = n;
        }
        if let Some(t) = &o.tls {
            c.tls = t.raw(); // the core client takes its own reference
        }
        Ok(f(&c))
    }

    /// What the client is: [`Mode::Plain`] or [`Mode::Cluster`] (after detection).
    pub fn mode(&self) -> Mode {
        // SAFETY: raw is live.
        match unsafe { sys::sl_client_mode(self.raw.as_ptr()) } {
            sys::SL_MODE_CLUSTER => Mode::Cluster,
            _ => Mode::Plain,
        }
    }

    /// The client's counters.
    pub fn stats(&self) -> Stats {
        let mut s = sys::sl_stats {
            version: sys::SL_STATS_VERSION,
            size: std::mem::size_of::<sys::sl_stats>() as u32,
            ..Default::default()
        };
        // SAFETY: raw is live; s is a valid stats struct of this version and size.
        unsafe { sys::sl_client_stats(self.raw.as_ptr(), &mut s) };
        Stats {
            commands: s.commands,
            moved: s.moved,
            ask: s.ask,
            tryagain: s.tryagain,
            refreshes: s.refreshes,
            connects: s.connects,
            reconnects: s.reconnects,
            bytes_written: s.bytes_written,
            bytes_read: s.bytes_read,
            nodes: s.nodes,
            failovers: s.failovers,
            refreshes_moved: s.refreshes_moved,
            refreshes_lost: s.refreshes_lost,
            retries: s.retries,
            replica_reads: s.replica_reads,
            nodes_down: s.nodes_down,
        }
    }

    /// Re-reads the slot map now.
    pub fn refresh(&mut self) -> Result<(), Error> {
        // SAFETY: raw is live.
        let rc = unsafe { sys::sl_client_refresh(self.raw.as_ptr()) };
        if rc != 0 {
            return Err(Error::from_code(rc, &self.errmsg()));
        }
        Ok(())
    }

    /// A handle that cancels this client's executions from another thread.
    pub fn cancel_handle(&mut self) -> CancelHandle {
        let raw = self.raw.as_ptr();
        let shared = self.cancel.get_or_insert_with(|| {
            Arc::new(CancelShared {
                client: Mutex::new(raw),
            })
        });
        CancelHandle(shared.clone())
    }

    /// The cluster slot of a key (CRC16 with `{hash tag}`s, mod 16384).
    pub fn key_slot(key: &[u8]) -> u16 {
        // SAFETY: key is readable for its length.
        unsafe { sys::sl_key_slot(key.as_ptr().cast(), key.len()) as u16 }
    }

    pub(crate) fn errmsg(&self) -> String {
        // SAFETY: raw is live; the message is NUL-terminated and never NULL.
        unsafe { CStr::from_ptr(sys::sl_client_errmsg(self.raw.as_ptr())) }
            .to_string_lossy()
            .into_owned()
    }

    /// Runs the commands in `bytes` (RESP, `count` of them) in one execution. Returns
    /// the execution's code and, when every command has a record, the records and data
    /// of the replies (borrowed until the next call); `Err` when nothing was executed.
    pub(crate) fn run(
        &mut self,
        bytes: &[u8],
        count: usize,
        segments: Option<&[Segment<'_>]>,
        timeout_ms: c_int,
    ) -> Result<(i32, &[sys::sl_reply], &[u8]), Error> {
        let b = self.batch.as_ptr();
        let mut sizes = sys::sl_sizes::default();
        let rc = match segments {
            // SAFETY: b is live; bytes is readable for its length; NULL outputs leave the
            // replies in the batch.
            None => unsafe {
                sys::sl_batch_run(
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
            },
            Some(segs) => {
                // SAFETY: b is live.
                unsafe { sys::sl_batch_reset(b) };
                for s in segs {
                    let part = &bytes[s.start..s.end];
                    // SAFETY: b is live, part readable; the route (and its node string)
                    // lives during the call.
                    let rc = with_route(s.route, |r| unsafe {
                        sys::sl_batch_append(b, r, part.as_ptr().cast(), part.len(), s.count)
                    })
                    .inspect_err(|_| unsafe { sys::sl_batch_reset(b) })?;
                    if rc != 0 {
                        let e = Error::from_code(rc, &self.errmsg());
                        // SAFETY: b is live.
                        unsafe { sys::sl_batch_reset(b) };
                        return Err(e);
                    }
                }
                // SAFETY: b is live.
                unsafe { sys::sl_batch_exec(b, timeout_ms, &mut sizes) }
            }
        };
        if sizes.commands != count as u64 {
            // Nothing (or not everything) was executed: no records belong to this call.
            return Err(Error::from_code(
                if rc != 0 { rc } else { sys::SL_EPROTO },
                &self.errmsg(),
            ));
        }
        // SAFETY: b is live; its reply memory stays valid until the batch's next
        // exec/reset/free, all of which need &mut self, which the returned borrow holds.
        let (recs, data) = unsafe { batch_replies(b) };
        Ok((rc, recs, data))
    }

    /// Runs queued commands and decodes one result per command, in order.
    pub(crate) fn run_all(
        &mut self,
        bytes: &[u8],
        count: usize,
        segments: Option<&[Segment<'_>]>,
        timeout_ms: c_int,
    ) -> Vec<Result<Value<'_>, Error>> {
        let mut out = Vec::with_capacity(count);
        match self.run(bytes, count, segments, timeout_ms) {
            Ok((_, recs, data)) => {
                let mut i = 0;
                for _ in 0..count {
                    out.push(decode(recs, data, &mut i));
                }
            }
            Err(e) => out.resize(count, Err(e)),
        }
        out
    }

    /// Runs one command; the reply borrows the client until its next call.
    pub fn command(&mut self, cmd: &Cmd) -> Result<Value<'_>, Error> {
        if cmd.argc == 0 {
            return Err(Error::InvalidArgument(
                "a command needs at least its name".into(),
            ));
        }
        let mut buf = std::mem::take(&mut self.scratch);
        buf.clear();
        cmd.write_resp(&mut buf);
        let seg = [Segment {
            start: 0,
            end: buf.len(),
            count: 1,
            route: cmd.route.as_ref(),
        }];
        let segs = if cmd.route.is_some() {
            Some(&seg[..])
        } else {
            None
        };
        // The scratch buffer goes back before the reply borrows self.
        let r = self
            .run(&buf, 1, segs, 0)
            .map(|(_, recs, data)| (recs.as_ptr(), recs.len(), data.as_ptr(), data.len()));
        self.scratch = buf;
        let (rp, rn, dp, dn) = r?;
        // SAFETY: the same reply memory `run` returned: nothing ran since, and the
        // result borrows &mut self.
        let (recs, data) = unsafe { reply_slices(rp, rn, dp, dn) };
        let mut i = 0;
        decode(recs, data, &mut i)
    }

    /// Runs one command and converts its reply (`Option<Vec<u8>>`, `i64`, `String`,
    /// `Vec<T>`, `Value<'static>`...).
    pub fn query<T: FromValue>(&mut self, cmd: &Cmd) -> Result<T, Error> {
        let v = self.command(cmd)?;
        T::from_value(v)
    }

    /// Runs a pipeline: the same as [`Pipeline::exec`].
    pub fn exec_pipeline(&mut self, pipe: &Pipeline) -> Vec<Result<Value<'_>, Error>> {
        pipe.exec(self)
    }

    /// Runs a typed method's command and shapes its reply by the spec's reply type
    /// (`crate::shape`; the generated methods of `commands.rs`).
    pub(crate) fn shaped<S: crate::shape::Shape>(&mut self, cmd: &Cmd) -> Result<S::Out, Error> {
        let v = self.command(cmd)?;
        S::shape(v)
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let guard = self
            .cancel
            .as_ref()
            .map(|c| c.client.lock().unwrap_or_else(|e| e.into_inner()));
        let mut guard = guard;
        if let Some(g) = guard.as_mut() {
            **g = ptr::null_mut();
        }
        // SAFETY: both handles are live and owned; the batch goes first, as the core
        // requires. A CancelHandle can no longer reach the client (NULL under the lock).
        unsafe {
            sys::sl_batch_free(self.batch.as_ptr());
            sys::sl_client_free(self.raw.as_ptr());
        }
        drop(guard);
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("mode", &self.mode())
            .finish()
    }
}

/// The reply records and bytes a core call left at (rp, rn) and (dp, dn) as slices (empty
/// when a length is 0, whatever the pointer).
///
/// # Safety
/// Both regions must stay valid and unchanged for `'a`: the caller ties `'a` to the borrow
/// of what owns them, and no core call on that owner runs meanwhile.
pub(crate) unsafe fn reply_slices<'a>(
    rp: *const sys::sl_reply,
    rn: usize,
    dp: *const u8,
    dn: usize,
) -> (&'a [sys::sl_reply], &'a [u8]) {
    let recs = if rn == 0 {
        &[][..]
    } else {
        unsafe { std::slice::from_raw_parts(rp, rn) }
    };
    let data = if dn == 0 {
        &[][..]
    } else {
        unsafe { std::slice::from_raw_parts(dp, dn) }
    };
    (recs, data)
}
