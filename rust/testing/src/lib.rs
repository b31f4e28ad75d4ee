//! The servers slotlane's Rust tests and doc examples run against, so that `cargo test`
//! in `rust/` works with nothing started by hand, as redis-rs's own suite does.
//!
//! Each Redis server comes from the environment when the harness (ci/test-rust.sh)
//! started it, or else is started on first use by `ci/suite-servers.sh rust ...` (ports
//! from 22750 in the Rust range of ci/lib.sh's port map) and stopped when this test
//! process exits: the helper waits for its stdin, a pipe whose write end this process
//! holds until it ends, however it ends (a panic, an abort, a signal).
//!
//! | function    | environment (harness)       | started otherwise                        |
//! |-------------|-----------------------------|------------------------------------------|
//! | [`plain`]   | `SLOTLANE_TEST_PLAIN_URL`   | Debian's redis-server, standalone        |
//! | [`cluster`] | `SLOTLANE_TEST_CLUSTER_URL` | a 3-primary Redis Cluster                |
//! | [`url`]     | `SLOTLANE_URL`              | the same as [`bundled`] (doc examples)   |
//!
//! [`bundled`] is always the embedded slotlane-server of this test process
//! ([`slotlane::testing::Server`], 4 shards in per-shard mode), started on first use and
//! kept for the process's life: no executable, no cmake. Its base port is
//! `SLOTLANE_TEST_SERVER_PORT` when the harness sets one (ci/test-rust.sh: BASE+20..+23,
//! for test binaries, which cargo runs one at a time), else ports the kernel chooses (a
//! bare `cargo test`, and the doc examples, which rustdoc runs in parallel).
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};

/// The monorepo's root (for ci/ scripts and bindings/conformance): `SL_ROOT`, else two
/// folders above this crate.
pub fn repo_root() -> PathBuf {
    if let Ok(r) = std::env::var("SL_ROOT") {
        return PathBuf::from(r);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the monorepo root")
}

/// The helpers of this process: kept (never dropped) so their stdin stays open until exit.
static HELPERS: Mutex<Vec<Child>> = Mutex::new(Vec::new());

fn start(kind: &str) -> String {
    let dir = std::env::temp_dir().join(format!(
        "slotlane-rust-{kind}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let script = repo_root().join("ci/suite-servers.sh");
    let mut child = Command::new("bash")
        .arg(&script)
        .arg("rust")
        .arg(&dir)
        .arg(kind)
        .env("SL_SUITE_SERVERS_FROM", "22750")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    let out = child.stdout.take().expect("the helper's stdout");
    let mut url = None;
    for line in BufReader::new(out).lines() {
        let line = line.expect("the helper's output");
        if line == "ready" {
            break;
        }
        if let Some((_, u)) = line.split_once('=') {
            url = Some(u.to_string());
        }
    }
    match url {
        Some(u) => {
            HELPERS
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(child);
            u
        }
        None => {
            let _ = child.kill();
            let st = child.wait();
            panic!("ci/suite-servers.sh rust {kind} did not start its server ({st:?}); its messages are above")
        }
    }
}

fn from_env_or_start(var: &str, kind: &str, cell: &'static OnceLock<String>) -> String {
    cell.get_or_init(|| std::env::var(var).unwrap_or_else(|_| start(kind)))
        .clone()
}

/// A standalone redis-server.
pub fn plain() -> String {
    static U: OnceLock<String> = OnceLock::new();
    from_env_or_start("SLOTLANE_TEST_PLAIN_URL", "plain", &U)
}

/// A seed of a 3-primary Redis Cluster.
pub fn cluster() -> String {
    static U: OnceLock<String> = OnceLock::new();
    from_env_or_start("SLOTLANE_TEST_CLUSTER_URL", "cluster", &U)
}

/// The embedded slotlane-server of this process: 4 shards in per-shard mode, `-MOVED`, in
/// memory ([`slotlane::testing::ServerOptions`]'s defaults), on `SLOTLANE_TEST_SERVER_PORT`..+3
/// or ephemeral ports. Started on first use, kept (never dropped) until the process exits.
pub fn bundled() -> String {
    bundled_server().url().to_string()
}

/// The [`slotlane::testing::Server`] behind [`bundled`] (its shards' ports).
pub fn bundled_server() -> &'static slotlane::testing::Server {
    static S: OnceLock<slotlane::testing::Server> = OnceLock::new();
    S.get_or_init(|| {
        let port = match std::env::var("SLOTLANE_TEST_SERVER_PORT") {
            Ok(p) => p
                .parse()
                .unwrap_or_else(|_| panic!("SLOTLANE_TEST_SERVER_PORT={p:?} is not a port number")),
            Err(_) => 0,
        };
        slotlane::testing::Server::with_options(&slotlane::testing::ServerOptions {
            port,
            ..slotlane::testing::ServerOptions::default()
        })
        .unwrap_or_else(|e| panic!("the embedded slotlane-server (port {port}): {e}"))
    })
}

/// The server of the doc examples: `SLOTLANE_URL`, else [`bundled`].
pub fn url() -> String {
    std::env::var("SLOTLANE_URL").unwrap_or_else(|_| bundled())
}
