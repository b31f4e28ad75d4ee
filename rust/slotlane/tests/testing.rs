//! slotlane::testing (feature `testing`): the embedded slotlane-server in the test process.
//! Two servers at once on ephemeral ports, a server stopped under a connected client (an
//! I/O error, not a hang or the deadline), 100 starts and stops without leaked threads or
//! file descriptors, `Durability::Always` restarted on the same directory, bad options.
use slotlane::testing::{Durability, Misrouted, PortMode, Server, ServerOptions};
use slotlane::{cmd, Client, ConnectOptions, Error};
use std::time::Duration;

/// cargo runs a file's tests on several threads: one at a time here, so that the fd and
/// thread counts of the loop test see only its own servers.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn count(dir: &str) -> usize {
    if dir == "/proc/self/task" {
        return threads_of_this_test();
    }
    std::fs::read_dir(dir).expect("read /proc").count()
}

/// This process's threads named as this one: the test harness names each test's thread
/// after the test and the threads a thread creates inherit its name, so this counts this
/// test's thread and the servers' threads it started, not the harness's threads of the
/// other tests, which come and go as those tests end and begin.
fn threads_of_this_test() -> usize {
    let me =
        std::fs::read_to_string("/proc/thread-self/comm").expect("read /proc/thread-self/comm");
    std::fs::read_dir("/proc/self/task")
        .expect("read /proc/self/task")
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| *name == me)
        .count()
}

#[test]
fn two_servers_at_once_on_ephemeral_ports() {
    let _guard = serial();
    let a = Server::start(4).unwrap();
    let b = Server::with_options(&ServerOptions {
        shards: 2,
        port_mode: PortMode::OnePort,
        ..Default::default()
    })
    .unwrap();
    let mut pa = a.ports().to_vec();
    pa.sort();
    pa.dedup();
    assert_eq!(pa.len(), 4);
    assert!(!pa.contains(&0) && !pa.contains(&b.ports()[0]));
    assert_eq!(b.ports()[0], b.ports()[1]);
    assert_eq!(a.url(), format!("redis://127.0.0.1:{}", a.ports()[0]));
    let mut ca = Client::connect(a.url()).unwrap();
    let mut cb = Client::connect(b.url()).unwrap();
    for i in 0..64 {
        ca.set(format!("key:{i}"), format!("a{i}"), None).unwrap();
    }
    cb.set("key:1", "b1", None).unwrap();
    assert_eq!(ca.get("key:1").unwrap().as_deref(), Some(&b"a1"[..]));
    assert_eq!(cb.get("key:1").unwrap().as_deref(), Some(&b"b1"[..]));
    assert_eq!(cb.get("key:2").unwrap(), None);
    assert_eq!(ca.dbsize().unwrap(), 64);
    assert_eq!(cb.dbsize().unwrap(), 1);
    let mut seen: Vec<u16> = ca
        .nodes()
        .unwrap()
        .iter()
        .map(|n| n.addr.rsplit(':').next().unwrap().parse().unwrap())
        .collect();
    seen.sort();
    assert_eq!(seen, pa);
}

#[test]
fn stopped_while_connected_gives_errors_not_hangs() {
    let _guard = serial();
    let mut s = Server::start(2).unwrap();
    let mut c =
        Client::connect(ConnectOptions::new(s.url()).command_timeout(Duration::from_secs(60)))
            .unwrap();
    c.set("k", "v", None).unwrap();
    s.stop();
    let e = c.get("k").unwrap_err();
    assert!(
        matches!(e, Error::Io(_) | Error::Cluster(_)),
        "an I/O error, never the 60 s deadline: {e:?}"
    );
    s.stop(); // a second stop: nothing
}

#[test]
fn start_stop_100_times_leaks_no_threads_or_fds() {
    let _guard = serial();
    // one round first, a client included, so that what the process starts once (lazily, on
    // first use) is in the baseline: the loop below must leave the counts as it found them
    {
        let s = Server::start(2).unwrap();
        let mut c =
            Client::connect(ConnectOptions::new(s.url()).mode(slotlane::Mode::Plain)).unwrap();
        c.set("k", 0, None).unwrap();
    }
    let (fds0, threads0) = (count("/proc/self/fd"), count("/proc/self/task"));
    for i in 0..100u32 {
        let s = Server::with_options(&ServerOptions {
            shards: i % 3 + 1,
            port_mode: if i % 2 == 1 {
                PortMode::OnePort
            } else {
                PortMode::PerShard
            },
            misrouted: Misrouted::Forward,
            ..Default::default()
        })
        .unwrap();
        let mut c =
            Client::connect(ConnectOptions::new(s.url()).mode(slotlane::Mode::Plain)).unwrap();
        c.set("k", i, None).unwrap();
        drop(s); // with the client still connected
    }
    // a joined thread leaves /proc/self/task a moment after pthread_join returns (the kernel
    // releases the task after waking the joiner): look again until it is gone, bounded
    let mut after = (count("/proc/self/fd"), count("/proc/self/task"));
    for _ in 0..100_000 {
        if after == (fds0, threads0) {
            break;
        }
        std::thread::yield_now();
        after = (count("/proc/self/fd"), count("/proc/self/task"));
    }
    let (fds1, threads1) = after;
    println!("100 starts/stops: fds {fds0} -> {fds1}, threads {threads0} -> {threads1}");
    assert_eq!(
        (fds1, threads1),
        (fds0, threads0),
        "(fds, threads) after 100 starts/stops"
    );
}

#[test]
fn durability_always_restart_keeps_data() {
    let _guard = serial();
    let dir = Server::temp_dir("always");
    let o = ServerOptions {
        shards: 3,
        durability: Durability::Always,
        dir: Some(dir.clone()),
        ..Default::default()
    };
    {
        let s = Server::with_options(&o).unwrap();
        let e = Server::with_options(&o).unwrap_err(); // the directory is locked
        assert_eq!(e.code, slotlane_sys::server::SL_SERVER_EDIR, "{e}");
        let mut c = Client::connect(s.url()).unwrap();
        for i in 0..50 {
            c.set(format!("key:{i}"), format!("v{i}"), None).unwrap();
        }
    }
    let s = Server::with_options(&o).unwrap();
    let mut c = Client::connect(s.url()).unwrap();
    assert_eq!(c.dbsize().unwrap(), 50);
    assert_eq!(c.get("key:17").unwrap().as_deref(), Some(&b"v17"[..]));
    drop(c);
    drop(s);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_options_are_errors() {
    let _guard = serial();
    let e = Server::start(0).unwrap_err();
    assert!(e.message.contains("shards"), "{e}");
    let e = Server::with_options(&ServerOptions {
        settings: vec![("maxclients".into(), "many".into())],
        ..Default::default()
    })
    .unwrap_err();
    assert!(e.message.contains("maxclients"), "{e}");
    let a = Server::start(1).unwrap();
    let e = Server::with_options(&ServerOptions {
        shards: 1,
        port: a.ports()[0],
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(e.code, slotlane_sys::server::SL_SERVER_EBIND, "{e}");
    let s = Server::with_options(&ServerOptions {
        shards: 1,
        settings: vec![("hash-max-listpack-entries".into(), "3".into())],
        ..Default::default()
    })
    .unwrap();
    let mut c = Client::connect(s.url()).unwrap();
    let n: i64 = cmd("HSET")
        .arg("h")
        .arg("f1")
        .arg(1)
        .arg("f2")
        .arg(2)
        .arg("f3")
        .arg(3)
        .arg("f4")
        .arg(4)
        .query(&mut c)
        .unwrap();
    assert_eq!(n, 4);
    let enc: String = cmd("OBJECT")
        .arg("ENCODING")
        .arg("h")
        .query(&mut c)
        .unwrap();
    assert_eq!(enc, "hashtable");
}
