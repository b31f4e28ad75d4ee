//! cluster_cost — the Rust binding's cluster-cost benchmark (DESIGN.md, "The benchmarks").
//!
//!   cd rust/bench && cargo run --release --example cluster_cost [-- options]
//!
//! Rows: plain (Mode::Plain, one node, keys key:0..N-1), cluster (Mode::Cluster, the same
//! keys over every shard), one-node (Mode::Cluster, every key in one hash tag,
//! {t}:key:N) x GET and SET x depths 16 and 64; 32-byte values (filled first, the same
//! values as the C tool, so either can run with --no-fill after the other). W worker
//! threads (default 8) each own a client. In each round every row runs, one client after
//! another, in the same process and servers:
//!   slotlane-rs           the safe API as a user writes it: a Pipeline rebuilt (cleared
//!                         and refilled, RESP-encoded in Rust) for every pipeline, exec,
//!                         every reply checked through the borrowed Values
//!   slotlane-rs-prebuilt  the same with the pipelines built once before the timed loop
//!                         and reused — what the C tool measures (it pre-encodes)
//!   redis-rs              redis-rs (crates.io): redis::pipe() on one connection for
//!                         plain, its sync ClusterConnection + cluster_pipe() for cluster
//!                         and one-node
//!   c                     the C tool, build/bench/sl-cluster-cost, run as a child process
//!                         for that row (--rounds 1 --no-fill); its own record's figures
//! Figures per row and round: user and system CPU ns per request (getrusage of the whole
//! process over the timed loop, workers synchronised at barriers around it as in the C
//! tool), bytes written per request (sl_stats deltas for slotlane; the servers'
//! total_net_input_bytes deltas for every client), requests per second. Every reply is
//! checked: a wrong or error reply fails the row (no figure, an error, exit status 1).
//! Medians over rounds; one JSON record in bench/records/ (schema
//! slotlane.bench.cluster-cost/1, bench/records/README.md, plus x_c and x_redis_rs).
//!
//! TLS: --tls-ca FILE and every client speaks TLS to the servers of --plain and --cluster
//! (their redis:// URLs are TLS ports then), trusting that CA with full verification:
//! slotlane-rs through ConnectOptions::tls (TlsConfig::ca_file, the core's OpenSSL),
//! redis-rs with its tokio-rustls-comp feature (rustls with ring; a rediss:// URL and
//! TlsCertificates { root_cert }, Client::build_with_tls / ClusterClientBuilder::certs),
//! the C tool with its own --tls-ca. The tool's own fill and INFO connections too. The
//! record's config then holds "tls" (bench/tls/run.py runs it with and without).
//!
//! Servers: --plain URL and --cluster URL, or none, and the tool starts its own with
//! ci/redis-plain.sh and ci/redis-cluster.sh (a standalone redis-server for plain, a
//! 3-primary Redis Cluster for cluster and one-node; ports from --port-base, default
//! 22900), pins them to --server-cpu (1) and itself to --client-cpu (0), and stops them
//! at the end, also on failure.
use serde_json::{json, Value as J};
use slotlane::{Client, ConnectOptions, Mode, Pipeline, Route, Tls, TlsConfig, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

const VALUE_LEN: usize = 32;

use slotlane_bench::cpu_ns;

// ------------------------------------------------------------------ config
#[derive(Clone, Debug)]
struct Cfg {
    plain: String,
    cluster: String,
    rows: Vec<&'static str>,
    ops: Vec<&'static str>,
    depths: Vec<usize>,
    seconds: f64,
    warmup: f64,
    rounds: usize,
    workers: usize,
    nkeys: usize,
    clients: Vec<&'static str>,
    c_tool: Option<PathBuf>,
    json: PathBuf,
    fill: bool,
    quick: bool,
    server_desc: String,
    timeout_ms: u64,
    /// --tls-ca: the CA file, slotlane's configuration of it and redis-rs's certificates
    tls: Option<(String, Tls, Vec<u8>)>,
}

impl Cfg {
    /// A slotlane client's options for url: over TLS when --tls-ca was given.
    fn opts(&self, url: &str) -> ConnectOptions {
        let o = ConnectOptions::new(url);
        match &self.tls {
            Some((_, t, _)) => o.tls(t.clone()),
            None => o,
        }
    }
}

/// redis-rs's TLS: its rediss:// URL for a TLS server given as redis://, and the CA.
fn redis_rs_tls(url: &str, ca: &[u8]) -> (String, redis::TlsCertificates) {
    let u = match url.strip_prefix("redis://") {
        Some(rest) => format!("rediss://{rest}"),
        None => url.to_string(),
    };
    (
        u,
        redis::TlsCertificates {
            client_tls: None,
            root_cert: Some(ca.to_vec()),
        },
    )
}

const ALL_CLIENTS: [&str; 4] = ["slotlane-rs", "slotlane-rs-prebuilt", "redis-rs", "c"];

fn usage() -> ! {
    eprintln!(
        "usage: cargo run --release --example cluster_cost -- [options]
  --plain URL --cluster URL  servers (default: start a redis-server and a 3-primary Redis Cluster)
  --port-base P              ports of the servers it starts (default 22900; uses P..P+15)
  --client-cpu N --server-cpu N   pinning when it starts the servers (default 0 and 1)
  --rows LIST                plain,cluster,one-node (default all)
  --ops LIST                 GET,SET (default both)
  --depths LIST              default 16,64
  --seconds S --warmup S     timed loop and warmup per row, client and round (default 3 and 0.5)
  --rounds R                 default 3
  --workers W                default 8
  --keys N                   default 4096
  --clients LIST             {} (default all; c needs the C tool)
  --c-tool PATH              the C tool (default <repo>/build/bench/sl-cluster-cost)
  --json PATH                a file, or a DIR/ for an auto-named record (default <repo>/bench/records/)
  --no-fill                  the keys already hold the values
  --quick                    1 s per row, 0.3 s warmup, 1 round
  --server-desc TEXT         a description kept in the record
  --tls-ca FILE              every client over TLS to --plain/--cluster, trusting this CA",
        ALL_CLIENTS.join(",")
    );
    std::process::exit(2)
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the monorepo root")
}

fn pick(list: &str, allowed: &[&'static str], what: &str) -> Vec<&'static str> {
    list.split(',')
        .map(|s| {
            *allowed
                .iter()
                .find(|a| a.eq_ignore_ascii_case(s.trim()))
                .unwrap_or_else(|| {
                    eprintln!("cluster_cost: unknown {what} {s:?} (one of {allowed:?})");
                    std::process::exit(2)
                })
        })
        .collect()
}

// ------------------------------------------------------------------ servers
struct Servers {
    work: Option<PathBuf>,
}
impl Drop for Servers {
    fn drop(&mut self) {
        if let Some(w) = &self.work {
            let root = repo_root();
            let _ = Command::new("bash")
                .arg(root.join("ci/redis-cluster.sh"))
                .arg("stop")
                .arg(w.join("cluster"))
                .output();
            let _ = Command::new("bash")
                .arg(root.join("ci/redis-plain.sh"))
                .arg("stop")
                .arg(w.join("plain"))
                .output();
            let _ = std::fs::remove_dir_all(w);
        }
    }
}

fn sh(args: &[&str]) -> String {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn start_servers(base: u16, server_cpu: &str) -> (Servers, String, String, String) {
    let root = repo_root();
    let work = std::env::temp_dir().join(format!("sl-rust-bench-{}", std::process::id()));
    std::fs::create_dir_all(&work).unwrap();
    let s = Servers {
        work: Some(work.clone()),
    };
    let plain_dir = work.join("plain");
    let cluster_dir = work.join("cluster");
    sh(&[
        "bash",
        root.join("ci/redis-plain.sh").to_str().unwrap(),
        "start",
        plain_dir.to_str().unwrap(),
        &base.to_string(),
    ]);
    sh(&[
        "bash",
        root.join("ci/redis-cluster.sh").to_str().unwrap(),
        "start",
        cluster_dir.to_str().unwrap(),
        &(base + 10).to_string(),
        "3",
    ]);
    let mut pids = vec![std::fs::read_to_string(plain_dir.join("pid"))
        .unwrap()
        .trim()
        .to_string()];
    pids.extend(
        std::fs::read_to_string(cluster_dir.join("pids"))
            .unwrap()
            .lines()
            .map(|l| l.trim().to_string()),
    );
    for pid in &pids {
        sh(&["taskset", "-a", "-p", "-c", server_cpu, pid]);
    }
    let desc = format!(
        "{}: a standalone server on port {base} (plain rows) and a 3-primary Redis Cluster on ports {}-{} (cluster and one-node rows), no persistence, every server pinned to CPU {server_cpu}; started by the tool (slotlane-server with misrouted forward is not available yet)",
        sh(&["redis-server", "--version"]).trim(),
        base + 10,
        base + 12
    );
    (
        s,
        format!("redis://127.0.0.1:{base}"),
        format!("redis://127.0.0.1:{}", base + 10),
        desc,
    )
}

// ------------------------------------------------------------------ keys
fn value_of(idx: usize) -> [u8; VALUE_LEN] {
    // The C tool's values: "v%07d:" then letters depending on the key index.
    let mut out = [0u8; VALUE_LEN];
    let head = format!("v{idx:07}:");
    let n = head.len().min(VALUE_LEN);
    out[..n].copy_from_slice(&head.as_bytes()[..n]);
    for (i, b) in out.iter_mut().enumerate().skip(n) {
        *b = b'a' + ((idx * 7 + i * 3) % 26) as u8;
    }
    out
}

struct Keys {
    keys: [Vec<Vec<u8>>; 2], // [0] key:N, [1] {t}:key:N
    vals: Vec<[u8; VALUE_LEN]>,
}

fn keyset(row: &str) -> usize {
    usize::from(row == "one-node")
}

fn key_index(start: usize, p: usize, depth: usize, j: usize, nkeys: usize) -> usize {
    (start + p * depth + j) % nkeys
}

fn fill(cfg: &Cfg, url: &str, mode: Mode, ks: &Keys, set: usize) -> Result<(), String> {
    let mut c =
        Client::connect(cfg.opts(url).mode(mode)).map_err(|e| format!("fill {url}: {e}"))?;
    let mut pipe = Pipeline::new();
    for chunk in (0..ks.vals.len()).collect::<Vec<_>>().chunks(256) {
        pipe.clear();
        for &k in chunk {
            pipe.set(&ks.keys[set][k], &ks.vals[k][..], None);
        }
        if let Some(e) = pipe.exec(&mut c).into_iter().find_map(|r| r.err()) {
            return Err(format!("fill {url}: {e}"));
        }
    }
    Ok(())
}

// ------------------------------------------------------------------ one measurement
#[derive(Clone, Debug, Default)]
struct RoundResult {
    ok: bool,
    err: String,
    requests: u64,
    pipelines: u64,
    wall_s: f64,
    user_ns: f64,
    sys_ns: f64,
    bytes_written: Option<u64>,
    payload_bytes: Option<u64>,
    server_input_bytes: Option<i64>,
    moved: u64,
    ask: u64,
    load1: f64, // the 1-minute load average when the timed loop started (the machine is shared)
}

/// The 1-minute load average (/proc/loadavg), NaN when unreadable.
fn load1() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|x| x.parse().ok()))
        .unwrap_or(f64::NAN)
}

struct Shared {
    phase: AtomicU32, // 0 warmup, 1 timed, 2 stop
    fail: AtomicBool,
    bar: Barrier,
}

#[derive(Default)]
struct WorkerOut {
    err: Option<String>,
    pipelines: u64,
    payload: u64,
    stats: Option<(slotlane::Stats, slotlane::Stats)>,
}

/// A client's per-pipeline step: returns the payload bytes, or an error.
trait Runner {
    fn pipeline(&mut self, p: usize) -> Result<u64, String>;
    fn stats(&self) -> Option<slotlane::Stats> {
        None
    }
}

struct Plan {
    op: &'static str,
    depth: usize,
    start: usize,
    npipes: usize,
    set: usize,
}

fn check_slotlane(
    plan: &Plan,
    ks: &Keys,
    p: usize,
    r: &[Result<Value<'_>, slotlane::Error>],
) -> Result<(), String> {
    if r.len() != plan.depth {
        return Err(format!("{} replies for {}", r.len(), plan.depth));
    }
    for (j, rep) in r.iter().enumerate() {
        let k = key_index(plan.start, p, plan.depth, j, ks.vals.len());
        let good = match (plan.op, rep) {
            ("GET", Ok(Value::Bulk(b))) => b[..] == ks.vals[k][..],
            ("SET", Ok(Value::Status(b))) => &b[..] == b"OK",
            _ => false,
        };
        if !good {
            return Err(format!(
                "{} {}: wrong reply {rep:?}",
                plan.op,
                String::from_utf8_lossy(&ks.keys[plan.set][k])
            ));
        }
    }
    Ok(())
}

struct SlotlaneRunner<'k> {
    c: Client,
    pipe: Pipeline,
    prebuilt: Option<Vec<Pipeline>>,
    plan: Plan,
    ks: &'k Keys,
}

impl SlotlaneRunner<'_> {
    fn build(plan: &Plan, ks: &Keys, p: usize, pipe: &mut Pipeline) {
        pipe.clear();
        for j in 0..plan.depth {
            let k = key_index(plan.start, p, plan.depth, j, ks.vals.len());
            if plan.op == "GET" {
                pipe.get(&ks.keys[plan.set][k]);
            } else {
                pipe.set(&ks.keys[plan.set][k], &ks.vals[k][..], None);
            }
        }
    }
}

impl Runner for SlotlaneRunner<'_> {
    fn pipeline(&mut self, p: usize) -> Result<u64, String> {
        let pipe = match &self.prebuilt {
            Some(all) => &all[p],
            None => {
                Self::build(&self.plan, self.ks, p, &mut self.pipe);
                &self.pipe
            }
        };
        let r = pipe.exec(&mut self.c);
        check_slotlane(&self.plan, self.ks, p, &r)?;
        Ok(pipe.as_resp().len() as u64)
    }
    fn stats(&self) -> Option<slotlane::Stats> {
        Some(self.c.stats())
    }
}

enum RedisConn {
    Plain(redis::Connection),
    Cluster(Box<redis::cluster::ClusterConnection>),
}

struct RedisRsRunner<'k> {
    c: RedisConn,
    plan: Plan,
    ks: &'k Keys,
}

impl Runner for RedisRsRunner<'_> {
    fn pipeline(&mut self, p: usize) -> Result<u64, String> {
        let plan = &self.plan;
        let ks = self.ks;
        let mut payload = 0u64;
        let r: Vec<redis::Value> = match &mut self.c {
            RedisConn::Plain(con) => {
                let mut pipe = redis::pipe();
                for j in 0..plan.depth {
                    let k = key_index(plan.start, p, plan.depth, j, ks.vals.len());
                    if plan.op == "GET" {
                        pipe.cmd("GET").arg(&ks.keys[plan.set][k][..]);
                    } else {
                        pipe.cmd("SET")
                            .arg(&ks.keys[plan.set][k][..])
                            .arg(&ks.vals[k][..]);
                    }
                }
                payload += pipe.get_packed_pipeline().len() as u64;
                pipe.query(con).map_err(|e| format!("redis-rs: {e}"))?
            }
            RedisConn::Cluster(con) => {
                let mut pipe = redis::cluster::cluster_pipe();
                for j in 0..plan.depth {
                    let k = key_index(plan.start, p, plan.depth, j, ks.vals.len());
                    if plan.op == "GET" {
                        pipe.cmd("GET").arg(&ks.keys[plan.set][k][..]);
                    } else {
                        pipe.cmd("SET")
                            .arg(&ks.keys[plan.set][k][..])
                            .arg(&ks.vals[k][..]);
                    }
                }
                pipe.query(con).map_err(|e| format!("redis-rs: {e}"))?
            }
        };
        if r.len() != plan.depth {
            return Err(format!("redis-rs: {} replies for {}", r.len(), plan.depth));
        }
        for (j, rep) in r.iter().enumerate() {
            let k = key_index(plan.start, p, plan.depth, j, ks.vals.len());
            let good = match (plan.op, rep) {
                ("GET", redis::Value::BulkString(b)) => b[..] == ks.vals[k][..],
                ("SET", redis::Value::Okay) => true,
                ("SET", redis::Value::SimpleString(s)) => s == "OK",
                _ => false,
            };
            if !good {
                return Err(format!(
                    "redis-rs {} {}: wrong reply {rep:?}",
                    plan.op,
                    String::from_utf8_lossy(&ks.keys[plan.set][k])
                ));
            }
        }
        Ok(payload)
    }
}

/// Input bytes of the servers of a row (sum of total_net_input_bytes over the nodes).
fn server_input(cfg: &Cfg, url: &str, cluster: bool) -> Option<i64> {
    let mut c =
        Client::connect(
            cfg.opts(url)
                .mode(if cluster { Mode::Cluster } else { Mode::Plain }),
        )
        .ok()?;
    let mut info = Pipeline::new();
    if cluster {
        info.cmd("INFO").arg("stats").route(Route::AllPrimaries);
    } else {
        info.cmd("INFO").arg("stats");
    }
    let r = info.exec(&mut c);
    let v = r.into_iter().next()?.ok()?;
    let texts: Vec<String> = match &v {
        Value::Array(items) => items
            .iter()
            .filter_map(|i| i.as_str().map(str::to_string))
            .collect(),
        other => vec![other.as_str()?.to_string()],
    };
    let mut sum = 0i64;
    for t in texts {
        sum += t
            .lines()
            .find_map(|l| l.strip_prefix("total_net_input_bytes:"))?
            .trim()
            .parse::<i64>()
            .ok()?;
    }
    Some(sum)
}

fn measure(
    cfg: &Cfg,
    ks: &Arc<Keys>,
    client: &str,
    row: &'static str,
    op: &'static str,
    depth: usize,
) -> RoundResult {
    let url = if row == "plain" {
        cfg.plain.clone()
    } else {
        cfg.cluster.clone()
    };
    let cluster = row != "plain";
    let sh = Arc::new(Shared {
        phase: AtomicU32::new(0),
        fail: AtomicBool::new(false),
        bar: Barrier::new(cfg.workers + 1),
    });
    let outs: Arc<Mutex<Vec<WorkerOut>>> = Arc::new(Mutex::new(Vec::new()));
    let mut threads = Vec::new();
    for w in 0..cfg.workers {
        let (sh, outs, ks, url, client) = (
            sh.clone(),
            outs.clone(),
            ks.clone(),
            url.clone(),
            client.to_string(),
        );
        let nkeys = cfg.nkeys;
        let workers = cfg.workers;
        let timeout = cfg.timeout_ms;
        let base = cfg.opts(&url);
        let tls = cfg.tls.as_ref().map(|(_, _, ca)| ca.clone());
        threads.push(std::thread::spawn(move || {
            let plan = Plan {
                op,
                depth,
                start: w * nkeys / workers,
                npipes: nkeys.div_ceil(depth),
                set: keyset(row),
            };
            let npipes = plan.npipes;
            let mut out = WorkerOut::default();
            let mut runner: Option<Box<dyn Runner>> = None;
            let setup = || -> Result<Box<dyn Runner + '_>, String> {
                if client.starts_with("slotlane-rs") {
                    let opts = base
                        .mode(if cluster { Mode::Cluster } else { Mode::Plain })
                        .command_timeout(Duration::from_millis(timeout));
                    let c = Client::connect(opts).map_err(|e| format!("connect {url}: {e}"))?;
                    let plan = Plan { ..plan };
                    let prebuilt = (client == "slotlane-rs-prebuilt").then(|| {
                        (0..npipes)
                            .map(|p| {
                                let mut pipe = Pipeline::new();
                                SlotlaneRunner::build(&plan, &ks, p, &mut pipe);
                                pipe
                            })
                            .collect()
                    });
                    Ok(Box::new(SlotlaneRunner {
                        c,
                        pipe: Pipeline::with_capacity(depth),
                        prebuilt,
                        plan,
                        ks: &ks,
                    }))
                } else {
                    let c = if cluster {
                        let mut b = redis::cluster::ClusterClient::builder(vec![url.clone()]);
                        if let Some(ca) = &tls {
                            let (u, certs) = redis_rs_tls(&url, ca);
                            b = redis::cluster::ClusterClient::builder(vec![u]).certs(certs);
                        }
                        let cc = b
                            .response_timeout(Duration::from_millis(timeout))
                            .build()
                            .map_err(|e| format!("redis-rs cluster client: {e}"))?;
                        RedisConn::Cluster(Box::new(
                            cc.get_connection()
                                .map_err(|e| format!("redis-rs connect: {e}"))?,
                        ))
                    } else {
                        let cl = match &tls {
                            Some(ca) => {
                                let (u, certs) = redis_rs_tls(&url, ca);
                                redis::Client::build_with_tls(u.as_str(), certs)
                            }
                            None => redis::Client::open(url.as_str()),
                        }
                        .map_err(|e| format!("redis-rs client: {e}"))?;
                        RedisConn::Plain(
                            cl.get_connection()
                                .map_err(|e| format!("redis-rs connect: {e}"))?,
                        )
                    };
                    Ok(Box::new(RedisRsRunner { c, plan, ks: &ks }))
                }
            };
            match setup() {
                Ok(r) => runner = Some(r),
                Err(e) => {
                    out.err = Some(e);
                    sh.fail.store(true, Ordering::Relaxed);
                }
            }
            sh.bar.wait(); // B0: set up
            let mut p = 0;
            if let Some(r) = runner.as_mut() {
                while out.err.is_none() && sh.phase.load(Ordering::Relaxed) == 0 {
                    if let Err(e) = r.pipeline(p) {
                        out.err = Some(format!("worker {w}: {e}"));
                        sh.fail.store(true, Ordering::Relaxed);
                    }
                    p = (p + 1) % npipes;
                }
            }
            let s0 = runner.as_ref().and_then(|r| r.stats());
            sh.bar.wait(); // B1: warmed up
            sh.bar.wait(); // B2: go
            let (mut n, mut payload) = (0u64, 0u64);
            if let Some(r) = runner.as_mut() {
                while out.err.is_none() && sh.phase.load(Ordering::Relaxed) == 1 {
                    match r.pipeline(p) {
                        Ok(b) => payload += b,
                        Err(e) => {
                            out.err = Some(format!("worker {w}: {e}"));
                            sh.fail.store(true, Ordering::Relaxed);
                        }
                    }
                    n += 1;
                    p = (p + 1) % npipes;
                }
            }
            let s1 = runner.as_ref().and_then(|r| r.stats());
            out.pipelines = n;
            out.payload = payload;
            out.stats = s0.zip(s1);
            sh.bar.wait(); // B3: stopped
            sh.bar.wait(); // B4: CPU read
            drop(runner);
            outs.lock().unwrap().push(out);
        }));
    }
    sh.bar.wait(); // B0
    std::thread::sleep(Duration::from_secs_f64(cfg.warmup));
    sh.phase.store(1, Ordering::Relaxed);
    sh.bar.wait(); // B1
    let in0 = server_input(cfg, &url, cluster);
    let load_1m = load1();
    let (u0, s0) = cpu_ns();
    let t0 = Instant::now();
    sh.bar.wait(); // B2
    std::thread::sleep(Duration::from_secs_f64(cfg.seconds));
    sh.phase.store(2, Ordering::Relaxed);
    sh.bar.wait(); // B3
    let (u1, s1) = cpu_ns();
    let wall = t0.elapsed().as_secs_f64();
    let in1 = server_input(cfg, &url, cluster);
    sh.bar.wait(); // B4
    for t in threads {
        t.join().expect("worker panicked");
    }
    let outs = outs.lock().unwrap();
    let mut r = RoundResult {
        ok: true,
        wall_s: wall,
        user_ns: u1 - u0,
        sys_ns: s1 - s0,
        load1: load_1m,
        ..Default::default()
    };
    if let Some(e) = outs.iter().find_map(|o| o.err.clone()) {
        r.ok = false;
        r.err = e;
        return r;
    }
    r.pipelines = outs.iter().map(|o| o.pipelines).sum();
    r.requests = r.pipelines * depth as u64;
    let payload: u64 = outs.iter().map(|o| o.payload).sum();
    r.payload_bytes = (payload > 0).then_some(payload);
    if outs.iter().all(|o| o.stats.is_some()) {
        r.bytes_written = Some(
            outs.iter()
                .map(|o| o.stats.unwrap().1.bytes_written - o.stats.unwrap().0.bytes_written)
                .sum(),
        );
        r.moved = outs
            .iter()
            .map(|o| o.stats.unwrap().1.moved - o.stats.unwrap().0.moved)
            .sum();
        r.ask = outs
            .iter()
            .map(|o| o.stats.unwrap().1.ask - o.stats.unwrap().0.ask)
            .sum();
    }
    r.server_input_bytes = in0.zip(in1).map(|(a, b)| b - a);
    r
}

/// One row of the C tool, as a child process with its own JSON record.
fn measure_c(cfg: &Cfg, tool: &Path, row: &str, op: &str, depth: usize) -> RoundResult {
    let tmp = std::env::temp_dir().join(format!("sl-rust-bench-c-{}.json", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let out = Command::new(tool)
        .args([
            "--plain",
            &cfg.plain,
            "--cluster",
            &cfg.cluster,
            "--rows",
            row,
            "--ops",
            op,
            "--depths",
            &depth.to_string(),
        ])
        .args([
            "--rounds",
            "1",
            "--seconds",
            &cfg.seconds.to_string(),
            "--warmup",
            &cfg.warmup.to_string(),
        ])
        .args([
            "--workers",
            &cfg.workers.to_string(),
            "--keys",
            &cfg.nkeys.to_string(),
            "--clients",
            "slotlane",
            "--no-fill",
        ])
        .args(["--timeout-ms", &cfg.timeout_ms.to_string()])
        .args(
            cfg.tls
                .iter()
                .flat_map(|(ca, _, _)| ["--tls-ca", ca.as_str()]),
        )
        .arg("--json")
        .arg(&tmp)
        .output();
    let fail = |e: String| RoundResult {
        ok: false,
        err: e,
        ..Default::default()
    };
    let out = match out {
        Ok(o) => o,
        Err(e) => return fail(format!("run {}: {e}", tool.display())),
    };
    let rec: J = match std::fs::read(&tmp)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
    {
        Some(j) => j,
        None => {
            return fail(format!(
                "the C tool wrote no record (exit {:?}): {}",
                out.status.code(),
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    };
    let _ = std::fs::remove_file(&tmp);
    let row_j = &rec["rows"][0];
    if row_j["ok"] != json!(true) {
        return fail(format!("C tool: {}", row_j["error"]));
    }
    let rd = &row_j["rounds"][0];
    let f = |k: &str| rd[k].as_f64().unwrap_or(f64::NAN);
    RoundResult {
        ok: true,
        err: String::new(),
        requests: f("requests") as u64,
        pipelines: f("pipelines") as u64,
        wall_s: f("wall_s"),
        user_ns: f("user_ns"),
        sys_ns: f("sys_ns"),
        bytes_written: rd["bytes_written"].as_u64(),
        payload_bytes: rd["payload_bytes"].as_u64(),
        server_input_bytes: rd["server_input_bytes"].as_i64(),
        moved: rd["moved"].as_u64().unwrap_or(0),
        ask: rd["ask"].as_u64().unwrap_or(0),
        load1: f("load1"),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn per_req(x: Option<f64>, r: &RoundResult) -> f64 {
    match x {
        Some(x) if r.requests > 0 => x / r.requests as f64,
        _ => f64::NAN,
    }
}

fn num(x: f64) -> J {
    if x.is_finite() {
        json!((x * 1000.0).round() / 1000.0)
    } else {
        J::Null
    }
}

fn read_first_line(path: &str, prefix: &str) -> String {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with(prefix))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_default()
}

fn utc_now() -> (String, String) {
    let s = sh(&["date", "-u", "+%Y-%m-%dT%H:%M:%SZ|%Y-%m-%d-%H%M%S"]);
    let (a, b) = s.trim().split_once('|').unwrap();
    (a.to_string(), b.to_string())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = repo_root();
    let default_tool = root.join("build/bench/sl-cluster-cost");
    let mut cfg = Cfg {
        plain: String::new(),
        cluster: String::new(),
        rows: vec!["plain", "cluster", "one-node"],
        ops: vec!["GET", "SET"],
        depths: vec![16, 64],
        seconds: 3.0,
        warmup: 0.5,
        rounds: 3,
        workers: 8,
        nkeys: 4096,
        clients: ALL_CLIENTS.to_vec(),
        c_tool: default_tool.is_file().then_some(default_tool),
        json: root.join("bench/records/"),
        fill: true,
        quick: false,
        server_desc: String::new(),
        timeout_ms: 10000,
        tls: None,
    };
    let mut tls_ca: Option<String> = None;
    let (mut port_base, mut client_cpu, mut server_cpu) =
        (22900u16, "0".to_string(), "1".to_string());
    let mut i = 0;
    let val = |i: &mut usize| -> String {
        *i += 1;
        args.get(*i).cloned().unwrap_or_else(|| usage())
    };
    let mut seconds_set = false;
    while i < args.len() {
        match args[i].as_str() {
            "--plain" => cfg.plain = val(&mut i),
            "--cluster" => cfg.cluster = val(&mut i),
            "--port-base" => port_base = val(&mut i).parse().unwrap_or_else(|_| usage()),
            "--client-cpu" => client_cpu = val(&mut i),
            "--server-cpu" => server_cpu = val(&mut i),
            "--rows" => cfg.rows = pick(&val(&mut i), &["plain", "cluster", "one-node"], "row"),
            "--ops" => cfg.ops = pick(&val(&mut i), &["GET", "SET"], "op"),
            "--depths" => {
                cfg.depths = val(&mut i)
                    .split(',')
                    .map(|d| {
                        d.parse()
                            .ok()
                            .filter(|&d: &usize| (1..=100000).contains(&d))
                            .unwrap_or_else(|| usage())
                    })
                    .collect()
            }
            "--seconds" => {
                cfg.seconds = val(&mut i)
                    .parse()
                    .ok()
                    .filter(|s: &f64| *s > 0.0)
                    .unwrap_or_else(|| usage());
                seconds_set = true
            }
            "--warmup" => {
                cfg.warmup = val(&mut i)
                    .parse()
                    .ok()
                    .filter(|s: &f64| *s >= 0.0)
                    .unwrap_or_else(|| usage())
            }
            "--rounds" => {
                cfg.rounds = val(&mut i)
                    .parse()
                    .ok()
                    .filter(|r| (1..=50).contains(r))
                    .unwrap_or_else(|| usage())
            }
            "--workers" => {
                cfg.workers = val(&mut i)
                    .parse()
                    .ok()
                    .filter(|w| (1..=256).contains(w))
                    .unwrap_or_else(|| usage())
            }
            "--keys" => {
                cfg.nkeys = val(&mut i)
                    .parse()
                    .ok()
                    .filter(|k| (1..=10_000_000).contains(k))
                    .unwrap_or_else(|| usage())
            }
            "--clients" => cfg.clients = pick(&val(&mut i), &ALL_CLIENTS, "client"),
            "--c-tool" => cfg.c_tool = Some(PathBuf::from(val(&mut i))),
            "--json" => cfg.json = PathBuf::from(val(&mut i)),
            "--no-fill" => cfg.fill = false,
            "--quick" => cfg.quick = true,
            "--server-desc" => cfg.server_desc = val(&mut i),
            "--tls-ca" => tls_ca = Some(val(&mut i)),
            "-h" | "--help" => usage(),
            other => {
                eprintln!("cluster_cost: unknown option {other}");
                usage()
            }
        }
        i += 1;
    }
    if cfg.quick {
        if !seconds_set {
            cfg.seconds = 1.0;
        }
        cfg.warmup = cfg.warmup.min(0.3);
        cfg.rounds = 1;
    }
    if cfg.clients.contains(&"c") {
        match &cfg.c_tool {
            Some(t) if t.is_file() => {}
            _ => {
                eprintln!("cluster_cost: the C tool is not built (cmake --build build --target sl-cluster-cost), or pass --clients without c");
                std::process::exit(2)
            }
        }
    }
    if let Some(ca) = tls_ca {
        let pem = std::fs::read(&ca).unwrap_or_else(|e| {
            eprintln!("cluster_cost: --tls-ca {ca}: {e}");
            std::process::exit(2)
        });
        let t = TlsConfig::new().ca_file(&ca).build().unwrap_or_else(|e| {
            eprintln!("cluster_cost: --tls-ca {ca}: {e}");
            std::process::exit(2)
        });
        cfg.tls = Some((ca, t, pem));
    }
    let _servers;
    if cfg.plain.is_empty() || cfg.cluster.is_empty() {
        if cfg.tls.is_some() {
            eprintln!("cluster_cost: --tls-ca needs --plain and --cluster (the servers it starts speak plaintext)");
            std::process::exit(2)
        }
        if !(cfg.plain.is_empty() && cfg.cluster.is_empty()) {
            eprintln!("cluster_cost: give both --plain and --cluster, or neither");
            std::process::exit(2)
        }
        let (s, p, c, d) = start_servers(port_base, &server_cpu);
        _servers = s;
        cfg.plain = p;
        cfg.cluster = c;
        if cfg.server_desc.is_empty() {
            cfg.server_desc = format!("{d}; client pinned to CPU {client_cpu}");
        }
        sh(&[
            "taskset",
            "-p",
            "-c",
            &client_cpu,
            &std::process::id().to_string(),
        ]);
    }
    let keys = Arc::new(Keys {
        keys: [
            (0..cfg.nkeys)
                .map(|k| format!("key:{k}").into_bytes())
                .collect(),
            (0..cfg.nkeys)
                .map(|k| format!("{{t}}:key:{k}").into_bytes())
                .collect(),
        ],
        vals: (0..cfg.nkeys).map(value_of).collect(),
    });
    if cfg.fill {
        let need_plain = cfg.rows.contains(&"plain");
        let need_cluster = cfg.rows.iter().any(|r| *r != "plain");
        let mut jobs = vec![];
        if need_plain {
            jobs.push((cfg.plain.clone(), Mode::Plain, 0));
        }
        if need_cluster {
            jobs.push((cfg.cluster.clone(), Mode::Cluster, 0));
            jobs.push((cfg.cluster.clone(), Mode::Cluster, 1));
        }
        for (u, m, s) in jobs {
            if let Err(e) = fill(&cfg, &u, m, &keys, s) {
                eprintln!("cluster_cost: {e}");
                std::process::exit(1)
            }
        }
    }
    let (started_at, _) = utc_now();
    // rows[(client,row,op,depth)] = rounds
    let mut results: BTreeMap<(usize, usize, usize, usize), Vec<RoundResult>> = BTreeMap::new();
    for round in 0..cfg.rounds {
        for (ri, row) in cfg.rows.iter().enumerate() {
            for (oi, op) in cfg.ops.iter().enumerate() {
                for (di, &depth) in cfg.depths.iter().enumerate() {
                    for (ci, client) in cfg.clients.iter().enumerate() {
                        let r = if *client == "c" {
                            measure_c(&cfg, cfg.c_tool.as_ref().unwrap(), row, op, depth)
                        } else {
                            measure(&cfg, &keys, client, row, op, depth)
                        };
                        eprintln!(
                            "round {} {row:8} {op} d{depth:<3} {client:21} {}",
                            round + 1,
                            if r.ok {
                                format!(
                                    "user {:7.0} ns/req  sys {:7.0} ns/req  {:9.0} req/s",
                                    r.user_ns / r.requests.max(1) as f64,
                                    r.sys_ns / r.requests.max(1) as f64,
                                    r.requests as f64 / r.wall_s
                                )
                            } else {
                                format!("FAILED: {}", r.err)
                            }
                        );
                        results.entry((ci, ri, oi, di)).or_default().push(r);
                    }
                }
            }
        }
    }
    let (finished_at, stamp) = utc_now();

    // Medians and the record.
    let med = |rs: &[RoundResult], f: &dyn Fn(&RoundResult) -> f64| {
        median(rs.iter().filter(|r| r.ok).map(f).collect())
    };
    let user_med = |key: &(usize, usize, usize, usize)| {
        results
            .get(key)
            .map(|rs| med(rs, &|r| r.user_ns / r.requests as f64))
            .unwrap_or(f64::NAN)
    };
    let mut rows_j = Vec::new();
    let mut all_ok = true;
    let mut table = Vec::new();
    let mut targets = Vec::new();
    for (&(ci, ri, oi, di), rs) in &results {
        let client = cfg.clients[ci];
        let ok = rs.iter().all(|r| r.ok);
        all_ok &= ok;
        let m_user = med(rs, &|r| r.user_ns / r.requests as f64);
        let m_sys = med(rs, &|r| r.sys_ns / r.requests as f64);
        let m_cpu = med(rs, &|r| (r.user_ns + r.sys_ns) / r.requests as f64);
        let m_bytes = med(rs, &|r| per_req(r.bytes_written.map(|b| b as f64), r));
        let m_payload = med(rs, &|r| per_req(r.payload_bytes.map(|b| b as f64), r));
        let m_server = med(rs, &|r| per_req(r.server_input_bytes.map(|b| b as f64), r));
        let m_rps = med(rs, &|r| r.requests as f64 / r.wall_s);
        let find = |name: &str| cfg.clients.iter().position(|c| *c == name);
        let ratio = |name: &str| {
            find(name)
                .map(|c| m_user / user_med(&(c, ri, oi, di)))
                .unwrap_or(f64::NAN)
        };
        let plain_idx = cfg.rows.iter().position(|r| *r == "plain");
        let x_plain = plain_idx
            .map(|p| m_user / user_med(&(ci, p, oi, di)))
            .unwrap_or(f64::NAN);
        let (row, op, depth) = (cfg.rows[ri], cfg.ops[oi], cfg.depths[di]);
        rows_j.push(json!({
            "client": client,
            "api": if client == "redis-rs" { "redis-rs pipeline" } else { "resp" },
            "row": row, "op": op, "depth": depth, "ok": ok,
            "error": rs.iter().find(|r| !r.ok).map(|r| r.err.clone()),
            "bytes_source": match client { "redis-rs" => "servers' total_net_input_bytes deltas", _ => "sl_stats.bytes_written deltas" },
            "rounds": rs.iter().map(|r| json!({
                "ok": r.ok, "error": if r.ok { J::Null } else { json!(r.err) },
                "requests": r.requests, "pipelines": r.pipelines, "wall_s": num(r.wall_s),
                "user_ns": num(r.user_ns), "sys_ns": num(r.sys_ns),
                "bytes_written": r.bytes_written, "payload_bytes": r.payload_bytes,
                "server_input_bytes": r.server_input_bytes, "moved": r.moved, "ask": r.ask,
                "load1": num(r.load1),
                "cpu_ns_per_req": num((r.user_ns + r.sys_ns) / r.requests as f64),
                "user_ns_per_req": num(r.user_ns / r.requests as f64), "sys_ns_per_req": num(r.sys_ns / r.requests as f64),
                "bytes_per_req": num(per_req(r.bytes_written.map(|b| b as f64), r)),
                "req_per_s": num(r.requests as f64 / r.wall_s),
            })).collect::<Vec<_>>(),
            "median": {
                "cpu_ns_per_req": num(m_cpu), "user_ns_per_req": num(m_user), "sys_ns_per_req": num(m_sys), "bytes_per_req": num(m_bytes),
                "payload_bytes_per_req": num(m_payload), "extra_bytes_per_req": num(m_bytes - m_payload),
                "server_input_bytes_per_req": num(m_server), "req_per_s": num(m_rps),
            },
            "x_plain": num(x_plain),
            "x_c": num(ratio("c")),
            "x_redis_rs": num(ratio("redis-rs")),
        }));
        table.push((
            row,
            op,
            depth,
            client,
            m_user,
            m_sys,
            m_server,
            ratio("c"),
            ratio("redis-rs"),
        ));
        if client.starts_with("slotlane-rs") {
            for (name, limit, value) in [
                ("user CPU <= 1.1 x the C tool", 1.1, ratio("c")),
                ("user CPU <= 0.5 x redis-rs", 0.5, ratio("redis-rs")),
            ] {
                if value.is_finite() {
                    targets.push(json!({"name": format!("{client} {row} {name}"), "client": client, "row": row, "op": op, "depth": depth, "value": num(value), "limit": limit, "met": value <= limit}));
                }
            }
        }
    }
    let git = |a: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(&root)
            .args(a)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let lock = std::fs::read_to_string(root.join("rust/Cargo.lock")).unwrap_or_default();
    let redis_rs_version = lock
        .split("[[package]]")
        .find(|p| p.contains("name = \"redis\"\n"))
        .and_then(|p| {
            p.lines()
                .find_map(|l| l.strip_prefix("version = \""))
                .map(|v| v.trim_end_matches('"').to_string())
        });
    let server_version = |url: &str| -> J {
        Client::connect(cfg.opts(url))
            .ok()
            .and_then(|mut c| {
                slotlane::cmd("INFO")
                    .arg("server")
                    .query::<String>(&mut c)
                    .ok()
            })
            .and_then(|t| {
                t.lines()
                    .find_map(|l| l.strip_prefix("redis_version:"))
                    .map(|v| json!(v.trim()))
            })
            .unwrap_or(J::Null)
    };
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap_or_default()
        .trim()
        .to_string();
    let mut record = json!({
        "schema": "slotlane.bench.cluster-cost/1",
        "benchmark": "cluster-cost",
        "tool": "rust/bench/examples/cluster_cost.rs (cargo run --release --example cluster_cost)",
        "ok": all_ok,
        "started_at": started_at, "finished_at": finished_at,
        "machine": {
            "hostname": hostname,
            "cpu_model": read_first_line("/proc/cpuinfo", "model name"),
            // Online CPUs (not the pinned set, which is client_cpus).
            "cores": std::fs::read_to_string("/proc/cpuinfo").map(|t| t.lines().filter(|l| l.starts_with("processor")).count()).unwrap_or(0),
            "kernel": std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim(),
            "client_cpus": read_first_line("/proc/self/status", "Cpus_allowed_list"),
        },
        "versions": {
            "slotlane": slotlane::core_version(),
            "redis_rs": redis_rs_version,
            "rustc": Command::new("rustc").arg("--version").output().ok().map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()),
            "server_plain": server_version(&cfg.plain), "server_cluster": server_version(&cfg.cluster),
        },
        "git": {"commit": git(&["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".into()), "dirty": git(&["status", "--porcelain"]).map(|s| !s.is_empty())},
        "command": std::env::args().collect::<Vec<_>>(),
        "invocation": std::env::var("SL_BENCH_INVOCATION").ok(),
        "servers": {"description": cfg.server_desc, "plain": {"url": cfg.plain}, "cluster": {"url": cfg.cluster}},
        "config": {
            "workers": cfg.workers, "seconds": cfg.seconds, "warmup_seconds": cfg.warmup, "rounds": cfg.rounds,
            "keys": cfg.nkeys, "value_bytes": VALUE_LEN, "timeout_ms": cfg.timeout_ms, "quick": cfg.quick,
            "clients": cfg.clients, "c_tool": cfg.c_tool.as_ref().map(|p| p.display().to_string()),
            "order": "per round: every row, per row every client in this order; the c client is the C tool run as a child process for that row",
        },
        "rows": rows_j,
        "targets": targets,
    });

    if let Some((ca, _, _)) = &cfg.tls {
        // (only over TLS: a plaintext record is what it always was)
        record["config"]["tls"] = json!({"ca_file": ca, "options": "slotlane-rs: ConnectOptions::tls(TlsConfig::new().ca_file(..)) (OpenSSL, full verification); redis-rs: rediss:// + TlsCertificates { root_cert } (tokio-rustls-comp: rustls with ring); c: --tls-ca"});
    }
    // Write: a temporary file, then a hard link to a name that never collides.
    let text = serde_json::to_string_pretty(&record).unwrap() + "\n";
    let path = if cfg.json.to_string_lossy().ends_with('/') || cfg.json.is_dir() {
        std::fs::create_dir_all(&cfg.json).unwrap();
        let tmp = cfg.json.join(format!(
            ".{hostname}-{stamp}-cluster-cost-rust.{}.tmp",
            std::process::id()
        ));
        std::fs::write(&tmp, &text).unwrap();
        let mut stamp = stamp;
        let dest = loop {
            let d = cfg
                .json
                .join(format!("{hostname}-{stamp}-cluster-cost-rust.json"));
            match std::fs::hard_link(&tmp, &d) {
                Ok(()) => break d,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    std::thread::sleep(Duration::from_millis(1000));
                    stamp = utc_now().1;
                }
                Err(e) => panic!("write {}: {e}", d.display()),
            }
        };
        let _ = std::fs::remove_file(&tmp);
        dest
    } else {
        std::fs::write(&cfg.json, &text).unwrap();
        cfg.json.clone()
    };

    println!("\n| row | op | depth | client | user ns/req | sys ns/req | server-in B/req | x C tool | x redis-rs |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for (row, op, depth, client, u, s, b, xc, xr) in &table {
        let f = |x: f64, p: usize| {
            if x.is_finite() {
                format!("{x:.p$}")
            } else {
                "-".into()
            }
        };
        println!(
            "| {row} | {op} | {depth} | {client} | {} | {} | {} | {} | {} |",
            f(*u, 0),
            f(*s, 0),
            f(*b, 1),
            f(*xc, 2),
            f(*xr, 2)
        );
    }
    println!("\ntargets:");
    for t in &targets {
        println!(
            "  {} {} d{}: {} (limit {}) {}",
            t["name"].as_str().unwrap(),
            t["op"].as_str().unwrap(),
            t["depth"],
            t["value"],
            t["limit"],
            if t["met"] == json!(true) {
                "met"
            } else {
                "MISSED"
            }
        );
    }
    println!("\nrecord: {}", path.display());
    if !all_ok {
        eprintln!("cluster_cost: a row failed its reply checks (see the record)");
        std::process::exit(1)
    }
}
