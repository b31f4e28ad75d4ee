//! Failure cases against Debian's Redis Cluster (each test starts its own 3-primary
//! cluster with ci/redis-cluster.sh and stops it on drop): a primary killed in the
//! middle of a pipeline, and MOVED/ASK during a live reshard.
mod common;

use common::*;
use slotlane::{cmd, Client, ConnectOptions, Error, Mode, Pipeline, Route, Value};
use std::borrow::Cow;
use std::process::Command;
use std::time::{Duration, Instant};

/// (start, end, port) of every slot range, from CLUSTER SLOTS.
fn slot_ranges(c: &mut Client) -> Vec<(u16, u16, u16)> {
    let v: Value<'static> = cmd("CLUSTER").arg("SLOTS").query(c).unwrap();
    let mut out = Vec::new();
    for r in v.as_slice().unwrap() {
        let r = r.as_slice().unwrap();
        let port = r[2].as_slice().unwrap()[1].as_int().unwrap();
        out.push((
            r[0].as_int().unwrap() as u16,
            r[1].as_int().unwrap() as u16,
            port as u16,
        ));
    }
    out
}

fn owner(ranges: &[(u16, u16, u16)], key: &str) -> u16 {
    let s = Client::key_slot(key.as_bytes());
    ranges
        .iter()
        .find(|r| r.0 <= s && s <= r.1)
        .map(|r| r.2)
        .expect("a slot owner")
}

/// `n` keys `prefix:i` owned by `port`.
fn keys_on(ranges: &[(u16, u16, u16)], port: u16, prefix: &str, n: usize) -> Vec<String> {
    (0..)
        .map(|i| format!("{prefix}:{i}"))
        .filter(|k| owner(ranges, k) == port)
        .take(n)
        .collect()
}

fn bulk(s: &str) -> Value<'_> {
    Value::Bulk(Cow::Borrowed(s.as_bytes()))
}

#[test]
fn primary_killed_mid_pipeline() {
    let cl = OwnCluster::start("kill", 0, 3);
    let opts = ConnectOptions::new(&cl.url())
        .mode(Mode::Cluster)
        .connect_timeout(Duration::from_millis(300))
        .command_timeout(Duration::from_secs(8))
        .reconnect_backoff(Duration::from_millis(5), Duration::from_millis(50));
    let mut c = Client::connect(opts).unwrap();
    let ranges = slot_ranges(&mut c);
    let (a, victim, b) = (cl.ports[0], cl.ports[1], cl.ports[2]);
    let ka = keys_on(&ranges, a, "ka", 10);
    let kv = keys_on(&ranges, victim, "kv", 10);
    let kb = keys_on(&ranges, b, "kb", 10);
    let blocker = keys_on(&ranges, victim, "blk", 1).remove(0);
    let mut fill = Pipeline::new();
    for k in ka.iter().chain(&kv).chain(&kb) {
        fill.set(k, k, None);
    }
    assert!(fill.exec(&mut c).iter().all(|r| r.is_ok()));

    // GETs on every node answer; then a BLPOP that blocks (10 s) on the victim, on a
    // connection leased for it (a blocking command never runs in a pipeline). The victim is
    // SIGKILLed once its server has the BLPOP blocked (an event).
    let mut pipe = Pipeline::new();
    for i in 0..10 {
        pipe.get(&ka[i]);
        pipe.get(&kv[i]);
        pipe.get(&kb[i]);
    }
    let r = pipe.exec(&mut c);
    for i in 0..10 {
        assert_eq!(r[3 * i], Ok(bulk(&ka[i])));
        assert_eq!(
            r[3 * i + 1],
            Ok(bulk(&kv[i])),
            "victim's GET before the block"
        );
        assert_eq!(r[3 * i + 2], Ok(bulk(&kb[i])));
    }
    drop(r);
    let dir = cl.dir.clone();
    let victim_url = format!("redis://127.0.0.1:{victim}");
    let killer = std::thread::spawn(move || {
        wait_blocked(&victim_url, "blpop");
        let out = Command::new("bash")
            .arg(repo_root().join("ci/redis-cluster.sh"))
            .args(["kill", dir.to_str().unwrap(), &victim.to_string()])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "kill: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    });
    let blocked = cmd("BLPOP")
        .arg(&blocker)
        .arg(10)
        .query::<Option<Vec<Vec<u8>>>>(&mut c);
    killer.join().unwrap();
    // It ended with the node, not at its 10 s nor the 8 s deadline: an I/O error, not a
    // timeout (no wall-clock window a busy machine could miss).
    assert!(
        matches!(blocked, Err(Error::Io(_))),
        "the blocked BLPOP: {:?}",
        blocked
    );

    // While the victim is down: its commands fail (fast), the others work.
    let mut again = Pipeline::new();
    again.get(&ka[0]);
    again.get(&kv[0]);
    again.get(&kb[0]);
    let r = again.exec(&mut c);
    assert_eq!(r[0], Ok(bulk(&ka[0])));
    assert!(
        matches!(r[1], Err(Error::Io(_) | Error::Cluster(_))),
        "{:?}",
        r[1]
    );
    assert_eq!(r[2], Ok(bulk(&kb[0]))); // (fast: an I/O error, not the 8 s timeout)
    drop(r);

    // Restarted (its data is gone: no persistence), the node serves again through a
    // reconnect, without a new client.
    let before = c.stats();
    cl.run(&["restart", &victim.to_string()]);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = again.exec(&mut c);
        if r[1] == Ok(Value::Nil) {
            assert_eq!(r[0], Ok(bulk(&ka[0])));
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the restarted node did not serve again: {:?}",
            r[1]
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let after = c.stats();
    assert!(
        after.reconnects > before.reconnects || after.connects > before.connects,
        "{before:?} -> {after:?}"
    );
}

#[test]
fn moved_and_ask_during_a_live_reshard() {
    let cl = OwnCluster::start("reshard", 10, 3);
    let mut c = Client::connect(ConnectOptions::new(&cl.url()).mode(Mode::Cluster)).unwrap();
    let ranges = slot_ranges(&mut c);
    let (from, to) = (cl.ports[0], cl.ports[1]);
    // 300 keys in one slot owned by `from`, and keys elsewhere.
    let tag = (0..)
        .map(|i| format!("{{mig{i}}}"))
        .find(|t| owner(&ranges, t) == from)
        .unwrap();
    let slot = Client::key_slot(tag.as_bytes());
    let moving: Vec<String> = (0..300).map(|i| format!("{tag}:{i}")).collect();
    let other = keys_on(&ranges, cl.ports[2], "still", 20);
    let mut fill = Pipeline::new();
    for k in moving.iter().chain(&other) {
        fill.set(k, k, None);
    }
    assert!(fill.exec(&mut c).iter().all(|r| r.is_ok()));
    let s0 = c.stats();

    // Move the slot, a few keys at a time, while pipelines read and write it.
    let dir = cl.dir.clone();
    let migrator = std::thread::spawn(move || {
        Command::new("bash")
            .arg(repo_root().join("ci/redis-cluster.sh"))
            .args([
                "migrate",
                dir.to_str().unwrap(),
                &slot.to_string(),
                &from.to_string(),
                &to.to_string(),
            ])
            .env("SL_MIGRATE_COUNT", "10")
            .env("SL_MIGRATE_DELAY", "0.01")
            .output()
            .unwrap()
    });
    let mut rounds = 0;
    let t0 = Instant::now();
    let mut pipe = Pipeline::new();
    while !migrator.is_finished() || rounds < 3 {
        pipe.clear();
        for k in moving.iter().step_by(3).chain(&other) {
            pipe.get(k);
        }
        pipe.set(&moving[rounds % 300], &moving[rounds % 300], None);
        let r = pipe.exec(&mut c);
        for (k, got) in moving.iter().step_by(3).chain(&other).zip(&r) {
            assert_eq!(
                got,
                &Ok(bulk(k)),
                "round {rounds}: GET {k} during the migration"
            );
        }
        assert_eq!(r.last().unwrap(), &Ok(Value::Status(Cow::Borrowed(b"OK"))));
        rounds += 1;
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the migration did not finish in 60 s"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    let out = migrator.join().unwrap();
    assert!(
        out.status.success(),
        "migrate: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // After the move, the client's first command for the slot meets MOVED.
    let v = c.get(&moving[1]).unwrap();
    assert_eq!(v.as_deref(), Some(moving[1].as_bytes()));
    let s1 = c.stats();
    println!("reshard: {rounds} pipelines during the migration; moved {} ask {} tryagain {} refreshes {}", s1.moved - s0.moved, s1.ask - s0.ask, s1.tryagain - s0.tryagain, s1.refreshes - s0.refreshes);
    assert!(
        s1.moved > s0.moved,
        "MOVED redirects were followed: {s0:?} -> {s1:?}"
    );
    assert!(s1.moved + s1.ask > s0.moved + s0.ask);
    // Every key is on the new owner now.
    let n: i64 = cmd("CLUSTER")
        .arg("COUNTKEYSINSLOT")
        .arg(slot)
        .route(Route::Node(format!("127.0.0.1:{to}")))
        .query(&mut c)
        .unwrap();
    assert_eq!(n, 300);
}
