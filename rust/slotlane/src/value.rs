//! [`Value`]: a reply, every RESP2/RESP3 type; decoding of the core's reply records;
//! [`FromValue`] conversions to Rust types.
use crate::Error;
use slotlane_sys as sys;
use std::borrow::Cow;

/// A reply. Data borrows the client's reply memory (`Value<'c>` from a
/// [`Pipeline::exec`](crate::Pipeline::exec) lives until the client's next call);
/// [`Value::into_owned`] makes a `Value<'static>` that owns its bytes.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    /// RESP2 null bulk string or array, RESP3 null.
    Nil,
    /// A bulk string.
    Bulk(Cow<'a, [u8]>),
    /// A simple string (`+OK`).
    Status(Cow<'a, [u8]>),
    /// An integer.
    Int(i64),
    /// A RESP3 double.
    Double(f64),
    /// A RESP3 boolean.
    Bool(bool),
    /// A RESP3 big number: its decimal digits (with a sign when negative).
    BigNumber(Cow<'a, [u8]>),
    /// A RESP3 verbatim string: its 3-byte format (`txt`, `mkd`) and its text.
    Verbatim {
        /// The format, e.g. `*b"txt"`.
        format: [u8; 3],
        /// The text without the `fmt:` prefix.
        text: Cow<'a, [u8]>,
    },
    /// An array.
    Array(Vec<Value<'a>>),
    /// A RESP3 map, its pairs in the server's order.
    Map(Vec<(Value<'a>, Value<'a>)>),
    /// A RESP3 set, its elements in the server's order.
    Set(Vec<Value<'a>>),
    /// A RESP3 push that answered a command.
    Push(Vec<Value<'a>>),
    /// An error nested in an aggregate (an `EXEC` reply, a per-node reply). A top-level
    /// error reply is an `Err`, never this.
    Error(Box<Error>),
}

impl Value<'_> {
    /// The same value with every byte owned: it outlives the client's reply memory.
    pub fn into_owned(self) -> Value<'static> {
        fn own(c: Cow<'_, [u8]>) -> Cow<'static, [u8]> {
            Cow::Owned(c.into_owned())
        }
        fn all(v: Vec<Value<'_>>) -> Vec<Value<'static>> {
            v.into_iter().map(Value::into_owned).collect()
        }
        match self {
            Value::Nil => Value::Nil,
            Value::Bulk(b) => Value::Bulk(own(b)),
            Value::Status(b) => Value::Status(own(b)),
            Value::Int(i) => Value::Int(i),
            Value::Double(d) => Value::Double(d),
            Value::Bool(b) => Value::Bool(b),
            Value::BigNumber(b) => Value::BigNumber(own(b)),
            Value::Verbatim { format, text } => Value::Verbatim {
                format,
                text: own(text),
            },
            Value::Array(v) => Value::Array(all(v)),
            Value::Map(v) => Value::Map(
                v.into_iter()
                    .map(|(k, v)| (k.into_owned(), v.into_owned()))
                    .collect(),
            ),
            Value::Set(v) => Value::Set(all(v)),
            Value::Push(v) => Value::Push(all(v)),
            Value::Error(e) => Value::Error(e),
        }
    }

    /// The bytes of a bulk string, status, big number or verbatim string.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Value::Bulk(b)
            | Value::Status(b)
            | Value::BigNumber(b)
            | Value::Verbatim { text: b, .. } => Some(b),
            _ => None,
        }
    }

    /// [`as_bytes`](Self::as_bytes) as UTF-8 text.
    pub fn as_str(&self) -> Option<&str> {
        self.as_bytes().and_then(|b| std::str::from_utf8(b).ok())
    }

    /// The integer of an `Int`.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// Whether this is `Nil`.
    pub fn is_nil(&self) -> bool {
        matches!(self, Value::Nil)
    }

    /// The children of an array, set or push.
    pub fn as_slice(&self) -> Option<&[Value<'_>]> {
        match self {
            Value::Array(v) | Value::Set(v) | Value::Push(v) => Some(v),
            _ => None,
        }
    }

    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Value::Nil => "nil",
            Value::Bulk(_) => "bulk string",
            Value::Status(_) => "status",
            Value::Int(_) => "integer",
            Value::Double(_) => "double",
            Value::Bool(_) => "bool",
            Value::BigNumber(_) => "big number",
            Value::Verbatim { .. } => "verbatim string",
            Value::Array(_) => "array",
            Value::Map(_) => "map",
            Value::Set(_) => "set",
            Value::Push(_) => "push",
            Value::Error(_) => "error",
        }
    }
}

// ------------------------------------------------------------------ decoding

fn bytes<'a>(r: &sys::sl_reply, data: &'a [u8]) -> Result<&'a [u8], Error> {
    let start = r.offset as usize;
    data.get(start..start.wrapping_add(r.len as usize))
        .filter(|_| (r.offset as usize as u64) == r.offset)
        .ok_or_else(|| {
            Error::Protocol(format!(
                "reply record out of range: offset {} len {}",
                r.offset, r.len
            ))
        })
}

/// Decodes the reply at `recs[*i]` (and its children), advancing `*i` past it.
/// An error record is `Err` at the top level; nested, it is `Value::Error`.
pub(crate) fn decode<'a>(
    recs: &[sys::sl_reply],
    data: &'a [u8],
    i: &mut usize,
) -> Result<Value<'a>, Error> {
    let Some(r) = recs.get(*i) else {
        return Err(Error::Protocol("reply records end early".into()));
    };
    *i += 1;
    let v = match r.type_ as i32 {
        sys::SL_REPLY_STRING => Value::Bulk(Cow::Borrowed(bytes(r, data)?)),
        sys::SL_REPLY_STATUS => Value::Status(Cow::Borrowed(bytes(r, data)?)),
        // SAFETY (the union reads below): the record's type says which member is set;
        // both are 8 plain bytes, any bit pattern is valid.
        sys::SL_REPLY_INTEGER => Value::Int(unsafe { r.value.integer }),
        sys::SL_REPLY_NIL => Value::Nil,
        sys::SL_REPLY_DOUBLE => Value::Double(unsafe { r.value.dbl }),
        sys::SL_REPLY_BOOL => Value::Bool(unsafe { r.value.integer } != 0),
        sys::SL_REPLY_BIGNUM => Value::BigNumber(Cow::Borrowed(bytes(r, data)?)),
        sys::SL_REPLY_VERB => {
            let f = unsafe { r.value.integer }.to_le_bytes();
            Value::Verbatim {
                format: [f[0], f[1], f[2]],
                text: Cow::Borrowed(bytes(r, data)?),
            }
        }
        sys::SL_REPLY_ERROR => return Err(Error::from_record(r.flags, bytes(r, data)?)),
        t @ (sys::SL_REPLY_ARRAY | sys::SL_REPLY_SET | sys::SL_REPLY_PUSH | sys::SL_REPLY_MAP) => {
            let n = r.len as usize;
            if n > recs.len() - *i {
                return Err(Error::Protocol(format!(
                    "aggregate of {n} with {} records left",
                    recs.len() - *i
                )));
            }
            if t == sys::SL_REPLY_MAP {
                let mut pairs = Vec::with_capacity(n / 2);
                for _ in 0..n / 2 {
                    let k = nested(recs, data, i)?;
                    let v = nested(recs, data, i)?;
                    pairs.push((k, v));
                }
                if n % 2 == 1 {
                    nested(recs, data, i)?;
                }
                Value::Map(pairs)
            } else {
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(nested(recs, data, i)?);
                }
                match t {
                    sys::SL_REPLY_ARRAY => Value::Array(items),
                    sys::SL_REPLY_SET => Value::Set(items),
                    _ => Value::Push(items),
                }
            }
        }
        other => {
            return Err(Error::Protocol(format!(
                "unknown reply record type {other}"
            )))
        }
    };
    Ok(v)
}

fn nested<'a>(recs: &[sys::sl_reply], data: &'a [u8], i: &mut usize) -> Result<Value<'a>, Error> {
    let is_error = recs
        .get(*i)
        .is_some_and(|r| r.type_ as i32 == sys::SL_REPLY_ERROR);
    match decode(recs, data, i) {
        Ok(v) => Ok(v),
        Err(e) if is_error => Ok(Value::Error(Box::new(e))),
        Err(e) => Err(e),
    }
}

// ------------------------------------------------------------- conversions

/// Conversion of a reply to a Rust type, for [`Client::query`](crate::Client::query)
/// and the typed methods. A conversion that does not fit is
/// [`Error::UnexpectedReply`].
pub trait FromValue: Sized {
    /// Converts `v`, or fails with [`Error::UnexpectedReply`] (an error nested in `v`:
    /// that error).
    fn from_value(v: Value<'_>) -> Result<Self, Error>;
}

fn unexpected<T>(v: &Value<'_>, want: &str) -> Result<T, Error> {
    Err(Error::UnexpectedReply(format!(
        "expected {want}, got {}: {v:?}",
        v.type_name()
    )))
}

impl FromValue for Value<'static> {
    fn from_value(v: Value<'_>) -> Result<Self, Error> {
        Ok(v.into_owned())
    }
}

impl FromValue for () {
    fn from_value(v: Value<'_>) -> Result<Self, Error> {
        match v {
            Value::Error(e) => Err(*e),
            _ => Ok(()),
        }
    }
}

impl FromValue for Vec<u8> {
    fn from_value(v: Value<'_>) -> Result<Self, Error> {
        match v {
            Value::Bulk(b)
            | Value::Status(b)
            | Value::BigNumber(b)
            | Value::Verbatim { text: b, .. } => Ok(b.into_owned()),
            Value::Int(i) => Ok(i.to_string().into_bytes()),
            other => unexpected(&other, "a string"),
        }
    }
}

impl FromValue for String {
    fn from_value(v: Value<'_>) -> Result<Self, Error> {
        let b = Vec::<u8>::from_value(v)?;
        String::from_utf8(b).map_err(|e| Error::UnexpectedReply(format!("not UTF-8: {e}")))
    }
}

impl FromValue for i64 {
    fn from_value(v: Value<'_>) -> Result<Self, Error> {
        match &v {
            Value::Int(i) => Ok(*i),
            Value::Bool(b) => Ok(*b as i64),
            Value::Bulk(b) | Value::Status(b) | Value::BigNumber(b) => {
                match std::str::from_utf8(b).ok().and_then(|s| s.parse().ok()) {
                    Some(i) => Ok(i),
                    None => unexpected(&v, "an integer"),
                }
            }
            _ => unexpected(&v, "an integer"),
        }
    }
}

impl FromValue for bool {
    fn from_value(v: Value<'_>) -> Result<Self, Error> {
        match &v {
            Value::Bool(b) => Ok(*b),
            Value::Int(0) => Ok(false),
            Value::Int(1) => Ok(true),
            Value::Status(s) if &s[..] == b"OK" => Ok(true),
            _ => unexpected(&v, "a boolean (0/1)"),
        }
    }
}

impl FromValue for f64 {
    fn from_value(v: Value<'_>) -> Result<Self, Error> {
        match &v {
            Value::Double(d) => Ok(*d),
            Value::Int(i) => Ok(*i as f64),
            Value::Bulk(b) | Value::Status(b) => {
                match std::str::from_utf8(b).ok().and_then(|s| s.parse().ok()) {
                    Some(d) => Ok(d),
                    None => unexpected(&v, "a double"),
                }
            }
            _ => unexpected(&v, "a double"),
        }
    }
}

impl<T: FromValue> FromValue for Option<T> {
    fn from_value(v: Value<'_>) -> Result<Self, Error> {
        match v {
            Value::Nil => Ok(None),
            v => T::from_value(v).map(Some),
        }
    }
}

impl<T: FromValue> FromValue for Vec<T> {
    fn from_value(v: Value<'_>) -> Result<Self, Error> {
        match v {
            Value::Array(items) | Value::Set(items) | Value::Push(items) => items
                .into_iter()
                .map(|v| match v {
                    Value::Error(e) => Err(*e),
                    v => T::from_value(v),
                })
                .collect(),
            Value::Nil => Ok(Vec::new()),
            other => unexpected(&other, "an array"),
        }
    }
}

impl<K: FromValue, V: FromValue> FromValue for Vec<(K, V)> {
    fn from_value(v: Value<'_>) -> Result<Self, Error> {
        match v {
            Value::Map(pairs) => pairs
                .into_iter()
                .map(|(k, v)| Ok((K::from_value(k)?, V::from_value(v)?)))
                .collect(),
            // RESP2 maps (HGETALL, CONFIG GET): a flat array of key, value.
            Value::Array(items) if items.len() % 2 == 0 => {
                let mut out = Vec::with_capacity(items.len() / 2);
                let mut it = items.into_iter();
                while let (Some(k), Some(v)) = (it.next(), it.next()) {
                    out.push((K::from_value(k)?, V::from_value(v)?));
                }
                Ok(out)
            }
            other => unexpected(&other, "a map"),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn rec(t: i32, flags: u8, len: u32, int: i64, offset: u64) -> sys::sl_reply {
        sys::sl_reply {
            type_: t as u8,
            flags,
            reserved: 0,
            len,
            value: sys::sl_reply_value { integer: int },
            offset,
        }
    }

    fn all<'a>(recs: &[sys::sl_reply], data: &'a [u8]) -> Vec<Result<Value<'a>, Error>> {
        let mut i = 0;
        let mut out = Vec::new();
        while i < recs.len() {
            out.push(decode(recs, data, &mut i));
        }
        out
    }

    #[test]
    fn decodes_every_type() {
        let data = b"OKhello2.25123456789012345678901234567890some textERR nested";
        let dbl = sys::sl_reply {
            type_: sys::SL_REPLY_DOUBLE as u8,
            flags: 0,
            reserved: 0,
            len: 4,
            value: sys::sl_reply_value { dbl: 2.25 },
            offset: 7,
        };
        let recs = vec![
            rec(sys::SL_REPLY_STATUS, 0, 2, 0, 0),
            rec(sys::SL_REPLY_STRING, 0, 5, 0, 2),
            rec(sys::SL_REPLY_INTEGER, 0, 0, -42, 0),
            rec(sys::SL_REPLY_NIL, 0, 0, 0, 0),
            dbl,
            rec(sys::SL_REPLY_BOOL, 0, 0, 1, 0),
            rec(sys::SL_REPLY_BIGNUM, 0, 30, 0, 11),
            rec(
                sys::SL_REPLY_VERB,
                0,
                9,
                i64::from_le_bytes(*b"txt\0\0\0\0\0"),
                41,
            ),
            // map { "hello": [1, nil], "OK": set{ error } }
            rec(sys::SL_REPLY_MAP, 0, 4, 0, 0),
            rec(sys::SL_REPLY_STRING, 0, 5, 0, 2),
            rec(sys::SL_REPLY_ARRAY, 0, 2, 0, 0),
            rec(sys::SL_REPLY_INTEGER, 0, 0, 1, 0),
            rec(sys::SL_REPLY_NIL, 0, 0, 0, 0),
            rec(sys::SL_REPLY_STATUS, 0, 2, 0, 0),
            rec(sys::SL_REPLY_SET, 0, 1, 0, 0),
            rec(sys::SL_REPLY_ERROR, sys::SL_ERR_SERVER as u8, 10, 0, 50),
            rec(sys::SL_REPLY_PUSH, 0, 1, 0, 0),
            rec(sys::SL_REPLY_INTEGER, 0, 0, 7, 0),
            rec(sys::SL_REPLY_ERROR, sys::SL_ERR_IO as u8, 10, 0, 50),
        ];
        let got = all(&recs, data);
        let b = |s: &'static [u8]| Cow::Borrowed(s);
        assert_eq!(got[0], Ok(Value::Status(b(b"OK"))));
        assert_eq!(got[1], Ok(Value::Bulk(b(b"hello"))));
        assert!(
            matches!(&got[1], Ok(Value::Bulk(Cow::Borrowed(_)))),
            "data is borrowed, not copied"
        );
        assert_eq!(got[2], Ok(Value::Int(-42)));
        assert_eq!(got[3], Ok(Value::Nil));
        assert_eq!(got[4], Ok(Value::Double(2.25)));
        assert_eq!(got[5], Ok(Value::Bool(true)));
        assert_eq!(
            got[6],
            Ok(Value::BigNumber(b(b"123456789012345678901234567890")))
        );
        assert_eq!(
            got[7],
            Ok(Value::Verbatim {
                format: *b"txt",
                text: b(b"some text")
            })
        );
        let nested_err = Error::Response {
            kind: "ERR".into(),
            message: "ERR nested".into(),
        };
        assert_eq!(
            got[8],
            Ok(Value::Map(vec![
                (
                    Value::Bulk(b(b"hello")),
                    Value::Array(vec![Value::Int(1), Value::Nil])
                ),
                (
                    Value::Status(b(b"OK")),
                    Value::Set(vec![Value::Error(Box::new(nested_err))])
                ),
            ]))
        );
        assert_eq!(got[9], Ok(Value::Push(vec![Value::Int(7)])));
        assert_eq!(got[10], Err(Error::Io("ERR nested".into())));
        assert_eq!(got.len(), 11);
        let owned: Value<'static> = got[8].clone().unwrap().into_owned();
        assert_eq!(owned, got[8].clone().unwrap());
    }

    #[test]
    fn bad_records_are_protocol_errors_not_panics() {
        let data = b"abc";
        assert!(matches!(
            all(&[rec(sys::SL_REPLY_STRING, 0, 10, 0, 0)], data)[0],
            Err(Error::Protocol(_))
        ));
        assert!(matches!(
            all(&[rec(sys::SL_REPLY_STRING, 0, 1, 0, u64::MAX)], data)[0],
            Err(Error::Protocol(_))
        ));
        assert!(matches!(
            all(&[rec(sys::SL_REPLY_ARRAY, 0, 5, 0, 0)], data)[0],
            Err(Error::Protocol(_))
        ));
        assert!(matches!(
            all(&[rec(99, 0, 0, 0, 0)], data)[0],
            Err(Error::Protocol(_))
        ));
    }

    #[test]
    fn conversions() {
        let b = |s: &'static [u8]| Value::Bulk(Cow::Borrowed(s));
        assert_eq!(i64::from_value(Value::Int(5)), Ok(5));
        assert_eq!(i64::from_value(b(b"-12")), Ok(-12));
        assert!(matches!(
            i64::from_value(b(b"x")),
            Err(Error::UnexpectedReply(_))
        ));
        assert_eq!(String::from_value(b(b"hi")), Ok("hi".to_string()));
        assert_eq!(Option::<String>::from_value(Value::Nil), Ok(None));
        assert_eq!(
            Vec::<Option<Vec<u8>>>::from_value(Value::Array(vec![b(b"a"), Value::Nil])),
            Ok(vec![Some(b"a".to_vec()), None])
        );
        assert_eq!(
            Vec::<(String, i64)>::from_value(Value::Array(vec![b(b"f"), b(b"1")])),
            Ok(vec![("f".to_string(), 1)])
        );
        assert_eq!(bool::from_value(Value::Int(1)), Ok(true));
        assert_eq!(f64::from_value(b(b"1.5")), Ok(1.5));
        let e = Error::Io("x".into());
        assert_eq!(
            Vec::<i64>::from_value(Value::Array(vec![Value::Error(Box::new(e.clone()))])),
            Err(e)
        );
        assert!(matches!(
            String::from_value(Value::Array(vec![])),
            Err(Error::UnexpectedReply(_))
        ));
    }
}
