//! PubSub against standalone Redis, the Redis Cluster and slotlane-server: messages,
//! patterns, shard channels, binary and 1 MB payloads, 20 000 in order; the runtime-agnostic
//! stream on a hand-written executor (aio::block_on) and on tokio; the overflow policy. Every
//! wait ends on a record or a counter (a limit only turns a hang into a failure).
mod common;
use common::*;
use slotlane::{Client, MessageKind, Pipeline, PubSub, PubSubOptions, SubKind};
use std::time::Duration;

const WAIT: Option<Duration> = Some(Duration::from_secs(30));

fn next(p: &mut PubSub) -> slotlane::Message {
    p.next_timeout(WAIT)
        .unwrap()
        .expect("no record within 30 s")
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
