//! Checks the hand-written declarations of `src/lib.rs` against the real
//! `slotlane.h` with the C compiler, so they cannot drift (git2-rs does the same with
//! systest): a C file generated from the Rust source asserts, at compile time,
//!
//!  - every function: a pointer of the type the Rust declaration implies is initialised
//!    with the real function (`-Werror`: any parameter or return type that differs,
//!    const-ness of pointees included, fails);
//!  - every `SL_*` constant: its value;
//!  - every struct: its size, alignment, and each field's offset and size;
//!
//! and the test checks that every `SL_EXTERN` function and every `SL_` enum constant
//! or `#define` of the header has a Rust declaration. A second C program checks
//! `SL_CLIENT_OPTIONS_INIT` field by field against the Rust constant.
use slotlane_sys::*;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::mem::{align_of, offset_of, size_of};
use std::path::{Path, PathBuf};
use std::process::Command;

const RUST_SRC: &str = include_str!("../src/lib.rs");

fn header_path() -> PathBuf {
    Path::new(env!("SLOTLANE_SYS_INCLUDE")).join("slotlane.h")
}

/// Rust FFI type text -> C type text (east-const, so it composes).
fn c_type(t: &str) -> String {
    let t = t.trim();
    if let Some(rest) = t.strip_prefix("*const ") {
        return format!("{} const *", c_type(rest));
    }
    if let Some(rest) = t.strip_prefix("*mut ") {
        return format!("{} *", c_type(rest));
    }
    match t {
        "c_int" => "int".into(),
        "c_uint" => "unsigned int".into(),
        "c_char" => "char".into(),
        "c_void" => "void".into(),
        "usize" => "size_t".into(),
        "u8" => "uint8_t".into(),
        "u16" => "uint16_t".into(),
        "u32" => "uint32_t".into(),
        "u64" => "uint64_t".into(),
        "i64" => "int64_t".into(),
        "f64" => "double".into(),
        other if other.starts_with("sl_") => other.into(),
        other => panic!("abi test: no C type for Rust type `{other}`"),
    }
}

struct RustFn {
    name: String,
    params: Vec<String>,
    ret: Option<String>,
}

/// The `pub fn` declarations of the `extern "C"` block of src/lib.rs.
fn rust_fns() -> Vec<RustFn> {
    let start = RUST_SRC.find("extern \"C\" {").expect("extern block");
    let block = &RUST_SRC[start..];
    let block = &block[..block.find("\n}\n").expect("end of extern block")];
    let mut out = Vec::new();
    for decl in block.split("pub fn ").skip(1) {
        let decl = &decl[..decl.find(';').expect("; after fn")];
        let name = decl[..decl.find('(').unwrap()].trim().to_string();
        let close = decl.rfind(')').unwrap();
        let params_txt = &decl[decl.find('(').unwrap() + 1..close];
        let params = params_txt
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| p.split_once(':').expect("name: type").1.trim().to_string())
            .collect();
        let ret = decl[close + 1..]
            .trim()
            .strip_prefix("->")
            .map(|r| r.trim().to_string());
        out.push(RustFn { name, params, ret });
    }
    assert!(out.len() >= 20, "parsed only {} functions", out.len());
    out
}

/// `pub const SL_*: T = V;` of src/lib.rs (the options initialiser excluded).
fn rust_consts() -> Vec<(String, String)> {
    RUST_SRC
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub const "))
        // (the server module's SL_SERVER_* are slotlane_server.h's, checked by the server's tests)
        .filter(|l| {
            l.starts_with("SL_")
                && !l.starts_with("SL_CLIENT_OPTIONS_INIT")
                && !l.starts_with("SL_SERVER_")
        })
        .map(|l| {
            let (name, rest) = l.split_once(':').unwrap();
            let value = rest
                .split_once('=')
                .unwrap()
                .1
                .trim()
                .trim_end_matches(';')
                .trim();
            (name.trim().to_string(), value.to_string())
        })
        .collect()
}

/// Field names of `pub struct NAME { ... }` in src/lib.rs, in order.
fn rust_fields(name: &str) -> Vec<String> {
    let key = format!("pub struct {name} {{");
    let start = RUST_SRC
        .find(&key)
        .unwrap_or_else(|| panic!("struct {name}"))
        + key.len();
    let body = &RUST_SRC[start..start + RUST_SRC[start..].find('}').unwrap()];
    body.lines()
        .filter_map(|l| l.trim().strip_prefix("pub "))
        .map(|l| l.split_once(':').unwrap().0.trim().to_string())
        .collect()
}

struct Layout {
    name: &'static str,
    size: usize,
    align: usize,
    fields: Vec<(&'static str, usize, usize)>, // C name, offset, size
}

macro_rules! layout {
    ($t:ident { $($f:ident => $c:literal),* $(,)? }) => {{
        #[allow(unused_variables)]
        let probe: $t = unsafe { std::mem::zeroed() };
        Layout {
            name: stringify!($t),
            size: size_of::<$t>(),
            align: align_of::<$t>(),
            fields: vec![$(($c, offset_of!($t, $f), std::mem::size_of_val(&probe.$f))),*],
        }
    }};
}

fn layouts() -> Vec<Layout> {
    vec![
        layout!(sl_allocator { version => "version", size => "size", malloc_fn => "malloc_fn", realloc_fn => "realloc_fn", free_fn => "free_fn", ctx => "ctx" }),
        layout!(sl_client_options {
            version => "version", size => "size", url => "url", mode => "mode", username => "username",
            password => "password", db => "db", resp_version => "resp_version",
            connect_timeout_ms => "connect_timeout_ms", command_timeout_ms => "command_timeout_ms",
            max_redirects => "max_redirects", refresh_interval_ms => "refresh_interval_ms",
            reconnect_min_ms => "reconnect_min_ms", reconnect_max_ms => "reconnect_max_ms",
            allocator => "allocator", max_bulk_len => "max_bulk_len",
            max_aggregate_len => "max_aggregate_len", max_depth => "max_depth",
            max_inflight_batches => "max_inflight_batches", max_inflight_bytes => "max_inflight_bytes",
            tls => "tls", blocking_grace_ms => "blocking_grace_ms", lease_idle_max => "lease_idle_max",
            read_from => "read_from", retry_writes => "retry_writes",
            on_event => "on_event", on_event_ctx => "on_event_ctx",
        }),
        layout!(sl_tls_options {
            version => "version", size => "size", ca_file => "ca_file", ca_dir => "ca_dir", ca_pem => "ca_pem",
            ca_pem_len => "ca_pem_len", system_roots => "system_roots", cert_file => "cert_file",
            key_file => "key_file", cert_pem => "cert_pem", cert_pem_len => "cert_pem_len", key_pem => "key_pem",
            key_pem_len => "key_pem_len", verify => "verify", server_name => "server_name",
            node_names => "node_names",
        }),
        layout!(sl_stats {
            version => "version", size => "size", commands => "commands", moved => "moved", ask => "ask",
            tryagain => "tryagain", refreshes => "refreshes", connects => "connects",
            reconnects => "reconnects", bytes_written => "bytes_written", bytes_read => "bytes_read",
            nodes => "nodes", failovers => "failovers", refreshes_moved => "refreshes_moved",
            refreshes_lost => "refreshes_lost", retries => "retries", replica_reads => "replica_reads",
            nodes_down => "nodes_down",
        }),
        layout!(sl_route { version => "version", size => "size", kind => "kind", slot => "slot", node => "node" }),
        layout!(sl_reply { type_ => "type", flags => "flags", reserved => "reserved", len => "len", value => "value", offset => "offset" }),
        layout!(sl_sizes { records => "records", data => "data", commands => "commands", errors => "errors" }),
        layout!(sl_node_info { addr => "addr", is_primary => "is_primary", primary => "primary", nranges => "nranges", ranges => "ranges" }),
        layout!(sl_scan_options { version => "version", size => "size", match_ => "match", match_len => "match_len", type_ => "type", count => "count" }),
        layout!(sl_message {
            kind => "kind", flags => "flags", reserved => "reserved", channel_len => "channel_len",
            pattern_len => "pattern_len", payload_len => "payload_len", count => "count", offset => "offset",
        }),
        layout!(sl_subscriber_options { version => "version", size => "size", max_queue_bytes => "max_queue_bytes", health_check_interval_ms => "health_check_interval_ms" }),
        layout!(sl_subscriber_stats {
            version => "version", size => "size", messages => "messages", dropped => "dropped",
            connection_losses => "connection_losses", resubscribed => "resubscribed", pings => "pings",
            refreshes => "refreshes", confirmed => "confirmed", queued_bytes => "queued_bytes",
            bytes_read => "bytes_read",
        }),
    ]
}

fn cc() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".to_string())
}

fn compile(name: &str, code: &str, link_and_run: bool) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, code).unwrap();
    let exe = dir.join(name);
    let mut cmd = Command::new(cc());
    cmd.args([
        "-std=c11",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-pedantic",
        "-Wno-unused-variable",
        // the core's own definitions (core/build.cfg): uv.h needs POSIX's pthread types
        "-D_POSIX_C_SOURCE=200809L",
        "-D_DEFAULT_SOURCE",
    ])
    .arg("-I")
    .arg(header_path().parent().unwrap())
    .arg(&src)
    .arg("-o")
    .arg(&exe);
    if !link_and_run {
        cmd.arg("-c");
    }
    let out = cmd.output().expect("run the C compiler (set CC)");
    assert!(
        out.status.success(),
        "the C check {name} failed to compile: the Rust declarations differ from slotlane.h:\n{}\n--- {}",
        String::from_utf8_lossy(&out.stderr),
        src.display()
    );
    if link_and_run {
        let run = Command::new(&exe).output().unwrap();
        assert!(
            run.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&run.stdout)
        );
    }
}

#[test]
fn declarations_match_the_header() {
    let mut c =
        // slotlane_uv.h too: the loop thread and completion queues (its uv.h from the system)
        String::from("#include <stddef.h>\n#include <stdint.h>\n#include \"slotlane.h\"\n#include \"slotlane_uv.h\"\n\n");
    for f in rust_fns() {
        let ret = f
            .ret
            .as_deref()
            .map(c_type)
            .unwrap_or_else(|| "void".into());
        let params: Vec<String> = f.params.iter().map(|p| c_type(p)).collect();
        let params = if params.is_empty() {
            "void".to_string()
        } else {
            params.join(", ")
        };
        writeln!(c, "{ret} (*const check_{n})({params}) = {n};", n = f.name).unwrap();
    }
    for (name, value) in rust_consts() {
        writeln!(
            c,
            "_Static_assert((long long)({name}) == (long long)({value}), \"{name} = {value}\");"
        )
        .unwrap();
    }
    for l in layouts() {
        assert_eq!(
            rust_fields(l.name),
            l.fields
                .iter()
                .map(|f| if f.0 == "type" || f.0 == "match" {
                    format!("{}_", f.0)
                } else {
                    f.0.to_string()
                })
                .collect::<Vec<_>>(),
            "the layout list of {} in tests/abi.rs misses fields of src/lib.rs",
            l.name
        );
        writeln!(
            c,
            "_Static_assert(sizeof({0}) == {1}, \"sizeof {0} = {1}\");",
            l.name, l.size
        )
        .unwrap();
        writeln!(
            c,
            "_Static_assert(_Alignof({0}) == {1}, \"alignof {0} = {1}\");",
            l.name, l.align
        )
        .unwrap();
        for (field, off, sz) in &l.fields {
            writeln!(
                c,
                "_Static_assert(offsetof({0}, {1}) == {2}, \"offsetof {0}.{1} = {2}\");",
                l.name, field, off
            )
            .unwrap();
            writeln!(
                c,
                "_Static_assert(sizeof(((const {0} *)0)->{1}) == {2}, \"sizeof {0}.{1} = {2}\");",
                l.name, field, sz
            )
            .unwrap();
        }
    }
    compile("abi_check", &c, false);
}

#[test]
fn every_header_item_is_declared() {
    let header = std::fs::read_to_string(header_path()).unwrap();
    let fns: BTreeSet<String> = rust_fns().into_iter().map(|f| f.name).collect();
    let consts: BTreeSet<String> = rust_consts().into_iter().map(|c| c.0).collect();
    // Functions: "SL_EXTERN <type> name(" possibly with the name on the same line.
    let mut missing = Vec::new();
    for part in header.split("\nSL_EXTERN ").skip(1) {
        let head = &part[..part.find('(').unwrap()];
        let name = head.trim().rsplit([' ', '*']).next().unwrap().to_string();
        if !fns.contains(&name) {
            missing.push(name);
        }
    }
    // Enum constants ("    SL_X = ...,") and #defines of numbers ("#define SL_X 1").
    for line in header.lines() {
        let t = line.trim();
        let name = if let Some(rest) = t.strip_prefix("#define ") {
            let mut it = rest.split_whitespace();
            let n = it.next().unwrap_or("");
            let v = it.next().unwrap_or("");
            if v.parse::<i64>().is_ok() {
                n
            } else {
                ""
            }
        } else if t.starts_with("SL_") && t.contains(" = ") {
            t.split_whitespace().next().unwrap()
        } else {
            ""
        };
        if name.starts_with("SL_") && name != "SL_EXTERN" && !consts.contains(name) {
            missing.push(name.to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "slotlane.h items without a Rust declaration: {missing:?}"
    );
}

#[test]
fn options_init_matches_the_macro_and_the_function() {
    let r = SL_CLIENT_OPTIONS_INIT;
    let mut c = String::from("#include <stdio.h>\n#include \"slotlane.h\"\nint main(void) {\n  sl_client_options o = SL_CLIENT_OPTIONS_INIT;\n  int bad = 0;\n");
    let checks: Vec<(&str, String)> = vec![
        ("version", r.version.to_string()),
        ("size", r.size.to_string()),
        ("mode", r.mode.to_string()),
        ("db", r.db.to_string()),
        ("resp_version", r.resp_version.to_string()),
        ("connect_timeout_ms", r.connect_timeout_ms.to_string()),
        ("command_timeout_ms", r.command_timeout_ms.to_string()),
        ("max_redirects", r.max_redirects.to_string()),
        ("refresh_interval_ms", r.refresh_interval_ms.to_string()),
        ("reconnect_min_ms", r.reconnect_min_ms.to_string()),
        ("reconnect_max_ms", r.reconnect_max_ms.to_string()),
        ("max_bulk_len", r.max_bulk_len.to_string()),
        ("max_aggregate_len", r.max_aggregate_len.to_string()),
        ("max_depth", r.max_depth.to_string()),
        ("max_inflight_batches", r.max_inflight_batches.to_string()),
        ("max_inflight_bytes", r.max_inflight_bytes.to_string()),
        ("blocking_grace_ms", r.blocking_grace_ms.to_string()),
        ("lease_idle_max", r.lease_idle_max.to_string()),
        ("read_from", r.read_from.to_string()),
        ("retry_writes", r.retry_writes.to_string()),
    ];
    for (f, v) in &checks {
        writeln!(c, "  if ((long long)o.{f} != (long long){v}LL) {{ printf(\"{f}: C %lld, Rust {v}\\n\", (long long)o.{f}); bad = 1; }}").unwrap();
    }
    c.push_str("  if (o.url || o.username || o.password || o.allocator || o.tls || o.on_event || o.on_event_ctx) { puts(\"pointers not NULL\"); bad = 1; }\n  return bad;\n}\n");
    compile("options_init_check", &c, true);

    // The run-time initialiser agrees with the constant.
    let mut o: sl_client_options = unsafe { std::mem::zeroed() };
    assert_eq!(
        unsafe { sl_client_options_init(&mut o, SL_CLIENT_OPTIONS_VERSION) },
        SL_OK
    );
    assert_eq!(
        (o.version, o.size, o.db, o.resp_version, o.max_depth),
        (r.version, r.size, r.db, r.resp_version, r.max_depth)
    );
    assert_eq!(unsafe { sl_client_options_init(&mut o, 999) }, SL_EINVAL);
}

#[test]
fn the_library_links_and_answers() {
    let v = unsafe { std::ffi::CStr::from_ptr(sl_version()) }
        .to_str()
        .unwrap();
    let file = std::fs::read_to_string(header_path().parent().unwrap().join("../VERSION"))
        .or_else(|_| std::fs::read_to_string(header_path().parent().unwrap().join("../../VERSION")))
        .unwrap();
    assert_eq!(v, file.trim());
    assert_eq!(
        v,
        format!("{SL_VERSION_MAJOR}.{SL_VERSION_MINOR}.{SL_VERSION_PATCH}")
    );
    // Redis Cluster's reference slots.
    let slot = |k: &[u8]| unsafe { sl_key_slot(k.as_ptr().cast(), k.len()) };
    assert_eq!(slot(b"123456789"), 0x31C3);
    assert_eq!(slot(b"foo"), 12182);
    assert_eq!(slot(b"{user1000}.following"), slot(b"user1000"));
    let e = unsafe { std::ffi::CStr::from_ptr(sl_strerror(SL_EIO)) };
    assert!(!e.to_bytes().is_empty());
    assert!(matches!(
        env!("SLOTLANE_SYS_CORE_FLAVOR"),
        "monorepo" | "vendored"
    ));
}
