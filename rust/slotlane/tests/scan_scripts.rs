//! Client::scan_iter, Client::nodes and Script against every target (standalone Redis,
//! a 3-primary Redis Cluster, slotlane-server per-shard): every key once, MATCH and TYPE,
//! an empty keyspace, the node list, a script with keys on every shard that is loaded
//! again (once, counted by the node's INFO commandstats) after SCRIPT FLUSH on one node,
//! FUNCTION LOAD then FCALL on every shard.
mod common;

use common::*;
use slotlane::{cmd, Client, Pipeline, Route, ScanOptions, Script, Value};
use std::collections::HashMap;

fn scan_all(c: &mut Client, o: &ScanOptions) -> HashMap<Vec<u8>, usize> {
    let mut seen = HashMap::new();
    for k in c.scan_iter(o).unwrap() {
        *seen.entry(k.unwrap()).or_insert(0) += 1;
    }
    seen
}

fn flushall(c: &mut Client) {
    let _: Value<'static> = cmd("FLUSHALL").query(c).unwrap();
}

#[test]
fn scan_iter_every_key_match_type_and_nodes() {
    let _one = serial(); // it flushes the keyspaces the script test uses
    for (name, url) in targets() {
        let mut c = Client::connect(url.as_str()).unwrap();
        flushall(&mut c);
        assert!(
            scan_all(&mut c, &ScanOptions::default()).is_empty(),
            "{name}: empty"
        );
        let keys: Vec<String> = (0..10_000).map(|i| format!("rsc:{i}")).collect();
        for chunk in keys.chunks(1000) {
            let mut p = Pipeline::new();
            for k in chunk {
                p.set(k, "v", None);
            }
            assert!(p.exec(&mut c).iter().all(|r| r.is_ok()));
        }
        for i in 0..20 {
            let _: i64 = cmd("HSET")
                .arg(format!("rsh:{i}"))
                .arg("f")
                .arg("v")
                .query(&mut c)
                .unwrap();
        }
        let seen = scan_all(
            &mut c,
            &ScanOptions {
                count: Some(500),
                ..Default::default()
            },
        );
        assert_eq!(seen.len(), 10_020, "{name}");
        assert!(seen.values().all(|&n| n == 1), "{name}: a key twice");
        let m = scan_all(
            &mut c,
            &ScanOptions {
                r#match: Some(b"rsc:1*".to_vec()),
                ..Default::default()
            },
        );
        let want = keys.iter().filter(|k| k.starts_with("rsc:1")).count();
        assert_eq!(m.len(), want, "{name}: MATCH");
        assert!(m.keys().all(|k| k.starts_with(b"rsc:1")));
        assert_eq!(
            scan_all(
                &mut c,
                &ScanOptions {
                    r#type: Some(b"hash".to_vec()),
                    ..Default::default()
                }
            )
            .len(),
            20,
            "{name}: TYPE"
        );
        // the node list: primaries cover every slot; a per-node command is one loop
        let ps = primaries(&c);
        let covered: usize = ps
            .iter()
            .flat_map(|n| &n.slots)
            .map(|r| (r.1 - r.0) as usize + 1)
            .sum();
        assert_eq!(covered, 16384, "{name}");
        let want_primaries = match name {
            "plain" => 1,
            "cluster" => 3,
            _ => 4,
        };
        assert_eq!(ps.len(), want_primaries, "{name}: {ps:?}");
        for n in &ps {
            let pong: Value<'static> = cmd("PING")
                .route(Route::Node(n.addr.clone()))
                .query(&mut c)
                .unwrap();
            assert_eq!(pong, Value::Status(b"PONG"[..].into()));
        }
        flushall(&mut c);
    }
}

#[test]
fn script_on_every_shard_reloaded_after_a_flush_and_functions() {
    let _one = serial();
    for (name, url) in targets() {
        let mut c = Client::connect(url.as_str()).unwrap();
        let _: Value<'static> = cmd("SCRIPT").arg("FLUSH").query(&mut c).unwrap();
        let s = Script::new("return redis.call('INCRBY', KEYS[1], ARGV[1])");
        let sha: String = cmd("SCRIPT")
            .arg("LOAD")
            .arg("return redis.call('INCRBY', KEYS[1], ARGV[1])")
            .query(&mut c)
            .unwrap();
        assert_eq!(sha, s.hash(), "{name}");
        let ps = primaries(&c);
        let keys: Vec<String> = ps.iter().map(|n| key_on(n, "rsk:")).collect();
        for k in &keys {
            let _: Value<'static> = cmd("DEL").arg(k).query(&mut c).unwrap();
            let v: i64 = s.invoke(&mut c, &[k.as_str()], &[5]).unwrap();
            assert_eq!(v, 5, "{name}: {k}");
        }
        let victim = ps.last().unwrap().addr.clone();
        let before = script_loads(&mut c, &victim);
        let _: Value<'static> = cmd("SCRIPT")
            .arg("FLUSH")
            .route(Route::Node(victim.clone()))
            .query(&mut c)
            .unwrap();
        for want in [6, 7] {
            let v: i64 = s
                .invoke(&mut c, &[keys.last().unwrap().as_str()], &[1])
                .unwrap();
            assert_eq!(v, want, "{name}: after SCRIPT FLUSH on {victim}");
        }
        let after = script_loads(&mut c, &victim);
        if before > 0 || after > 0 {
            assert_eq!(after - before, 1, "{name}: reloads on {victim}");
        }
        let ro = Script::new("return redis.call('GET', KEYS[1])");
        let got: String = ro
            .invoke_ro(&mut c, &[keys[0].as_str()], &[] as &[&str])
            .unwrap();
        assert_eq!(got, if keys.len() == 1 { "7" } else { "5" }, "{name}");
        assert!(Script::new("not lua")
            .invoke::<Value<'static>, _, _>(&mut c, &[keys[0].as_str()], &[] as &[&str])
            .is_err());
        // functions: LOAD on every primary, FCALL on every shard
        let _: Value<'static> = cmd("FUNCTION").arg("FLUSH").query(&mut c).unwrap();
        let lib = "#!lua name=rslib\nredis.register_function('rsf', function(keys, args) return redis.call('INCR', keys[1]) end)";
        let l: String = cmd("FUNCTION").arg("LOAD").arg(lib).query(&mut c).unwrap();
        assert_eq!(l, "rslib", "{name}");
        for k in &keys {
            let before: i64 = cmd("GET")
                .arg(k)
                .query::<String>(&mut c)
                .unwrap()
                .parse()
                .unwrap();
            let v: i64 = cmd("FCALL").arg("rsf").arg(1).arg(k).query(&mut c).unwrap();
            assert_eq!(v, before + 1, "{name}: FCALL on {k}");
        }
        let _: Value<'static> = cmd("FUNCTION")
            .arg("DELETE")
            .arg("rslib")
            .query(&mut c)
            .unwrap();
        assert!(cmd("FCALL")
            .arg("rsf")
            .arg(1)
            .arg(&keys[0])
            .query::<i64>(&mut c)
            .is_err());
        for k in &keys {
            let _: Value<'static> = cmd("DEL").arg(k).query(&mut c).unwrap();
        }
    }
}
