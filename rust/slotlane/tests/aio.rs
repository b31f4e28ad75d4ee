//! slotlane::aio against a plain Redis, a Redis Cluster and slotlane-server, on tokio's
//! multi-thread and current-thread runtimes (tokio is a dev-dependency only: the futures
//! are woken through std's Waker): the typed methods, many concurrent callers, a dropped
//! future cancelling its batch while the shared connection stays in step, the in-flight
//! bound, and the futures being Send + 'static.
mod common;

use common::runtimes;
use slotlane::aio::{Call, Client};
use slotlane::{cmd, Error, Value};
use std::time::Duration;

fn assert_send_static<T: Send + 'static>(_: &T) {}

#[test]
fn typed_methods_on_every_target_and_runtime() {
    for (target, url) in common::targets() {
        for (rt_name, rt) in runtimes() {
            let c = Client::connect(url.as_str()).unwrap();
            rt.block_on(async {
                let p = format!("aio:{rt_name}:");
                let set = c.set(format!("{p}a"), "1", None);
                assert_send_static(&set);
                assert!(set.await.unwrap(), "{target}");
                assert_eq!(c.get(format!("{p}a")).await.unwrap(), Some(b"1".to_vec()));
                assert_eq!(c.get(format!("{p}missing")).await.unwrap(), None);
                assert_eq!(c.incrby(format!("{p}n"), 41).await.unwrap(), 41);
                let v: i64 = c.query(cmd("INCR").arg(format!("{p}n"))).await.unwrap();
                assert_eq!(v, 42);
                match c.command(cmd("ECHO").arg("hi")).await.unwrap() {
                    Value::Bulk(b) => assert_eq!(&b[..], b"hi"),
                    other => panic!("{other:?}"),
                }
                let e = c.lpush(format!("{p}a"), &["x"]).await.unwrap_err();
                assert!(matches!(e, Error::Response { .. }), "{e:?}");
                let e = c.command(&cmd("")).await;
                assert!(e.is_err());
            });
        }
    }
}

#[test]
fn many_concurrent_callers_share_the_connections() {
    for (_target, url) in common::targets() {
        let rt = &runtimes()[0].1;
        let c = Client::connect(url.as_str()).unwrap();
        rt.block_on(async {
            let mut tasks = Vec::new();
            for i in 0..512 {
                let c = c.clone();
                tasks.push(tokio::spawn(async move {
                    let k = format!("aio:many:{i}");
                    assert!(c.set(k.clone(), i, None).await.unwrap());
                    assert_eq!(c.get(k).await.unwrap(), Some(i.to_string().into_bytes()));
                }));
            }
            for t in tasks {
                t.await.unwrap();
            }
        });
    }
}

/// A BLPOP held by the server runs on a connection leased for it: a GET to the same node
/// is not behind it; dropped (its future cancelled), the BLPOP's lease is closed and the
/// client goes on (core/tests/test_lease_async.c and python/tests/test_blocking.py check
/// that the element pushed afterwards is not swallowed).
#[test]
fn dropping_a_future_cancels_only_its_batch() {
    for url in [common::plain_url(), common::cluster_url()] {
        for (rt_name, rt) in runtimes() {
            let c = Client::connect(url.as_str()).unwrap();
            let list = format!("{{aio-drop}}{rt_name}:l");
            let key = format!("{{aio-drop}}{rt_name}:k");
            rt.block_on(async {
                assert!(c.set(key.clone(), "v", None).await.unwrap());
                let blpop = tokio::spawn({
                    let c = c.clone();
                    let list = list.clone();
                    async move { c.command(cmd("BLPOP").arg(list).arg(0)).await }
                });
                let u = url.clone();
                tokio::task::spawn_blocking(move || common::wait_blocked(&u, "blpop"))
                    .await
                    .unwrap();
                let behind = tokio::spawn({
                    let c = c.clone();
                    let key = key.clone();
                    async move { c.get(key).await }
                });
                blpop.abort(); // drops the future: sl_batch_cancel
                assert!(blpop.await.unwrap_err().is_cancelled());
                let got = tokio::time::timeout(Duration::from_secs(10), behind)
                    .await
                    .expect("the GET to the BLPOP's node got no reply")
                    .unwrap()
                    .unwrap();
                assert_eq!(got, Some(b"v".to_vec()));
                assert_eq!(c.get(key.clone()).await.unwrap(), Some(b"v".to_vec()));
            });
        }
    }
}

#[test]
fn the_inflight_bound_waits_for_room() {
    let url = common::plain_url();
    let c = Client::connect_with_bound(url.as_str(), Some(2)).unwrap();
    let rt = &runtimes()[0].1;
    rt.block_on(async {
        let _: Result<i64, Error> = c.query(cmd("DEL").arg("aio:bound")).await;
        let mut tasks = Vec::new();
        for _ in 0..200 {
            let c = c.clone();
            tasks.push(tokio::spawn(
                async move { c.incr("aio:bound").await.unwrap() },
            ));
        }
        let mut got = Vec::new();
        for t in tasks {
            got.push(t.await.unwrap());
        }
        got.sort();
        assert_eq!(got, (1..=200).collect::<Vec<i64>>());
    });
}

#[test]
fn a_call_never_polled_sends_nothing_and_a_dead_server_errors() {
    let c = Client::connect(common::plain_url().as_str()).unwrap();
    let never: Call<_> = c.incr("aio:never");
    drop(never);
    let rt = &runtimes()[1].1;
    rt.block_on(async {
        let v: Option<Vec<u8>> = c.query(cmd("GET").arg("aio:never")).await.unwrap();
        assert_eq!(v, None, "a future dropped unpolled sent its command");
    });
    let e = Client::connect("127.0.0.1:1").unwrap_err();
    assert!(matches!(e, Error::Io(_)), "{e:?}");
    assert!(slotlane::aio::block_on(c.ping()).is_ok());
}

#[test]
fn pipelines_with_the_typed_methods_on_every_target_and_runtime() {
    for (target, url) in common::targets() {
        for (rt_name, rt) in runtimes() {
            let c = Client::connect(url.as_str()).unwrap();
            rt.block_on(async {
                let k = format!("aio-pipe:{rt_name}:{{n}}");
                let mut p = slotlane::Pipeline::new();
                p.set(&k, "1", None);
                let n = p.incr(&k);
                p.cmd("LPOP").arg(&k); // WRONGTYPE: fails alone
                let got = p.get(&k);
                let spread: Vec<_> = (0..50)
                    .map(|i| p.incr(format!("aio-pipe:{rt_name}:s{i}")))
                    .collect();
                let fut = c.exec(&p);
                assert_send_static(&fut);
                let replies = fut.await;
                assert_eq!(replies.len(), 54, "{target} {rt_name}");
                assert_eq!(n.get(&replies), Ok(2));
                assert_eq!(
                    replies[2].as_ref().unwrap_err().response_kind(),
                    Some("WRONGTYPE"),
                    "{target}"
                );
                assert_eq!(got.get(&replies).unwrap(), Some(b"2".to_vec()));
                let first: Vec<i64> = spread.iter().map(|s| s.get(&replies).unwrap()).collect();
                // run again: the same pipeline, one more each
                let again = c.exec(&p).await;
                assert!(spread
                    .iter()
                    .zip(&first)
                    .all(|(s, f)| s.get(&again).unwrap() == f + 1));
                assert!(c.exec(&slotlane::Pipeline::new()).await.is_empty());
                let mut routed = slotlane::Pipeline::new();
                routed.cmd("PING").route(slotlane::Route::Random);
                let r = c.exec(&routed).await;
                assert!(matches!(r[0], Err(Error::InvalidArgument(_))), "{r:?}");
                let mut del = slotlane::Pipeline::new();
                del.delete(&[k.as_str()]);
                for i in 0..50 {
                    del.delete(&[format!("aio-pipe:{rt_name}:s{i}")]);
                }
                assert!(c.exec(&del).await.iter().all(|r| r.is_ok()));
            });
        }
    }
}

#[test]
fn dropping_a_pipeline_future_cancels_only_its_batch() {
    // A pipeline holding a blocking command among others is refused before anything is sent;
    // a pipeline of one BLPOP waits on a connection leased for it: dropping its future cancels
    // that batch (the lease is closed, so the element pushed afterwards stays in the list),
    // and a GET to the same node is answered meanwhile.
    for url in [common::plain_url(), common::cluster_url()] {
        for (rt_name, rt) in runtimes() {
            let c = Client::connect(url.as_str()).unwrap();
            let list = format!("{{aio-pdrop}}{rt_name}:l");
            let key = format!("{{aio-pdrop}}{rt_name}:k");
            rt.block_on(async {
                assert!(c.set(key.clone(), "v", None).await.unwrap());
                let mut mixed = slotlane::Pipeline::new();
                mixed.incr(format!("{key}:n"));
                mixed.cmd("BLPOP").arg(&list).arg(0);
                assert!(
                    c.exec(&mixed).await.iter().all(|r| r.is_err()),
                    "a blocking command among others is refused"
                );
                let pipe = tokio::spawn({
                    let c = c.clone();
                    let mut p = slotlane::Pipeline::new();
                    p.cmd("BLPOP").arg(&list).arg(0);
                    async move { c.exec(&p).await }
                });
                let u = url.clone();
                tokio::task::spawn_blocking(move || common::wait_blocked(&u, "blpop"))
                    .await
                    .unwrap();
                assert_eq!(
                    c.get(key.clone()).await.unwrap(),
                    Some(b"v".to_vec()),
                    "not behind the BLPOP"
                );
                pipe.abort(); // drops the future: sl_batch_cancel of the pipeline's batch
                assert!(pipe.await.unwrap_err().is_cancelled());
                let u = url.clone();
                tokio::task::spawn_blocking(move || common::wait_blocked_count(&u, 0))
                    .await
                    .unwrap();
                let mut other = slotlane::Client::connect(url.as_str()).unwrap();
                let _: i64 = cmd("RPUSH").arg(&list).arg("x").query(&mut other).unwrap();
                let n: i64 = cmd("LLEN").arg(&list).query(&mut other).unwrap();
                assert_eq!(n, 1, "the cancelled BLPOP took nothing");
                assert_eq!(c.get(key.clone()).await.unwrap(), Some(b"v".to_vec()));
                let _: i64 = cmd("DEL")
                    .arg(&list)
                    .arg(format!("{key}:n"))
                    .query(&mut other)
                    .unwrap();
            });
        }
    }
}
