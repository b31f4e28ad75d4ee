//! Compiles libslotlane (the C core) from source with the `cc` crate, at -O2.
//!
//! Which copy of the core: inside the slotlane monorepo, `../../core` (the real one);
//! elsewhere (a packaged crate, a registry or vendored download) the copy in `core/`,
//! which only `ci/vendor-core.sh` writes. `SLOTLANE_SYS_VENDORED=1` forces the copy
//! in `core/` (the monorepo's tests use it to prove the packaged crate builds).
use std::env;
use std::fs;
use std::path::{Path, PathBuf};

fn is_core(dir: &Path) -> bool {
    dir.join("include/slotlane.h").is_file() && dir.join("src/client.c").is_file()
}

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    println!("cargo:rerun-if-env-changed=SLOTLANE_SYS_VENDORED");
    let force_vendored = env::var("SLOTLANE_SYS_VENDORED")
        .map(|v| v == "1")
        .unwrap_or(false);

    let monorepo = manifest.join("../../core");
    let vendored = manifest.join("core");
    let (core, flavor) = if !force_vendored && is_core(&monorepo) {
        (monorepo, "monorepo")
    } else if is_core(&vendored) {
        (vendored, "vendored")
    } else {
        panic!(
            "slotlane-sys: no copy of the core: neither {} nor {} holds include/slotlane.h and src/*.c \
             (in the monorepo, run ci/vendor-core.sh rust/slotlane-sys/core)",
            monorepo.display(),
            vendored.display()
        );
    };
    let core = core.canonicalize().expect("canonicalize the core's path");

    // The version string the core reports (sl_version()): the VERSION file beside the core.
    let version_file = [core.join("VERSION"), core.join("../VERSION")]
        .into_iter()
        .find(|p| p.is_file())
        .expect("slotlane-sys: no VERSION file beside the core");
    println!("cargo:rerun-if-changed={}", version_file.display());
    let version = fs::read_to_string(&version_file)
        .expect("read VERSION")
        .trim()
        .to_string();

    let include = core.join("include");
    let src = core.join("src");
    let mut sources: Vec<PathBuf> = fs::read_dir(&src)
        .expect("read the core's src/")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "c"))
        // The libuv driver (async.c, slotlane_uv.h) is left out: this crate exposes the
        // synchronous API only, so its users need no libuv. A source belongs to the
        // driver when it includes uv.h or slotlane_uv.h.
        .filter(|p| {
            let text = fs::read_to_string(p).unwrap_or_default();
            !(text.contains("#include \"slotlane_uv.h\"") || text.contains("#include <uv.h>"))
        })
        .collect();
    sources.sort();
    assert!(
        !sources.is_empty(),
        "slotlane-sys: no C sources in {}",
        src.display()
    );

    println!("cargo:rerun-if-changed={}", include.display());
    println!("cargo:rerun-if-changed={}", src.display());
    for entry in fs::read_dir(&src).expect("read src/") {
        println!(
            "cargo:rerun-if-changed={}",
            entry.expect("dir entry").path().display()
        );
    }
    println!(
        "cargo:rerun-if-changed={}",
        include.join("slotlane.h").display()
    );

    let mut build = cc::Build::new();
    build
        .files(&sources)
        .include(&include)
        .include(&src)
        .std("c11")
        .opt_level(2)
        .warnings(false)
        .define("SL_VERSION_STRING", format!("\"{version}\"").as_str())
        .define("_POSIX_C_SOURCE", "200809L")
        .define("_DEFAULT_SOURCE", None)
        .flag_if_supported("-fvisibility=hidden");
    build.compile("slotlane");
    println!("cargo:rustc-link-lib=pthread");

    // For dependents (DEP_SLOTLANE_INCLUDE) and for this crate's ABI test.
    println!("cargo:include={}", include.display());
    println!("cargo:rustc-env=SLOTLANE_SYS_INCLUDE={}", include.display());
    println!("cargo:rustc-env=SLOTLANE_SYS_CORE_FLAVOR={flavor}");
}
