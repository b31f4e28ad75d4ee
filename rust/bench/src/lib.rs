//! Holds the Rust binding's benchmarks: `examples/cluster_cost.rs` (pipelines, with redis-rs)
//! and `examples/async_cost.rs` (slotlane::aio with N concurrent callers, with redis-rs's
//! async clients on tokio). Run them from this folder:
//! `cargo run --release --example cluster_cost -- --help`.

#[repr(C)]
struct Timeval {
    sec: i64,
    usec: i64,
}
#[repr(C)]
struct Rusage {
    utime: Timeval,
    stime: Timeval,
    rest: [i64; 14],
}
extern "C" {
    fn getrusage(who: i32, usage: *mut Rusage) -> i32;
}

/// (user ns, system ns) of the whole process (getrusage RUSAGE_SELF: every thread).
pub fn cpu_ns() -> (f64, f64) {
    let mut r = Rusage {
        utime: Timeval { sec: 0, usec: 0 },
        stime: Timeval { sec: 0, usec: 0 },
        rest: [0; 14],
    };
    // SAFETY: RUSAGE_SELF = 0; r is a valid struct rusage on 64-bit Linux.
    let rc = unsafe { getrusage(0, &mut r) };
    assert_eq!(rc, 0, "getrusage");
    (
        (r.utime.sec as f64 * 1e9) + r.utime.usec as f64 * 1e3,
        (r.stime.sec as f64 * 1e9) + r.stime.usec as f64 * 1e3,
    )
}
