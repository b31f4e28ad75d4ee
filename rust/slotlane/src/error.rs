//! [`Error`]: every failure of the client, one enum.
use slotlane_sys as sys;
use std::fmt;

/// An error of a command, a pipeline's command, or the client.
///
/// A failed command of a pipeline fails alone: its slot in the result holds one of these,
/// the other commands keep their replies.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The server answered an error reply. `kind` is its first word (`ERR`, `WRONGTYPE`,
    /// `MOVED`, `CROSSSLOT`, `NOSCRIPT`...), `message` the whole text.
    Response {
        /// The first word of the error (`WRONGTYPE`).
        kind: String,
        /// The whole error text.
        message: String,
    },
    /// Connecting, writing or reading failed (the node of the command went away, refused
    /// the connection...). The next execution reconnects.
    Io(String),
    /// The execution's deadline passed before the reply.
    Timeout(String),
    /// The command was redirected (MOVED/ASK/TRYAGAIN/CLUSTERDOWN) more times than the
    /// client's `max_redirects`; the message is the last redirect.
    RedirectsExhausted(String),
    /// The server sent bytes that are not RESP, or exceeded a reply limit.
    Protocol(String),
    /// [`CancelHandle::cancel`](crate::CancelHandle::cancel) stopped the execution.
    Cancelled(String),
    /// Discovery failed, no node owns the key's slot, or the client refused the command
    /// (a transaction over several slots).
    Cluster(String),
    /// A bad argument: a bad URL or option, a malformed command.
    InvalidArgument(String),
    /// TLS failed: the server's certificate did not verify (chain, name, dates), the
    /// handshake failed (a plaintext port), the server refused the client certificate, or
    /// a CA, certificate or key could not be loaded. The message says which.
    Tls(String),
    /// A feature this build does not have (TLS in a build without OpenSSL).
    Unsupported(String),
    /// A reply of another type than the one asked for (a typed method or
    /// [`FromValue`](crate::FromValue) conversion).
    UnexpectedReply(String),
    /// Any other failure of the core (out of memory, a call in the wrong state), with
    /// its `SL_E*` code.
    Other {
        /// The core's `SL_E*` code (or below -1000: an unknown record kind).
        code: i32,
        /// The core's message.
        message: String,
    },
}

impl Error {
    /// An error from a core return code and the handle's message.
    pub(crate) fn from_code(code: i32, message: &str) -> Error {
        let m = || {
            if message.is_empty() {
                // SAFETY: sl_strerror returns static storage, never NULL.
                unsafe { std::ffi::CStr::from_ptr(sys::sl_strerror(code)) }
                    .to_string_lossy()
                    .into_owned()
            } else {
                message.to_string()
            }
        };
        match code {
            sys::SL_EINVAL => Error::InvalidArgument(m()),
            sys::SL_EIO => Error::Io(m()),
            sys::SL_ETIMEOUT => Error::Timeout(m()),
            sys::SL_EPROTO => Error::Protocol(m()),
            sys::SL_ESERVER => Error::response(m().as_bytes()),
            sys::SL_EREDIRECT => Error::RedirectsExhausted(m()),
            sys::SL_ECANCELLED => Error::Cancelled(m()),
            sys::SL_ECLUSTER => Error::Cluster(m()),
            sys::SL_EUNSUPPORTED => Error::Unsupported(m()),
            sys::SL_ETLS => Error::Tls(m()),
            _ => Error::Other { code, message: m() },
        }
    }

    /// An error record (`SL_REPLY_ERROR`) of kind `flags` with its message.
    pub(crate) fn from_record(flags: u8, message: &[u8]) -> Error {
        let text = || String::from_utf8_lossy(message).into_owned();
        match flags as i32 {
            sys::SL_ERR_SERVER => Error::response(message),
            sys::SL_ERR_IO => Error::Io(text()),
            sys::SL_ERR_TIMEOUT => Error::Timeout(text()),
            sys::SL_ERR_REDIRECTS => Error::RedirectsExhausted(text()),
            sys::SL_ERR_PROTOCOL => Error::Protocol(text()),
            sys::SL_ERR_CANCELLED => Error::Cancelled(text()),
            sys::SL_ERR_CLUSTER => Error::Cluster(text()),
            sys::SL_ERR_ARGUMENT => Error::InvalidArgument(text()),
            other => Error::Other {
                code: -1000 - other,
                message: text(),
            },
        }
    }

    fn response(message: &[u8]) -> Error {
        let message = String::from_utf8_lossy(message).into_owned();
        let kind = message.split(' ').next().unwrap_or("").to_string();
        Error::Response { kind, message }
    }

    /// For a server error reply, its first word (`"WRONGTYPE"`...); `None` otherwise.
    pub fn response_kind(&self) -> Option<&str> {
        match self {
            Error::Response { kind, .. } => Some(kind),
            _ => None,
        }
    }

    /// The error's text.
    pub fn message(&self) -> &str {
        match self {
            Error::Response { message, .. }
            | Error::Io(message)
            | Error::Timeout(message)
            | Error::RedirectsExhausted(message)
            | Error::Protocol(message)
            | Error::Cancelled(message)
            | Error::Cluster(message)
            | Error::InvalidArgument(message)
            | Error::Tls(message)
            | Error::Unsupported(message)
            | Error::UnexpectedReply(message)
            | Error::Other { message, .. } => message,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Response { message, .. } => write!(f, "server error: {message}"),
            Error::Io(m) => write!(f, "I/O error: {m}"),
            Error::Timeout(m) => write!(f, "timeout: {m}"),
            Error::RedirectsExhausted(m) => write!(f, "too many redirects: {m}"),
            Error::Protocol(m) => write!(f, "protocol error: {m}"),
            Error::Cancelled(m) => write!(f, "cancelled: {m}"),
            Error::Cluster(m) => write!(f, "cluster error: {m}"),
            Error::InvalidArgument(m) => write!(f, "invalid argument: {m}"),
            Error::Tls(m) => write!(f, "TLS error: {m}"),
            Error::Unsupported(m) => write!(f, "unsupported: {m}"),
            Error::UnexpectedReply(m) => write!(f, "unexpected reply: {m}"),
            Error::Other { code, message } => write!(f, "error {code}: {message}"),
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_records_map_to_variants() {
        assert_eq!(
            Error::from_code(sys::SL_EIO, "boom"),
            Error::Io("boom".into())
        );
        assert!(
            matches!(Error::from_code(sys::SL_ETIMEOUT, ""), Error::Timeout(m) if !m.is_empty())
        );
        assert!(matches!(
            Error::from_code(sys::SL_EINVAL, "bad url"),
            Error::InvalidArgument(_)
        ));
        assert!(matches!(
            Error::from_code(sys::SL_EREDIRECT, "x"),
            Error::RedirectsExhausted(_)
        ));
        assert!(matches!(
            Error::from_code(sys::SL_ENOMEM, "x"),
            Error::Other {
                code: sys::SL_ENOMEM,
                ..
            }
        ));
        let e = Error::from_record(
            sys::SL_ERR_SERVER as u8,
            b"WRONGTYPE Operation against a key",
        );
        assert_eq!(e.response_kind(), Some("WRONGTYPE"));
        assert_eq!(e.message(), "WRONGTYPE Operation against a key");
        assert_eq!(
            e.to_string(),
            "server error: WRONGTYPE Operation against a key"
        );
        assert!(matches!(
            Error::from_record(sys::SL_ERR_IO as u8, b"reset"),
            Error::Io(_)
        ));
        assert!(matches!(
            Error::from_record(sys::SL_ERR_TIMEOUT as u8, b""),
            Error::Timeout(_)
        ));
        assert!(matches!(
            Error::from_record(sys::SL_ERR_REDIRECTS as u8, b"MOVED"),
            Error::RedirectsExhausted(_)
        ));
        assert!(matches!(
            Error::from_record(sys::SL_ERR_PROTOCOL as u8, b""),
            Error::Protocol(_)
        ));
        assert!(matches!(
            Error::from_record(sys::SL_ERR_CANCELLED as u8, b""),
            Error::Cancelled(_)
        ));
        assert!(matches!(
            Error::from_record(sys::SL_ERR_CLUSTER as u8, b""),
            Error::Cluster(_)
        ));
        assert!(matches!(
            Error::from_record(sys::SL_ERR_ARGUMENT as u8, b""),
            Error::InvalidArgument(_)
        ));
        let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(Error::Io("x".into()));
        assert_eq!(boxed.to_string(), "I/O error: x");
    }
}
