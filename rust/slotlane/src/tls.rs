//! TLS: [`TlsConfig`] (a builder of the options) and [`Tls`] (the core's configuration it
//! makes, loaded once and shared by any number of clients and threads).
use crate::Error;
use slotlane_sys as sys;
use std::ffi::{c_char, CStr, CString};
use std::fmt;
use std::ptr::{self, NonNull};
use std::sync::Arc;

/// How the server's certificate is verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TlsVerify {
    /// The chain to a trusted CA and the host name (the default).
    #[default]
    Full,
    /// The chain only: a certificate of a trusted CA for any name.
    ChainOnly,
    /// Nothing: whoever is on the path can read and change the traffic. Tests only.
    NoneInsecure,
}

/// What the certificates of nodes learned from a cluster's topology are verified against
/// (the seeds: [`TlsConfig::server_name`], else their address).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TlsNodeNames {
    /// The address the cluster announces (an IP is matched against the IP SANs).
    #[default]
    Address,
    /// The host name the node announces (`cluster-announce-hostname`), else its address.
    Hostname,
    /// [`TlsConfig::server_name`] for every node: one certificate for the whole cluster.
    ServerName,
    /// The chain only.
    ChainOnly,
}

/// The options of a TLS configuration, as a builder; [`build`](TlsConfig::build) loads
/// them (a file that cannot be read fails there, with [`Error::Tls`]).
///
/// ```no_run
/// use slotlane::{Client, ConnectOptions, TlsConfig};
/// let tls = TlsConfig::new()
///     .ca_file("ca.pem")
///     .client_cert_files("client.pem", "client.key")
///     .build()?;
/// let mut c = Client::connect(ConnectOptions::new("rediss://10.0.0.5:6380").tls(tls))?;
/// c.ping()?;
/// # Ok::<(), slotlane::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TlsConfig {
    ca_file: Option<String>,
    ca_dir: Option<String>,
    ca_pem: Option<Vec<u8>>,
    system_roots: Option<bool>,
    cert_file: Option<String>,
    key_file: Option<String>,
    cert_pem: Option<Vec<u8>>,
    key_pem: Option<Vec<u8>>,
    verify: TlsVerify,
    server_name: Option<String>,
    node_names: TlsNodeNames,
}

impl TlsConfig {
    /// The defaults: the system's CAs, full verification.
    pub fn new() -> TlsConfig {
        TlsConfig::default()
    }
    /// Trust the CAs of this PEM file.
    pub fn ca_file(mut self, path: &str) -> Self {
        self.ca_file = Some(path.to_string());
        self
    }
    /// Trust the CAs of this hashed directory (`c_rehash`).
    pub fn ca_dir(mut self, path: &str) -> Self {
        self.ca_dir = Some(path.to_string());
        self
    }
    /// Trust the CAs of these PEM bytes.
    pub fn ca_pem(mut self, pem: &[u8]) -> Self {
        self.ca_pem = Some(pem.to_vec());
        self
    }
    /// Also (true) or never (false) the system's CAs; by default only when no CA is given.
    pub fn system_roots(mut self, on: bool) -> Self {
        self.system_roots = Some(on);
        self
    }
    /// A client certificate chain and its unencrypted key, PEM files (mutual TLS).
    pub fn client_cert_files(mut self, cert: &str, key: &str) -> Self {
        self.cert_file = Some(cert.to_string());
        self.key_file = Some(key.to_string());
        self
    }
    /// A client certificate chain and its unencrypted key as PEM bytes.
    pub fn client_cert_pem(mut self, cert: &[u8], key: &[u8]) -> Self {
        self.cert_pem = Some(cert.to_vec());
        self.key_pem = Some(key.to_vec());
        self
    }
    /// How the server's certificate is verified (default [`TlsVerify::Full`]).
    pub fn verify(mut self, v: TlsVerify) -> Self {
        self.verify = v;
        self
    }
    /// The name the seeds are verified against and sent as SNI, instead of their address.
    pub fn server_name(mut self, name: &str) -> Self {
        self.server_name = Some(name.to_string());
        self
    }
    /// What discovered nodes are verified against (default [`TlsNodeNames::Address`]).
    pub fn node_names(mut self, n: TlsNodeNames) -> Self {
        self.node_names = n;
        self
    }

    /// Loads the configuration: the CAs, the client certificate and key.
    pub fn build(&self) -> Result<Tls, Error> {
        let s = |what: &str, v: &Option<String>| -> Result<Option<CString>, Error> {
            v.as_deref()
                .map(|x| {
                    CString::new(x)
                        .map_err(|_| Error::InvalidArgument(format!("{what} contains NUL")))
                })
                .transpose()
        };
        let (ca_file, ca_dir) = (s("CA file", &self.ca_file)?, s("CA dir", &self.ca_dir)?);
        let (cert_file, key_file) = (
            s("certificate file", &self.cert_file)?,
            s("key file", &self.key_file)?,
        );
        let server_name = s("server name", &self.server_name)?;
        let p = |c: &Option<CString>| c.as_ref().map_or(ptr::null(), |c| c.as_ptr());
        let b = |v: &Option<Vec<u8>>| {
            (
                v.as_ref()
                    .map_or(ptr::null(), |v| v.as_ptr() as *const c_char),
                v.as_ref().map_or(0, |v| v.len()),
            )
        };
        // SAFETY: zeroed is a valid bit pattern for the struct; init fills it.
        let mut o: sys::sl_tls_options = unsafe { std::mem::zeroed() };
        // SAFETY: o is writable.
        let rc = unsafe { sys::sl_tls_options_init(&mut o, sys::SL_TLS_OPTIONS_VERSION) };
        if rc != 0 {
            return Err(Error::from_code(rc, "sl_tls_options_init"));
        }
        o.ca_file = p(&ca_file);
        o.ca_dir = p(&ca_dir);
        (o.ca_pem, o.ca_pem_len) = b(&self.ca_pem);
        if let Some(on) = self.system_roots {
            o.system_roots = on as i32;
        }
        o.cert_file = p(&cert_file);
        o.key_file = p(&key_file);
        (o.cert_pem, o.cert_pem_len) = b(&self.cert_pem);
        (o.key_pem, o.key_pem_len) = b(&self.key_pem);
        o.verify = match self.verify {
            TlsVerify::Full => sys::SL_TLS_VERIFY_FULL,
            TlsVerify::ChainOnly => sys::SL_TLS_VERIFY_CHAIN,
            TlsVerify::NoneInsecure => sys::SL_TLS_VERIFY_NONE_INSECURE,
        };
        o.server_name = p(&server_name);
        o.node_names = match self.node_names {
            TlsNodeNames::Address => sys::SL_TLS_NODES_ADDRESS,
            TlsNodeNames::Hostname => sys::SL_TLS_NODES_HOSTNAME,
            TlsNodeNames::ServerName => sys::SL_TLS_NODES_SERVER_NAME,
            TlsNodeNames::ChainOnly => sys::SL_TLS_NODES_CHAIN_ONLY,
        };
        let mut raw: *mut sys::sl_tls = ptr::null_mut();
        let mut msg = [0 as c_char; 512];
        // SAFETY: every pointer in o outlives the call; msg is writable for its length.
        let rc = unsafe { sys::sl_tls_new(&mut raw, &o, msg.as_mut_ptr(), msg.len()) };
        if rc != 0 {
            // SAFETY: the core NUL-terminates msg.
            let m = unsafe { CStr::from_ptr(msg.as_ptr()) }.to_string_lossy();
            return Err(Error::from_code(rc, &m));
        }
        let raw = NonNull::new(raw).ok_or_else(|| Error::Other {
            code: 0,
            message: "sl_tls_new gave NULL".into(),
        })?;
        Ok(Tls(Arc::new(Handle(raw))))
    }
}

struct Handle(NonNull<sys::sl_tls>);
// SAFETY: an sl_tls is immutable after sl_tls_new and may be used and freed on any thread
// (slotlane.h); its reference count is atomic.
unsafe impl Send for Handle {}
// SAFETY: as above.
unsafe impl Sync for Handle {}
impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: the one reference this handle holds; clients hold their own.
        unsafe { sys::sl_tls_free(self.0.as_ptr()) };
    }
}

/// A loaded TLS configuration ([`TlsConfig::build`]), cheap to clone and shared by every
/// client given it ([`ConnectOptions::tls`](crate::ConnectOptions::tls)); each client keeps
/// its own reference, so dropping this never affects a connected client.
#[derive(Clone)]
pub struct Tls(Arc<Handle>);

impl Tls {
    pub(crate) fn raw(&self) -> *mut sys::sl_tls {
        self.0 .0.as_ptr()
    }
}

impl fmt::Debug for Tls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tls({:p})", self.raw())
    }
}
impl PartialEq for Tls {
    fn eq(&self, other: &Tls) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}
impl Eq for Tls {}
