//! The node list, cluster-wide SCAN and scripts: thin over the core's `sl_client_nodes`,
//! `sl_scan_*` and `sl_batch_run_script`, which hold the logic.
use crate::value::decode;
use crate::{Client, Error, FromValue, ScanOptions, ToArg};
use slotlane_sys as sys;
use std::collections::VecDeque;
use std::ffi::{c_char, CStr};
use std::ptr;

/// One node of the client's current topology ([`Client::nodes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterNode {
    /// `"host:port"`: a [`crate::Route::Node`] target.
    pub addr: String,
    /// A primary (serves slots), else a replica.
    pub primary: bool,
    /// A replica's primary; `None` for a primary.
    pub primary_addr: Option<String>,
    /// The slot ranges served, first and last inclusive (empty for a replica).
    pub slots: Vec<(u16, u16)>,
}

impl Client {
    /// The current topology: every primary (in the order of all-primaries replies) with
    /// its slot ranges, then the replicas the slot map names. Nothing is sent; each `addr`
    /// is a [`crate::Route::Node`] target, so a per-node command is one loop.
    pub fn nodes(&self) -> Result<Vec<ClusterNode>, Error> {
        let mut list: *mut sys::sl_node_info = ptr::null_mut();
        let mut n = 0usize;
        // SAFETY: raw is live; the outputs are written by the call.
        let rc = unsafe { sys::sl_client_nodes(self.raw.as_ptr(), &mut list, &mut n) };
        if rc != 0 {
            return Err(Error::from_code(rc, &self.errmsg()));
        }
        let raw = if n == 0 {
            &[][..]
        } else {
            // SAFETY: the core allocated n entries, valid until sl_client_nodes_free.
            unsafe { std::slice::from_raw_parts(list, n) }
        };
        let mut out: Vec<ClusterNode> = raw
            .iter()
            .map(|r| ClusterNode {
                // SAFETY: addr is NUL-terminated in the list's memory.
                addr: unsafe { CStr::from_ptr(r.addr) }
                    .to_string_lossy()
                    .into_owned(),
                primary: r.is_primary != 0,
                primary_addr: None,
                slots: if r.nranges == 0 {
                    Vec::new()
                } else {
                    // SAFETY: ranges holds nranges pairs.
                    unsafe { std::slice::from_raw_parts(r.ranges, 2 * r.nranges) }
                        .chunks(2)
                        .map(|p| (p[0], p[1]))
                        .collect()
                },
            })
            .collect();
        for (i, r) in raw.iter().enumerate() {
            if r.primary >= 0 && (r.primary as usize) < out.len() {
                out[i].primary_addr = Some(out[r.primary as usize].addr.clone());
            }
        }
        // SAFETY: the list came from sl_client_nodes on this client.
        unsafe { sys::sl_client_nodes_free(self.raw.as_ptr(), list) };
        Ok(out)
    }

    /// Every key of the cluster (every primary; the one node in plain mode). The core
    /// tracks slots, not node cursors: across a reshard or a failover every key that
    /// existed throughout is returned at least once — a key of a moved slot may come
    /// twice. `opts` are the typed SCAN's (`r#match`, `count`, `r#type`). An error is
    /// yielded once and ends the iteration.
    pub fn scan_iter(&mut self, opts: &ScanOptions) -> Result<ScanIter<'_>, Error> {
        let (o, _type) = scan_options(opts)?;
        let mut scan: *mut sys::sl_scan = ptr::null_mut();
        // SAFETY: raw is live; o and its strings live during the call (copied).
        let rc = unsafe { sys::sl_scan_new(self.raw.as_ptr(), &o, &mut scan) };
        if rc != 0 {
            return Err(Error::from_code(rc, &self.errmsg()));
        }
        Ok(ScanIter {
            client: self,
            scan,
            page: VecDeque::new(),
            done: false,
        })
    }
}

/// The core's options for a scan (`sl_scan_options`), checked, and the TYPE's C string it
/// points into (kept alive by the caller during `sl_scan_new`, which copies the strings;
/// the MATCH pattern points into `opts`).
pub(crate) fn scan_options(
    opts: &ScanOptions,
) -> Result<(sys::sl_scan_options, Option<std::ffi::CString>), Error> {
    let count = match opts.count {
        None => 0,
        Some(n) if n > 0 && n <= i32::MAX as i64 => n as i32,
        Some(n) => {
            return Err(Error::InvalidArgument(format!(
                "SCAN count must be positive, not {n}"
            )))
        }
    };
    let mut o = sys::sl_scan_options {
        version: sys::SL_SCAN_OPTIONS_VERSION,
        size: std::mem::size_of::<sys::sl_scan_options>() as u32,
        match_: ptr::null(),
        match_len: 0,
        type_: ptr::null(),
        count,
    };
    if let Some(p) = &opts.r#match {
        if p.is_empty() {
            return Err(Error::InvalidArgument("an empty MATCH pattern".into()));
        }
        o.match_ = p.as_ptr().cast::<c_char>();
        o.match_len = p.len();
    }
    let t = match &opts.r#type {
        Some(t) => Some(
            std::ffi::CString::new(t.as_slice())
                .map_err(|_| Error::InvalidArgument("a NUL in the TYPE".into()))?,
        ),
        None => None,
    };
    if let Some(t) = &t {
        o.type_ = t.as_ptr();
    }
    Ok((o, t))
}

/// The keys of a scan's page in batch b (an array record, then one string record per key),
/// appended to page.
///
/// # Safety
/// b is a live batch whose last execution produced a scan page.
pub(crate) unsafe fn take_page(b: *mut sys::sl_batch, page: &mut VecDeque<Vec<u8>>) {
    let (mut n, mut data, mut dlen) = (0usize, ptr::null::<u8>(), 0usize);
    // SAFETY: b is live (the caller's promise); the page stays valid until its next use.
    let recs = unsafe { sys::sl_batch_replies(b, &mut n, &mut data, &mut dlen) };
    if recs.is_null() || n < 2 {
        return;
    }
    // SAFETY: n records and dlen data bytes, as the core says.
    let recs = unsafe { std::slice::from_raw_parts(recs, n) };
    let data = if dlen == 0 {
        &[][..]
    } else {
        unsafe { std::slice::from_raw_parts(data, dlen) }
    };
    for r in &recs[1..] {
        let (off, len) = (r.offset as usize, r.len as usize);
        page.push_back(data[off..off + len].to_vec());
    }
}

/// The iterator of [`Client::scan_iter`]: owned keys, a page fetched per core call.
pub struct ScanIter<'a> {
    client: &'a mut Client,
    scan: *mut sys::sl_scan,
    page: VecDeque<Vec<u8>>,
    done: bool,
}

impl ScanIter<'_> {
    fn fetch(&mut self) -> Result<(), Error> {
        let b = self.client.batch.as_ptr();
        let mut done = 0;
        // SAFETY: scan and the batch belong to the same live client.
        let rc = unsafe { sys::sl_scan_next(self.scan, b, &mut done) };
        if rc != 0 {
            return Err(Error::from_code(rc, &self.client.errmsg()));
        }
        self.done = done != 0;
        // SAFETY: b is live and holds the page just fetched.
        unsafe { take_page(b, &mut self.page) };
        Ok(())
    }
}

impl Iterator for ScanIter<'_> {
    type Item = Result<Vec<u8>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(k) = self.page.pop_front() {
                return Some(Ok(k));
            }
            if self.done {
                return None;
            }
            if let Err(e) = self.fetch() {
                self.done = true;
                return Some(Err(e));
            }
        }
    }
}

impl Drop for ScanIter<'_> {
    fn drop(&mut self) {
        // SAFETY: scan came from sl_scan_new and is freed once.
        unsafe { sys::sl_scan_free(self.scan) };
    }
}

/// A Lua script run by its SHA1 (as redis-rs's `Script`): EVALSHA, and on a node that
/// answers NOSCRIPT the script is loaded there and the command sent once more — in the
/// core (`sl_batch_run_script`).
///
/// ```
/// # let url = slotlane_testing::url();
/// # let mut client = slotlane::Client::connect(url.as_str())?;
/// let incr = slotlane::Script::new("return redis.call('INCRBY', KEYS[1], ARGV[1])");
/// let n: i64 = incr.invoke(&mut client, &["doc:script:n"], &[5])?;
/// assert!(n >= 5);
/// # Ok::<(), slotlane::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Script {
    code: std::sync::Arc<[u8]>,
    sha: String,
}

impl Script {
    /// Binds a script body; its SHA1 is computed once, by the core.
    pub fn new(code: &str) -> Script {
        let mut out = [0 as c_char; 41];
        // SAFETY: code is readable for its length; out has 41 bytes.
        unsafe { sys::sl_script_sha1(code.as_ptr().cast(), code.len(), out.as_mut_ptr()) };
        // SAFETY: the core wrote 40 hex digits and a NUL.
        let sha = unsafe { CStr::from_ptr(out.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        Script {
            code: code.as_bytes().into(),
            sha,
        }
    }

    /// The SHA1 (40 lowercase hex digits).
    pub fn hash(&self) -> &str {
        &self.sha
    }

    /// Runs the script (EVALSHA) with keys and args and converts the reply.
    pub fn invoke<T: FromValue, K: ToArg, A: ToArg>(
        &self,
        client: &mut Client,
        keys: &[K],
        args: &[A],
    ) -> Result<T, Error> {
        self.run(client, "EVALSHA", keys, args)
    }

    /// Runs the script as a read-only one (EVALSHA_RO).
    pub fn invoke_ro<T: FromValue, K: ToArg, A: ToArg>(
        &self,
        client: &mut Client,
        keys: &[K],
        args: &[A],
    ) -> Result<T, Error> {
        self.run(client, "EVALSHA_RO", keys, args)
    }

    /// EVALSHA (or EVALSHA_RO: name) of this script with keys and args.
    pub(crate) fn command<K: ToArg, A: ToArg>(
        &self,
        name: &str,
        keys: &[K],
        args: &[A],
    ) -> crate::Cmd {
        let mut c = crate::cmd(name);
        c.arg(self.sha.as_str()).arg(keys.len() as i64);
        for k in keys {
            c.arg(k);
        }
        for a in args {
            c.arg(a);
        }
        c
    }

    /// The body, shared with the futures of `slotlane::aio` (the core reads it until the
    /// completion).
    pub(crate) fn body(&self) -> std::sync::Arc<[u8]> {
        self.code.clone()
    }

    fn run<T: FromValue, K: ToArg, A: ToArg>(
        &self,
        client: &mut Client,
        name: &str,
        keys: &[K],
        args: &[A],
    ) -> Result<T, Error> {
        let c = self.command(name, keys, args);
        let mut buf = std::mem::take(&mut client.scratch);
        buf.clear();
        c.write_resp(&mut buf);
        let b = client.batch.as_ptr();
        let mut sizes = sys::sl_sizes::default();
        // SAFETY: b is live; code and buf are readable for their lengths; NULL outputs
        // leave the replies in the batch.
        let rc = unsafe {
            sys::sl_batch_run_script(
                b,
                self.code.as_ptr().cast(),
                self.code.len(),
                buf.as_ptr().cast(),
                buf.len(),
                0,
                ptr::null_mut(),
                0,
                ptr::null_mut(),
                0,
                &mut sizes,
            )
        };
        client.scratch = buf;
        if sizes.commands != 1 {
            return Err(Error::from_code(
                if rc != 0 { rc } else { sys::SL_EPROTO },
                &client.errmsg(),
            ));
        }
        let (mut n, mut data, mut dlen) = (0usize, ptr::null::<u8>(), 0usize);
        // SAFETY: b is live; the replies stay valid until its next execution.
        let recs = unsafe { sys::sl_batch_replies(b, &mut n, &mut data, &mut dlen) };
        let recs = unsafe { std::slice::from_raw_parts(recs, n) };
        let data = if dlen == 0 {
            &[][..]
        } else {
            unsafe { std::slice::from_raw_parts(data, dlen) }
        };
        let mut i = 0;
        T::from_value(decode(recs, data, &mut i)?)
    }
}
