//! Commands: [`ToArg`] (what can be an argument), [`Cmd`] and [`cmd`], and the RESP
//! encoding the bindings do themselves (DESIGN.md, "The batch ABI").
use crate::{Client, Error, FromValue, Route, Value};

/// Writes `n` in decimal.
#[inline]
pub(crate) fn write_usize(out: &mut Vec<u8>, n: usize) {
    let mut tmp = [0u8; 20];
    let d = digits(&mut tmp, n);
    out.extend_from_slice(d);
}

/// `n` in decimal, in the end of `tmp`.
#[inline(always)]
fn digits(tmp: &mut [u8; 20], mut n: usize) -> &[u8] {
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &tmp[i..]
}

/// Appends one RESP bulk string: `$<len>\r\n<bytes>\r\n`, with one capacity check.
#[inline]
pub(crate) fn write_bulk(out: &mut Vec<u8>, b: &[u8]) {
    let mut tmp = [0u8; 20];
    let d = digits(&mut tmp, b.len());
    let need = 1 + d.len() + 2 + b.len() + 2;
    out.reserve(need);
    // SAFETY: `need` bytes of spare capacity were reserved; exactly `need` bytes are
    // written before the length is raised by `need`.
    unsafe {
        let mut p = out.as_mut_ptr().add(out.len());
        *p = b'$';
        p = p.add(1);
        std::ptr::copy_nonoverlapping(d.as_ptr(), p, d.len());
        p = p.add(d.len());
        *p = b'\r';
        *p.add(1) = b'\n';
        p = p.add(2);
        std::ptr::copy_nonoverlapping(b.as_ptr(), p, b.len());
        p = p.add(b.len());
        *p = b'\r';
        *p.add(1) = b'\n';
        out.set_len(out.len() + need);
    }
}

/// Appends an array header: `*<n>\r\n`.
#[inline]
pub(crate) fn write_array_header(out: &mut Vec<u8>, n: usize) {
    out.push(b'*');
    write_usize(out, n);
    out.extend_from_slice(b"\r\n");
}

/// A command argument: written as one RESP bulk string. Bytes and text as they are,
/// numbers in decimal (floats in Rust's shortest round-trip form).
pub trait ToArg {
    /// Appends this argument as a RESP bulk string (`$len\r\n...\r\n`) to `out`.
    fn write_arg(&self, out: &mut Vec<u8>);
}

impl ToArg for [u8] {
    #[inline]
    fn write_arg(&self, out: &mut Vec<u8>) {
        write_bulk(out, self)
    }
}
impl<const N: usize> ToArg for [u8; N] {
    #[inline]
    fn write_arg(&self, out: &mut Vec<u8>) {
        write_bulk(out, self)
    }
}
impl ToArg for Vec<u8> {
    #[inline]
    fn write_arg(&self, out: &mut Vec<u8>) {
        write_bulk(out, self)
    }
}
impl ToArg for str {
    #[inline]
    fn write_arg(&self, out: &mut Vec<u8>) {
        write_bulk(out, self.as_bytes())
    }
}
impl ToArg for String {
    #[inline]
    fn write_arg(&self, out: &mut Vec<u8>) {
        write_bulk(out, self.as_bytes())
    }
}
impl<T: ToArg + ?Sized> ToArg for &T {
    #[inline]
    fn write_arg(&self, out: &mut Vec<u8>) {
        (**self).write_arg(out)
    }
}

macro_rules! unsigned_arg {
    ($($t:ty),*) => {$(
        impl ToArg for $t {
            #[inline]
            fn write_arg(&self, out: &mut Vec<u8>) {
                let mut tmp = [0u8; 20];
                write_bulk(out, digits(&mut tmp, *self as usize))
            }
        }
    )*};
}
unsigned_arg!(u8, u16, u32, usize);

macro_rules! display_arg {
    ($($t:ty),*) => {$(
        impl ToArg for $t {
            fn write_arg(&self, out: &mut Vec<u8>) {
                write_bulk(out, self.to_string().as_bytes())
            }
        }
    )*};
}
display_arg!(i8, i16, i32, i64, isize, u64, i128, u128, f32, f64);

/// A command: its name and arguments, encoded as RESP as they are added, and an
/// optional routing override. Build one with [`cmd`].
///
/// ```
/// use slotlane::{cmd, Client};
/// # let url = slotlane_testing::url(); // SLOTLANE_URL, else a slotlane-server of its own
/// let mut client = Client::connect(url.as_str())?;
/// cmd("SET").arg("doc:cmd").arg(42).query::<()>(&mut client)?;
/// let n: i64 = cmd("INCRBY").arg("doc:cmd").arg(8).query(&mut client)?;
/// assert_eq!(n, 50);
/// # Ok::<(), slotlane::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cmd {
    pub(crate) args: Vec<u8>,
    pub(crate) argc: usize,
    pub(crate) route: Option<Route>,
}

/// A new command named `name` (`cmd("SET").arg(k).arg(v)`).
pub fn cmd(name: &str) -> Cmd {
    let mut c = Cmd {
        args: Vec::with_capacity(64),
        argc: 0,
        route: None,
    };
    c.arg(name);
    c
}

impl Cmd {
    /// An empty command; its first argument is its name.
    pub fn new() -> Cmd {
        Cmd::default()
    }

    /// Appends an argument.
    pub fn arg<T: ToArg>(&mut self, a: T) -> &mut Cmd {
        a.write_arg(&mut self.args);
        self.argc += 1;
        self
    }

    /// Sends this command where `route` says instead of by its key.
    pub fn route(&mut self, route: Route) -> &mut Cmd {
        self.route = Some(route);
        self
    }

    /// Arguments so far, the name included.
    pub fn arg_count(&self) -> usize {
        self.argc
    }

    /// The command as RESP: `*N\r\n` then the arguments.
    pub fn to_resp(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.args.len() + 8);
        self.write_resp(&mut out);
        out
    }

    pub(crate) fn write_resp(&self, out: &mut Vec<u8>) {
        write_array_header(out, self.argc);
        out.extend_from_slice(&self.args);
    }

    /// Runs the command on `client` and converts the reply.
    pub fn query<T: FromValue>(&self, client: &mut Client) -> Result<T, Error> {
        client.query(self)
    }

    /// Runs the command on `client`; the reply borrows the client until its next call.
    pub fn exec<'c>(&self, client: &'c mut Client) -> Result<Value<'c>, Error> {
        client.command(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_resp() {
        assert_eq!(
            cmd("SET").arg("k").arg(b"v\r\n").to_resp(),
            b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\nv\r\n\r\n"
        );
        assert_eq!(
            cmd("X")
                .arg(0u32)
                .arg(-7i64)
                .arg(1.5f64)
                .arg(12345678901usize)
                .to_resp(),
            b"*5\r\n$1\r\nX\r\n$1\r\n0\r\n$2\r\n-7\r\n$3\r\n1.5\r\n$11\r\n12345678901\r\n"
        );
        assert_eq!(
            cmd("GET").arg(String::from("")).to_resp(),
            b"*2\r\n$3\r\nGET\r\n$0\r\n\r\n"
        );
        let big = vec![7u8; 1000];
        let r = cmd("SET").arg("k").arg(&big).to_resp();
        assert!(r.starts_with(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1000\r\n"));
        assert_eq!(r.len(), 4 + 9 + 7 + 7 + 1000 + 2);
        assert_eq!(Cmd::new().arg_count(), 0);
        assert_eq!(cmd("PING").arg_count(), 1);
    }
}
