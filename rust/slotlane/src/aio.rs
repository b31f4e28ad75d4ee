//! The asynchronous client: [`aio::Client`](Client), whose typed methods (rendered from
//! bindings/spec, the same as [`crate::Client`]'s) return futures that are `Send` and
//! `'static` and need no particular runtime — they are woken through [`std::task::Waker`],
//! so tokio (multi-thread or current-thread), async-std or a hand-written executor all
//! drive them.
//!
//! ```
//! # let url = slotlane_testing::url();
//! let client = slotlane::aio::Client::connect(url.as_str())?;
//! let fut = client.set("doc:aio", "hello", None); // nothing is sent until it is polled
//! # let run = |f| -> Result<bool, slotlane::Error> { slotlane::aio::block_on(f) };
//! assert!(run(fut)?);
//! # Ok::<(), slotlane::Error>(())
//! ```
//!
//! How it runs: a future's first poll submits its command as one batch to the core's loop
//! thread (one per process), which multiplexes every caller's batches on one connection
//! per node; the batch completes into the process's completion queue, and one dispatcher
//! thread (blocked in `sl_cq_wait`, many completions per wake-up) marks the future done
//! and wakes its task. The reply is decoded when the task polls again, on its own thread.
//!
//! Dropping a future before it is ready cancels its batch in the core (`sl_batch_cancel`):
//! the replies still owed on the shared connection are read and dropped there, so the
//! connection stays in step for every other future — cancelling never desynchronises it.
//! A client is `Clone + Send + Sync`: clones share the core client and its connections.
//!
//! Cluster SCAN and scripts: [`Client::scan_iter`] is a [`ScanStream`] of every key of the
//! cluster (a `futures_core::Stream`, and `stream.next_key().await` without any stream
//! extension trait), each page a chain of steps run on the core's loop thread; and
//! [`crate::Script::invoke_async`] runs EVALSHA, a node that answers NOSCRIPT getting the
//! script and the command once more in the core.
use crate::shape::Shape;
use crate::value::decode;
use crate::{Cmd, ConnectOptions, Error, FromValue, Mode, ScanOptions, ToArg, Value};
use slotlane_sys as sys;
use std::collections::VecDeque;
use std::ffi::{c_void, CStr};
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::ptr::{self, NonNull};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};

/// The core's loop thread, the process's completion queue and its dispatcher thread.
struct Engine {
    lp: *mut sys::sl_loop,
    cq: *mut sys::sl_cq,
    /// Futures that found the in-flight bound reached: woken after the next drain.
    room: Mutex<Vec<Waker>>,
}

// SAFETY: the loop and the queue are made for use from any thread (slotlane_uv.h).
unsafe impl Send for Engine {}
unsafe impl Sync for Engine {}

static ENGINE: OnceLock<Result<&'static Engine, Error>> = OnceLock::new();

fn engine() -> Result<&'static Engine, Error> {
    ENGINE
        .get_or_init(|| {
            let mut lp = ptr::null_mut();
            // SAFETY: out-pointers written by the calls.
            let rc = unsafe { sys::sl_loop_new(&mut lp) };
            if rc != 0 {
                return Err(Error::from_code(
                    rc,
                    "could not start the core's loop thread",
                ));
            }
            let mut cq = ptr::null_mut();
            let rc = unsafe { sys::sl_cq_new(&mut cq) };
            if rc != 0 {
                return Err(Error::from_code(rc, "could not make a completion queue"));
            }
            // Lives as long as the process (the dispatcher thread never ends).
            let e: &'static Engine = Box::leak(Box::new(Engine {
                lp,
                cq,
                room: Mutex::new(Vec::new()),
            }));
            std::thread::Builder::new()
                .name("slotlane-aio".into())
                .spawn(move || dispatch(e))
                .map_err(|err| {
                    Error::Io(format!("could not start the dispatcher thread: {err}"))
                })?;
            Ok(e)
        })
        .clone()
}

/// The dispatcher: takes completions (up to 64 per wake-up), marks their operations done
/// and wakes their tasks. Never runs user code: a waker only schedules a task.
fn dispatch(e: &'static Engine) {
    let mut buf = vec![
        sys::sl_completion {
            batch: ptr::null_mut(),
            token: ptr::null_mut(),
            status: 0,
            reserved: 0,
            sizes: sys::sl_sizes::default(),
        };
        64
    ];
    loop {
        // SAFETY: buf is writable for its length; the queue lives forever.
        let n = unsafe { sys::sl_cq_wait(e.cq, buf.as_mut_ptr(), buf.len(), -1) };
        for c in &buf[..n] {
            // SAFETY: every token is an Arc<Op> given up by Call::submit; the core hands
            // each back exactly once.
            let op = unsafe { Arc::from_raw(c.token as *const Op) };
            let waker = {
                let mut st = op.state.lock().unwrap_or_else(|p| p.into_inner());
                st.done = Some((c.status, c.sizes));
                st.waker.take()
            };
            if let Some(w) = waker {
                w.wake();
            }
        }
        if n > 0 {
            let waiting = std::mem::take(&mut *e.room.lock().unwrap_or_else(|p| p.into_inner()));
            for w in waiting {
                w.wake();
            }
        }
    }
}

/// The core client, shared by the clones of a [`Client`] and by every operation, with the
/// batches of finished operations kept for the next ones (no allocation per call).
struct Inner {
    raw: NonNull<sys::sl_client>,
    spare: Mutex<Vec<NonNull<sys::sl_batch>>>,
    /// The event callback's context: dropped after sl_client_free (a field drops after Drop).
    _events: Option<Arc<crate::events::Sink>>,
}

// SAFETY: with the loop thread, the core allows sl_batch_new/free/append and
// sl_loop_submit_cq from any thread (slotlane_uv.h's thread rules); nothing else is called.
unsafe impl Send for Inner {}
unsafe impl Sync for Inner {}

impl Drop for Inner {
    fn drop(&mut self) {
        // Every operation holds an Arc<Inner>: nothing is in flight. The spare batches go
        // first (the core frees batches before their client); sl_client_free detaches the
        // client from the loop thread.
        let spare = std::mem::take(self.spare.get_mut().unwrap_or_else(|p| p.into_inner()));
        // SAFETY: raw is live and owned; the spare batches are idle and ours.
        unsafe {
            for b in spare {
                sys::sl_batch_free(b.as_ptr());
            }
            sys::sl_client_free(self.raw.as_ptr());
        }
    }
}

/// An asynchronous Redis-protocol client for one server or a cluster. The typed methods
/// (`get`, `set`, `hset`... the same as [`crate::Client`]'s) and [`Client::command`] return
/// [`Call`] futures.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
    mode: Mode,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("aio::Client")
            .field("mode", &self.mode)
            .finish()
    }
}

impl Client {
    /// Connects (blocking: the seed's connect and the cluster discovery; call it before
    /// starting the work, or from a runtime's blocking pool) and starts the process's loop
    /// thread on first use. `opts` as for [`crate::Client::connect`].
    pub fn connect<O: Into<ConnectOptions>>(opts: O) -> Result<Client, Error> {
        Client::connect_with_bound(opts, None)
    }

    /// As [`Client::connect`], with the core's bound on batches in flight at once
    /// (`max_inflight_batches`, default 4096): a future that finds it reached waits for
    /// the next completion instead of submitting.
    pub fn connect_with_bound<O: Into<ConnectOptions>>(
        opts: O,
        max_inflight: Option<u32>,
    ) -> Result<Client, Error> {
        engine()?;
        let o: ConnectOptions = opts.into();
        let (raw, events) = crate::Client::new_raw(&o, max_inflight)?;
        // SAFETY: raw is live.
        let mode = match unsafe { sys::sl_client_mode(raw.as_ptr()) } {
            sys::SL_MODE_CLUSTER => Mode::Cluster,
            _ => Mode::Plain,
        };
        Ok(Client {
            inner: Arc::new(Inner {
                raw,
                spare: Mutex::new(Vec::new()),
                _events: events,
            }),
            mode,
        })
    }

    /// What the client is: [`Mode::Plain`] or [`Mode::Cluster`].
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Runs one command; the reply, owned.
    pub fn command(&self, cmd: &Cmd) -> Call<Raw> {
        self.shaped::<Raw>(Ok(cmd.clone()))
    }

    /// Runs one command and converts its reply (as [`crate::Client::query`]).
    pub fn query<T: FromValue + Send + 'static>(&self, cmd: &Cmd) -> Call<Query<T>> {
        self.shaped::<Query<T>>(Ok(cmd.clone()))
    }

    /// A typed method's future (the generated methods of `commands.rs`).
    pub(crate) fn shaped<S: Shape>(&self, cmd: Result<Cmd, Error>) -> Call<S> {
        let (bytes, err) = match cmd {
            Ok(c) if c.argc == 0 => (
                Vec::new(),
                Some(Error::InvalidArgument(
                    "a command needs at least its name".into(),
                )),
            ),
            Ok(c) if c.route.is_some() => (
                Vec::new(),
                Some(Error::InvalidArgument(
                    "routing overrides are not supported by slotlane::aio yet".into(),
                )),
            ),
            Ok(c) => {
                let mut b = Vec::with_capacity(64);
                c.write_resp(&mut b);
                (b, None)
            }
            Err(e) => (Vec::new(), Some(e)),
        };
        Call {
            exec: Exec::new(self.inner.clone(), bytes, 1, 0, err),
            _shape: PhantomData,
        }
    }

    /// Runs a [`crate::Pipeline`] — the blocking client's builder, with the same rendered
    /// typed methods, whose [`crate::Slot`]s read the results — as one batch: a
    /// [`PipelineCall`] future of one owned result per command (a command that fails
    /// fails alone; when the whole execution fails each holds that error). The commands
    /// are copied at the call and sent at the first poll; dropping the future before it is
    /// ready cancels the batch (`sl_batch_cancel`: the shared connections stay in step).
    /// The pipeline's timeout applies; routing overrides are refused (as for commands).
    pub fn exec(&self, pipe: &crate::Pipeline) -> PipelineCall {
        let err = pipe.has_routes().then(|| {
            Error::InvalidArgument(
                "routing overrides are not supported by slotlane::aio yet".into(),
            )
        });
        PipelineCall {
            exec: Exec::new(
                self.inner.clone(),
                pipe.as_resp().to_vec(),
                pipe.len(),
                pipe.timeout_ms(),
                err,
            ),
        }
    }

    /// Every key of the cluster (every primary; the one node in plain mode), as a
    /// [`ScanStream`]: the core's cluster SCAN, which tracks slots, so that every key that
    /// exists throughout comes at least once also across a reshard or failover (a key of a
    /// moved slot may come twice). `opts` as for [`crate::Client::scan_iter`].
    pub fn scan_iter(&self, opts: &ScanOptions) -> Result<ScanStream, Error> {
        let (o, _type) = crate::cluster::scan_options(opts)?;
        let mut scan = ptr::null_mut();
        // SAFETY: raw is live; o and its strings live during the call (copied). The core
        // allows sl_scan_new from any thread while the loop drives the client.
        let rc = unsafe { sys::sl_scan_new(self.inner.raw.as_ptr(), &o, &mut scan) };
        if rc != 0 {
            return Err(Error::from_code(rc, "sl_scan_new"));
        }
        Ok(ScanStream {
            client: self.inner.clone(),
            scan: Arc::new(ScanHandle {
                raw: scan,
                _client: self.inner.clone(),
            }),
            op: None,
            submitted: false,
            page: VecDeque::new(),
            finished: false,
        })
    }

    fn script_call<T: FromValue + Send + 'static, K: ToArg, A: ToArg>(
        &self,
        script: &crate::Script,
        name: &str,
        keys: &[K],
        args: &[A],
    ) -> Call<Query<T>> {
        let mut call = self.shaped::<Query<T>>(Ok(script.command(name, keys, args)));
        call.exec.body = Some(script.body());
        call
    }
}

impl crate::Script {
    /// Runs the script (EVALSHA) on an [`aio::Client`](Client): a node that answers
    /// NOSCRIPT gets the script (SCRIPT LOAD) and the command once more, in the core
    /// (`sl_loop_submit_script_cq`). Dropping the future cancels it, between its steps too.
    pub fn invoke_async<T: FromValue + Send + 'static, K: ToArg, A: ToArg>(
        &self,
        client: &Client,
        keys: &[K],
        args: &[A],
    ) -> Call<Query<T>> {
        client.script_call(self, "EVALSHA", keys, args)
    }

    /// As [`Self::invoke_async`], read-only (EVALSHA_RO).
    pub fn invoke_ro_async<T: FromValue + Send + 'static, K: ToArg, A: ToArg>(
        &self,
        client: &Client,
        keys: &[K],
        args: &[A],
    ) -> Call<Query<T>> {
        client.script_call(self, "EVALSHA_RO", keys, args)
    }
}

/// The reply as a [`Value`] with owned bytes ([`Client::command`]).
pub struct Raw;
impl Shape for Raw {
    type Out = Value<'static>;
    fn shape(v: Value<'_>) -> Result<Value<'static>, Error> {
        Ok(v.into_owned())
    }
}

/// The reply converted by [`FromValue`] ([`Client::query`]).
pub struct Query<T>(PhantomData<fn() -> T>);
impl<T: FromValue> Shape for Query<T> {
    type Out = T;
    fn shape(v: Value<'_>) -> Result<T, Error> {
        T::from_value(v)
    }
}

/// One submitted batch: shared by its future and, while in flight, by the dispatcher.
/// Fields drop in order after Op's own drop: what the core read until the completion (a
/// script's body, a scan), then the client (the batch and the scan go before it).
struct Op {
    batch: NonNull<sys::sl_batch>,
    state: Mutex<OpState>,
    _body: Option<Arc<[u8]>>,
    _scan: Option<Arc<ScanHandle>>,
    _client: Arc<Inner>,
}

/// A core scan: freed when its stream and any page in flight are gone (before the client).
struct ScanHandle {
    raw: *mut sys::sl_scan,
    _client: Arc<Inner>,
}

// SAFETY: the scan is touched by its stream (between pages) and by the loop thread (during
// a page), never by two at once: the completion's hand-over orders them.
unsafe impl Send for ScanHandle {}
unsafe impl Sync for ScanHandle {}

impl Drop for ScanHandle {
    fn drop(&mut self) {
        // SAFETY: no page is in flight (an in-flight Op holds an Arc of this).
        unsafe { sys::sl_scan_free(self.raw) };
    }
}

/// A new operation on an idle batch of the client (a spare one, reset, or a new one).
fn new_op(
    client: &Arc<Inner>,
    body: Option<Arc<[u8]>>,
    scan: Option<Arc<ScanHandle>>,
) -> Result<Arc<Op>, Error> {
    let spare = client.spare.lock().unwrap_or_else(|p| p.into_inner()).pop();
    let batch = match spare {
        Some(b) => {
            // SAFETY: an idle batch of this client: the reset drops its old replies.
            unsafe { sys::sl_batch_reset(b.as_ptr()) };
            b
        }
        None => {
            let mut b = ptr::null_mut();
            // SAFETY: the client is live (held by client).
            let rc = unsafe { sys::sl_batch_new(client.raw.as_ptr(), &mut b) };
            NonNull::new(b)
                .filter(|_| rc == 0)
                .ok_or_else(|| Error::from_code(if rc != 0 { rc } else { sys::SL_ENOMEM }, ""))?
        }
    };
    Ok(Arc::new(Op {
        batch,
        state: Mutex::new(OpState {
            done: None,
            waker: None,
        }),
        _body: body,
        _scan: scan,
        _client: client.clone(),
    }))
}

/// Submits op by submit(batch, token): Ok(true) when submitted (the dispatcher wakes the
/// task), Ok(false) when the in-flight bound is reached (woken after the next drain).
fn submit_op(
    e: &'static Engine,
    op: &Arc<Op>,
    cx: &Context<'_>,
    submit: impl FnOnce(*mut sys::sl_batch, *mut c_void) -> i32,
) -> Result<bool, Error> {
    op.state.lock().unwrap_or_else(|p| p.into_inner()).waker = Some(cx.waker().clone());
    let token = Arc::into_raw(op.clone()) as *mut c_void;
    // The token is given to the core, which hands it back exactly once (to the
    // dispatcher) when 0 is returned.
    let rc = submit(op.batch.as_ptr(), token);
    if rc == 0 {
        return Ok(true);
    }
    // SAFETY: not submitted: the token is ours again.
    drop(unsafe { Arc::from_raw(token as *const Op) });
    if rc == sys::SL_EBUSY {
        e.room
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(cx.waker().clone());
        return Ok(false);
    }
    Err(Error::from_code(rc, ""))
}

/// The (status, sizes) of op's completion, or None with the waker stored.
fn completion(op: &Op, cx: &Context<'_>) -> Option<(i32, sys::sl_sizes)> {
    let mut st = op.state.lock().unwrap_or_else(|p| p.into_inner());
    if st.done.is_none() {
        st.waker = Some(cx.waker().clone());
    }
    st.done
}

/// Cancels op's batch when it is in flight (a future or stream dropped before its answer).
fn cancel_in_flight(op: &Op) {
    let in_flight = op.state.lock().map(|s| s.done.is_none()).unwrap_or(false);
    if in_flight {
        // SAFETY: the batch is live (op holds it); the cancel is safe from any thread.
        unsafe { sys::sl_batch_cancel(op.batch.as_ptr()) };
    }
}

struct OpState {
    done: Option<(i32, sys::sl_sizes)>,
    waker: Option<Waker>,
}

// SAFETY: the batch is touched by the future (before submission and after completion)
// and by the core's loop thread in between, never by two at once: the state's mutex and
// the queue's hand-over order them.
unsafe impl Send for Op {}
unsafe impl Sync for Op {}

impl Drop for Op {
    fn drop(&mut self) {
        // Not in flight (the dispatcher held its Arc until then): kept for the next call.
        let mut spare = self._client.spare.lock().unwrap_or_else(|p| p.into_inner());
        if spare.len() < 1024 {
            spare.push(self.batch);
        } else {
            drop(spare);
            // SAFETY: the batch is idle and ours.
            unsafe { sys::sl_batch_free(self.batch.as_ptr()) };
        }
    }
}

/// One batch of `count` commands (a command, a pipeline, a script) and its operation: what
/// [`Call`] and [`PipelineCall`] share. Submitted at its first poll; dropping it while in
/// flight cancels the batch.
struct Exec {
    client: Arc<Inner>,
    bytes: Vec<u8>,
    count: usize,
    timeout_ms: i32,
    err: Option<Error>,
    body: Option<Arc<[u8]>>, // a script's: EVALSHA reloaded by the core on NOSCRIPT
    op: Option<Arc<Op>>,
    submitted: bool,
}

impl Exec {
    fn new(
        client: Arc<Inner>,
        bytes: Vec<u8>,
        count: usize,
        timeout_ms: i32,
        err: Option<Error>,
    ) -> Exec {
        Exec {
            client,
            bytes,
            count,
            timeout_ms,
            err,
            body: None,
            op: None,
            submitted: false,
        }
    }

    /// Submits the batch: Ok(true) when submitted, Ok(false) when the in-flight bound
    /// is reached (the waker is queued for the next drain).
    fn submit(&mut self, e: &'static Engine, cx: &Context<'_>) -> Result<bool, Error> {
        if self.op.is_none() {
            let op = new_op(&self.client, self.body.clone(), None)?;
            // SAFETY: the batch is live and ours; the bytes are read during the call.
            let rc = unsafe {
                sys::sl_batch_append(
                    op.batch.as_ptr(),
                    ptr::null(),
                    self.bytes.as_ptr().cast(),
                    self.bytes.len(),
                    self.count,
                )
            };
            if rc != 0 {
                return Err(Error::from_code(rc, "malformed command bytes"));
            }
            self.op = Some(op);
        }
        let op = self.op.as_ref().unwrap();
        let (body, timeout) = (self.body.as_ref(), self.timeout_ms);
        submit_op(e, op, cx, |b, token| match body {
            // SAFETY: the batch holds one command; the body lives in op until the completion.
            Some(body) => unsafe {
                sys::sl_loop_submit_script_cq(
                    e.lp,
                    b,
                    body.as_ptr().cast(),
                    body.len(),
                    timeout,
                    e.cq,
                    token,
                    sys::SL_SUBMIT_FAIL_FAST,
                )
            },
            // SAFETY: the batch holds the commands.
            None => unsafe {
                sys::sl_loop_submit_cq(e.lp, b, timeout, e.cq, token, sys::SL_SUBMIT_FAIL_FAST)
            },
        })
    }

    /// Ready with decode(records, data) of the completed batch (the reply memory is
    /// valid during the call), or with the error that kept its commands from running.
    fn poll_with<T>(
        &mut self,
        cx: &Context<'_>,
        decode_all: impl FnOnce(&[sys::sl_reply], &[u8]) -> T,
    ) -> Poll<Result<T, Error>> {
        if let Some(e) = self.err.take() {
            return Poll::Ready(Err(e));
        }
        if !self.submitted {
            let e = match engine() {
                Ok(e) => e,
                Err(err) => return Poll::Ready(Err(err)),
            };
            return match self.submit(e, cx) {
                Ok(sent) => {
                    self.submitted = sent;
                    Poll::Pending
                }
                Err(err) => {
                    self.op = None;
                    Poll::Ready(Err(err))
                }
            };
        }
        let op = self.op.as_ref().unwrap();
        let Some((status, sizes)) = completion(op, cx) else {
            return Poll::Pending;
        };
        let out = if sizes.commands != self.count as u64 {
            Err(Error::from_code(
                if status != 0 { status } else { sys::SL_EPROTO },
                "",
            ))
        } else {
            // SAFETY: the batch completed and is ours; its replies stay until it is reused
            // or freed (with op, after this borrow).
            let (recs, data) = unsafe { crate::client::batch_replies(op.batch.as_ptr()) };
            Ok(decode_all(recs, data))
        };
        self.op = None;
        Poll::Ready(out)
    }
}

impl Drop for Exec {
    fn drop(&mut self) {
        if let (true, Some(op)) = (self.submitted, &self.op) {
            cancel_in_flight(op);
        }
    }
}

/// The future of one command: submitted at its first poll, ready with the shaped reply.
/// `Send + 'static`; dropping it before it is ready cancels its batch.
#[must_use = "a Call does nothing until it is awaited (or polled)"]
pub struct Call<S: Shape> {
    exec: Exec,
    _shape: PhantomData<fn() -> S>,
}

impl<S: Shape> Unpin for Call<S> {}

impl<S: Shape> Future for Call<S> {
    type Output = Result<S::Out, Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.exec
            .poll_with(cx, |recs, data| {
                let mut i = 0;
                decode(recs, data, &mut i).and_then(S::shape)
            })
            .map(|r| r.and_then(|v| v))
    }
}

/// The future of [`Client::exec`]: one owned result per command of the pipeline, in order.
/// `Send + 'static`; dropping it before it is ready cancels its batch.
#[must_use = "a PipelineCall does nothing until it is awaited (or polled)"]
pub struct PipelineCall {
    exec: Exec,
}

impl Future for PipelineCall {
    type Output = Vec<Result<Value<'static>, Error>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let count = self.exec.count;
        if count == 0 {
            return Poll::Ready(Vec::new());
        }
        self.exec
            .poll_with(cx, |recs, data| {
                let mut i = 0;
                (0..count)
                    .map(|_| decode(recs, data, &mut i).map(Value::into_owned))
                    .collect::<Vec<_>>()
            })
            .map(|r| r.unwrap_or_else(|e| vec![Err(e); count]))
    }
}

/// The keys of [`Client::scan_iter`], owned, a page fetched at a time on the core's loop
/// thread (`sl_loop_submit_scan_cq`): a `futures_core::Stream` of `Result<Vec<u8>, Error>`,
/// and [`ScanStream::next_key`] for `while let Some(key) = keys.next_key().await`. An error is
/// yielded once and ends it. `Send + 'static`; dropping it while a page is in flight
/// cancels the page (the scan is freed with the page's completion).
pub struct ScanStream {
    client: Arc<Inner>,
    scan: Arc<ScanHandle>,
    op: Option<Arc<Op>>,
    submitted: bool,
    page: VecDeque<Vec<u8>>,
    finished: bool,
}

impl std::fmt::Debug for ScanStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("aio::ScanStream")
            .field("buffered", &self.page.len())
            .field("finished", &self.finished)
            .finish()
    }
}

impl ScanStream {
    /// The next key (None at the end), as a future.
    pub fn next_key(&mut self) -> impl Future<Output = Option<Result<Vec<u8>, Error>>> + '_ {
        std::future::poll_fn(move |cx| self.poll_key(cx))
    }

    fn fail(&mut self, err: Error) -> Poll<Option<Result<Vec<u8>, Error>>> {
        self.finished = true;
        self.op = None;
        Poll::Ready(Some(Err(err)))
    }

    fn poll_key(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Vec<u8>, Error>>> {
        loop {
            if let Some(k) = self.page.pop_front() {
                return Poll::Ready(Some(Ok(k)));
            }
            if self.finished {
                return Poll::Ready(None);
            }
            if self.submitted {
                let Some((status, _)) = completion(self.op.as_ref().unwrap(), cx) else {
                    return Poll::Pending;
                };
                self.submitted = false;
                let op = self.op.take().unwrap();
                if status != 0 {
                    // SAFETY: the page is over: the scan is ours; its message is a C string.
                    let msg = unsafe { CStr::from_ptr(sys::sl_scan_errmsg(self.scan.raw)) };
                    return self.fail(Error::from_code(status, &msg.to_string_lossy()));
                }
                // SAFETY: the batch holds the page just completed.
                unsafe { crate::cluster::take_page(op.batch.as_ptr(), &mut self.page) };
                continue;
            }
            // SAFETY: no page is in flight.
            if unsafe { sys::sl_scan_done(self.scan.raw) } != 0 {
                self.finished = true;
                continue;
            }
            let e = match engine() {
                Ok(e) => e,
                Err(err) => return self.fail(err),
            };
            if self.op.is_none() {
                match new_op(&self.client, None, Some(self.scan.clone())) {
                    Ok(op) => self.op = Some(op),
                    Err(err) => return self.fail(err),
                }
            }
            let scan = self.scan.raw;
            // SAFETY: the scan and the batch belong to the same live client; the op holds both
            // until the completion.
            let sent = submit_op(e, self.op.as_ref().unwrap(), cx, |b, token| unsafe {
                sys::sl_loop_submit_scan_cq(e.lp, scan, b, 0, e.cq, token, sys::SL_SUBMIT_FAIL_FAST)
            });
            return match sent {
                Ok(sent) => {
                    self.submitted = sent;
                    Poll::Pending
                }
                Err(err) => self.fail(err),
            };
        }
    }
}

impl futures_core::Stream for ScanStream {
    type Item = Result<Vec<u8>, Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_key(cx)
    }
}

impl Drop for ScanStream {
    fn drop(&mut self) {
        if let (true, Some(op)) = (self.submitted, &self.op) {
            cancel_in_flight(op);
        }
    }
}

/// Runs a future to completion on the calling thread (a minimal executor, for examples and
/// for code without a runtime).
pub fn block_on<F: Future>(f: F) -> F::Output {
    struct ThreadWaker(std::thread::Thread);
    impl std::task::Wake for ThreadWaker {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}
