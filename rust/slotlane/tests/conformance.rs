//! The language-neutral cases of bindings/conformance/cases/*.json, through the Rust
//! API: each case's commands run as one Pipeline, and the Values must match the
//! recorded replies (same rules as the C runner, bindings/conformance/runner.c).
mod common;

use common::*;
use slotlane::{Client, ConnectOptions, Error, Mode, Pipeline, Value};
use std::collections::BTreeMap;

// the small JSON reader the spec runner uses too (tests/spec_json)
mod spec_json;
use spec_json::{parse, unhex, J};

fn expected_bytes(e: &J) -> Option<Vec<u8>> {
    match (e.get("value"), e.get("hex")) {
        (Some(J::Str(s)), _) => Some(s.clone()),
        (_, Some(J::Str(h))) => Some(unhex(std::str::from_utf8(h).unwrap())),
        _ => None,
    }
}

fn parse_double(s: &str) -> f64 {
    match s.to_ascii_lowercase().as_str() {
        "inf" | "+inf" | "infinity" => f64::INFINITY,
        "-inf" | "-infinity" => f64::NEG_INFINITY,
        "nan" => f64::NAN,
        other => other
            .parse()
            .unwrap_or_else(|_| panic!("bad expected double {other}")),
    }
}

// ------------------------------------------------------------ matching

fn kind_name(e: &Error) -> &'static str {
    match e {
        Error::Response { .. } => "server",
        Error::Io(_) => "io",
        Error::Timeout(_) => "timeout",
        Error::RedirectsExhausted(_) => "redirects",
        Error::Protocol(_) => "protocol",
        Error::Cancelled(_) => "cancelled",
        Error::Cluster(_) => "cluster",
        Error::InvalidArgument(_) => "argument",
        _ => "?",
    }
}

fn match_error(want: &J, e: &Error, path: &str) -> Result<(), String> {
    if want.str("type").as_deref() != Some("error") {
        return Err(format!(
            "{path}: expected {:?}, got the error {e:?}",
            want.str("type")
        ));
    }
    if let Some(prefix) = want.str("prefix") {
        if !e.message().starts_with(&prefix) {
            return Err(format!(
                "{path}: expected an error starting with {prefix:?}, got {e:?}"
            ));
        }
    }
    if let Some(kind) = want.str("kind") {
        if kind != kind_name(e) {
            return Err(format!(
                "{path}: expected an error of kind {kind}, got {e:?}"
            ));
        }
    }
    Ok(())
}

fn match_value(want: &J, v: &Value<'_>, path: &str) -> Result<(), String> {
    let t = want
        .str("type")
        .ok_or_else(|| format!("{path}: no expected type"))?;
    let fail = || {
        Err(format!(
            "{path}: expected {t} {:?}, got {v:?}",
            want.get("value")
                .or(want.get("hex"))
                .or(want.get("children"))
        ))
    };
    match (t.as_str(), v) {
        ("error", Value::Error(e)) => match_error(want, e, path),
        ("string", Value::Bulk(b))
        | ("status", Value::Status(b))
        | ("bignum", Value::BigNumber(b)) => {
            if expected_bytes(want).as_deref() == Some(&b[..]) {
                Ok(())
            } else {
                fail()
            }
        }
        ("verb", Value::Verbatim { format, text }) => {
            if expected_bytes(want).as_deref() == Some(&text[..])
                && want.str("format").as_deref().map(str::as_bytes) == Some(&format[..])
            {
                Ok(())
            } else {
                fail()
            }
        }
        ("integer", Value::Int(i)) => match want.get("value") {
            Some(J::Num(n)) if n.parse::<i64>().ok() == Some(*i) => Ok(()),
            _ => fail(),
        },
        ("bool", Value::Bool(b)) => match want.get("value") {
            Some(J::Bool(w)) if w == b => Ok(()),
            _ => fail(),
        },
        ("double", Value::Double(d)) => {
            let w = want.str("value").map(|s| parse_double(&s));
            match w {
                Some(w) if (w.is_nan() && d.is_nan()) || w == *d => Ok(()),
                _ => fail(),
            }
        }
        ("nil", Value::Nil) => Ok(()),
        ("array", Value::Array(items))
        | ("set", Value::Set(items))
        | ("push", Value::Push(items)) => {
            match_children(want, &items.iter().collect::<Vec<_>>(), 1, path)
        }
        ("map", Value::Map(pairs)) => {
            let flat: Vec<&Value<'_>> = pairs.iter().flat_map(|(k, v)| [k, v]).collect();
            match_children(want, &flat, 2, path)
        }
        _ => fail(),
    }
}

fn match_children(want: &J, got: &[&Value<'_>], group: usize, path: &str) -> Result<(), String> {
    let children = want.get("children").map(J::arr).unwrap_or(&[]);
    if children.len() != got.len() {
        return Err(format!(
            "{path}: expected {} children, got {}: {got:?}",
            children.len(),
            got.len()
        ));
    }
    let unordered = want.get("unordered") == Some(&J::Bool(true));
    if !unordered {
        for (k, (w, g)) in children.iter().zip(got).enumerate() {
            match_value(w, g, &format!("{path}[{k}]"))?;
        }
        return Ok(());
    }
    let n = got.len() / group;
    let mut used = vec![false; n];
    for g in 0..n {
        let found = (0..n).find(|&a| {
            !used[a]
                && (0..group).all(|m| {
                    match_value(&children[g * group + m], got[a * group + m], path).is_ok()
                })
        });
        match found {
            Some(a) => used[a] = true,
            None => {
                return Err(format!(
                    "{path}[{}]: no element matches (unordered): {got:?}",
                    g * group
                ))
            }
        }
    }
    Ok(())
}

fn pipeline_of(cmds: &J) -> Pipeline {
    let mut p = Pipeline::new();
    for c in cmds.arr() {
        let args: Vec<Vec<u8>> = c
            .arr()
            .iter()
            .map(|a| match a {
                J::Str(s) => s.clone(),
                J::Obj(_) => unhex(&a.str("hex").expect("{hex: ...}")),
                other => panic!("bad argument {other:?}"),
            })
            .collect();
        p.add_args(&args);
    }
    p
}

#[test]
fn conformance_cases() {
    let dir = repo_root().join("bindings/conformance/cases");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e} (the conformance cases are needed)", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no cases in {}", dir.display());

    let mut failures = Vec::new();
    let mut ran = BTreeMap::<String, usize>::new();
    let mut not_for_target = 0;
    // The cases are recorded from Redis: run them against Redis (as ci/test-conformance.sh
    // does), not slotlane-server, which does not have scripts and transactions yet.
    for (target, url) in [("plain", plain_url()), ("cluster", cluster_url())] {
        let mut clients: BTreeMap<i64, Client> = BTreeMap::new();
        for file in &files {
            let doc = parse(&std::fs::read(file).unwrap());
            let fname = file.file_name().unwrap().to_string_lossy().into_owned();
            for case in doc.get("cases").map(J::arr).unwrap_or(&[]) {
                let name = case.str("name").expect("case name");
                let mode = case.str("mode").unwrap_or_else(|| "any".into());
                let resps: Vec<i64> = match case.get("resp") {
                    Some(J::Arr(a)) => a
                        .iter()
                        .map(|x| {
                            if let J::Num(n) = x {
                                n.parse().unwrap()
                            } else {
                                panic!()
                            }
                        })
                        .collect(),
                    Some(J::Num(n)) => vec![n.parse().unwrap()],
                    _ => vec![2, 3],
                };
                for resp in resps {
                    let c = clients.entry(resp).or_insert_with(|| {
                        Client::connect(ConnectOptions::new(&url).resp_version(resp as u8))
                            .unwrap_or_else(|e| panic!("{target}: {e}"))
                    });
                    let cluster = c.mode() == Mode::Cluster;
                    if (mode == "cluster" && !cluster) || (mode == "plain" && cluster) {
                        not_for_target += 1;
                        continue;
                    }
                    let label = format!("{target} {fname} {name} resp{resp}");
                    *ran.entry(target.to_string()).or_default() += 1;
                    c.flushall(None)
                        .unwrap_or_else(|e| panic!("{label}: FLUSHALL: {e}"));
                    if let Some(setup) = case.get("setup") {
                        let r = pipeline_of(setup).exec(c);
                        if let Some(e) = r.iter().find_map(|x| x.as_ref().err()) {
                            failures.push(format!("{label}: setup failed: {e}"));
                            continue;
                        }
                    }
                    let cmds = case.get("commands").expect("commands");
                    let want = case
                        .get("expected")
                        .and_then(|e| e.get(&resp.to_string()))
                        .map(J::arr)
                        .unwrap_or(&[]);
                    let got = pipeline_of(cmds).exec(c);
                    if want.len() != got.len() {
                        failures.push(format!(
                            "{label}: {} replies for {} expected",
                            got.len(),
                            want.len()
                        ));
                        continue;
                    }
                    for (k, (w, g)) in want.iter().zip(&got).enumerate() {
                        let path = format!(
                            "command #{k} {:?}",
                            cmds.arr()[k].arr().first().map(|a| if let J::Str(s) = a {
                                String::from_utf8_lossy(s).into_owned()
                            } else {
                                "?".into()
                            })
                        );
                        let r = match g {
                            Ok(v) => match_value(w, v, &path),
                            Err(e) => match_error(w, e, &path),
                        };
                        if let Err(m) = r {
                            failures.push(format!("{label}: {m}"));
                            break;
                        }
                    }
                }
            }
        }
    }
    println!(
        "conformance: ran {ran:?}; {not_for_target} case runs are for the other mode; {} failures",
        failures.len()
    );
    assert!(
        ran.get("plain").copied().unwrap_or(0) > 20
            && ran.get("cluster").copied().unwrap_or(0) > 20,
        "too few cases ran: {ran:?}"
    );
    assert!(
        failures.is_empty(),
        "{} conformance failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
