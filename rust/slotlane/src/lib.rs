//! slotlane: a Redis-protocol client for plain servers and clusters (Redis Cluster,
//! Valkey Cluster, slotlane-server), built on libslotlane's C core.
//!
//! The core does everything that is hard — slot routing, the slot cache, one batched
//! pipeline per node, MOVED/ASK/TRYAGAIN redirects, splitting multi-key commands — and
//! this crate is a thin layer over it: it encodes commands as RESP, crosses into the
//! core once per pipeline, and reads the flat reply records into [`Value`]s that borrow
//! the reply bytes instead of copying them.
//!
//! ```
//! use slotlane::{cmd, Client, Pipeline, Value};
//! # let url = slotlane_testing::url(); // SLOTLANE_URL, else a slotlane-server of its own
//! // A plain server or any node of a cluster: the mode is detected.
//! let mut client = Client::connect(url.as_str())?;
//!
//! // the typed methods are rendered from bindings/spec/ (commands.rs)
//! assert!(client.set("doc:lib:greeting", "hello", None)?);
//! let len: i64 = cmd("APPEND").arg("doc:lib:greeting").arg(" world").query(&mut client)?;
//! assert_eq!(len, 11);
//!
//! let mut pipe = Pipeline::new();
//! for i in 0..10 {
//!     pipe.set(format!("doc:lib:{i}"), i, None);
//! }
//! let greeting = pipe.get("doc:lib:greeting"); // Slot<Option<Vec<u8>>>
//! let replies = pipe.exec(&mut client);
//! assert!(replies[..10].iter().all(|r| r == &Ok(Value::Status(b"OK"[..].into()))));
//! assert_eq!(greeting.get(&replies)?, Some(b"hello world".to_vec()));
//! # Ok::<(), slotlane::Error>(())
//! ```
//!
//! Errors are [`Error`]s: a pipeline's failed command fails alone (its slot holds the
//! error); [`Error::Response`] carries the server's error kind (`WRONGTYPE`, `MOVED`...).
//! Threads share clients through a [`Pool`]. [`aio`] is the asynchronous client: the
//! same typed methods as `Send + 'static` futures for any runtime.
#![warn(missing_docs)]

pub mod aio;
mod client;
mod cluster;
mod cmd;
mod commands;
mod error;
mod events;
mod pipeline;
mod pool;
mod pubsub;
mod session;
pub mod shape;
#[cfg(feature = "testing")]
pub mod testing;
mod tls;
mod value;

pub use client::{CancelHandle, Client, ConnectOptions, Mode, ReadFrom, Route, Stats};
pub use cluster::{ClusterNode, ScanIter, Script};
pub use cmd::{cmd, Cmd, ToArg};
pub use commands::*;
pub use error::Error;
pub use events::{Event, EventKind};
pub use pipeline::Pipeline;
pub use pool::{Pool, PooledClient};
pub use pubsub::{
    Message, MessageKind, MessageStream, PubSub, PubSubOptions, PubSubStats, SubKind,
};
pub use session::Session;
pub use shape::Slot;
pub use tls::{Tls, TlsConfig, TlsNodeNames, TlsVerify};
pub use value::{FromValue, Value};

/// The version of the C core (`sl_version()`), e.g. `"0.1.0"`.
pub fn core_version() -> &'static str {
    // SAFETY: static storage, NUL-terminated, never NULL.
    unsafe { std::ffi::CStr::from_ptr(slotlane_sys::sl_version()) }
        .to_str()
        .unwrap_or("?")
}

#[cfg(test)]
mod tests {
    #[test]
    fn client_is_send_and_pool_is_send_sync() {
        fn send<T: Send>() {}
        fn send_sync<T: Send + Sync>() {}
        send::<crate::Client>();
        send_sync::<crate::Pool>();
        send_sync::<crate::CancelHandle>();
        send_sync::<crate::Error>();
        send_sync::<crate::aio::Client>();
        send::<crate::aio::Call<crate::shape::Opt<crate::shape::Str>>>();
        assert!(!crate::core_version().is_empty());
    }
}
