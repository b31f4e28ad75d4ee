//! The spec's conformance cases (bindings/conformance/commands/*.json) through the typed
//! methods: every case's calls are made through the rendered Rust methods (by the
//! generated table of tests/spec_dispatch/) -- once queued on one Pipeline (the case's
//! batch, read through each Slot), once on the Client -- and each value is compared with
//! the recorded reply as the method's reply type shapes it (bindings/spec/README.md).
//! Against standalone Redis and Redis Cluster, RESP2 and RESP3.
mod common;
mod spec_dispatch;
mod spec_json;

use common::*;
use slotlane::{Client, ConnectOptions, Error, Mode, Pipeline, Value};
use spec_json::*;

#[derive(Debug)]
struct T {
    t: String,
    of: Vec<T>,
    null: bool,
}

fn parse_type(s: &str) -> T {
    fn one(b: &[u8], pos: &mut usize) -> T {
        let st = *pos;
        while *pos < b.len() && b[*pos].is_ascii_lowercase() {
            *pos += 1;
        }
        let mut t = T {
            t: String::from_utf8(b[st..*pos].to_vec()).unwrap(),
            of: vec![],
            null: false,
        };
        if *pos < b.len() && b[*pos] == b'<' {
            *pos += 1;
            t.of.push(one(b, pos));
            while b[*pos] == b',' {
                *pos += 1;
                t.of.push(one(b, pos));
            }
            *pos += 1;
        }
        if *pos < b.len() && b[*pos] == b'?' {
            *pos += 1;
            t.null = true;
        }
        t
    }
    one(s.as_bytes(), &mut 0)
}

fn ebytes(e: &J) -> Option<Vec<u8>> {
    match (e.get("value"), e.get("hex")) {
        (Some(J::Str(s)), _) => Some(s.clone()),
        (_, Some(J::Str(h))) => Some(unhex(std::str::from_utf8(h).unwrap())),
        _ => None,
    }
}

fn enum_text(e: &J) -> Option<String> {
    match e.get("value") {
        Some(J::Num(n)) => Some(n.clone()),
        Some(J::Str(s)) => Some(String::from_utf8_lossy(s).into_owned()),
        Some(J::Bool(b)) => Some(b.to_string()),
        _ => None,
    }
}

fn dbl(s: &str) -> f64 {
    match s {
        "inf" | "+inf" => f64::INFINITY,
        "-inf" => f64::NEG_INFINITY,
        other => other.parse().unwrap_or(f64::NAN),
    }
}

fn loose(e: &J) -> bool {
    e.get("value").is_none() && e.get("hex").is_none() && e.get("children").is_none()
}

/// A recorded reply against a raw Value (an `any` reply): the C runner's rules, briefly.
fn raw(e: &J, v: &Value<'_>, at: &str) -> Result<(), String> {
    let bad = || Err(format!("{at}: expected {e:?}, got {v:?}"));
    if loose(e) {
        return Ok(());
    }
    let ty = e.str("type").unwrap_or_default();
    match (ty.as_str(), v) {
        ("string", Value::Bulk(b))
        | ("status", Value::Status(b))
        | ("bignum", Value::BigNumber(b)) => {
            if Some(b.to_vec()) == ebytes(e) {
                Ok(())
            } else {
                bad()
            }
        }
        ("verb", Value::Verbatim { text, .. }) => {
            if Some(text.to_vec()) == ebytes(e) {
                Ok(())
            } else {
                bad()
            }
        }
        ("integer", Value::Int(i)) => {
            if enum_text(e) == Some(i.to_string()) {
                Ok(())
            } else {
                bad()
            }
        }
        ("nil", Value::Nil) => Ok(()),
        ("bool", Value::Bool(b)) => {
            if enum_text(e) == Some(b.to_string()) {
                Ok(())
            } else {
                bad()
            }
        }
        ("double", Value::Double(d)) => {
            let w = dbl(&enum_text(e).unwrap_or_default());
            if *d == w || (d.is_nan() && w.is_nan()) {
                Ok(())
            } else {
                bad()
            }
        }
        ("error", Value::Error(_)) => Ok(()),
        ("array", Value::Array(items))
        | ("set", Value::Set(items))
        | ("push", Value::Push(items)) => {
            let kids = e
                .get("children")
                .map(|c| c.arr().to_vec())
                .unwrap_or_default();
            if kids.len() != items.len() {
                return bad();
            }
            if matches!(e.get("unordered"), Some(J::Bool(true))) || ty == "set" {
                let mut used = vec![false; items.len()];
                for k in &kids {
                    let j = (0..items.len()).find(|&j| !used[j] && raw(k, &items[j], at).is_ok());
                    match j {
                        Some(j) => used[j] = true,
                        None => return bad(),
                    }
                }
                return Ok(());
            }
            for (i, (k, x)) in kids.iter().zip(items).enumerate() {
                raw(k, x, &format!("{at}[{i}]"))?;
            }
            Ok(())
        }
        ("map", Value::Map(pairs)) => {
            let kids = e
                .get("children")
                .map(|c| c.arr().to_vec())
                .unwrap_or_default();
            if kids.len() != 2 * pairs.len() {
                return bad();
            }
            let mut used = vec![false; pairs.len()];
            for kv in kids.chunks(2) {
                let j = (0..pairs.len()).find(|&j| {
                    !used[j]
                        && raw(&kv[0], &pairs[j].0, at).is_ok()
                        && raw(&kv[1], &pairs[j].1, at).is_ok()
                });
                match j {
                    Some(j) => used[j] = true,
                    None => return bad(),
                }
            }
            Ok(())
        }
        _ => bad(),
    }
}

fn flat_pairs(e: &J) -> Vec<J> {
    let kids = e
        .get("children")
        .map(|c| c.arr().to_vec())
        .unwrap_or_default();
    if e.str("type").as_deref() == Some("array")
        && kids.first().and_then(|k| k.str("type")).as_deref() == Some("array")
    {
        kids.iter()
            .flat_map(|k| {
                k.get("children")
                    .map(|c| c.arr().to_vec())
                    .unwrap_or_default()
            })
            .collect()
    } else {
        kids
    }
}

/// A recorded reply against a typed value under the method's reply type.
fn check(t: &T, e: &J, got: &Node, at: &str) -> Result<(), String> {
    let bad = || Err(format!("{at}: expected {e:?} as {}, got {got:?}", t.t));
    let ty = e.str("type").unwrap_or_default();
    if ty == "nil" {
        return match (t.t.as_str(), got) {
            ("ok", Node::Bool(false)) | (_, Node::Nil) => Ok(()),
            ("any", Node::Raw(Value::Nil)) => Ok(()),
            _ => bad(),
        };
    }
    let l = loose(e);
    match (t.t.as_str(), got) {
        ("any", Node::Raw(v)) => raw(e, v, at),
        ("ok", Node::Bool(true)) => Ok(()),
        ("status", Node::Text(s)) => {
            if l || Some(s.as_bytes().to_vec()) == ebytes(e) {
                Ok(())
            } else {
                bad()
            }
        }
        ("string", Node::Bytes(b)) => {
            if l || Some(b.clone()) == ebytes(e) {
                Ok(())
            } else {
                bad()
            }
        }
        ("int", Node::Int(i)) => {
            if l || enum_text(e) == Some(i.to_string()) {
                Ok(())
            } else {
                bad()
            }
        }
        ("bool", Node::Bool(b)) => {
            let w = enum_text(e).unwrap_or_default();
            if l || (w == "true" || w == "1") == *b {
                Ok(())
            } else {
                bad()
            }
        }
        ("double", Node::Double(d)) => {
            let w = dbl(&enum_text(e).unwrap_or_default());
            if l || *d == w || (d.is_nan() && w.is_nan()) {
                Ok(())
            } else {
                bad()
            }
        }
        ("cursor", Node::UInt(u)) => {
            if l || ebytes(e) == Some(u.to_string().into_bytes()) {
                Ok(())
            } else {
                bad()
            }
        }
        ("array", Node::List(items)) | ("set", Node::List(items)) => {
            if l {
                return Ok(());
            }
            let kids = e
                .get("children")
                .map(|c| c.arr().to_vec())
                .unwrap_or_default();
            if kids.len() != items.len() {
                return bad();
            }
            if t.t == "set" || matches!(e.get("unordered"), Some(J::Bool(true))) {
                let mut used = vec![false; items.len()];
                for k in &kids {
                    let j = (0..items.len())
                        .find(|&j| !used[j] && check(&t.of[0], k, &items[j], at).is_ok());
                    match j {
                        Some(j) => used[j] = true,
                        None => return bad(),
                    }
                }
                return Ok(());
            }
            for (i, (k, x)) in kids.iter().zip(items).enumerate() {
                check(&t.of[0], k, x, &format!("{at}[{i}]"))?;
            }
            Ok(())
        }
        ("map", Node::Map(_)) | ("pairs", Node::List(_)) => {
            if l {
                return Ok(());
            }
            let items: Vec<(Node, Node)> = match got {
                Node::Map(m) => m.clone(),
                Node::List(ps) => ps
                    .iter()
                    .map(|p| match p {
                        Node::Pair(a, b) => ((**a).clone(), (**b).clone()),
                        o => (o.clone(), Node::Nil),
                    })
                    .collect(),
                _ => unreachable!(),
            };
            let flat = flat_pairs(e);
            if flat.len() != 2 * items.len() {
                return bad();
            }
            let unordered = t.t == "map" || matches!(e.get("unordered"), Some(J::Bool(true)));
            let mut used = vec![false; items.len()];
            for (i, kv) in flat.chunks(2).enumerate() {
                let ok = |j: usize| {
                    check(&t.of[0], &kv[0], &items[j].0, at).is_ok()
                        && check(&t.of[1], &kv[1], &items[j].1, at).is_ok()
                };
                let j = if unordered {
                    (0..items.len()).find(|&j| !used[j] && ok(j))
                } else if ok(i) {
                    Some(i)
                } else {
                    None
                };
                match j {
                    Some(j) => used[j] = true,
                    None => return bad(),
                }
            }
            Ok(())
        }
        ("tuple", Node::Pair(a, b)) => {
            if l {
                return Ok(());
            }
            let kids = e
                .get("children")
                .map(|c| c.arr().to_vec())
                .unwrap_or_default();
            if kids.len() != 2 {
                return bad();
            }
            check(&t.of[0], &kids[0], a, &format!("{at}[0]"))?;
            check(&t.of[1], &kids[1], b, &format!("{at}[1]"))
        }
        _ => bad(),
    }
}

fn outcome(t: &T, e: &J, r: Result<Node, Error>, at: &str) -> Result<(), String> {
    if e.str("type").as_deref() == Some("error") {
        let prefix = e.str("prefix").unwrap_or_default();
        return match r {
            Err(Error::Response { message, .. }) if message.starts_with(&prefix) => Ok(()),
            Err(err) if err.to_string().contains(&prefix) => Ok(()),
            other => Err(format!("{at}: expected the error {prefix}, got {other:?}")),
        };
    }
    match r {
        Ok(n) => check(t, e, &n, at),
        Err(err) => Err(format!("{at}: {err}")),
    }
}

fn args_of(cmd: &J) -> Vec<Vec<u8>> {
    cmd.arr()
        .iter()
        .map(|a| match a {
            J::Str(s) => s.clone(),
            J::Obj(_) => unhex(&a.str("hex").unwrap()),
            other => panic!("bad argument {other:?}"),
        })
        .collect()
}

fn prepare(c: &mut Client, cs: &J) -> Result<(), String> {
    c.flushall(None).map_err(|e| format!("FLUSHALL: {e}"))?;
    if let Some(setup) = cs.get("setup") {
        let mut p = Pipeline::new();
        for cmd in setup.arr() {
            p.add_args(&args_of(cmd));
        }
        for (i, r) in p.exec(c).into_iter().enumerate() {
            if let Err(e) = r {
                return Err(format!("setup #{i}: {e}"));
            }
        }
    }
    Ok(())
}

fn run_case(
    c: &mut Client,
    methods: &std::collections::HashMap<String, String>,
    cs: &J,
    resp: u8,
) -> Result<(), String> {
    let calls = cs.get("calls").unwrap().arr().to_vec();
    let exp = cs
        .get("expected")
        .unwrap()
        .get(&resp.to_string())
        .unwrap()
        .arr()
        .to_vec();
    // 1. one pipeline: the case's batch
    prepare(c, cs)?;
    let mut p = Pipeline::new();
    let mut readers = Vec::new();
    for call in &calls {
        let m = call.str("method").unwrap();
        readers.push(spec_dispatch::call_pipeline(
            &mut p,
            &m,
            call.get("args").unwrap(),
        ));
    }
    let results = p.exec(c);
    for (i, (call, e)) in calls.iter().zip(&exp).enumerate() {
        let m = call.str("method").unwrap();
        outcome(
            &parse_type(&methods[&m]),
            e,
            readers[i](&results),
            &format!("pipeline call {i} {m}"),
        )?;
    }
    drop(results);
    // 2. one by one on the client
    prepare(c, cs)?;
    for (i, (call, e)) in calls.iter().zip(&exp).enumerate() {
        let m = call.str("method").unwrap();
        let r = spec_dispatch::call_client(c, &m, call.get("args").unwrap());
        outcome(
            &parse_type(&methods[&m]),
            e,
            r,
            &format!("client call {i} {m}"),
        )?;
    }
    Ok(())
}

fn spec_methods() -> std::collections::HashMap<String, String> {
    let doc = parse(&std::fs::read(repo_root().join("bindings/spec/commands.json")).unwrap());
    doc.get("methods")
        .unwrap()
        .arr()
        .iter()
        .map(|m| (m.str("method").unwrap(), m.str("reply").unwrap()))
        .collect()
}

fn cases() -> Vec<(String, J)> {
    let dir = repo_root().join("bindings/conformance/commands");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let doc = parse(&std::fs::read(&f).unwrap());
        for cs in doc.get("cases").unwrap().arr() {
            out.push((
                f.file_name().unwrap().to_string_lossy().into_owned(),
                cs.clone(),
            ));
        }
    }
    out
}

fn run_all(url: &str) {
    let methods = spec_methods();
    let mut failures = Vec::new();
    let mut ran = 0;
    for resp in [2u8, 3] {
        let mut c = Client::connect(ConnectOptions::new(url).resp_version(resp)).unwrap();
        let cluster = c.mode() == Mode::Cluster;
        for (file, cs) in cases() {
            let mode = cs.str("mode").unwrap();
            if (mode == "cluster" && !cluster) || (mode == "plain" && cluster) {
                continue;
            }
            if !cs
                .get("resp")
                .unwrap()
                .arr()
                .iter()
                .any(|r| matches!(r, J::Num(n) if n == &resp.to_string()))
            {
                continue;
            }
            ran += 1;
            if let Err(e) = run_case(&mut c, &methods, &cs, resp) {
                failures.push(format!(
                    "{file} {} (resp{resp}): {e}",
                    cs.str("name").unwrap()
                ));
            }
        }
    }
    assert!(ran >= 200, "only {ran} case runs");
    assert!(
        failures.is_empty(),
        "{} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn spec_cases_plain() {
    run_all(&plain_url());
}

#[test]
fn spec_cases_cluster() {
    run_all(&cluster_url());
}

#[test]
fn every_method_is_rendered_and_has_a_case() {
    let methods = spec_methods();
    let called: std::collections::HashSet<String> = cases()
        .iter()
        .flat_map(|(_, cs)| {
            cs.get("calls")
                .unwrap()
                .arr()
                .iter()
                .map(|c| c.str("method").unwrap())
                .collect::<Vec<_>>()
        })
        .collect();
    for m in methods.keys() {
        assert!(called.contains(m), "method {m} has no case");
        assert!(
            slotlane::METHODS.contains(&m.as_str()),
            "method {m} is not rendered"
        );
    }
}
