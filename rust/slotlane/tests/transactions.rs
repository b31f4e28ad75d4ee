//! Sessions and transactions (issue 22): WATCH conflicts from 8 threads against a model, an
//! abandoned session's connection coming back clean, CROSSSLOT refused before sending —
//! against the suite's standalone server, Redis Cluster and slotlane-server. Decided by
//! replies and per-node counters, never by sleeps.
mod common;

use slotlane::{cmd, Client, Error, Pipeline, Route, Value};
use std::sync::{Arc, Barrier};

const THREADS: usize = 8;
const PER_THREAD: usize = 25;

/// One thread's transactions: WATCH, GET, MULTI INCR EXEC until `PER_THREAD` committed.
/// Returns (the INCR results of the committed ones, aborts). Odd threads use
/// Client::transaction, even ones a Session by hand.
fn worker(url: &str, key: &str, t: usize, start: &Barrier) -> (Vec<i64>, usize) {
    let mut c = Client::connect(url).unwrap();
    let (mut seen, mut aborts) = (Vec::new(), 0);
    start.wait();
    if t % 2 == 0 {
        let mut s = c.session().unwrap();
        let mut pipe = Pipeline::new();
        while seen.len() < PER_THREAD {
            s.watch(&[key]).unwrap();
            let old: Option<i64> = s.query(cmd("GET").arg(key)).unwrap();
            pipe.clear();
            let n = pipe.incr(key);
            match s.multi_exec(&pipe) {
                Ok(replies) => {
                    let n = n.get(&replies).unwrap();
                    // Committed: nothing changed the key between the watched GET and EXEC.
                    assert_eq!(n, old.unwrap_or(0) + 1, "thread {t}");
                    seen.push(n);
                }
                Err(Error::Watch(_)) => aborts += 1,
                Err(e) => panic!("thread {t}: {e:?}"),
            }
        }
    } else {
        while seen.len() < PER_THREAD {
            let mut attempts = 0;
            let ((old, slot), replies) = c
                .transaction(&[key], |s, pipe| {
                    attempts += 1;
                    let old: Option<i64> = s.query(cmd("GET").arg(key))?;
                    Ok((old, pipe.incr(key)))
                })
                .unwrap();
            let n = slot.get(&replies).unwrap();
            assert_eq!(n, old.unwrap_or(0) + 1, "thread {t}");
            seen.push(n);
            aborts += attempts - 1;
        }
    }
    (seen, aborts)
}

#[test]
fn watch_conflicts_from_eight_threads_against_a_model() {
    let _g = common::serial();
    for (name, url) in common::targets() {
        let key = format!("tx:model:{name}");
        Client::connect(url.as_str())
            .unwrap()
            .delete(&[key.as_str()])
            .unwrap();
        let start = Arc::new(Barrier::new(THREADS));
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (url, key, start) = (url.clone(), key.clone(), start.clone());
                std::thread::spawn(move || worker(&url, &key, t, &start))
            })
            .collect();
        let mut all = Vec::new();
        let mut aborts = 0;
        for h in handles {
            let (seen, a) = h.join().unwrap();
            all.extend(seen);
            aborts += a;
        }
        // The model: every committed INCR applied once and no aborted one (the key counts
        // exactly the commits, and each commit saw its own distinct value).
        all.sort_unstable();
        let want: Vec<i64> = (1..=(THREADS * PER_THREAD) as i64).collect();
        assert_eq!(all, want, "{name}: the committed INCRs' results");
        let mut c = Client::connect(url.as_str()).unwrap();
        assert_eq!(
            c.get(key.as_str()).unwrap(),
            Some((THREADS * PER_THREAD).to_string().into_bytes()),
            "{name}"
        );
        eprintln!(
            "transactions: {name}: {} commits, {aborts} aborts",
            THREADS * PER_THREAD
        );
    }
}

#[test]
fn abandoned_session_comes_back_clean() {
    let _g = common::serial();
    for (name, url) in common::targets() {
        let key = format!("tx:abandon:{name}");
        let mut other = Client::connect(url.as_str()).unwrap();
        other.set(key.as_str(), "0", None).unwrap();
        let mut c = Client::connect(url.as_str()).unwrap();

        // A WATCH left behind: the session is dropped without EXEC.
        let id1: i64 = {
            let mut s = c.session().unwrap();
            s.watch(&[key.as_str()]).unwrap();
            assert!(s.watching());
            s.query(cmd("CLIENT").arg("ID")).unwrap()
        };
        other.set(key.as_str(), "changed", None).unwrap();
        {
            let mut s = c.session().unwrap();
            let _: Option<String> = s.query(cmd("GET").arg(key.as_str())).unwrap();
            assert!(!s.watching(), "{name}: a new session watches nothing");
            let id2: i64 = s.query(cmd("CLIENT").arg("ID")).unwrap();
            assert_eq!(id1, id2, "{name}: the leased connection is reused");
            // The old WATCH is gone from the connection (UNWATCH was sent): EXEC commits.
            let mut pipe = Pipeline::new();
            let set = pipe.set(key.as_str(), "mine", None);
            let replies = s.multi_exec(&pipe).expect("EXEC after an abandoned WATCH");
            assert_eq!(set.get(&replies), Ok(true), "{name}");
        }

        // A MULTI left open (sent raw): DISCARD on drop, nothing queued is applied.
        {
            let mut s = c.session().unwrap();
            let _: Option<String> = s.query(cmd("GET").arg(key.as_str())).unwrap();
            let _: String = s.query(&cmd("MULTI")).unwrap();
            let queued = s.command(cmd("SET").arg(key.as_str()).arg("abandoned"));
            assert_eq!(queued, Ok(Value::Status(b"QUEUED"[..].into())), "{name}");
            assert!(
                s.watching(),
                "{name}: the open MULTI is known to the session"
            );
        }
        {
            let mut s = c.session().unwrap();
            // Runs at once (not QUEUED): the MULTI was discarded.
            let v: Option<String> = s.query(cmd("GET").arg(key.as_str())).unwrap();
            assert_eq!(v.as_deref(), Some("mine"), "{name}");
            let id3: i64 = s.query(cmd("CLIENT").arg("ID")).unwrap();
            assert_eq!(id1, id3, "{name}: the same connection, clean");
        }
        assert_eq!(
            other.get(key.as_str()).unwrap(),
            Some(b"mine".to_vec()),
            "{name}"
        );
    }
}

/// MULTI calls counted by every primary of the client's cluster.
fn multis(c: &mut Client) -> u64 {
    let addrs: Vec<String> = common::primaries(c).into_iter().map(|n| n.addr).collect();
    addrs
        .into_iter()
        .map(|a| {
            let info: String = cmd("INFO")
                .arg("commandstats")
                .route(Route::Node(a))
                .query(c)
                .unwrap();
            info.lines()
                .find_map(|l| l.strip_prefix("cmdstat_multi:calls="))
                .map(|v| v.split(',').next().unwrap().parse::<u64>().unwrap())
                .unwrap_or(0)
        })
        .sum()
}

#[test]
fn crossslot_is_refused_before_sending() {
    let _g = common::serial();
    let mut c = Client::connect(common::cluster_url()).unwrap();
    let (a, b) = ("tx:{cross}:a", "tx:{other}:b");
    assert_ne!(
        Client::key_slot(a.as_bytes()),
        Client::key_slot(b.as_bytes())
    );
    c.delete(&[a]).unwrap();
    c.delete(&[b]).unwrap();
    let before = multis(&mut c);
    {
        let mut s = c.session().unwrap();
        s.watch(&[a]).unwrap();
        let mut pipe = Pipeline::new();
        pipe.set(a, "1", None);
        pipe.set(b, "1", None);
        match s.multi_exec(&pipe) {
            Err(Error::Cluster(m)) => assert!(m.contains("CROSSSLOT"), "{m}"),
            other => panic!("a transaction over two slots: {other:?}"),
        }
        // One command of another slot, and a WATCH over two slots: refused as well.
        match s.command(cmd("GET").arg(b)) {
            Err(Error::Cluster(m)) => assert!(m.contains("CROSSSLOT"), "{m}"),
            other => panic!("GET of another slot: {other:?}"),
        }
        match s.watch(&[a, b]) {
            Err(Error::Cluster(m)) => assert!(m.contains("CROSSSLOT"), "{m}"),
            other => panic!("WATCH over two slots: {other:?}"),
        }
    }
    assert_eq!(multis(&mut c), before, "no MULTI reached a node");
    assert_eq!(c.get(b).unwrap(), None, "nothing was applied");
    assert_eq!(c.get(a).unwrap(), None, "nothing was applied");

    // transaction(): keys over two slots are refused too; no keys is a bad argument.
    let r = c.transaction(&[a, b], |_, pipe| {
        pipe.set(a, "1", None);
        Ok(())
    });
    assert!(matches!(r, Err(Error::Cluster(_))), "{r:?}");
    let r = c.transaction::<&str, _, _>(&[], |_, _| Ok(()));
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
    // An error of the closure ends the transaction with it (the session's end UNWATCHes).
    let r = c.transaction(&[a], |_, _| -> Result<(), Error> {
        Err(Error::InvalidArgument("the caller's".into()))
    });
    assert_eq!(
        r.unwrap_err(),
        Error::InvalidArgument("the caller's".into())
    );
}
