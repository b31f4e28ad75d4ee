//! The async rows of the Rust binding: N concurrent callers (tokio tasks, N = 64 and 512)
//! each awaiting one GET or SET at a time, plain and cluster, against one slotlane-server
//! (4 shards, per-shard ports, misrouted forward: the cluster-cost setup), for slotlane::aio
//! and redis-rs's async clients (a MultiplexedConnection for plain, the async ClusterClient
//! for cluster) on the same tokio runtime (current-thread, so the figures are one
//! thread's work plus each client's own threads), interleaved per round. Every reply is
//! checked; a row with a wrong or error reply fails instead of reporting a figure.
//!
//! Figures per request: total CPU (user + system of the whole process: slotlane's loop and
//! dispatcher threads included), user, system, requests per second, p50/p99 of the awaits.
//!
//! ```text
//! cd rust/bench && cargo build --release --example async_cost
//! taskset -c 1 ../target/release/examples/async_cost --server ../../build/server/slotlane-server \
//!     --port 24720 --server-cpu 0 --json ../../bench/records/
//! ../target/release/examples/async_cost --url redis://127.0.0.1:PORT [--server-desc TEXT] ...
//! ```
//! With `--url`, a slotlane-server the caller started (4 shards, per-shard, misrouted forward:
//! bench/async/run.py, `make bench`'s async rows): no server is started.
//! Record: schema slotlane.bench.async-cost/1, file <host>-<date>-<time>-async-cost-rust.json.
use redis::AsyncCommands;
use serde_json::{json, Value as J};
use slotlane::{ConnectOptions, Mode};
use slotlane_bench::cpu_ns;
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};
use std::time::Instant;

const KEYS: usize = 4096;

fn value_of(i: usize) -> Vec<u8> {
    format!("{i:032}").into_bytes()
}

struct Server(Child);
impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_server(path: &str, port: u16, cpu: &str) -> Server {
    let child = Command::new("taskset")
        .args([
            "-c",
            cpu,
            path,
            "--shards",
            "4",
            "--port-mode",
            "per-shard",
            "--misrouted",
            "forward",
        ])
        .args([
            "--bind",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--durability",
            "memory",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start slotlane-server");
    let s = Server(child);
    let limit = Instant::now() + std::time::Duration::from_secs(15);
    for p in port..port + 4 {
        loop {
            let up = slotlane::Client::connect(
                ConnectOptions::new(&format!("127.0.0.1:{p}")).mode(Mode::Plain),
            )
            .and_then(|mut c| c.ping())
            .is_ok();
            if up {
                break;
            }
            assert!(
                Instant::now() < limit,
                "slotlane-server did not come up on port {p}"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
    s
}

#[derive(Clone)]
enum Cli {
    Slotlane(slotlane::aio::Client),
    RedisPlain(redis::aio::MultiplexedConnection),
    RedisCluster(redis::cluster_async::ClusterConnection),
}

impl Cli {
    async fn get(&mut self, k: String) -> Result<Option<Vec<u8>>, String> {
        match self {
            Cli::Slotlane(c) => c.get(k).await.map_err(|e| e.to_string()),
            Cli::RedisPlain(c) => c.get(k).await.map_err(|e| e.to_string()),
            Cli::RedisCluster(c) => c.get(k).await.map_err(|e| e.to_string()),
        }
    }
    async fn set(&mut self, k: String, v: Vec<u8>) -> Result<bool, String> {
        match self {
            Cli::Slotlane(c) => c.set(k, v, None).await.map_err(|e| e.to_string()),
            Cli::RedisPlain(c) => c
                .set::<_, _, String>(k, v)
                .await
                .map(|s| s == "OK")
                .map_err(|e| e.to_string()),
            Cli::RedisCluster(c) => c
                .set::<_, _, String>(k, v)
                .await
                .map(|s| s == "OK")
                .map_err(|e| e.to_string()),
        }
    }
}

async fn connect(client: &str, url: &str, cluster: bool) -> Cli {
    match (client, cluster) {
        ("slotlane-rs-aio", _) => {
            let mode = if cluster { Mode::Cluster } else { Mode::Plain };
            Cli::Slotlane(
                slotlane::aio::Client::connect(ConnectOptions::new(url).mode(mode)).unwrap(),
            )
        }
        ("redis-rs-async", false) => Cli::RedisPlain(
            redis::Client::open(url)
                .unwrap()
                .get_multiplexed_async_connection()
                .await
                .unwrap(),
        ),
        ("redis-rs-async", true) => Cli::RedisCluster(
            redis::cluster::ClusterClient::new(vec![url])
                .unwrap()
                .get_async_connection()
                .await
                .unwrap(),
        ),
        _ => unreachable!(),
    }
}

async fn round(
    client: &str,
    url: &str,
    cluster: bool,
    op: &str,
    n: usize,
    requests: usize,
) -> Result<J, String> {
    let cli = connect(client, url, cluster).await;
    let per = requests / n;
    let lat = Arc::new(Mutex::new(Vec::with_capacity(requests)));
    let run = |tasks: usize| {
        let mut hs = Vec::new();
        for t in 0..tasks {
            let mut c = cli.clone();
            let lat = lat.clone();
            let op = op.to_string();
            hs.push(tokio::spawn(async move {
                let mut mine = Vec::with_capacity(per);
                for j in 0..per {
                    let i = (t * per + j) % KEYS;
                    let k = format!("key:{i}");
                    let t0 = Instant::now();
                    let ok = if op == "GET" {
                        c.get(k.clone()).await? == Some(value_of(i))
                    } else {
                        c.set(k.clone(), value_of(i)).await?
                    };
                    mine.push(t0.elapsed().as_secs_f64());
                    if !ok {
                        return Err(format!("{op} {k}: wrong reply"));
                    }
                }
                lat.lock().unwrap().extend(mine);
                Ok::<(), String>(())
            }));
        }
        hs
    };
    for h in run(n.min(8)) {
        h.await.unwrap()?;
    }
    lat.lock().unwrap().clear();
    let (u0, s0) = cpu_ns();
    let w0 = Instant::now();
    for h in run(n) {
        h.await.unwrap()?;
    }
    let wall = w0.elapsed().as_secs_f64();
    let (u1, s1) = cpu_ns();
    let done = (per * n) as f64;
    let mut l = lat.lock().unwrap().clone();
    l.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let load1: f64 = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split(' ').next().and_then(|x| x.parse().ok()))
        .unwrap_or(-1.0);
    Ok(json!({
        "requests": done, "wall_s": wall,
        "user_ns_per_req": (u1 - u0) / done, "sys_ns_per_req": (s1 - s0) / done,
        "cpu_ns_per_req": (u1 - u0 + s1 - s0) / done, "req_per_s": done / wall,
        "p50_us": l[l.len() / 2] * 1e6, "p99_us": l[l.len() * 99 / 100] * 1e6, "load1": load1,
    }))
}

fn median(xs: &[J], k: &str) -> f64 {
    let mut v: Vec<f64> = xs.iter().filter_map(|r| r[k].as_f64()).collect();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    if v.is_empty() {
        return f64::NAN;
    }
    if v.len() % 2 == 1 {
        v[v.len() / 2]
    } else {
        (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str, def: &str| -> String {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
            .unwrap_or_else(|| def.to_string())
    };
    let server_path = arg("--server", "../../build/server/slotlane-server");
    let port: u16 = arg("--port", "24720").parse().unwrap();
    let rounds: usize = arg("--rounds", "3").parse().unwrap();
    let requests: usize = arg("--requests", "20480").parse().unwrap();
    let json_dest = arg("--json", "");
    let given = arg("--url", "");
    let (server, url, desc) = if given.is_empty() {
        let desc = format!(
            "slotlane-server ({server_path}): 4 shards, per-shard, misrouted forward, ports {port}-{}, pinned to CPU {}",
            port + 3,
            arg("--server-cpu", "0")
        );
        (
            Some(start_server(&server_path, port, &arg("--server-cpu", "0"))),
            format!("redis://127.0.0.1:{port}"),
            desc,
        )
    } else {
        let desc = arg(
            "--server-desc",
            &format!("the slotlane-server at {given} (started by the caller)"),
        );
        (None, given.clone(), desc)
    };
    {
        let mut c =
            slotlane::Client::connect(ConnectOptions::new(&url).mode(Mode::Cluster)).unwrap();
        let mut p = slotlane::Pipeline::new();
        for i in 0..KEYS {
            p.set(format!("key:{i}"), value_of(i), None);
        }
        assert!(p.exec(&mut c).iter().all(|r| r.is_ok()));
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let clients = ["slotlane-rs-aio", "redis-rs-async"];
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    // (client, row, op, callers, rounds, the first error)
    type Row = (String, String, String, usize, Vec<J>, Option<String>);
    let mut rows: Vec<Row> = Vec::new();
    for r in 0..rounds {
        for op in ["GET", "SET"] {
            for row in ["plain", "cluster"] {
                for n in [64usize, 512] {
                    let order: Vec<&str> = if r % 2 == 0 {
                        clients.to_vec()
                    } else {
                        clients.iter().rev().copied().collect()
                    };
                    for cl in order {
                        let res = rt.block_on(round(cl, &url, row == "cluster", op, n, requests));
                        let idx = rows
                            .iter()
                            .position(|x| x.0 == cl && x.1 == row && x.2 == op && x.3 == n);
                        let idx = idx.unwrap_or_else(|| {
                            rows.push((cl.into(), row.into(), op.into(), n, Vec::new(), None));
                            rows.len() - 1
                        });
                        match res {
                            Ok(j) => {
                                println!("round {r} {cl:<16} {row:<7} {op} N={n:<4} cpu {:>7.0} ns/req (user {:>6.0}) {:>8.0} req/s p50 {:>6.0} us p99 {:>7.0} us",
                                    j["cpu_ns_per_req"].as_f64().unwrap(), j["user_ns_per_req"].as_f64().unwrap(), j["req_per_s"].as_f64().unwrap(),
                                    j["p50_us"].as_f64().unwrap(), j["p99_us"].as_f64().unwrap());
                                rows[idx].4.push(j);
                            }
                            Err(e) => rows[idx].5 = Some(e),
                        }
                    }
                }
            }
        }
    }
    drop(server);
    let mut out_rows = Vec::new();
    let mut targets = Vec::new();
    for (cl, row, op, n, rs, err) in &rows {
        let m = json!({
            "cpu_ns_per_req": median(rs, "cpu_ns_per_req"), "user_ns_per_req": median(rs, "user_ns_per_req"),
            "sys_ns_per_req": median(rs, "sys_ns_per_req"), "req_per_s": median(rs, "req_per_s"),
            "p50_us": median(rs, "p50_us"), "p99_us": median(rs, "p99_us"),
        });
        out_rows.push(json!({"client": cl, "row": row, "op": op, "callers": n, "ok": err.is_none(), "error": err,
                             "rounds": rs, "median": if err.is_none() { m.clone() } else { J::Null }}));
        if cl == "slotlane-rs-aio" && err.is_none() {
            if let Some(o) = rows.iter().find(|x| {
                x.0 == "redis-rs-async" && &x.1 == row && &x.2 == op && x.3 == *n && x.5.is_none()
            }) {
                let v = m["cpu_ns_per_req"].as_f64().unwrap() / median(&o.4, "cpu_ns_per_req");
                targets.push(json!({"name": "total CPU/req <= 0.5 x redis-rs async (tokio)", "row": row, "op": op,
                                    "callers": n, "value": v, "limit": 0.5, "met": v <= 0.5}));
            }
        }
    }
    let ok = rows.iter().all(|x| x.5.is_none());
    let host = std::fs::read_to_string("/etc/hostname")
        .unwrap_or_default()
        .trim()
        .to_string();
    let rec = json!({
        "schema": "slotlane.bench.async-cost/1", "benchmark": "async-cost", "tool": "rust/bench/examples/async_cost.rs",
        "ok": ok, "started_at_unix": started, "machine": {"hostname": host, "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0)},
        "load_note": "a shared 2-core machine (other engineers' builds and tests run on it): see rounds[].load1",
        "command": args, "runtime": "tokio current-thread (both clients)",
        "servers": {"description": desc},
        "config": {"requests_per_round": requests, "rounds": rounds, "keys": KEYS, "value_bytes": 32},
        "rows": out_rows, "targets": targets,
    });
    for t in &targets {
        println!(
            "{} {} {} N={} {:.2} {}",
            t["name"].as_str().unwrap(),
            t["row"],
            t["op"],
            t["callers"],
            t["value"].as_f64().unwrap(),
            if t["met"].as_bool().unwrap() {
                "met"
            } else {
                "MISSED"
            }
        );
    }
    if !json_dest.is_empty() {
        let now = Command::new("date")
            .args(["-u", "+%Y-%m-%d-%H%M%S"])
            .output()
            .unwrap();
        let stamp = String::from_utf8_lossy(&now.stdout).trim().to_string();
        let dir = std::path::Path::new(&json_dest);
        let tmp = dir.join(format!(".async-cost-rust-{}.tmp", std::process::id()));
        std::fs::write(&tmp, serde_json::to_string_pretty(&rec).unwrap()).unwrap();
        let mut stamp = stamp;
        loop {
            let name = dir.join(format!("{host}-{stamp}-async-cost-rust.json"));
            match std::fs::hard_link(&tmp, &name) {
                Ok(()) => {
                    println!("record: {}", name.display());
                    break;
                }
                Err(_) => {
                    std::thread::sleep(std::time::Duration::from_secs(1));
                    let now = Command::new("date")
                        .args(["-u", "+%Y-%m-%d-%H%M%S"])
                        .output()
                        .unwrap();
                    stamp = String::from_utf8_lossy(&now.stdout).trim().to_string();
                }
            }
        }
        let _ = std::fs::remove_file(&tmp);
    }
    std::process::exit(if ok { 0 } else { 1 });
}
