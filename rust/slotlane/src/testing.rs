//! The bundled slotlane-server inside the test process (feature `testing`): a real sharded
//! cluster on loopback for an application's own tests — slots, MOVED and discovery as in
//! production — started in one call and stopped when the [`Server`] is dropped.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let srv = slotlane::testing::Server::start(4)?; // 4 shards on ephemeral ports
//! let c = slotlane::Client::connect(srv.url())?;
//! # Ok(()) }
//! ```
//!
//! The server is compiled into this crate (slotlane-sys's `server` feature, from the
//! server's one build description `server/build.cfg`): nothing is downloaded or started by
//! hand. Several servers may run at once; they share nothing.
use std::ffi::{CStr, CString};
use std::os::raw::c_char;
use std::path::PathBuf;
use std::ptr;

use slotlane_sys::server as ffi;

/// Where a shard listens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortMode {
    /// Shard i on its own port, answering like a Redis Cluster primary (the default).
    PerShard,
    /// Every shard on one port; keys of other shards are forwarded to their owner.
    OnePort,
}

/// What a shard does with a key of another shard (per-shard mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Misrouted {
    /// `-MOVED slot addr:port`, as Redis Cluster (the default).
    Moved,
    /// Runs it on the owner and replies, so a plain client can use any port.
    Forward,
}

/// The append-only log per shard, replayed at start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Nothing written (the default).
    Memory,
    /// fsync'd once a second.
    Everysec,
    /// fsync'd before any reply leaves.
    Always,
}

/// How to start a [`Server`]; `ServerOptions::default()` is 4 shards, per-shard ports,
/// `-MOVED`, in memory, ephemeral ports on 127.0.0.1.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// 1..256.
    pub shards: u32,
    /// Per-shard ports or one port.
    pub port_mode: PortMode,
    /// `-MOVED` or forwarding.
    pub misrouted: Misrouted,
    /// The logs' policy.
    pub durability: Durability,
    /// The logs' directory (created if missing); None: the current directory.
    pub dir: Option<PathBuf>,
    /// The listen address.
    pub bind: String,
    /// 0: ports chosen by the kernel; else the base port (shard i on port + i).
    pub port: u16,
    /// Any other flag of the slotlane-server executable, as (name, value) without the
    /// dashes: `("maxclients", "100")`.
    pub settings: Vec<(String, String)>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            shards: 4,
            port_mode: PortMode::PerShard,
            misrouted: Misrouted::Moved,
            durability: Durability::Memory,
            dir: None,
            bind: "127.0.0.1".into(),
            port: 0,
            settings: Vec::new(),
        }
    }
}

/// A slotlane-server could not start: a bad option, a busy port, a directory in use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerError {
    /// The `SL_SERVER_E*` code.
    pub code: i32,
    /// What went wrong.
    pub message: String,
}

impl std::fmt::Display for ServerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "slotlane-server: {}", self.message)
    }
}

impl std::error::Error for ServerError {}

/// A running slotlane-server in this process; stopped (every connection closed, every
/// shard thread joined) on [`Server::stop`] or when dropped.
#[derive(Debug)]
pub struct Server {
    raw: *mut ffi::sl_server,
    url: String,
    ports: Vec<u16>,
}

// SAFETY: the handle is used by one thread at a time (&mut for stop, Drop), and the C side
// allows any thread; the getters read what was copied at start.
unsafe impl Send for Server {}
unsafe impl Sync for Server {}

fn cstring(s: &str) -> Result<CString, ServerError> {
    CString::new(s).map_err(|_| ServerError {
        code: ffi::SL_SERVER_EINVAL,
        message: format!("{s:?} holds a NUL byte"),
    })
}

impl Server {
    /// A server of `shards` shards with the other defaults of [`ServerOptions`].
    pub fn start(shards: u32) -> Result<Server, ServerError> {
        Server::with_options(&ServerOptions {
            shards,
            ..ServerOptions::default()
        })
    }

    /// A server with these options.
    pub fn with_options(o: &ServerOptions) -> Result<Server, ServerError> {
        // SAFETY: a plain C struct the call fills.
        let mut raw: ffi::sl_server_options = unsafe { std::mem::zeroed() };
        // SAFETY: raw is a valid, writable options struct.
        unsafe { ffi::sl_server_options_init(&mut raw, ffi::SL_SERVER_OPTIONS_VERSION) };
        raw.shards = o.shards.min(i32::MAX as u32) as i32;
        raw.port_mode = match o.port_mode {
            PortMode::PerShard => 0,
            PortMode::OnePort => 1,
        };
        raw.misrouted = match o.misrouted {
            Misrouted::Moved => 0,
            Misrouted::Forward => 1,
        };
        raw.durability = match o.durability {
            Durability::Memory => 0,
            Durability::Everysec => 1,
            Durability::Always => 2,
        };
        raw.port = o.port as i32;
        let dir = match &o.dir {
            Some(d) => Some(cstring(&d.to_string_lossy())?),
            None => None,
        };
        let bind = cstring(&o.bind)?;
        raw.dir = dir.as_ref().map_or(ptr::null(), |d| d.as_ptr());
        raw.bind = bind.as_ptr();
        let mut strings = Vec::with_capacity(o.settings.len() * 2);
        for (k, v) in &o.settings {
            strings.push(cstring(k)?);
            strings.push(cstring(v)?);
        }
        let ptrs: Vec<*const c_char> = strings.iter().map(|s| s.as_ptr()).collect();
        raw.settings = if ptrs.is_empty() {
            ptr::null()
        } else {
            ptrs.as_ptr()
        };
        raw.nsettings = ptrs.len();
        let mut out = ptr::null_mut();
        let mut err = [0 as c_char; 512];
        // SAFETY: every pointer in raw lives until the call returns; err is 512 bytes.
        let rc = unsafe { ffi::sl_server_start(&mut out, &raw, err.as_mut_ptr(), err.len()) };
        if rc != 0 {
            // SAFETY: the library wrote a NUL-terminated message into err.
            let message = unsafe { CStr::from_ptr(err.as_ptr()) }
                .to_string_lossy()
                .into_owned();
            return Err(ServerError { code: rc, message });
        }
        // SAFETY: out is a started server until sl_server_free.
        let n = unsafe { ffi::sl_server_shards(out) };
        let ports = (0..n)
            .map(|i| unsafe { ffi::sl_server_port(out, i) } as u16)
            .collect();
        let mut buf = [0 as c_char; 128];
        // SAFETY: buf is 128 bytes; the URL is shorter.
        unsafe { ffi::sl_server_url(out, buf.as_mut_ptr(), buf.len()) };
        // SAFETY: NUL-terminated by the call.
        let url = unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        Ok(Server {
            raw: out,
            url,
            ports,
        })
    }

    /// `redis://127.0.0.1:PORT` of shard 0: a cluster client discovers the others from it.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The port of each shard (all the same in one-port mode).
    pub fn ports(&self) -> &[u16] {
        &self.ports
    }

    /// Stops every shard and waits: connected clients see their connections end (I/O
    /// errors, not hangs), ports are released, logs flushed. Drop does it too.
    pub fn stop(&mut self) {
        // SAFETY: a live handle; a second stop is a no-op.
        unsafe { ffi::sl_server_stop(self.raw) };
    }

    /// A durability directory for a test (under the system's temp folder, unique per
    /// process and call); removing it is the caller's.
    pub fn temp_dir(tag: &str) -> PathBuf {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let d = std::env::temp_dir().join(format!(
            "slotlane-testing-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&d);
        d
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // SAFETY: the handle is ours; sl_server_free stops it first.
        unsafe { ffi::sl_server_free(self.raw) };
    }
}
