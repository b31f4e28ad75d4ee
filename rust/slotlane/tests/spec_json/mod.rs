//! The spec conformance runner's helpers: a small JSON reader (as tests/conformance.rs
//! has), call arguments from JSON, typed results as a comparable tree.
#![allow(dead_code, clippy::all)]
use slotlane::{Error, Slot, Value};

// ------------------------------------------------------------ a small JSON reader
#[derive(Debug, Clone, PartialEq)]
pub enum J {
    Null,
    Bool(bool),
    Num(String),
    Str(Vec<u8>),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

impl J {
    pub fn get(&self, k: &str) -> Option<&J> {
        match self {
            J::Obj(m) => m.iter().find(|(key, _)| key == k).map(|(_, v)| v),
            _ => None,
        }
    }
    pub fn str(&self, k: &str) -> Option<String> {
        match self.get(k) {
            Some(J::Str(s)) => Some(String::from_utf8_lossy(s).into_owned()),
            _ => None,
        }
    }
    pub fn arr(&self) -> &[J] {
        match self {
            J::Arr(a) => a,
            _ => &[],
        }
    }
}

struct P<'a> {
    s: &'a [u8],
    i: usize,
}

impl P<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && b" \t\r\n".contains(&self.s[self.i]) {
            self.i += 1;
        }
    }
    fn eat(&mut self, c: u8) {
        self.ws();
        assert_eq!(
            self.s.get(self.i),
            Some(&c),
            "JSON: expected '{}' at byte {}",
            c as char,
            self.i
        );
        self.i += 1;
    }
    fn value(&mut self) -> J {
        self.ws();
        match self.s[self.i] {
            b'{' => {
                self.i += 1;
                let mut m = Vec::new();
                self.ws();
                if self.s[self.i] == b'}' {
                    self.i += 1;
                    return J::Obj(m);
                }
                loop {
                    self.ws();
                    let J::Str(k) = self.value() else {
                        panic!("JSON: object key")
                    };
                    self.eat(b':');
                    let v = self.value();
                    m.push((String::from_utf8(k).unwrap(), v));
                    self.ws();
                    self.i += 1;
                    if self.s[self.i - 1] == b'}' {
                        return J::Obj(m);
                    }
                }
            }
            b'[' => {
                self.i += 1;
                let mut a = Vec::new();
                self.ws();
                if self.s[self.i] == b']' {
                    self.i += 1;
                    return J::Arr(a);
                }
                loop {
                    a.push(self.value());
                    self.ws();
                    self.i += 1;
                    if self.s[self.i - 1] == b']' {
                        return J::Arr(a);
                    }
                }
            }
            b'"' => {
                self.i += 1;
                let mut out = Vec::new();
                loop {
                    let c = self.s[self.i];
                    self.i += 1;
                    match c {
                        b'"' => return J::Str(out),
                        b'\\' => {
                            let e = self.s[self.i];
                            self.i += 1;
                            match e {
                                b'n' => out.push(b'\n'),
                                b'r' => out.push(b'\r'),
                                b't' => out.push(b'\t'),
                                b'b' => out.push(8),
                                b'f' => out.push(12),
                                b'u' => {
                                    let mut cp = self.hex4();
                                    if (0xD800..0xDC00).contains(&cp) {
                                        self.i += 2; // \u
                                        let lo = self.hex4();
                                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                                    }
                                    let ch = char::from_u32(cp).expect("JSON: bad \\u escape");
                                    out.extend_from_slice(ch.to_string().as_bytes());
                                }
                                other => out.push(other),
                            }
                        }
                        c => out.push(c),
                    }
                }
            }
            b't' => {
                self.i += 4;
                J::Bool(true)
            }
            b'f' => {
                self.i += 5;
                J::Bool(false)
            }
            b'n' => {
                self.i += 4;
                J::Null
            }
            _ => {
                let st = self.i;
                while self.i < self.s.len()
                    && (self.s[self.i] == b'-'
                        || self.s[self.i] == b'+'
                        || self.s[self.i] == b'.'
                        || self.s[self.i].is_ascii_alphanumeric())
                {
                    self.i += 1;
                }
                J::Num(String::from_utf8(self.s[st..self.i].to_vec()).unwrap())
            }
        }
    }
    fn hex4(&mut self) -> u32 {
        let h = std::str::from_utf8(&self.s[self.i..self.i + 4]).unwrap();
        self.i += 4;
        u32::from_str_radix(h, 16).unwrap()
    }
}

pub fn parse(s: &[u8]) -> J {
    let mut p = P { s, i: 0 };
    p.value()
}

pub fn unhex(h: &str) -> Vec<u8> {
    (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
        .collect()
}

// ------------------------------------------------------------ call arguments from JSON

fn arg<'a>(a: &'a J, k: &str) -> &'a J {
    a.get(k).unwrap_or_else(|| panic!("no argument {k}"))
}

fn jbytes(v: &J) -> Vec<u8> {
    match v {
        J::Str(s) => s.clone(),
        J::Num(n) => n.as_bytes().to_vec(),
        J::Obj(_) => unhex(&v.str("hex").expect("hex")),
        other => panic!("not a value: {other:?}"),
    }
}

fn jint(v: &J) -> i64 {
    match v {
        J::Num(n) => n.parse().unwrap_or_else(|_| panic!("not an integer: {n}")),
        other => panic!("not an integer: {other:?}"),
    }
}

fn jf64(v: &J) -> f64 {
    match v {
        J::Num(n) => n.parse().unwrap_or_else(|_| panic!("not a number: {n}")),
        other => panic!("not a number: {other:?}"),
    }
}

pub fn b(a: &J, k: &str) -> Vec<u8> {
    jbytes(arg(a, k))
}
pub fn n(a: &J, k: &str) -> i64 {
    jint(arg(a, k))
}
pub fn f(a: &J, k: &str) -> f64 {
    jf64(arg(a, k))
}
pub fn fl(a: &J, k: &str) -> bool {
    matches!(a.get(k), Some(J::Bool(true)))
}
pub fn ob(a: &J, k: &str) -> Option<Vec<u8>> {
    a.get(k).map(jbytes)
}
pub fn on(a: &J, k: &str) -> Option<i64> {
    a.get(k).map(jint)
}
pub fn of(a: &J, k: &str) -> Option<f64> {
    a.get(k).map(jf64)
}
pub fn lb(a: &J, k: &str) -> Vec<Vec<u8>> {
    a.get(k)
        .map(|v| v.arr().iter().map(jbytes).collect())
        .unwrap_or_default()
}
pub fn ln(a: &J, k: &str) -> Vec<i64> {
    a.get(k)
        .map(|v| v.arr().iter().map(jint).collect())
        .unwrap_or_default()
}
pub fn lf(a: &J, k: &str) -> Vec<f64> {
    a.get(k)
        .map(|v| v.arr().iter().map(jf64).collect())
        .unwrap_or_default()
}
pub fn tbb(a: &J, k: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    a.get(k)
        .map(|v| {
            v.arr()
                .iter()
                .map(|t| (jbytes(&t.arr()[0]), jbytes(&t.arr()[1])))
                .collect()
        })
        .unwrap_or_default()
}
pub fn tfb(a: &J, k: &str) -> Vec<(f64, Vec<u8>)> {
    a.get(k)
        .map(|v| {
            v.arr()
                .iter()
                .map(|t| (jf64(&t.arr()[0]), jbytes(&t.arr()[1])))
                .collect()
        })
        .unwrap_or_default()
}
pub fn tbn(a: &J, k: &str) -> Vec<(Vec<u8>, i64)> {
    a.get(k)
        .map(|v| {
            v.arr()
                .iter()
                .map(|t| (jbytes(&t.arr()[0]), jint(&t.arr()[1])))
                .collect()
        })
        .unwrap_or_default()
}
pub fn tffb(a: &J, k: &str) -> Vec<(f64, f64, Vec<u8>)> {
    a.get(k)
        .map(|v| {
            v.arr()
                .iter()
                .map(|t| (jf64(&t.arr()[0]), jf64(&t.arr()[1]), jbytes(&t.arr()[2])))
                .collect()
        })
        .unwrap_or_default()
}

// ------------------------------------------------------------ typed results as a tree

#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Nil,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Double(f64),
    Bytes(Vec<u8>),
    Text(String),
    List(Vec<Node>),
    Map(Vec<(Node, Node)>),
    Pair(Box<Node>, Box<Node>),
    Raw(Value<'static>),
}

pub trait ToNode {
    fn node(self) -> Node;
}
impl ToNode for bool {
    fn node(self) -> Node {
        Node::Bool(self)
    }
}
impl ToNode for i64 {
    fn node(self) -> Node {
        Node::Int(self)
    }
}
impl ToNode for u64 {
    fn node(self) -> Node {
        Node::UInt(self)
    }
}
impl ToNode for f64 {
    fn node(self) -> Node {
        Node::Double(self)
    }
}
impl ToNode for String {
    fn node(self) -> Node {
        Node::Text(self)
    }
}
impl ToNode for Vec<u8> {
    fn node(self) -> Node {
        Node::Bytes(self)
    }
}
impl ToNode for Value<'static> {
    fn node(self) -> Node {
        Node::Raw(self)
    }
}
impl<T: ToNode> ToNode for Option<T> {
    fn node(self) -> Node {
        self.map(ToNode::node).unwrap_or(Node::Nil)
    }
}
impl<T: ToNode> ToNode for Vec<T> {
    fn node(self) -> Node {
        Node::List(self.into_iter().map(ToNode::node).collect())
    }
}
impl<A: ToNode, B: ToNode> ToNode for (A, B) {
    fn node(self) -> Node {
        Node::Pair(Box::new(self.0.node()), Box::new(self.1.node()))
    }
}
impl<K: ToNode, V: ToNode> ToNode for std::collections::HashMap<K, V> {
    fn node(self) -> Node {
        Node::Map(
            self.into_iter()
                .map(|(k, v)| (k.node(), v.node()))
                .collect(),
        )
    }
}

pub type Reader = Box<dyn Fn(&[Result<Value<'_>, Error>]) -> Result<Node, Error>>;

pub fn reader<T: ToNode + 'static>(s: Slot<T>) -> Reader {
    Box::new(move |results| s.get(results).map(ToNode::node))
}
