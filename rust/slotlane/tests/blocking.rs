//! Blocking commands on slotlane::aio (issue 22) against a plain Redis, the Redis Cluster
//! and the embedded slotlane-server, on tokio's multi-thread and current-thread runtimes:
//! a BLPOP 0 waiting on its leased connection while 1 000 GETs to the same node complete;
//! 50 concurrent BLPOPs on one key served in the order they blocked; a BLPOP cancelled
//! mid-wait (its future dropped) swallowing nothing, so the next BLPOP gets the element
//! pushed afterwards. Decided by replies and the servers' INFO blocked_clients (summed over
//! the nodes), never by sleeps. The tests hold common::serial(): the counts are the
//! servers' own, so one test's BLPOPs must not be counted by another's.
mod common;

use common::{runtimes, serial, targets, wait_blocked_count};
use slotlane::aio::Client;
use std::time::Duration;

/// `n` blocked clients on the server at `url`, waited for off the runtime's threads.
async fn blocked(url: &str, n: u64) {
    let u = url.to_string();
    tokio::task::spawn_blocking(move || wait_blocked_count(&u, n))
        .await
        .unwrap();
}

/// A hash tag unique to this process, test, target and runtime: the keys of a test share
/// a slot (one node).
fn tag(test: &str, target: &str, rt: &str) -> String {
    format!("{{rs-b:{}:{test}:{target}:{rt}}}", std::process::id())
}

const LIMIT: Duration = Duration::from_secs(30);

#[test]
fn blpop_forever_while_1000_gets_to_its_node_complete() {
    let _g = serial();
    for (target, url) in targets() {
        for (rt_name, rt) in runtimes() {
            let c = Client::connect(url.as_str()).unwrap();
            let t = tag("gets", target, rt_name);
            let (q, k) = (format!("{t}q"), format!("{t}k"));
            rt.block_on(async {
                assert!(c.set(k.clone(), "v", None).await.unwrap());
                let blpop = tokio::spawn({
                    let (c, q) = (c.clone(), q.clone());
                    async move { c.blpop(&[q.as_str()], 0.0).await }
                });
                blocked(&url, 1).await;
                let gets: Vec<_> = (0..1000).map(|_| tokio::spawn(c.get(k.clone()))).collect();
                for g in gets {
                    let v = tokio::time::timeout(LIMIT, g)
                        .await
                        .expect("a GET behind the BLPOP")
                        .unwrap()
                        .unwrap();
                    assert_eq!(v, Some(b"v".to_vec()), "{target} {rt_name}");
                }
                assert!(
                    !blpop.is_finished(),
                    "{target}: the BLPOP ended with no element"
                );
                assert_eq!(c.rpush(q.clone(), &["e"]).await.unwrap(), 1);
                let got = tokio::time::timeout(LIMIT, blpop)
                    .await
                    .expect("the BLPOP got no reply")
                    .unwrap()
                    .unwrap();
                assert_eq!(got, Some((q.clone().into_bytes(), b"e".to_vec())));
                blocked(&url, 0).await;
                let _: Result<i64, slotlane::Error> = c.query(slotlane::cmd("DEL").arg(&k)).await;
            });
        }
    }
}

#[test]
fn fifty_blpops_on_one_key_served_in_the_order_they_blocked() {
    let _g = serial();
    for (target, url) in targets() {
        for (rt_name, rt) in runtimes() {
            let c = Client::connect(url.as_str()).unwrap();
            let q = format!("{}q", tag("fifty", target, rt_name));
            rt.block_on(async {
                let mut waiters = Vec::new();
                for i in 0..50u64 {
                    // each one blocked before the next is sent: the server's queue order
                    waiters.push(tokio::spawn({
                        let (c, q) = (c.clone(), q.clone());
                        async move { c.blpop(&[q.as_str()], 0.0).await }
                    }));
                    blocked(&url, i + 1).await;
                }
                let elements: Vec<String> = (0..50).map(|i| i.to_string()).collect();
                assert_eq!(c.rpush(q.clone(), &elements).await.unwrap(), 50);
                for (i, w) in waiters.into_iter().enumerate() {
                    let got = tokio::time::timeout(LIMIT, w)
                        .await
                        .expect("a BLPOP got no element")
                        .unwrap()
                        .unwrap();
                    assert_eq!(
                        got,
                        Some((q.clone().into_bytes(), i.to_string().into_bytes())),
                        "{target} {rt_name}: BLPOP {i}"
                    );
                }
                blocked(&url, 0).await;
                assert_eq!(c.llen(q.clone()).await.unwrap(), 0);
            });
        }
    }
}

#[test]
fn cancelled_blpop_leaves_the_element_to_the_next_one() {
    let _g = serial();
    for (target, url) in targets() {
        for (rt_name, rt) in runtimes() {
            let c = Client::connect(url.as_str()).unwrap();
            let q = format!("{}q", tag("cancel", target, rt_name));
            rt.block_on(async {
                let cancelled = tokio::spawn({
                    let (c, q) = (c.clone(), q.clone());
                    async move { c.blpop(&[q.as_str()], 0.0).await }
                });
                blocked(&url, 1).await;
                cancelled.abort(); // drops the future mid-wait: its lease is closed
                assert!(cancelled.await.unwrap_err().is_cancelled());
                blocked(&url, 0).await; // the server no longer holds it
                assert_eq!(c.rpush(q.clone(), &["x"]).await.unwrap(), 1);
                let got = tokio::time::timeout(LIMIT, c.blpop(&[q.as_str()], 0.0))
                    .await
                    .expect("the next BLPOP got no reply")
                    .unwrap();
                assert_eq!(
                    got,
                    Some((q.clone().into_bytes(), b"x".to_vec())),
                    "{target} {rt_name}"
                );
                assert_eq!(c.llen(q.clone()).await.unwrap(), 0);
            });
        }
    }
}
