//! slotlane::aio's cluster SCAN (`Client::scan_iter`, a `ScanStream`: pages run on the
//! core's loop thread) and `Script::invoke_async` against every target (standalone Redis,
//! a 3-primary Redis Cluster, slotlane-server per-shard), on tokio's multi-thread and
//! current-thread runtimes: every key once, MATCH and TYPE, an empty keyspace, a stream
//! dropped early and one dropped while its page is held behind a BLPOP on the shared
//! connection (the page is cancelled, the connection stays in step); a script on every shard
//! loaded again exactly once (the node's INFO commandstats) after SCRIPT FLUSH on one node.
mod common;

use common::{key_on, primaries, runtimes, script_loads, serial};
use futures_core::Stream;
use slotlane::aio::{Client, ScanStream};
use slotlane::{cmd, Pipeline, Route, ScanOptions, Script, Value};
use std::collections::HashMap;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

fn assert_send_static<T: Send + 'static>(_: &T) {}

async fn scan_all(c: &Client, o: &ScanOptions) -> HashMap<Vec<u8>, usize> {
    let mut keys: ScanStream = c.scan_iter(o).unwrap();
    assert_send_static(&keys);
    let mut seen = HashMap::new();
    while let Some(k) = keys.next_key().await {
        *seen.entry(k.unwrap()).or_insert(0) += 1;
    }
    seen
}

fn fill(url: &str, keys: &[String]) -> slotlane::Client {
    let mut c = slotlane::Client::connect(url).unwrap();
    let _: Value<'static> = cmd("FLUSHALL").query(&mut c).unwrap();
    for chunk in keys.chunks(1000) {
        let mut p = Pipeline::new();
        for k in chunk {
            p.set(k, "v", None);
        }
        assert!(p.exec(&mut c).iter().all(|r| r.is_ok()));
    }
    c
}

fn del(c: &mut slotlane::Client, keys: &[String]) {
    for k in keys {
        let _: i64 = cmd("DEL").arg(k).query(c).unwrap();
    }
}

#[test]
fn scan_stream_every_key_once_match_type_and_early_drop() {
    let _one = serial();
    for (name, url) in common::targets() {
        let keys: Vec<String> = (0..5000).map(|i| format!("ras:{i}")).collect();
        let mut sync = fill(&url, &keys);
        let _: i64 = cmd("HSET")
            .arg("rah:1")
            .arg("f")
            .arg("v")
            .query(&mut sync)
            .unwrap();
        for (rt_name, rt) in runtimes() {
            let c = Client::connect(url.as_str()).unwrap();
            rt.block_on(async {
                let all = ScanOptions {
                    count: Some(100),
                    ..Default::default()
                };
                let seen = scan_all(&c, &all).await;
                assert_eq!(seen.len(), 5001, "{name} {rt_name}");
                assert!(seen.values().all(|&n| n == 1), "{name} {rt_name}: twice");
                assert!(keys.iter().all(|k| seen.contains_key(k.as_bytes())));
                let m = scan_all(
                    &c,
                    &ScanOptions {
                        r#match: Some(b"ras:1*".to_vec()),
                        ..Default::default()
                    },
                )
                .await;
                assert_eq!(
                    m.len(),
                    keys.iter().filter(|k| k.starts_with("ras:1")).count()
                );
                let h = scan_all(
                    &c,
                    &ScanOptions {
                        r#type: Some(b"hash".to_vec()),
                        ..Default::default()
                    },
                )
                .await;
                assert_eq!(
                    h.keys().cloned().collect::<Vec<_>>(),
                    vec![b"rah:1".to_vec()]
                );
                // dropped after its first key: the client goes on
                let mut s = c.scan_iter(&ScanOptions::default()).unwrap();
                assert!(s.next_key().await.unwrap().is_ok());
                drop(s);
                assert_eq!(c.get("ras:7").await.unwrap(), Some(b"v".to_vec()));
                // a bad option is refused before anything is sent
                assert!(c
                    .scan_iter(&ScanOptions {
                        count: Some(0),
                        ..Default::default()
                    })
                    .is_err());
            });
        }
        let _: Value<'static> = cmd("FLUSHALL").query(&mut sync).unwrap();
        let c = Client::connect(url.as_str()).unwrap();
        let empty = runtimes()
            .remove(0)
            .1
            .block_on(scan_all(&c, &ScanOptions::default()));
        assert!(empty.is_empty(), "{name}: empty keyspace");
    }
}

#[test]
fn a_stream_dropped_while_its_page_is_held_cancels_only_the_page() {
    let _one = serial();
    let url = common::plain_url();
    let keys: Vec<String> = (0..300).map(|i| format!("rad:{i}")).collect();
    let mut other = fill(&url, &keys);
    for (rt_name, rt) in runtimes() {
        let c = Client::connect(url.as_str()).unwrap();
        let list = format!("rad-list:{rt_name}");
        rt.block_on(async {
            // A BLPOP holds the shared connection; the scan's SCAN is queued behind it.
            let blpop = tokio::spawn({
                let c = c.clone();
                let list = list.clone();
                async move { c.command(cmd("BLPOP").arg(list).arg(0)).await }
            });
            let u = url.clone();
            tokio::task::spawn_blocking(move || common::wait_blocked(&u, "blpop"))
                .await
                .unwrap();
            let mut s = c.scan_iter(&ScanOptions::default()).unwrap();
            let first =
                std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut s).poll_next(cx).is_pending()))
                    .await;
            assert!(
                first,
                "the page cannot be answered while the BLPOP holds the connection"
            );
            drop(s); // cancels the page in the core; the scan is freed with its completion
            let _: i64 = cmd("RPUSH").arg(&list).arg("x").query(&mut other).unwrap();
            let popped = tokio::time::timeout(Duration::from_secs(10), blpop)
                .await
                .expect("the BLPOP got no reply")
                .unwrap()
                .unwrap();
            assert!(matches!(popped, Value::Array(_)), "{popped:?}");
            // the SCAN's reply was read and dropped: the next replies are in step
            assert_eq!(c.get("rad:5").await.unwrap(), Some(b"v".to_vec()));
            assert_eq!(scan_all(&c, &ScanOptions::default()).await.len(), 300);
        });
    }
}

#[test]
fn invoke_async_on_every_shard_reloaded_once_after_a_flush() {
    let _one = serial();
    for (name, url) in common::targets() {
        let mut sync = slotlane::Client::connect(url.as_str()).unwrap();
        let _: Value<'static> = cmd("SCRIPT").arg("FLUSH").query(&mut sync).unwrap();
        let prim = primaries(&sync);
        let keys: Vec<String> = prim.iter().map(|n| key_on(n, "rask")).collect();
        for (rt_name, rt) in runtimes() {
            del(&mut sync, &keys);
            let c = Client::connect(url.as_str()).unwrap();
            let script = Script::new("return redis.call('INCR', KEYS[1]) + tonumber(ARGV[1])");
            rt.block_on(async {
                let fut = script.invoke_async::<i64, _, _>(&c, &[&keys[0]], &[10]);
                assert_send_static(&fut);
                assert_eq!(fut.await.unwrap(), 11, "{name} {rt_name}");
                for k in &keys[1..] {
                    assert_eq!(
                        script
                            .invoke_async::<i64, _, _>(&c, &[k], &[10])
                            .await
                            .unwrap(),
                        11
                    );
                }
                let victim = prim.last().unwrap();
                let before: Vec<i64> = prim
                    .iter()
                    .map(|n| script_loads(&mut sync, &n.addr))
                    .collect();
                let _: Value<'static> = cmd("SCRIPT")
                    .arg("FLUSH")
                    .route(Route::Node(victim.addr.clone()))
                    .query(&mut sync)
                    .unwrap();
                let last = keys.last().unwrap();
                assert_eq!(
                    script
                        .invoke_async::<i64, _, _>(&c, &[last], &[0])
                        .await
                        .unwrap(),
                    2
                );
                assert_eq!(
                    script
                        .invoke_async::<i64, _, _>(&c, &[last], &[0])
                        .await
                        .unwrap(),
                    3
                );
                let after: Vec<i64> = prim
                    .iter()
                    .map(|n| script_loads(&mut sync, &n.addr))
                    .collect();
                let v = prim.len() - 1;
                if before[v] > 0 || after[v] > 0 {
                    assert_eq!(
                        after[v] - before[v],
                        1,
                        "{name}: reloaded once on the flushed node"
                    );
                    assert_eq!(
                        &after[..v],
                        &before[..v],
                        "{name}: the others were not asked"
                    );
                }
                let ro = Script::new("return redis.call('GET', KEYS[1])");
                let got: Option<String> = ro
                    .invoke_ro_async(&c, &[&keys[0]], &[] as &[i64])
                    .await
                    .unwrap();
                assert_eq!(
                    got.as_deref(),
                    Some(if keys.len() == 1 { "3" } else { "1" })
                );
                let bad = Script::new("this is not lua");
                assert!(bad
                    .invoke_async::<Value<'static>, _, _>(&c, &[&keys[0]], &[] as &[i64])
                    .await
                    .is_err());
            });
        }
        del(&mut sync, &keys);
    }
}
