//! Replica reads, retry_writes and topology events (issue 21), and a watched slot migrated
//! (issue 22, Error::WatchMoved), against a Redis Cluster of 3
//! primaries x 1 replica of its own (ci/redis-cluster.sh): ports SLOTLANE_TEST_PORT_BASE
//! +20..+31 — primaries +20..+22, replica of primary i on +23+i, buses +26..+31. One test
//! in order (the failover at the end changes the roles). Decided by per-node INFO
//! commandstats, CLIENT LIST and the events, never by a wall-clock window.
mod common;

use common::OwnCluster;
use slotlane::{cmd, Client, ConnectOptions, Error, Event, EventKind, Mode, ReadFrom};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn admin(port: u16) -> Client {
    Client::connect(ConnectOptions::new(&format!("127.0.0.1:{port}")).mode(Mode::Plain)).unwrap()
}

/// calls= of cmdstat_<name> in the node's INFO commandstats (0 when it counts none).
fn cmdstat(admin: &mut Client, name: &str) -> u64 {
    let info: String = cmd("INFO").arg("commandstats").query(admin).unwrap();
    let want = format!("cmdstat_{name}:calls=");
    info.lines()
        .find_map(|l| l.strip_prefix(want.as_str()))
        .map(|v| v.split(',').next().unwrap().parse().unwrap())
        .unwrap_or(0)
}

/// A key of a slot of primary 0 (slots 0..5460 by redis-cluster.sh).
fn key_on_first_primary(prefix: &str) -> String {
    (0..)
        .map(|i| format!("{prefix}:{i}"))
        .find(|k| Client::key_slot(k.as_bytes()) <= 5000)
        .unwrap()
}

/// Polls `f` until it gives Some (the bound only turns a hang into a failure).
fn poll<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let limit = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < limit, "never: {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The ids of the node's clients blocked (flags b) in `command` (CLIENT LIST).
fn blocked_ids(admin: &mut Client, command: &str) -> Vec<u64> {
    let list: String = cmd("CLIENT").arg("LIST").query(admin).unwrap();
    let want = format!("cmd={command}");
    list.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let blocked = f.contains(&want.as_str())
                && f.iter()
                    .any(|kv| kv.strip_prefix("flags=").is_some_and(|v| v.contains('b')));
            if !blocked {
                return None;
            }
            f.iter()
                .find_map(|kv| kv.strip_prefix("id="))
                .map(|v| v.parse().unwrap())
        })
        .collect()
}

/// 100 GETs with `read_from`: (GETs counted by the primary, by its replica).
fn gets_per_node(url: &str, r: ReadFrom, key: &str, primary: u16, replica: u16) -> (u64, u64) {
    let mut c = Client::connect(ConnectOptions::new(url).read_from(r)).unwrap();
    // Warm up until the replica connection serves (its connect is made on first use).
    if r != ReadFrom::Primary {
        poll("a GET on the replica", || {
            c.get(key).unwrap();
            (c.stats().replica_reads > 0).then_some(())
        });
    } else {
        c.get(key).unwrap();
    }
    let (mut p, mut s) = (admin(primary), admin(replica));
    let (p0, s0) = (cmdstat(&mut p, "get"), cmdstat(&mut s, "get"));
    for _ in 0..100 {
        c.get(key).unwrap();
    }
    (cmdstat(&mut p, "get") - p0, cmdstat(&mut s, "get") - s0)
}

#[test]
fn replica_reads_retry_writes_and_failover_event() {
    let cl = OwnCluster::start_with_replicas("replicas", 20, 3, 1);
    let url = cl.url();
    let (primary, replica) = (cl.ports[0], cl.ports[3]);
    let key = key_on_first_primary("rr");

    // --- read_from: where 100 GETs land, by each node's own counters.
    let (p, s) = gets_per_node(&url, ReadFrom::Primary, &key, primary, replica);
    assert_eq!((p, s), (100, 0), "Primary: GETs on (primary, replica)");
    let (p, s) = gets_per_node(&url, ReadFrom::PreferReplica, &key, primary, replica);
    assert_eq!(
        (p, s),
        (0, 100),
        "PreferReplica: GETs on (primary, replica)"
    );
    let (p, s) = gets_per_node(&url, ReadFrom::Replicas, &key, primary, replica);
    assert_eq!((p, s), (0, 100), "Replicas: GETs on (primary, replica)");

    // --- retry_writes: an INCR sent, its connection killed before it ran. The primary
    // holds writes (CLIENT PAUSE WRITE), so the INCR waits there, visible in CLIENT LIST;
    // CLIENT KILL breaks the connection with the INCR not executed.
    for retry in [false, true] {
        let wkey = format!("{key}:w{retry}");
        let mut c = Client::connect(
            ConnectOptions::new(&url)
                .retry_writes(retry)
                .command_timeout(Duration::from_secs(60)),
        )
        .unwrap();
        c.delete(&[wkey.as_str()]).unwrap();
        let mut a = admin(primary);
        let _: String = cmd("CLIENT")
            .arg("PAUSE")
            .arg(600_000)
            .arg("WRITE")
            .query(&mut a)
            .unwrap();
        let k = wkey.clone();
        let t = std::thread::spawn(move || {
            let r = c.incr(k.as_str());
            (c, r)
        });
        let first = poll("the INCR held by the pause", || {
            blocked_ids(&mut a, "incr").first().copied()
        });
        let _: i64 = cmd("CLIENT")
            .arg("KILL")
            .arg("ID")
            .arg(first)
            .query(&mut a)
            .unwrap();
        if retry {
            // The core sends the INCR again on a new connection: held by the pause again.
            poll("the INCR sent again", || {
                blocked_ids(&mut a, "incr")
                    .into_iter()
                    .find(|id| *id != first)
            });
            let _: String = cmd("CLIENT").arg("UNPAUSE").query(&mut a).unwrap();
            let (mut c, r) = t.join().unwrap();
            assert_eq!(
                r,
                Ok(1),
                "retry_writes: the INCR ran once, on the new connection"
            );
            assert_eq!(c.get(wkey.as_str()).unwrap(), Some(b"1".to_vec()));
            assert!(c.stats().retries >= 1, "{:?}", c.stats());
        } else {
            let (mut c, r) = t.join().unwrap();
            let _: String = cmd("CLIENT").arg("UNPAUSE").query(&mut a).unwrap();
            match r {
                Err(Error::Io(m)) => assert!(m.contains("may have been executed"), "{m}"),
                other => panic!("without retry_writes: {other:?}, want an I/O error"),
            }
            assert_eq!(c.get(wkey.as_str()).unwrap(), None, "the INCR never ran");
        }
    }

    // --- a watched key's slot migrated during the watch (issue 22): the session's EXEC
    // fails with Error::WatchMoved and the session is broken; transaction() starts over
    // on a new session, on the slot's new owner.
    let mkey = (0..)
        .map(|i| format!("mv:{i}"))
        .find(|k| (5461..=10922).contains(&Client::key_slot(k.as_bytes())))
        .unwrap();
    let slot = Client::key_slot(mkey.as_bytes());
    let (from, to) = (cl.ports[1], cl.ports[2]);
    let mut c = Client::connect(url.as_str()).unwrap();
    assert!(c.set(mkey.as_str(), 1, None).unwrap());
    {
        let mut s = c.session().unwrap();
        s.watch(&[mkey.as_str()]).unwrap();
        let v: Option<i64> = s.query(cmd("GET").arg(mkey.as_str())).unwrap();
        assert_eq!(v, Some(1));
        assert_eq!(s.slot(), Some(slot));
        cl.run(&[
            "migrate",
            &slot.to_string(),
            &from.to_string(),
            &to.to_string(),
        ]);
        let mut pipe = slotlane::Pipeline::new();
        pipe.incr(mkey.as_str());
        match s.multi_exec(&pipe) {
            Err(Error::WatchMoved(_)) => {}
            other => panic!("EXEC after the watched slot moved: {other:?}"),
        }
        // Broken: nothing more runs on it.
        assert!(s
            .query::<Option<i64>>(cmd("GET").arg(mkey.as_str()))
            .is_err());
    }
    let (old, replies) = c
        .transaction(&[mkey.as_str()], |s, pipe| {
            let old: Option<i64> = s.query(cmd("GET").arg(mkey.as_str()))?;
            pipe.incr(mkey.as_str());
            Ok(old)
        })
        .unwrap();
    assert_eq!((old, replies), (Some(1), vec![Ok(slotlane::Value::Int(2))]));
    let mut owner = admin(to);
    assert_eq!(
        cmd("GET")
            .arg(mkey.as_str())
            .query::<Option<i64>>(&mut owner),
        Ok(Some(2)),
        "the INCR ran on the new owner once"
    );
    drop(c);

    // --- on_event: CLUSTER FAILOVER of the replica, then a refresh. The callback runs on
    // the binding's own thread, so it may use the client that reported the event: here
    // the test thread holds that client's lock while the refresh reports the events, and
    // the callback waits for it — inside the core's call this would deadlock.
    let shared: Arc<Mutex<Option<Client>>> = Arc::new(Mutex::new(None));
    let (tx, rx) = mpsc::channel::<(Event, Option<bool>)>();
    let tx = Mutex::new(tx);
    let cb_client = shared.clone();
    let opts = ConnectOptions::new(&url).on_event(move |ev: Event| {
        let mut seen_primary = None;
        if ev.kind == EventKind::Failover {
            if let Some(c) = cb_client.lock().unwrap().as_mut() {
                seen_primary = Some(
                    c.nodes()
                        .unwrap()
                        .iter()
                        .any(|n| n.addr == ev.addr && n.primary),
                );
            }
        }
        let _ = tx.lock().unwrap().send((ev, seen_primary));
    });
    let mut c = Client::connect(opts).unwrap();
    // The discovery at connect changed the (empty) map: the first event.
    let (first, _) = rx.recv_timeout(Duration::from_secs(60)).unwrap();
    assert_eq!(first.kind, EventKind::TopologyChanged, "{first:?}");
    assert!(!first.addr.is_empty());
    c.ping().unwrap();
    *shared.lock().unwrap() = Some(c);

    cl.run(&["failover", &replica.to_string()]);
    {
        let mut g = shared.lock().unwrap();
        let c = g.as_mut().unwrap();
        poll("a refresh that sees the promotion", || {
            c.refresh().unwrap();
            (c.stats().failovers >= 1).then_some(())
        });
    } // the callback may take the client now
    let replica_addr = format!("127.0.0.1:{replica}");
    let (mut topology, mut failover) = (false, None);
    while !(topology && failover.is_some()) {
        let (ev, seen) = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the failover's events");
        match ev.kind {
            EventKind::TopologyChanged => topology = true,
            EventKind::Failover => {
                assert_eq!(ev.addr, replica_addr, "{ev:?}");
                failover = seen;
            }
            _ => {}
        }
    }
    assert_eq!(
        failover,
        Some(true),
        "the callback saw {replica_addr} a primary"
    );
    let mut c = shared.lock().unwrap().take().unwrap();
    let st = c.stats();
    assert!(st.failovers >= 1 && st.nodes == 6, "{st:?}");
    // Writes to the slot go to its new primary.
    assert!(c.set(key.as_str(), "after", None).unwrap());
    let mut new_primary = admin(replica);
    assert_eq!(
        cmd("GET")
            .arg(key.as_str())
            .query::<Option<String>>(&mut new_primary),
        Ok(Some("after".into()))
    );
}
