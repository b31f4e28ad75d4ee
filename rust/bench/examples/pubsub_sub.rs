//! One subscriber of bench/pubsub/run.py: slotlane's [`slotlane::PubSub`] or redis-rs's
//! (`Connection::as_pubsub`), each used the way its users do (subscribe, then a blocking
//! loop over the messages: slotlane's iterator, redis-rs's `get_message`). It prints "ready"
//! once the subscription is confirmed, receives N messages of the channel, checks every one
//! (its sequence number, the first 8 bytes, and its length) and prints one JSON line with
//! its CPU (getrusage RUSAGE_SELF: every thread, the core's subscriber thread included)
//! from ready to the last message.
//!
//! ```text
//! cd rust/bench && cargo build --release --example pubsub_sub
//! ../target/release/examples/pubsub_sub slotlane|redis-rs URL CHANNEL N SIZE
//! ```
use serde_json::json;
use slotlane::{MessageKind, PubSub, PubSubOptions};
use slotlane_bench::cpu_ns;
use std::io::Write;
use std::process::ExitCode;
use std::time::Instant;

/// The sequence number of a payload (`%08d` then padding), or None when it is not one.
fn seq_of(p: &[u8]) -> Option<u64> {
    if p.len() < 8 {
        return None;
    }
    let mut v = 0u64;
    for &b in &p[..8] {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v * 10 + u64::from(b - b'0');
    }
    Some(v)
}

/// Checks one payload; the first failure is kept.
struct Check {
    size: usize,
    got: u64,
    bad: Option<String>,
}

impl Check {
    fn payload(&mut self, p: &[u8]) {
        if self.bad.is_none() && (p.len() != self.size || seq_of(p) != Some(self.got)) {
            self.bad = Some(format!(
                "message {}: {:?} ({} bytes)",
                self.got,
                String::from_utf8_lossy(&p[..p.len().min(8)]),
                p.len()
            ));
        }
        self.got += 1;
    }
}

fn ready() -> ((f64, f64), Instant) {
    let cpu = cpu_ns();
    let t0 = Instant::now();
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready")
        .and_then(|_| out.flush())
        .expect("stdout");
    (cpu, t0)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 6 {
        eprintln!("usage: pubsub_sub slotlane|redis-rs URL CHANNEL N SIZE");
        return ExitCode::from(2);
    }
    let (client, url, channel) = (args[1].as_str(), args[2].as_str(), args[3].as_str());
    let (n, size) = match (args[4].parse::<u64>(), args[5].parse::<usize>()) {
        (Ok(n), Ok(s)) if n > 0 && s >= 8 => (n, s),
        _ => {
            eprintln!("pubsub_sub: N must be a positive integer and SIZE an integer >= 8");
            return ExitCode::from(2);
        }
    };
    let mut check = Check {
        size,
        got: 0,
        bad: None,
    };
    let (cpu0, t0, cpu1, t1);
    match client {
        "slotlane" => {
            // the bench checks every message: none may be dropped
            let opts = PubSubOptions {
                max_queue_bytes: Some(1 << 30),
                ..Default::default()
            };
            let mut sub = PubSub::with_options(url, opts).expect("slotlane: connect");
            sub.subscribe(channel).expect("slotlane: subscribe");
            let first = sub
                .next()
                .expect("slotlane: closed")
                .expect("slotlane: drain");
            assert_eq!(first.kind, MessageKind::Subscribe, "{first:?}");
            (cpu0, t0) = ready();
            for m in &mut sub {
                let m = m.expect("slotlane: drain");
                match m.kind {
                    MessageKind::Message => check.payload(&m.payload),
                    MessageKind::Overflow => {
                        check
                            .bad
                            .get_or_insert(format!("{} messages were dropped", m.count));
                        break; // they will never come
                    }
                    k => {
                        check.bad.get_or_insert(format!("unexpected {k:?}"));
                    }
                }
                if check.got == n {
                    break;
                }
            }
            (cpu1, t1) = (cpu_ns(), Instant::now());
            sub.close();
        }
        "redis-rs" => {
            let c = redis::Client::open(url).expect("redis-rs: url");
            let mut con = c.get_connection().expect("redis-rs: connect");
            let mut ps = con.as_pubsub();
            ps.subscribe(channel).expect("redis-rs: subscribe"); // returns on the confirmation
            (cpu0, t0) = ready();
            while check.got < n {
                let m = ps.get_message().expect("redis-rs: read");
                check.payload(m.get_payload_bytes());
            }
            (cpu1, t1) = (cpu_ns(), Instant::now());
        }
        _ => {
            eprintln!("pubsub_sub: the client is slotlane or redis-rs, not {client:?}");
            return ExitCode::from(2);
        }
    }
    let line = json!({
        "received": check.got, "ok": check.bad.is_none(), "error": check.bad,
        "wall_s": (t1 - t0).as_secs_f64(),
        "user_ns": (cpu1.0 - cpu0.0) as i64, "sys_ns": (cpu1.1 - cpu0.1) as i64,
    });
    println!("{line}");
    ExitCode::SUCCESS
}
