//! PubSub against standalone Redis, the Redis Cluster and slotlane-server: messages,
//! patterns, shard channels, binary and 1 MB payloads, 20 000 in order; the runtime-agnostic
//! stream on a hand-written executor (aio::block_on) and on tokio; the overflow policy; and,
//! on a Redis Cluster of its own (ports BASE+132..+137), a shard channel's owner killed with
//! SIGKILL and restarted, then its slot migrated to another primary while publishing. Every
//! wait ends on a record or a counter (a limit only turns a hang into a failure).
mod common;
use common::*;
use slotlane::{
    Client, ConnectOptions, MessageKind, Mode, Pipeline, PubSub, PubSubOptions, SubKind,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const WAIT: Option<Duration> = Some(Duration::from_secs(30));

fn next(p: &mut PubSub) -> slotlane::Message {
    p.next_timeout(WAIT)
        .unwrap()
        .expect("no record within 30 s")
}

/// The first record of `kind` (and of `channel`, when given); the records before it are
/// skipped (each wait is bounded by [`next`]).
fn until(p: &mut PubSub, kind: MessageKind, channel: Option<&str>) -> slotlane::Message {
    loop {
        let m = next(p);
        if m.kind == kind && channel.map_or(true, |c| m.channel == c.as_bytes()) {
            return m;
        }
    }
}

/// The port of the primary that serves `key`'s slot.
fn owner_port(c: &Client, key: &str) -> u16 {
    let slot = Client::key_slot(key.as_bytes());
    let n = primaries(c)
        .into_iter()
        .find(|n| n.slots.iter().any(|&(a, b)| a <= slot && slot <= b))
        .expect("an owner of the slot");
    n.addr.rsplit_once(':').unwrap().1.parse().unwrap()
}

/// A shard channel's subscriber on a Redis Cluster of its own: (1) the channel's owner
/// killed with SIGKILL gives ConnectionLost naming it; once restarted, Resubscribed(Shard)
/// ends the gap and SPUBLISH reaches the subscriber again; (2) the slot of another shard
/// channel moved live (CLUSTER SETSLOT IMPORTING/MIGRATING/NODE, ci/redis-cluster.sh
/// migrate) to another primary while a thread publishes: Resubscribed(Shard) reports the
/// gap and messages published after it still arrive, in order.
#[test]
fn shard_channel_survives_a_killed_owner_and_a_slot_move() {
    let cl = OwnCluster::start("pubsub", 32, 3);
    let opts = ConnectOptions::new(&cl.url())
        .mode(Mode::Cluster)
        .connect_timeout(Duration::from_millis(300))
        .reconnect_backoff(Duration::from_millis(5), Duration::from_millis(100));
    let mut c = Client::connect(opts.clone()).unwrap();
    let mut p = PubSub::connect(opts.clone()).unwrap();

    // (1) killed and restarted
    let ch = "rs:{k}kill";
    p.ssubscribe(ch).unwrap();
    until(&mut p, MessageKind::SSubscribe, Some(ch));
    assert_eq!(c.spublish(ch, "before").unwrap(), 1);
    assert_eq!(
        until(&mut p, MessageKind::SMessage, Some(ch)).payload,
        b"before"
    );
    let victim = owner_port(&c, ch);
    cl.run(&["kill", &victim.to_string()]);
    let lost = until(&mut p, MessageKind::ConnectionLost, None);
    let reason = String::from_utf8_lossy(&lost.payload).into_owned();
    assert!(reason.contains(&victim.to_string()), "{reason}");
    cl.run(&["restart", &victim.to_string()]);
    let m = until(&mut p, MessageKind::Resubscribed(SubKind::Shard), Some(ch));
    assert_eq!(m.channel, ch.as_bytes());
    // The command client's connection to the victim broke too: it reconnects (bounded).
    let deadline = Instant::now() + Duration::from_secs(30);
    while c.spublish(ch, "after").ok() != Some(1) {
        assert!(
            Instant::now() < deadline,
            "SPUBLISH never reached the subscriber again"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        until(&mut p, MessageKind::SMessage, Some(ch)).payload,
        b"after"
    );
    let st = p.stats();
    assert!(st.connection_losses >= 1 && st.resubscribed >= 1, "{st:?}");

    // (2) the slot moved while publishing
    let ch = "rs:{m}move";
    let slot = Client::key_slot(ch.as_bytes());
    p.ssubscribe(ch).unwrap();
    until(&mut p, MessageKind::SSubscribe, Some(ch));
    let src = owner_port(&c, ch);
    let dst = *cl.ports[..3].iter().find(|&&q| q != src).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let publisher = std::thread::spawn({
        let stop = stop.clone();
        let mut c = Client::connect(opts.clone()).unwrap();
        move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                // MOVED/ASK around the move are the core's; a failed publish is a gap message
                let _ = c.spublish(ch, i.to_string());
                i += 1;
            }
        }
    });
    let resubs = p.stats().resubscribed;
    until(&mut p, MessageKind::SMessage, Some(ch)); // receiving before the move
    cl.run(&[
        "migrate",
        &slot.to_string(),
        &src.to_string(),
        &dst.to_string(),
    ]);
    // (a new client: nodes() reads the slot cache, which the move left stale)
    let fresh = Client::connect(opts.clone()).unwrap();
    assert_eq!(owner_port(&fresh, ch), dst, "the slot moved");
    let m = until(&mut p, MessageKind::Resubscribed(SubKind::Shard), Some(ch));
    assert_eq!(m.channel, ch.as_bytes());
    assert!(p.stats().resubscribed > resubs);
    // messages published after the resubscription arrive, in increasing order
    let mut last: Option<u64> = None;
    let mut after = 0;
    while after < 100 {
        let m = until(&mut p, MessageKind::SMessage, Some(ch));
        let v: u64 = String::from_utf8_lossy(&m.payload).parse().unwrap();
        if let Some(l) = last {
            assert!(v > l, "{v} after {l}");
        }
        last = Some(v);
        after += 1;
    }
    stop.store(true, Ordering::Relaxed);
    publisher.join().unwrap();
}

#[test]
fn messages_patterns_shards_in_order() {
    for (name, url) in targets() {
        let mut c = Client::connect(url.as_str()).unwrap();
        let mut p = PubSub::connect(url.as_str()).unwrap();
        p.subscribe("rs:news").unwrap();
        let m = next(&mut p);
        assert_eq!(
            (m.kind, m.channel.as_slice(), m.count),
            (MessageKind::Subscribe, &b"rs:news"[..], 1),
            "{name}"
        );
        p.psubscribe("rs:n*").unwrap();
        assert_eq!(next(&mut p).kind, MessageKind::PSubscribe);
        p.ssubscribe("rs:{s}shard").unwrap();
        assert_eq!(next(&mut p).kind, MessageKind::SSubscribe);
        let bin = b"\x00\r\n*3\r\n$7\r\nmessage\xff".to_vec();
        c.publish("rs:news", bin.as_slice()).unwrap();
        let m = next(&mut p);
        assert_eq!(
            (m.kind, m.payload.as_slice()),
            (MessageKind::Message, bin.as_slice()),
            "{name}"
        );
        let m = next(&mut p);
        assert_eq!(
            (m.kind, m.pattern.as_slice(), m.payload.as_slice()),
            (MessageKind::PMessage, &b"rs:n*"[..], bin.as_slice())
        );
        let big = vec![7u8; 1 << 20];
        assert_eq!(c.spublish("rs:{s}shard", big.as_slice()).unwrap(), 1);
        let m = next(&mut p);
        assert_eq!((m.kind, m.payload.len()), (MessageKind::SMessage, 1 << 20));
        p.unsubscribe(SubKind::Pattern, None).unwrap();
        assert_eq!(next(&mut p).kind, MessageKind::PUnsubscribe);
        let mut pipe = Pipeline::new();
        for i in 0..20000 {
            pipe.publish("rs:news", i.to_string());
        }
        for r in pipe.exec(&mut c) {
            r.unwrap();
        }
        for i in 0..20000 {
            let m = next(&mut p);
            assert_eq!(
                (m.kind, m.payload),
                (MessageKind::Message, i.to_string().into_bytes()),
                "{name} message {i}"
            );
        }
        let st = p.stats();
        assert_eq!(
            (st.dropped, st.connection_losses, st.confirmed),
            (0, 0, 2),
            "{name}"
        );
    }
}

#[test]
fn stream_on_any_executor() {
    let url = slotlane_testing::bundled();
    let mut c = Client::connect(url.as_str()).unwrap();
    let p = PubSub::connect(url.as_str()).unwrap();
    p.subscribe("rs:stream").unwrap();
    let mut s = p.into_stream();
    let first = slotlane::aio::block_on(s.recv()).unwrap().unwrap();
    assert_eq!(first.kind, MessageKind::Subscribe);
    for i in 0..100 {
        c.publish("rs:stream", i.to_string()).unwrap();
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        for i in 0..100 {
            let m = s.recv().await.unwrap().unwrap();
            assert_eq!(m.payload, i.to_string().into_bytes());
        }
    });
    s.close();
    assert!(slotlane::aio::block_on(s.recv()).is_none()); // closed and drained
}

#[test]
fn overflow_drops_newest_and_says_how_many() {
    let url = slotlane_testing::bundled();
    let mut c = Client::connect(url.as_str()).unwrap();
    let opts = PubSubOptions {
        max_queue_bytes: Some(20 * (32 + 8 + 100)),
        health_check_interval: None,
    };
    let mut p = PubSub::with_options(url.as_str(), opts).unwrap();
    p.subscribe("rs:over").unwrap();
    assert_eq!(next(&mut p).kind, MessageKind::Subscribe);
    let mut pipe = Pipeline::new();
    for i in 0..500 {
        pipe.publish("rs:over", format!("{i:08}{}", "x".repeat(92)));
    }
    for r in pipe.exec(&mut c) {
        r.unwrap();
    }
    // nobody reads meanwhile: wait on the core's counters until every message was handled
    while p.stats().messages + p.stats().dropped < 500 {
        std::thread::sleep(Duration::from_millis(1));
    }
    let st = p.stats();
    assert_eq!((st.messages, st.dropped), (20, 480));
    for i in 0..20 {
        let m = next(&mut p);
        assert_eq!(
            (m.kind, &m.payload[..8]),
            (MessageKind::Message, format!("{i:08}").as_bytes())
        );
    }
    let m = next(&mut p);
    assert_eq!((m.kind, m.count), (MessageKind::Overflow, 480));
}

#[test]
fn closed_and_unreachable() {
    let url = slotlane_testing::bundled();
    let mut p = PubSub::connect(url.as_str()).unwrap();
    p.close();
    assert!(p.subscribe("x").is_err());
    assert!(p.next().is_none());
    let e = PubSub::connect(format!("redis://127.0.0.1:{}", port_base() + 98))
        .err()
        .unwrap();
    assert!(matches!(e, slotlane::Error::Io(_)), "{e:?}");
}
