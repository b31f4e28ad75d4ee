//! Holds the cluster-cost benchmark of the Rust binding: `examples/cluster_cost.rs`.
//! Run it from this folder: `cargo run --release --example cluster_cost -- --help`.
