//! TLS against Debian's redis-server serving TLS only (ci/redis-plain.sh with
//! SL_REDIS_TLS_DIR), certificates made by `openssl` now (ci/tls-certs.sh): a TlsConfig
//! from files and from PEM bytes, mutual TLS, and each failure an Error::Tls that says what
//! failed. Ports: SLOTLANE_TEST_PORT_BASE + 16 (client certificates optional) and + 17
//! (required).
mod common;

use common::*;
use slotlane::{Client, ConnectOptions, Error, Pipeline, TlsConfig, TlsVerify};
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The servers, started once for this test process (its tests run in parallel) and
/// stopped by PID (ci/redis-plain.sh stop) when the process exits (atexit).
struct Servers {
    certs: PathBuf,
    dirs: Vec<(PathBuf, Vec<(&'static str, String)>)>,
}

fn script(action: &str, dir: &PathBuf, port: Option<u16>, env: &[(&'static str, String)]) {
    let mut c = Command::new("bash");
    c.arg(repo_root().join("ci/redis-plain.sh"))
        .arg(action)
        .arg(dir);
    if let Some(p) = port {
        c.arg(p.to_string());
    }
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("run ci/redis-plain.sh");
    assert!(
        out.status.success(),
        "ci/redis-plain.sh {action}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

extern "C" fn stop_servers() {
    if let Some(s) = SERVERS.get() {
        for (dir, env) in &s.dirs {
            script("stop", dir, None, env);
        }
        let _ = std::fs::remove_dir_all(s.certs.parent().unwrap_or(&s.certs)); // the certificates and the servers' folders
    }
}

extern "C" {
    fn atexit(f: extern "C" fn()) -> i32;
}

static SERVERS: OnceLock<Servers> = OnceLock::new();

fn servers() -> &'static Servers {
    SERVERS.get_or_init(|| {
        let root = std::env::temp_dir().join(format!("slotlane-rust-tls-{}", std::process::id()));
        let certs = root.join("certs");
        let st = Command::new("bash")
            .arg(repo_root().join("ci/tls-certs.sh"))
            .arg(&certs)
            .status()
            .unwrap();
        assert!(st.success(), "ci/tls-certs.sh failed");
        let c = certs.to_string_lossy().into_owned();
        let mut dirs = Vec::new();
        for (name, port, auth) in [("tls", port(0), "optional"), ("mtls", port(1), "yes")] {
            let env = vec![
                ("SL_REDIS_TLS_DIR", c.clone()),
                ("SL_REDIS_TLS_AUTH_CLIENTS", auth.to_string()),
            ];
            let dir = root.join(name);
            script("start", &dir, Some(port), &env);
            dirs.push((dir, env));
        }
        // SAFETY: registers a plain extern "C" function.
        unsafe { atexit(stop_servers) };
        Servers { certs, dirs }
    })
}

fn port(i: u16) -> u16 {
    port_base() + 16 + i // after the failure tests' own clusters (+0..+15), inside the harness's block
}

fn cert(name: &str) -> String {
    servers().certs.join(name).to_string_lossy().into_owned()
}

fn url(i: u16) -> String {
    format!("rediss://127.0.0.1:{}", port(i))
}

fn connect(i: u16, tls: TlsConfig) -> Result<Client, Error> {
    Client::connect(ConnectOptions::new(&url(i)).tls(tls.build()?))
}

fn tls_error(r: Result<Client, Error>, want: &str) {
    match r {
        Err(Error::Tls(m)) => assert!(m.contains(want), "{m:?} does not say {want:?}"),
        Err(e) => panic!("expected Error::Tls({want:?}), got {e:?}"),
        Ok(_) => panic!("expected Error::Tls({want:?}), got a client"),
    }
}

#[test]
fn ca_file_and_pem_bytes() {
    let mut c = connect(0, TlsConfig::new().ca_file(&cert("ca.crt"))).unwrap();
    assert_eq!(c.ping().unwrap(), "PONG");
    let mut p = Pipeline::new();
    let v = "x".repeat(100);
    for i in 0..2000 {
        p.cmd("SET")
            .arg(format!("rs:tls:{i}").as_str())
            .arg(v.as_str());
        p.cmd("GET").arg(format!("rs:tls:{i}").as_str());
    }
    let out = c.exec_pipeline(&p);
    assert_eq!(out.len(), 4000);
    for r in out.iter().skip(1).step_by(2) {
        assert_eq!(r.as_ref().unwrap().as_bytes(), Some(v.as_bytes())); // replies over many TLS records
    }
    let pem = std::fs::read(cert("ca.crt")).unwrap();
    let mut c = connect(0, TlsConfig::new().ca_pem(&pem)).unwrap();
    assert_eq!(c.ping().unwrap(), "PONG");
}

#[test]
fn one_config_shared_by_clients() {
    let tls = TlsConfig::new().ca_file(&cert("ca.crt")).build().unwrap();
    let clients: Vec<Client> = (0..4)
        .map(|_| Client::connect(ConnectOptions::new(&url(0)).tls(tls.clone())).unwrap())
        .collect();
    drop(tls); // each client holds its own reference
    for mut c in clients {
        assert_eq!(c.ping().unwrap(), "PONG");
    }
}

#[test]
fn mutual_tls() {
    tls_error(
        connect(1, TlsConfig::new().ca_file(&cert("ca.crt"))),
        "certificate required",
    );
    let mut c = connect(
        1,
        TlsConfig::new()
            .ca_file(&cert("ca.crt"))
            .client_cert_files(&cert("client.crt"), &cert("client.key")),
    )
    .unwrap();
    assert_eq!(c.ping().unwrap(), "PONG");
}

#[test]
fn verification_failures_say_what_failed() {
    tls_error(
        connect(0, TlsConfig::new().ca_file(&cert("other-ca.crt"))),
        "certificate verify failed",
    );
    tls_error(
        connect(
            0,
            TlsConfig::new()
                .ca_file(&cert("ca.crt"))
                .server_name("wrong.example"),
        ),
        "host name mismatch: expected wrong.example, certificate names 127.0.0.1",
    );
    // Asked for: the chain only accepts the name; no verification accepts any CA.
    let mut c = connect(
        0,
        TlsConfig::new()
            .ca_file(&cert("ca.crt"))
            .server_name("wrong.example")
            .verify(TlsVerify::ChainOnly),
    )
    .unwrap();
    assert_eq!(c.ping().unwrap(), "PONG");
    let mut c = connect(
        0,
        TlsConfig::new()
            .system_roots(false)
            .verify(TlsVerify::NoneInsecure),
    )
    .unwrap();
    assert_eq!(c.ping().unwrap(), "PONG");
    match TlsConfig::new().ca_file("/nonexistent/ca.pem").build() {
        Err(Error::Tls(m)) => assert!(
            m.contains("cannot load the CA file /nonexistent/ca.pem"),
            "{m}"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn plaintext_client_on_a_tls_port() {
    let _ = servers();
    match Client::connect(format!("redis://127.0.0.1:{}", port(0)).as_str()) {
        Err(Error::Io(m)) => assert!(m.contains("if the port speaks TLS, use rediss://"), "{m}"),
        other => panic!("{other:?}"),
    }
}
