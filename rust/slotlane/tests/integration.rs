//! The safe API against real servers: a standalone Redis, a Redis Cluster and (when
//! built) slotlane-server, from ci/test-rust.sh.
mod common;

use common::*;
use slotlane::{
    cmd, Client, ConnectOptions, Error, Mode, Pipeline, Pool, Route, SetOptions, Value,
};
use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn bulk(b: &[u8]) -> Value<'_> {
    Value::Bulk(Cow::Borrowed(b))
}

fn ok() -> Value<'static> {
    Value::Status(Cow::Borrowed(b"OK"))
}

/// A key prefix unique to this test and process.
fn prefix(test: &str) -> String {
    format!("rs:{}:{test}", std::process::id())
}

#[test]
fn detects_the_mode() {
    assert_eq!(Client::connect(plain_url()).unwrap().mode(), Mode::Plain);
    assert_eq!(
        Client::connect(cluster_url()).unwrap().mode(),
        Mode::Cluster
    );
    let forced = Client::connect(ConnectOptions::new(&cluster_url()).mode(Mode::Plain)).unwrap();
    assert_eq!(forced.mode(), Mode::Plain);
    let c = Client::connect(cluster_url()).unwrap();
    assert_eq!(c.stats().nodes, 3, "a 3-primary cluster is discovered");
}

#[test]
fn typed_commands_everywhere() {
    for (name, url) in targets() {
        for resp in [2u8, 3] {
            let p = format!("{}:{name}:{resp}", prefix("typed"));
            let mut c = Client::connect(ConnectOptions::new(&url).resp_version(resp)).unwrap();
            let k = |s: &str| format!("{p}:{s}");
            // the typed methods rendered from bindings/spec (spec_conformance.rs calls each)
            assert_eq!(c.ping().unwrap(), "PONG");
            assert!(c.set(k("s"), "v1", None).unwrap());
            assert!(!c
                .set(
                    k("s"),
                    "v2",
                    Some(&SetOptions {
                        nx: true,
                        ..Default::default()
                    })
                )
                .unwrap());
            assert_eq!(
                c.get(k("s")).unwrap(),
                Some(b"v1".to_vec()),
                "{name} resp{resp}"
            );
            assert_eq!(c.get(k("missing")).unwrap(), None);
            assert_eq!(c.incr(k("n")).unwrap(), 1);
            assert_eq!(c.incrby(k("n"), 41).unwrap(), 42);
            assert!(c
                .set(
                    k("t"),
                    b"x",
                    Some(&SetOptions {
                        ex: Some(100),
                        ..Default::default()
                    })
                )
                .unwrap());
            let ttl = c.ttl(k("t")).unwrap();
            assert!((1..=100).contains(&ttl), "ttl {ttl}");
            assert!(c.expire(k("s"), 100, None).unwrap());
            assert!(!c.expire(k("nope"), 100, None).unwrap());
            // Multi-key commands over many slots: the core splits them.
            let keys: Vec<String> = (0..20).map(|i| k(&format!("m{i}"))).collect();
            let pairs: Vec<(String, String)> = keys
                .iter()
                .map(|key| (key.clone(), format!("val-{key}")))
                .collect();
            c.mset(&pairs).unwrap();
            let mut with_missing = keys.clone();
            with_missing.push(k("absent"));
            let got = c.mget(&with_missing).unwrap();
            assert_eq!(got.len(), 21);
            for (i, key) in keys.iter().enumerate() {
                assert_eq!(got[i].as_deref(), Some(format!("val-{key}").as_bytes()));
            }
            assert_eq!(got[20], None);
            assert_eq!(c.exists(&keys).unwrap(), 20);
            assert_eq!(c.delete(&keys).unwrap(), 20);
            assert_eq!(c.exists(&keys).unwrap(), 0);
            assert_eq!(c.hset(k("h"), &[("f1", "a")]).unwrap(), 1);
            c.hset(k("h"), &[("f2", "2")]).unwrap();
            assert_eq!(c.hget(k("h"), "f2").unwrap(), Some(b"2".to_vec()));
            let all = c.hgetall(k("h")).unwrap(); // a HashMap in RESP2 and RESP3
            assert_eq!(all.len(), 2);
            assert_eq!(all[&b"f1".to_vec()], b"a".to_vec());
            assert_eq!(all[&b"f2".to_vec()], b"2".to_vec());
            assert_eq!(c.rpush(k("l"), &["b"]).unwrap(), 1);
            assert_eq!(c.lpush(k("l"), &["a"]).unwrap(), 2);
            assert_eq!(
                c.lrange(k("l"), 0, -1).unwrap(),
                vec![b"a".to_vec(), b"b".to_vec()]
            );
            assert!(c.dbsize().unwrap() >= 4);
            // A generic command and its typed conversion.
            let len: i64 = cmd("STRLEN").arg(k("s")).query(&mut c).unwrap();
            assert_eq!(len, 2);
            let wrong: Result<i64, Error> = cmd("GET").arg(k("s")).query(&mut c);
            assert!(matches!(wrong, Err(Error::UnexpectedReply(_))), "{wrong:?}");
            assert_eq!(
                c.delete(&[k("s"), k("n"), k("t"), k("h"), k("l")]).unwrap(),
                5
            );
        }
    }
}

#[test]
fn pipelines_keep_order_and_fail_per_command() {
    for (name, url) in targets() {
        let p = format!("{}:{name}", prefix("pipe"));
        let mut c = Client::connect(url.as_str()).unwrap();
        let mut pipe = Pipeline::new();
        for i in 0..200 {
            pipe.set(format!("{p}:{i}"), format!("v{i}"), None);
        }
        pipe.cmd("LPUSH").arg(format!("{p}:0")).arg("x"); // WRONGTYPE
        for i in 0..200 {
            pipe.get(format!("{p}:{i}"));
        }
        pipe.cmd("NOSUCHCOMMAND").arg("k");
        let replies = pipe.exec(&mut c);
        assert_eq!(replies.len(), 402, "{name}");
        for r in &replies[..200] {
            assert_eq!(r, &Ok(ok()));
        }
        let e = replies[200].as_ref().unwrap_err();
        assert_eq!(e.response_kind(), Some("WRONGTYPE"), "{name}: {e}");
        for (i, r) in replies[201..401].iter().enumerate() {
            assert_eq!(r, &Ok(bulk(format!("v{i}").as_bytes())), "{name} GET {i}");
            assert!(
                matches!(r, Ok(Value::Bulk(Cow::Borrowed(_)))),
                "replies borrow the reply memory"
            );
        }
        assert!(
            matches!(&replies[401], Err(Error::Response { kind, .. }) if kind == "ERR"),
            "{:?}",
            replies[401]
        );
        // Owned values outlive the next call.
        let kept: Vec<Value<'static>> = replies[201..203]
            .iter()
            .map(|r| r.clone().unwrap().into_owned())
            .collect();
        drop(replies);
        c.ping().unwrap();
        assert_eq!(kept[1], bulk(b"v1"));
        // The pipeline runs again, and an empty one answers nothing.
        assert_eq!(pipe.exec(&mut c).len(), 402);
        assert!(Pipeline::new().exec(&mut c).is_empty());
        let mut del = Pipeline::new();
        for i in 0..200 {
            del.delete(&[format!("{p}:{i}")]);
        }
        assert!(del.exec(&mut c).iter().all(|r| r == &Ok(Value::Int(1))));
    }
}

#[test]
fn resp3_types() {
    for (name, url) in targets() {
        let p = format!("{}:{name}", prefix("resp3"));
        let mut c = Client::connect(ConnectOptions::new(&url).resp3()).unwrap();
        c.hset(format!("{p}:h"), &[("f", "v")]).unwrap();
        let mut pipe = Pipeline::new();
        pipe.cmd("HGETALL").arg(format!("{p}:h"));
        pipe.cmd("SADD").arg(format!("{p}:s")).arg("m");
        pipe.cmd("SMEMBERS").arg(format!("{p}:s"));
        pipe.cmd("ZADD").arg(format!("{p}:z")).arg(1.5).arg("a");
        pipe.cmd("ZSCORE").arg(format!("{p}:z")).arg("a");
        pipe.get(format!("{p}:none"));
        let r = pipe.exec(&mut c);
        assert_eq!(
            r[0],
            Ok(Value::Map(vec![(bulk(b"f"), bulk(b"v"))])),
            "{name}"
        );
        assert_eq!(r[2], Ok(Value::Set(vec![bulk(b"m")])));
        assert_eq!(r[4], Ok(Value::Double(1.5)));
        assert_eq!(r[5], Ok(Value::Nil));
        c.delete(&[format!("{p}:h"), format!("{p}:s"), format!("{p}:z")])
            .unwrap();
    }
    // Verbatim and booleans (a plain server answers these to every client).
    let mut c = Client::connect(ConnectOptions::new(&plain_url()).resp3()).unwrap();
    let info = c.command(cmd("INFO").arg("server")).unwrap();
    assert!(
        matches!(info, Value::Verbatim { format, .. } if &format == b"txt"),
        "{info:?}"
    );
}

#[test]
fn routing_overrides() {
    let mut c = Client::connect(cluster_url()).unwrap();
    let ports: Vec<u16> = (0..3)
        .map(|i| {
            cluster_url()
                .rsplit(':')
                .next()
                .unwrap()
                .parse::<u16>()
                .unwrap()
                + i
        })
        .collect();
    // One reply per primary for a command that is not merged.
    let r = c
        .command(cmd("CLUSTER").arg("MYID").route(Route::AllPrimaries))
        .unwrap();
    assert!(matches!(&r, Value::Array(ids) if ids.len() == 3), "{r:?}");
    // A given node.
    for port in &ports {
        let r: String = cmd("CONFIG")
            .arg("GET")
            .arg("port")
            .route(Route::Node(format!("127.0.0.1:{port}")))
            .query::<Vec<String>>(&mut c)
            .unwrap()
            .remove(1);
        assert_eq!(r, port.to_string());
    }
    // The owner of a slot answers COUNTKEYSINSLOT for it.
    let slot = Client::key_slot(b"routing-key");
    let n: i64 = cmd("CLUSTER")
        .arg("COUNTKEYSINSLOT")
        .arg(slot)
        .route(Route::Slot(slot))
        .query(&mut c)
        .unwrap();
    assert!(n >= 0);
    c.command(cmd("PING").route(Route::Random)).unwrap();
    // Mixed in one pipeline with commands routed by key.
    let mut pipe = Pipeline::new();
    pipe.set("{rt}a", "1", None);
    pipe.cmd("DBSIZE").route(Route::AllPrimaries);
    pipe.get("{rt}a");
    pipe.cmd("PING")
        .route(Route::Node(format!("127.0.0.1:{}", ports[1])));
    pipe.get("{rt}a");
    let r = pipe.exec(&mut c);
    assert_eq!(r[0], Ok(ok()));
    assert!(matches!(r[1], Ok(Value::Int(n)) if n >= 1), "{:?}", r[1]);
    assert_eq!(r[2], Ok(bulk(b"1")));
    assert_eq!(r[3], Ok(Value::Status(Cow::Borrowed(b"PONG"))));
    assert_eq!(r[4], Ok(bulk(b"1")));
    c.delete(&["{rt}a"]).unwrap();
}

#[test]
fn bad_arguments_get_clear_errors() {
    // Bad URLs and options: the core refuses them before connecting.
    for bad in [
        "",
        "redis://127.0.0.1:notaport",
        "redis://127.0.0.1:99999",
        "http://127.0.0.1:22500",
    ] {
        let e = Client::connect(bad).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{bad:?}: {e:?}");
        assert!(!e.message().is_empty());
    }
    // rediss:// to a port without TLS: a TLS (or I/O) error in a build with OpenSSL,
    // Unsupported in one without
    let e = Client::connect("rediss://127.0.0.1:22500").unwrap_err();
    // SAFETY: a pure query of the library's build.
    if unsafe { slotlane_sys::sl_tls_supported() } != 0 {
        assert!(matches!(e, Error::Tls(_) | Error::Io(_)), "{e:?}");
    } else {
        assert!(matches!(e, Error::Unsupported(_)), "{e:?}");
    }
    assert!(
        matches!(Client::connect("redis://127.0.0.1:1\0").unwrap_err(), Error::InvalidArgument(m) if m.contains("NUL"))
    );
    let e = Client::connect(ConnectOptions::new(&plain_url()).resp_version(4)).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    let e = Client::connect(
        ConnectOptions::new(&plain_url()).connect_timeout(Duration::from_secs(10_000_000)),
    )
    .unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument(ref m) if m.contains("too long")),
        "{e:?}"
    );
    // Nothing listens on this port: an I/O error, quickly.
    let e = Client::connect(format!("redis://127.0.0.1:{}", port_base() + 99)).unwrap_err();
    assert!(matches!(e, Error::Io(_)), "{e:?}");
    // A cluster client against a plain server.
    let e = Client::connect(ConnectOptions::new(&plain_url()).mode(Mode::Cluster)).unwrap_err();
    assert!(matches!(e, Error::Cluster(_)), "{e:?}");
    // Bad routes and commands.
    let mut c = Client::connect(cluster_url()).unwrap();
    assert!(matches!(
        c.command(cmd("PING").route(Route::Slot(16384))),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        c.command(cmd("PING").route(Route::Node("a\0b".into()))),
        Err(Error::InvalidArgument(_))
    ));
    let e = c
        .command(cmd("PING").route(Route::Node("127.0.0.1:1".into())))
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidArgument(_) | Error::Cluster(_) | Error::Io(_)
        ),
        "{e:?}"
    );
    assert!(matches!(
        c.command(&slotlane::Cmd::new()),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        Pool::new(plain_url(), 0),
        Err(Error::InvalidArgument(_))
    ));
    // A transaction over two slots is refused with CROSSSLOT, the rest of the pipeline runs.
    let mut pipe = Pipeline::new();
    pipe.cmd("MULTI");
    pipe.set("{a}x", "1", None);
    pipe.set("{b}y", "2", None);
    pipe.cmd("EXEC");
    pipe.get("{a}x");
    let r = pipe.exec(&mut c);
    assert!(r[3].is_err(), "EXEC over two slots: {:?}", r[3]);
    // The client still works afterwards.
    c.ping().unwrap();
}

#[test]
fn timeouts_and_cancel() {
    let p = prefix("timeout");
    let mut c = Client::connect(plain_url()).unwrap();
    // BLPOP blocks 5 s on the server; the pipeline's deadline is 200 ms.
    let mut pipe = Pipeline::new();
    pipe.cmd("BLPOP")
        .arg(format!("{p}:l"))
        .arg(5)
        .timeout(Duration::from_millis(200));
    let r = pipe.exec(&mut c);
    // a timeout error, not BLPOP's nil after 5 s: the deadline ended it
    assert!(matches!(r[0], Err(Error::Timeout(_))), "{:?}", r[0]);
    // The client recovers (a new connection).
    c.set(format!("{p}:k"), 1, None).unwrap();
    // Cancel from another thread (a command timeout beyond the test: only the cancel ends it).
    let mut c = Client::connect(
        ConnectOptions::new(&plain_url()).command_timeout(Duration::from_secs(600)),
    )
    .unwrap();
    let h = c.cancel_handle();
    // (once the server has the BLPOP blocked: a cancel before the execution began would
    // be dropped, as a cancel while idle must be)
    let url = plain_url();
    let canceller = std::thread::spawn(move || {
        wait_blocked(&url, "blpop");
        h.cancel();
    });
    let r = cmd("BLPOP")
        .arg(format!("{p}:l"))
        .arg(30)
        .exec(&mut c)
        .map(|v| v.into_owned());
    canceller.join().unwrap();
    // cancelled, not BLPOP's nil after 30 s nor the 5 s command timeout
    assert!(matches!(r, Err(Error::Cancelled(_))), "{r:?}");
    let h = c.cancel_handle();
    c.delete(&[format!("{p}:k")]).unwrap();
    drop(c);
    h.cancel(); // after drop: nothing to cancel, no crash
}

fn named_connections(admin: &mut Client, name: &str) -> usize {
    let list: String = cmd("CLIENT").arg("LIST").query(admin).unwrap();
    list.lines()
        .filter(|l| l.contains(&format!(" name={name} ")))
        .count()
}

#[test]
fn drop_closes_and_pool_shares() {
    let mut admin = Client::connect(plain_url()).unwrap();
    let name = format!("rsdrop{}", std::process::id());
    let clients: Vec<Client> = (0..5)
        .map(|_| {
            let mut c =
                Client::connect(ConnectOptions::new(&plain_url()).mode(Mode::Plain)).unwrap();
            cmd("CLIENT")
                .arg("SETNAME")
                .arg(&name)
                .query::<()>(&mut c)
                .unwrap();
            c
        })
        .collect();
    assert_eq!(named_connections(&mut admin, &name), 5);
    drop(clients);
    // the server notices the closes in its own time: wait for it (bounded only to report a leak)
    let deadline = Instant::now() + Duration::from_secs(30);
    while named_connections(&mut admin, &name) != 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        named_connections(&mut admin, &name),
        0,
        "dropping clients closes their connections"
    );

    for (name, url) in targets() {
        let p = format!("{}:{name}", prefix("pool"));
        let pool = Arc::new(Pool::new(url.as_str(), 3).unwrap());
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let pool = pool.clone();
                let p = p.clone();
                std::thread::spawn(move || {
                    for i in 0..50 {
                        let mut c = pool.get().unwrap();
                        let key = format!("{p}:{t}:{i}");
                        let mut pipe = Pipeline::new();
                        pipe.set(&key, i, None);
                        pipe.get(&key);
                        pipe.delete(&[&key]);
                        let r = pipe.exec(&mut c);
                        assert_eq!(r[1], Ok(bulk(i.to_string().as_bytes())));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert!(pool.size() <= 3 && pool.size() >= 1);
        // A full pool makes get_timeout fail with Timeout.
        let held: Vec<_> = (0..3).map(|_| pool.get().unwrap()).collect();
        assert!(matches!(
            pool.get_timeout(Duration::from_millis(50)),
            Err(Error::Timeout(_))
        ));
        drop(held);
        assert_eq!(pool.idle(), 3);
        pool.get().unwrap().discard();
        assert_eq!(pool.size(), 2);
    }
}

#[test]
fn stats_count_commands_and_bytes() {
    let mut c = Client::connect(cluster_url()).unwrap();
    let s0 = c.stats();
    let mut pipe = Pipeline::new();
    for i in 0..64 {
        pipe.get(format!("stats:key:{i}"));
    }
    let n = pipe.exec(&mut c).len();
    let s1 = c.stats();
    assert_eq!(n, 64);
    assert_eq!(s1.commands - s0.commands, 64);
    // The core writes the caller's bytes, nothing more, when no redirect happens.
    assert_eq!(
        s1.bytes_written - s0.bytes_written,
        pipe.as_resp().len() as u64
    );
    assert!(s1.connects >= 3);
    c.refresh().unwrap();
    assert_eq!(c.stats().refreshes, s1.refreshes + 1);
}

#[test]
fn read_from_and_retry_writes_are_accepted() {
    // No replicas here: the replica modes fall back to the primary, writes still go there.
    for r in [
        slotlane::ReadFrom::Primary,
        slotlane::ReadFrom::PreferReplica,
        slotlane::ReadFrom::Replicas,
    ] {
        for (_, url) in [("plain", plain_url()), ("cluster", cluster_url())] {
            let opts = ConnectOptions::new(&url).read_from(r).retry_writes(true);
            let mut c = Client::connect(opts).unwrap();
            let k = format!("{}:{r:?}", prefix("read_from"));
            c.command(cmd("SET").arg(&k).arg("v")).unwrap();
            assert_eq!(c.command(cmd("GET").arg(&k)).unwrap(), bulk(b"v"));
        }
    }
}

#[test]
fn on_event_runs_on_one_thread_of_its_own_that_ends_with_the_last_client() {
    let (tx, rx) = std::sync::mpsc::channel::<(slotlane::Event, Option<String>)>();
    let tx = std::sync::Mutex::new(tx);
    let opts = ConnectOptions::new(&cluster_url()).on_event(move |ev| {
        let name = std::thread::current().name().map(str::to_string);
        let _ = tx.lock().unwrap().send((ev, name));
    });
    assert_eq!(
        opts,
        opts.clone(),
        "options compare their callback by identity"
    );
    assert_ne!(opts, ConnectOptions::new(&cluster_url()).on_event(|_| {}));
    // Two clients and a pool's clients from the same options: one delivery thread.
    let mut a = Client::connect(&opts).unwrap();
    let b = slotlane::aio::Client::connect(&opts).unwrap();
    let pool = Pool::new(opts, 2).unwrap();
    let mut pc = pool.get().unwrap();
    pc.ping().unwrap();
    a.ping().unwrap();
    // Each cluster client's discovery is a topology change: a, b and the pool's client.
    for _ in 0..3 {
        let (ev, thread) = rx.recv_timeout(Duration::from_secs(60)).unwrap();
        assert_eq!(ev.kind, slotlane::EventKind::TopologyChanged, "{ev:?}");
        assert_eq!(thread.as_deref(), Some("slotlane-events"));
    }
    drop(pc);
    drop((a, b, pool));
    // The thread ends once no client holds the callback: its sender is dropped with it.
    loop {
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(_) => continue,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            Err(e) => panic!("the event thread outlived its clients: {e}"),
        }
    }
}
