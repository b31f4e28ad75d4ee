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
use crate::shape::Shape;
use crate::value::decode;
use crate::{Cmd, ConnectOptions, Error, FromValue, Mode, Value};
use slotlane_sys as sys;
use std::ffi::c_void;
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
        let raw = crate::Client::new_raw(&o, max_inflight)?;
        // SAFETY: raw is live.
        let mode = match unsafe { sys::sl_client_mode(raw.as_ptr()) } {
            sys::SL_MODE_CLUSTER => Mode::Cluster,
            _ => Mode::Plain,
        };
        Ok(Client {
            inner: Arc::new(Inner {
                raw,
                spare: Mutex::new(Vec::new()),
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
            client: self.inner.clone(),
            bytes,
            err,
            op: None,
            submitted: false,
            _shape: PhantomData,
        }
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
struct Op {
    batch: NonNull<sys::sl_batch>,
    state: Mutex<OpState>,
    _client: Arc<Inner>, // the batch must be freed before the client
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

/// The future of one command: submitted at its first poll, ready with the shaped reply.
/// `Send + 'static`; dropping it before it is ready cancels its batch.
#[must_use = "a Call does nothing until it is awaited (or polled)"]
pub struct Call<S: Shape> {
    client: Arc<Inner>,
    bytes: Vec<u8>,
    err: Option<Error>,
    op: Option<Arc<Op>>,
    submitted: bool,
    _shape: PhantomData<fn() -> S>,
}

impl<S: Shape> Unpin for Call<S> {}

impl<S: Shape> Call<S> {
    /// Submits the batch: Ok(true) when submitted, Ok(false) when the in-flight bound
    /// is reached (the waker is queued for the next drain).
    fn submit(&mut self, e: &'static Engine, cx: &Context<'_>) -> Result<bool, Error> {
        if self.op.is_none() {
            let spare = self
                .client
                .spare
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .pop();
            let batch = match spare {
                Some(b) => {
                    // SAFETY: an idle batch of this client: the reset drops its old replies.
                    unsafe { sys::sl_batch_reset(b.as_ptr()) };
                    b
                }
                None => {
                    let mut b = ptr::null_mut();
                    // SAFETY: the client is live (held by self.client).
                    let rc = unsafe { sys::sl_batch_new(self.client.raw.as_ptr(), &mut b) };
                    NonNull::new(b).filter(|_| rc == 0).ok_or_else(|| {
                        Error::from_code(if rc != 0 { rc } else { sys::SL_ENOMEM }, "")
                    })?
                }
            };
            let op = Arc::new(Op {
                batch,
                state: Mutex::new(OpState {
                    done: None,
                    waker: None,
                }),
                _client: self.client.clone(),
            });
            // SAFETY: the batch is live and ours; the bytes are read during the call.
            let rc = unsafe {
                sys::sl_batch_append(
                    batch.as_ptr(),
                    ptr::null(),
                    self.bytes.as_ptr().cast(),
                    self.bytes.len(),
                    1,
                )
            };
            if rc != 0 {
                return Err(Error::from_code(rc, "malformed command bytes"));
            }
            self.op = Some(op);
        }
        let op = self.op.as_ref().unwrap();
        op.state.lock().unwrap_or_else(|p| p.into_inner()).waker = Some(cx.waker().clone());
        let token = Arc::into_raw(op.clone()) as *mut c_void;
        // SAFETY: the batch holds one command; the token is given to the core, which hands
        // it back exactly once (to the dispatcher) when 0 is returned.
        let rc = unsafe {
            sys::sl_loop_submit_cq(
                e.lp,
                op.batch.as_ptr(),
                0,
                e.cq,
                token,
                sys::SL_SUBMIT_FAIL_FAST,
            )
        };
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
}

impl<S: Shape> Future for Call<S> {
    type Output = Result<S::Out, Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        if let Some(e) = this.err.take() {
            return Poll::Ready(Err(e));
        }
        if !this.submitted {
            let e = match engine() {
                Ok(e) => e,
                Err(err) => return Poll::Ready(Err(err)),
            };
            return match this.submit(e, cx) {
                Ok(sent) => {
                    this.submitted = sent;
                    Poll::Pending
                }
                Err(err) => {
                    this.op = None;
                    Poll::Ready(Err(err))
                }
            };
        }
        let op = this.op.as_ref().unwrap();
        let done = {
            let mut st = op.state.lock().unwrap_or_else(|p| p.into_inner());
            match st.done {
                Some(d) => d,
                None => {
                    st.waker = Some(cx.waker().clone());
                    return Poll::Pending;
                }
            }
        };
        let (status, sizes) = done;
        let out = if sizes.commands != 1 {
            Err(Error::from_code(
                if status != 0 { status } else { sys::SL_EPROTO },
                "",
            ))
        } else {
            // SAFETY: the batch completed and is ours; its replies stay until it is reused
            // or freed (with op, after this borrow).
            let (recs, data) = unsafe { crate::client::batch_replies(op.batch.as_ptr()) };
            let mut i = 0;
            decode(recs, data, &mut i).and_then(S::shape)
        };
        this.op = None;
        Poll::Ready(out)
    }
}

impl<S: Shape> Drop for Call<S> {
    fn drop(&mut self) {
        if let (true, Some(op)) = (self.submitted, &self.op) {
            let in_flight = op.state.lock().map(|s| s.done.is_none()).unwrap_or(false);
            if in_flight {
                // SAFETY: the batch is live (op holds it); the cancel is safe from any thread.
                unsafe { sys::sl_batch_cancel(op.batch.as_ptr()) };
            }
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
