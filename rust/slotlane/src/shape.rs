//! The spec's reply types as Rust values (bindings/spec/README.md, "Reply types and the one
//! normalisation of RESP2 and RESP3"): one marker type per type of the grammar, whose
//! [`Shape::shape`] turns a decoded [`Value`] into the type's Rust value. The generated
//! methods (`commands.rs`) name their reply type's marker; nothing here knows a command.
use crate::{Error, Value};
use std::collections::HashMap;
use std::hash::Hash;
use std::marker::PhantomData;

/// A reply type of the spec: `Out` is its Rust value.
pub trait Shape {
    /// The Rust value of the type.
    type Out;
    /// The value of a decoded reply, or [`Error::UnexpectedReply`].
    fn shape(v: Value<'_>) -> Result<Self::Out, Error>;
}

fn unexpected<T>(v: &Value<'_>, want: &str) -> Result<T, Error> {
    Err(Error::UnexpectedReply(format!(
        "expected {want}, got {}: {v:?}",
        v.type_name()
    )))
}

fn nested(v: Value<'_>) -> Result<Value<'_>, Error> {
    match v {
        Value::Error(e) => Err(*e),
        v => Ok(v),
    }
}

macro_rules! marker {
    ($($(#[$doc:meta])* $name:ident),*) => {$(
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name;
    )*};
}
marker!(
    /// `ok`: `+OK` -> true.
    Ok_,
    /// `ok?`: `+OK` -> true, nil -> false (SET NX/XX not done).
    OkNil,
    /// `status`: a simple string as text.
    Status,
    /// `string`: a bulk (or verbatim) string's bytes.
    Str,
    /// `int`: an integer.
    Int,
    /// `bool`: an integer 0/1 or a RESP3 boolean.
    Bool,
    /// `double`: a RESP3 double, a bulk string of a number (`inf` too) or an integer.
    Double,
    /// `cursor`: a bulk string of digits, as a number.
    Cursor,
    /// `any`: the decoded value as it is.
    Any
);

impl Shape for Ok_ {
    type Out = bool;
    fn shape(v: Value<'_>) -> Result<bool, Error> {
        match &v {
            Value::Status(s) | Value::Bulk(s) if &s[..] == b"OK" => Ok(true),
            _ => unexpected(&v, "OK"),
        }
    }
}

impl Shape for OkNil {
    type Out = bool;
    fn shape(v: Value<'_>) -> Result<bool, Error> {
        match v {
            Value::Nil => Ok(false),
            v => Ok_::shape(v),
        }
    }
}

impl Shape for Status {
    type Out = String;
    fn shape(v: Value<'_>) -> Result<String, Error> {
        match &v {
            Value::Status(s) | Value::Bulk(s) => Ok(String::from_utf8_lossy(s).into_owned()),
            _ => unexpected(&v, "a status"),
        }
    }
}

impl Shape for Str {
    type Out = Vec<u8>;
    fn shape(v: Value<'_>) -> Result<Vec<u8>, Error> {
        match v {
            Value::Bulk(b) | Value::Status(b) | Value::Verbatim { text: b, .. } => {
                Ok(b.into_owned())
            }
            other => unexpected(&other, "a string"),
        }
    }
}

impl Shape for Int {
    type Out = i64;
    fn shape(v: Value<'_>) -> Result<i64, Error> {
        match v {
            Value::Int(i) => Ok(i),
            other => unexpected(&other, "an integer"),
        }
    }
}

impl Shape for Bool {
    type Out = bool;
    fn shape(v: Value<'_>) -> Result<bool, Error> {
        match v {
            Value::Int(0) => Ok(false),
            Value::Int(1) => Ok(true),
            Value::Bool(b) => Ok(b),
            other => unexpected(&other, "a boolean (0/1)"),
        }
    }
}

impl Shape for Double {
    type Out = f64;
    fn shape(v: Value<'_>) -> Result<f64, Error> {
        match &v {
            Value::Double(d) => Ok(*d),
            Value::Int(i) => Ok(*i as f64),
            Value::Bulk(b) => match std::str::from_utf8(b)
                .ok()
                .and_then(|s| s.parse::<f64>().ok())
            {
                Some(d) => Ok(d),
                None => unexpected(&v, "a double"),
            },
            _ => unexpected(&v, "a double"),
        }
    }
}

impl Shape for Cursor {
    type Out = u64;
    fn shape(v: Value<'_>) -> Result<u64, Error> {
        match &v {
            Value::Bulk(b) => match std::str::from_utf8(b)
                .ok()
                .and_then(|s| s.parse::<u64>().ok())
            {
                Some(n) => Ok(n),
                None => unexpected(&v, "a cursor"),
            },
            _ => unexpected(&v, "a cursor"),
        }
    }
}

impl Shape for Any {
    type Out = Value<'static>;
    fn shape(v: Value<'_>) -> Result<Value<'static>, Error> {
        Ok(v.into_owned())
    }
}

/// `T?`: nil -> `None`.
#[derive(Debug)]
pub struct Opt<S>(PhantomData<S>);
impl<S: Shape> Shape for Opt<S> {
    type Out = Option<S::Out>;
    fn shape(v: Value<'_>) -> Result<Option<S::Out>, Error> {
        match v {
            Value::Nil => Ok(None),
            v => S::shape(v).map(Some),
        }
    }
}

/// `array<T>` and `set<T>`: a `Vec` (a RESP3 set's elements in the server's order).
#[derive(Debug)]
pub struct Arr<S>(PhantomData<S>);
impl<S: Shape> Shape for Arr<S> {
    type Out = Vec<S::Out>;
    fn shape(v: Value<'_>) -> Result<Vec<S::Out>, Error> {
        match v {
            Value::Array(items) | Value::Set(items) | Value::Push(items) => items
                .into_iter()
                .map(|x| nested(x).and_then(S::shape))
                .collect(),
            other => unexpected(&other, "an array"),
        }
    }
}

/// A map or pairs reply in any layout: a RESP3 map, a RESP2 flat array k, v, k, v, or an
/// array of [k, v] arrays (told apart by the first element).
fn entries(v: Value<'_>) -> Result<Vec<(Value<'_>, Value<'_>)>, Error> {
    match v {
        Value::Map(pairs) => Ok(pairs),
        Value::Array(items) => {
            if matches!(items.first(), Some(Value::Array(_))) {
                items
                    .into_iter()
                    .map(|p| match p {
                        Value::Array(mut kv) if kv.len() == 2 => {
                            let v = kv.pop().unwrap_or(Value::Nil);
                            let k = kv.pop().unwrap_or(Value::Nil);
                            Ok((k, v))
                        }
                        other => unexpected(&other, "a [key, value] pair"),
                    })
                    .collect()
            } else if items.len() % 2 == 0 {
                let mut out = Vec::with_capacity(items.len() / 2);
                let mut it = items.into_iter();
                while let (Some(k), Some(v)) = (it.next(), it.next()) {
                    out.push((k, v));
                }
                Ok(out)
            } else {
                Err(Error::UnexpectedReply(
                    "an odd number of elements for a map".into(),
                ))
            }
        }
        other => unexpected(&other, "a map"),
    }
}

/// `map<K,V>`: a `HashMap`.
#[derive(Debug)]
pub struct MapOf<K, V>(PhantomData<(K, V)>);
impl<K: Shape, V: Shape> Shape for MapOf<K, V>
where
    K::Out: Eq + Hash,
{
    type Out = HashMap<K::Out, V::Out>;
    fn shape(v: Value<'_>) -> Result<Self::Out, Error> {
        entries(v)?
            .into_iter()
            .map(|(k, v)| Ok((K::shape(nested(k)?)?, V::shape(nested(v)?)?)))
            .collect()
    }
}

/// `pairs<K,V>`: the pairs in order (ZRANGE WITHSCORES: member and score).
#[derive(Debug)]
pub struct PairsOf<K, V>(PhantomData<(K, V)>);
impl<K: Shape, V: Shape> Shape for PairsOf<K, V> {
    type Out = Vec<(K::Out, V::Out)>;
    fn shape(v: Value<'_>) -> Result<Self::Out, Error> {
        entries(v)?
            .into_iter()
            .map(|(k, v)| Ok((K::shape(nested(k)?)?, V::shape(nested(v)?)?)))
            .collect()
    }
}

/// `tuple<A,B>`: a pair of values (SCAN: the cursor and the keys).
#[derive(Debug)]
pub struct Tup2<A, B>(PhantomData<(A, B)>);
impl<A: Shape, B: Shape> Shape for Tup2<A, B> {
    type Out = (A::Out, B::Out);
    fn shape(v: Value<'_>) -> Result<Self::Out, Error> {
        match v {
            Value::Array(mut items) if items.len() == 2 => {
                let b = items.pop().unwrap_or(Value::Nil);
                let a = items.pop().unwrap_or(Value::Nil);
                Ok((A::shape(nested(a)?)?, B::shape(nested(b)?)?))
            }
            other => unexpected(&other, "a 2-tuple"),
        }
    }
}

/// A typed pipeline command: [`Slot::get`] reads and shapes its reply from the results of
/// the pipeline's `exec`.
#[derive(Debug, Clone)]
pub struct Slot<T> {
    index: usize,
    shape: fn(Value<'_>) -> Result<T, Error>,
    refused: Option<Error>,
}

fn never<T>(_: Value<'_>) -> Result<T, Error> {
    Err(Error::InvalidArgument("the command was refused".into()))
}

impl<T> Slot<T> {
    pub(crate) fn new<S: Shape<Out = T>>(index: usize) -> Slot<T> {
        Slot {
            index,
            shape: S::shape,
            refused: None,
        }
    }

    /// A command refused while queueing (an empty required list): nothing was queued, and
    /// `get` returns its error.
    pub(crate) fn refused(e: Error) -> Slot<T> {
        Slot {
            index: usize::MAX,
            shape: never::<T>,
            refused: Some(e),
        }
    }

    /// The command's position in the pipeline.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The command's reply, shaped by its type; its error when it failed.
    pub fn get(&self, results: &[Result<Value<'_>, Error>]) -> Result<T, Error> {
        if let Some(e) = &self.refused {
            return Err(e.clone());
        }
        match results.get(self.index) {
            Some(Ok(v)) => (self.shape)(v.clone()),
            Some(Err(e)) => Err(e.clone()),
            None => Err(Error::InvalidArgument(format!(
                "no result {} (the pipeline ran {} commands)",
                self.index,
                results.len()
            ))),
        }
    }
}
