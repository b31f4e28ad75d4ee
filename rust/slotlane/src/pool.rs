//! [`Pool`]: clients shared between threads.
use crate::{Client, ConnectOptions, Error};
use std::ops::{Deref, DerefMut};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// A pool of clients (core handles) for sharing between threads: a `Client` is used by
/// one thread at a time, so threads borrow one each with [`get`](Pool::get). Clients
/// connect on demand up to `max_size` and return to the pool when the guard drops.
/// `Pool` is `Send + Sync`; put it in an `Arc`.
///
/// ```
/// use slotlane::Pool;
/// use std::sync::Arc;
/// # let url = slotlane_testing::url(); // SLOTLANE_URL, else a slotlane-server of its own
/// let pool = Arc::new(Pool::new(url.as_str(), 4)?);
/// let threads: Vec<_> = (0..8)
///     .map(|i| {
///         let pool = pool.clone();
///         std::thread::spawn(move || -> Result<(), slotlane::Error> {
///             let mut client = pool.get()?;
///             client.set(format!("doc:pool:{i}"), i, None)?;
///             Ok(())
///         })
///     })
///     .collect();
/// for t in threads {
///     t.join().unwrap()?;
/// }
/// assert!(pool.size() <= 4);
/// # Ok::<(), slotlane::Error>(())
/// ```
pub struct Pool {
    opts: ConnectOptions,
    max: usize,
    state: Mutex<State>,
    freed: Condvar,
}

struct State {
    idle: Vec<Client>,
    total: usize,
}

impl Pool {
    /// A pool of at most `max_size` clients for `opts` (a URL or [`ConnectOptions`]). One
    /// client connects now, so a bad address fails here.
    pub fn new<O: Into<ConnectOptions>>(opts: O, max_size: usize) -> Result<Pool, Error> {
        if max_size == 0 {
            return Err(Error::InvalidArgument("a pool needs max_size >= 1".into()));
        }
        let opts = opts.into();
        let first = Client::connect(&opts)?;
        Ok(Pool {
            opts,
            max: max_size,
            state: Mutex::new(State {
                idle: vec![first],
                total: 1,
            }),
            freed: Condvar::new(),
        })
    }

    /// Borrows a client, connecting a new one when none is idle and the pool is not
    /// full, else waiting for one.
    pub fn get(&self) -> Result<PooledClient<'_>, Error> {
        self.get_inner(None)
    }

    /// As [`get`](Pool::get), but fails with [`Error::Timeout`] after `wait`.
    pub fn get_timeout(&self, wait: Duration) -> Result<PooledClient<'_>, Error> {
        self.get_inner(Some(Instant::now() + wait))
    }

    fn get_inner(&self, deadline: Option<Instant>) -> Result<PooledClient<'_>, Error> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(c) = st.idle.pop() {
                return Ok(PooledClient {
                    pool: self,
                    client: Some(c),
                });
            }
            if st.total < self.max {
                st.total += 1;
                drop(st);
                return match Client::connect(&self.opts) {
                    Ok(c) => Ok(PooledClient {
                        pool: self,
                        client: Some(c),
                    }),
                    Err(e) => {
                        self.state.lock().unwrap_or_else(|e| e.into_inner()).total -= 1;
                        self.freed.notify_one();
                        Err(e)
                    }
                };
            }
            st = match deadline {
                None => self.freed.wait(st).unwrap_or_else(|e| e.into_inner()),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return Err(Error::Timeout(format!(
                            "no pooled client free within the wait ({} in use)",
                            st.total
                        )));
                    }
                    self.freed
                        .wait_timeout(st, d - now)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
            };
        }
    }

    /// Clients connected (idle and borrowed).
    pub fn size(&self) -> usize {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).total
    }

    /// Clients idle in the pool.
    pub fn idle(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .idle
            .len()
    }
}

/// A client borrowed from a [`Pool`]; it goes back when dropped.
pub struct PooledClient<'p> {
    pool: &'p Pool,
    client: Option<Client>,
}

impl PooledClient<'_> {
    /// Closes this client instead of returning it (after an error that makes it
    /// suspect); the pool connects a new one when needed.
    pub fn discard(mut self) {
        self.client.take();
        self.pool
            .state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .total -= 1;
        self.pool.freed.notify_one();
    }
}

impl Deref for PooledClient<'_> {
    type Target = Client;
    fn deref(&self) -> &Client {
        self.client.as_ref().expect("pooled client")
    }
}
impl DerefMut for PooledClient<'_> {
    fn deref_mut(&mut self) -> &mut Client {
        self.client.as_mut().expect("pooled client")
    }
}

impl Drop for PooledClient<'_> {
    fn drop(&mut self) {
        if let Some(c) = self.client.take() {
            self.pool
                .state
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .idle
                .push(c);
            self.pool.freed.notify_one();
        }
    }
}
