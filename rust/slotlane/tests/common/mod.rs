//! Shared by the integration tests: the servers they run against (slotlane-testing:
//! from the environment the harness, ci/test-rust.sh, set, or else started for this test
//! process and stopped when it exits), and throwaway Redis Clusters for the failure
//! tests (ci/redis-cluster.sh).
//!   SLOTLANE_TEST_PLAIN_URL    a standalone server
//!   SLOTLANE_TEST_CLUSTER_URL  a seed of a Redis Cluster
//!   (slotlane-server: embedded in this process by slotlane_testing::bundled())
//!   SLOTLANE_TEST_PORT_BASE    first port for the tests' own clusters (default 22600)
#![allow(dead_code)]
use std::path::PathBuf;
use std::process::Command;

pub use slotlane_testing::repo_root;

pub fn plain_url() -> String {
    slotlane_testing::plain()
}

pub fn cluster_url() -> String {
    slotlane_testing::cluster()
}

/// (name, url) of every server to run the common tests against.
pub fn targets() -> Vec<(&'static str, String)> {
    vec![
        ("plain", plain_url()),
        ("cluster", cluster_url()),
        ("slotlane-server", slotlane_testing::bundled()),
    ]
}

pub fn port_base() -> u16 {
    std::env::var("SLOTLANE_TEST_PORT_BASE")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(22600)
}

fn cluster_script(args: &[&str]) -> std::process::Output {
    Command::new("bash")
        .arg(repo_root().join("ci/redis-cluster.sh"))
        .args(args)
        .output()
        .expect("run ci/redis-cluster.sh")
}

/// A Redis Cluster of its own (ci/redis-cluster.sh), stopped on drop — also when the
/// test panics.
pub struct OwnCluster {
    pub dir: PathBuf,
    pub ports: Vec<u16>,
}

impl OwnCluster {
    /// `n` primaries on ports base+offset .. (2n ports with the bus).
    pub fn start(name: &str, offset: u16, n: usize) -> OwnCluster {
        OwnCluster::start_with_replicas(name, offset, n, 0)
    }

    /// `n` primaries with `replicas` replicas each on ports base+offset .. (2n(1+replicas)
    /// ports with the bus): primary i on base+offset+i, its replica k on
    /// base+offset+n(1+k)+i (ci/redis-cluster.sh).
    pub fn start_with_replicas(name: &str, offset: u16, n: usize, replicas: usize) -> OwnCluster {
        let dir = std::env::temp_dir().join(format!("slotlane-rust-{name}-{}", std::process::id()));
        let base = port_base() + offset;
        let out = cluster_script(&[
            "start",
            dir.to_str().unwrap(),
            &base.to_string(),
            &n.to_string(),
            &replicas.to_string(),
        ]);
        if !out.status.success() {
            let _ = cluster_script(&["stop", dir.to_str().unwrap()]);
            panic!(
                "redis-cluster.sh start failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let ports = std::fs::read_to_string(dir.join("ports"))
            .unwrap()
            .lines()
            .map(|l| l.trim().parse().unwrap())
            .collect();
        OwnCluster { dir, ports }
    }

    fn script(&self, args: &[&str]) -> std::process::Output {
        cluster_script(args)
    }

    pub fn run(&self, args: &[&str]) {
        let mut full = vec![args[0], self.dir.to_str().unwrap()];
        full.extend_from_slice(&args[1..]);
        let out = self.script(&full);
        assert!(
            out.status.success(),
            "redis-cluster.sh {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.ports[0])
    }
}

impl Drop for OwnCluster {
    fn drop(&mut self) {
        let _ = self.script(&["stop", self.dir.to_str().unwrap()]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The nodes to ask about the server at `url`: the test cluster's three primaries
/// (consecutive ports from its seed), else the node itself (slotlane-server's INFO
/// blocked_clients and CLIENT LIST are the whole server's, on any shard's port).
fn nodes_of(url: &str) -> Vec<String> {
    match url.rsplit_once(':') {
        Some((host, port)) if url == cluster_url() => {
            let port: u16 = port.parse().unwrap();
            (0..3).map(|i| format!("{host}:{}", port + i)).collect()
        }
        _ => vec![url.to_string()],
    }
}

/// Waits until the server at `url` (summed over [`nodes_of`]) reports `n` blocked
/// clients (INFO clients, blocked_clients): e.g. 0 once a cancelled blocking command's
/// leased connection is closed. The limit only turns a count that never comes into a failure.
#[allow(dead_code)]
pub fn wait_blocked_count(url: &str, n: u64) {
    let nodes = nodes_of(url);
    let mut admins: Vec<slotlane::Client> = nodes
        .iter()
        .map(|a| {
            slotlane::Client::connect(slotlane::ConnectOptions::new(a).mode(slotlane::Mode::Plain))
                .unwrap()
        })
        .collect();
    let limit = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::time::Instant::now() < limit {
        let mut total = 0u64;
        for admin in admins.iter_mut() {
            let info: String = slotlane::cmd("INFO").arg("clients").query(admin).unwrap();
            total += info
                .lines()
                .find_map(|l| l.strip_prefix("blocked_clients:"))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(0);
        }
        if total == n {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    panic!("{url}: blocked_clients never became {n}");
}

/// Waits until a client of the server at `url` is blocked in `command` (CLIENT LIST:
/// flags with b, cmd=command), asked in plain mode on that node or on each node of
/// [`nodes_of`] (the test cluster's primaries): the event a test waits for before it
/// kills or cancels, instead of a sleep. The limit only turns a client that never
/// blocks into a failure instead of a hang.
pub fn wait_blocked(url: &str, command: &str) {
    let nodes = nodes_of(url);
    let mut admins: Vec<slotlane::Client> = nodes
        .iter()
        .map(|n| {
            slotlane::Client::connect(slotlane::ConnectOptions::new(n).mode(slotlane::Mode::Plain))
                .unwrap()
        })
        .collect();
    let want = format!("cmd={command}");
    let limit = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::time::Instant::now() < limit {
        for admin in admins.iter_mut() {
            let list: String = slotlane::cmd("CLIENT").arg("LIST").query(admin).unwrap();
            let blocked = list.lines().any(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                f.contains(&want.as_str())
                    && f.iter()
                        .any(|kv| kv.strip_prefix("flags=").is_some_and(|v| v.contains('b')))
            });
            if blocked {
                return;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    panic!("no client of {url} blocked in {command}");
}

/// tokio's multi-thread (2 workers) and current-thread runtimes, by name (the aio tests run on both).
pub fn runtimes() -> Vec<(&'static str, tokio::runtime::Runtime)> {
    vec![
        (
            "multi-thread",
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap(),
        ),
        (
            "current-thread",
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap(),
        ),
    ]
}

/// The primaries of the client's node list.
pub fn primaries(c: &slotlane::Client) -> Vec<slotlane::ClusterNode> {
    c.nodes()
        .unwrap()
        .into_iter()
        .filter(|n| n.primary)
        .collect()
}

/// A key whose slot the node's first range holds.
pub fn key_on(n: &slotlane::ClusterNode, prefix: &str) -> String {
    (0..)
        .map(|i| format!("{prefix}{i}"))
        .find(|k| {
            let s = slotlane::Client::key_slot(k.as_bytes());
            n.slots[0].0 <= s && s <= n.slots[0].1
        })
        .unwrap()
}

/// SCRIPT LOAD calls the node has counted (INFO commandstats; 0 when it counts none).
pub fn script_loads(c: &mut slotlane::Client, addr: &str) -> i64 {
    let info: String = slotlane::cmd("INFO")
        .arg("commandstats")
        .route(slotlane::Route::Node(addr.to_string()))
        .query(c)
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("cmdstat_script|load:calls="))
        .map(|v| v.split(',').next().unwrap().parse().unwrap())
        .unwrap_or(0)
}

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Held by the tests of one file that flush or count whole keyspaces of the shared
/// servers, so that they run one at a time (cargo runs a file's tests in parallel).
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}
