//! Compiles libslotlane (the C core) from source with the `cc` crate, at -O2, as the core's
//! one build description says (`core/build.cfg`: its "core" part and its "uv" part — the
//! core's loop thread and completion queues, which `slotlane::aio` uses — the include
//! folders, the definitions, the standard, the version). The uv part's libuv comes from
//! the system through pkg-config and is linked dynamically (core/README.md, "one linkage
//! rule": Debian's libuv1-dev to build, libuv1 to run).
//!
//! Which copy of the core: inside the slotlane monorepo, `../../core` (the real one);
//! elsewhere (a packaged crate) the copy in `core/`, which `ci/package-rust.sh` writes with
//! `ci/vendor-core.sh` while `cargo package` runs and which is never committed.
use std::env;
use std::fs;
use std::path::{Path, PathBuf};

/// What build.cfg says, as far as this crate needs it.
struct Description {
    parts: Vec<(String, String, Option<String>)>, // (name, folder, pkg-config module)
    include: Vec<String>,
    private: Vec<String>,
    defines: Vec<String>,
    std: String,
    version_files: Vec<String>,
    // server/build.cfg's statements beyond the core's
    modules: Vec<String>,  // `module PART MODULE...`
    exclude: Vec<PathBuf>, // `exclude FILE...`
    extra: Vec<PathBuf>,   // `extra PART FILE...`
}

fn read_description(core: &Path) -> Description {
    let path = core.join("build.cfg");
    println!("cargo:rerun-if-changed={}", path.display());
    let text = fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("slotlane-sys: cannot read {}: {e}", path.display()));
    let mut d = Description {
        parts: Vec::new(),
        include: Vec::new(),
        private: Vec::new(),
        defines: Vec::new(),
        std: String::new(),
        version_files: Vec::new(),
        modules: Vec::new(),
        exclude: Vec::new(),
        extra: Vec::new(),
    };
    for (n, line) in text.lines().enumerate() {
        let words: Vec<String> = line
            .split('#')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .map(str::to_string)
            .collect();
        let Some((key, args)) = words.split_first() else {
            continue;
        };
        match (key.as_str(), args.len()) {
            ("part", 2 | 3) => d.parts.push((
                args[0].clone(),
                args[1].trim_end_matches('/').to_string(),
                args.get(2).cloned(),
            )),
            ("include", _) => d.include.extend_from_slice(args),
            ("private", _) => d.private.extend_from_slice(args),
            ("define", _) => d.defines.extend_from_slice(args),
            ("std", 1) => d.std = args[0].clone(),
            ("version", _) => d.version_files.extend_from_slice(args),
            ("module", 2..) => d.modules.extend_from_slice(&args[1..]),
            ("exclude", 1..) => d.exclude.extend(args.iter().map(|a| core.join(a))),
            ("extra", 2..) => d.extra.extend(
                args[1..]
                    .iter()
                    .filter(|a| a.ends_with(".c"))
                    .map(|a| core.join(a)),
            ),
            _ => panic!("{}:{}: cannot read {line:?}", path.display(), n + 1),
        }
    }
    d
}

/// Every .c of a part: under its folder, except under the folder of another part inside it
/// (a file belongs to the part with the longest folder that holds it).
fn part_sources(core: &Path, d: &Description, part: &str) -> Vec<PathBuf> {
    let (_, folder, _) = d
        .parts
        .iter()
        .find(|(n, _, _)| n == part)
        .unwrap_or_else(|| panic!("slotlane-sys: build.cfg has no part {part}"));
    let inner: Vec<PathBuf> = d
        .parts
        .iter()
        .filter(|(_, f, _)| f.starts_with(&format!("{folder}/")))
        .map(|(_, f, _)| core.join(f))
        .collect();
    let mut out = Vec::new();
    let mut dirs = vec![core.join(folder)];
    while let Some(dir) = dirs.pop() {
        if !dir.is_dir() || inner.contains(&dir) {
            continue;
        }
        println!("cargo:rerun-if-changed={}", dir.display());
        for e in fs::read_dir(&dir).expect("read a source folder") {
            let p = e.expect("dir entry").path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "c") && !d.exclude.contains(&p) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// (cflags, libs) of a system library from `pkg-config`, or None when it is not there.
fn pkg_config(module: &str) -> Option<(Vec<String>, Vec<String>)> {
    let run = |what: &str| -> Option<Vec<String>> {
        let out = std::process::Command::new("pkg-config")
            .args([what, module])
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        Some(
            String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .map(String::from)
                .collect(),
        )
    };
    Some((run("--cflags")?, run("--libs")?))
}

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let monorepo = manifest.join("../../core");
    let packaged = manifest.join("core");
    let (core, flavor) = if monorepo.join("build.cfg").is_file() {
        (monorepo, "monorepo")
    } else if packaged.join("build.cfg").is_file() {
        (packaged, "packaged")
    } else {
        panic!(
            "slotlane-sys: no copy of the core: neither {} nor {} holds build.cfg \
             (a packaged crate gets core/ from ci/package-rust.sh)",
            monorepo.display(),
            packaged.display()
        );
    };
    let core = core.canonicalize().expect("canonicalize the core's path");
    let d = read_description(&core);

    let version_file = d
        .version_files
        .iter()
        .map(|f| core.join(f))
        .find(|p| p.is_file())
        .expect("slotlane-sys: none of build.cfg's version files exists");
    println!("cargo:rerun-if-changed={}", version_file.display());
    let version = fs::read_to_string(&version_file)
        .expect("read VERSION")
        .trim()
        .to_string();

    // The synchronous API, the loop thread (slotlane::aio) and, when OpenSSL is there, TLS.
    let mut sources = part_sources(&core, &d, "core");
    assert!(
        !sources.is_empty(),
        "slotlane-sys: the core part has no C sources"
    );
    // The uv part (the loop thread and completion queues of slotlane::aio) with the system's
    // libuv through pkg-config (core/README.md, "one linkage rule").
    sources.extend(part_sources(&core, &d, "uv"));
    let uv_module = d
        .parts
        .iter()
        .find(|(n, _, _)| n == "uv")
        .and_then(|(_, _, m)| m.clone())
        .unwrap_or_else(|| "libuv".to_string());
    let libuv = pkg_config(&uv_module).unwrap_or_else(|| {
        panic!("slotlane-sys: pkg-config finds no {uv_module}: install its development package (Debian: libuv1-dev)")
    });
    // TLS: the tls part with the system's OpenSSL through pkg-config (core/README.md, "one
    // linkage rule"), when pkg-config finds it; SLOTLANE_TLS=0 leaves it out (TLS then
    // answers SL_EUNSUPPORTED), SLOTLANE_TLS=1 makes a missing OpenSSL an error.
    println!("cargo:rerun-if-env-changed=SLOTLANE_TLS");
    let want_tls = env::var("SLOTLANE_TLS").ok();
    let tls_sources = part_sources(&core, &d, "tls");
    let openssl = if want_tls.as_deref() == Some("0") || tls_sources.is_empty() {
        None
    } else {
        pkg_config("openssl")
    };
    if openssl.is_none() && want_tls.as_deref() == Some("1") {
        panic!("slotlane-sys: SLOTLANE_TLS=1 but pkg-config finds no openssl (Debian: apt install libssl-dev)");
    }
    if openssl.is_some() {
        sources.extend(tls_sources);
    }

    let mut build = cc::Build::new();
    build
        .files(&sources)
        .std(&d.std)
        .opt_level(2)
        .warnings(false)
        .define("SL_VERSION_STRING", format!("\"{version}\"").as_str())
        .flag_if_supported("-fvisibility=hidden");
    for dir in d.include.iter().chain(&d.private) {
        let p = core.join(dir);
        println!("cargo:rerun-if-changed={}", p.display());
        build.include(p);
    }
    for def in &d.defines {
        match def.split_once('=') {
            Some((k, v)) => build.define(k, v),
            None => build.define(def, None),
        };
    }
    build.define("SL_WITH_UV", None); // build.cfg: SL_WITH_<PART> for every part compiled in
    let mut libs: Vec<String> = Vec::new();
    for (cflags, l) in std::iter::once(&libuv).chain(openssl.iter()) {
        add_cflags(&mut build, cflags);
        libs.extend(l.iter().cloned());
    }
    if openssl.is_some() {
        build.define("SL_WITH_TLS", None);
    }
    build.compile("slotlane");
    link_libs(&libs);
    println!("cargo:rustc-link-lib=pthread");

    if env::var_os("CARGO_FEATURE_SERVER").is_some() {
        build_server(&manifest, &version);
    }

    // For dependents (DEP_SLOTLANE_INCLUDE) and for this crate's ABI test.
    let include = core.join(&d.include[0]);
    println!("cargo:include={}", include.display());
    println!("cargo:rustc-env=SLOTLANE_SYS_INCLUDE={}", include.display());
    println!("cargo:rustc-env=SLOTLANE_SYS_CORE_FLAVOR={flavor}");
}

/// A system library's pkg-config cflags into a build (-I as include folders).
fn add_cflags(build: &mut cc::Build, cflags: &[String]) {
    for f in cflags {
        if let Some(dir) = f.strip_prefix("-I") {
            build.include(dir);
        } else {
            build.flag(f);
        }
    }
}

/// A system library's pkg-config libs as cargo link directives.
fn link_libs(libs: &[String]) {
    for f in libs {
        if let Some(dir) = f.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={dir}");
        } else if let Some(lib) = f.strip_prefix("-l") {
            println!("cargo:rustc-link-lib=dylib={lib}");
        }
    }
}

/// Feature `server` (slotlane's `testing` feature): the embeddable slotlane-server
/// (slotlane_server.h) as its one build description says, `server/build.cfg` (every .c of
/// its part but the excluded main.c, the core's slot leaf it names, the pkg-config modules:
/// libuv, Lua 5.1 with cjson and bit). Inside the monorepo `../../server`; a packaged crate
/// carries `server/` beside `core/` (ci/package-rust.sh).
fn build_server(manifest: &Path, version: &str) {
    let monorepo = manifest.join("../../server");
    let packaged = manifest.join("server");
    let dir = if monorepo.join("build.cfg").is_file() {
        monorepo
    } else if packaged.join("build.cfg").is_file() {
        packaged
    } else {
        panic!(
            "slotlane-sys: feature `server` but no server/build.cfg (neither {} nor {})",
            monorepo.display(),
            packaged.display()
        );
    };
    let dir = dir.canonicalize().expect("canonicalize the server's path");
    let d = read_description(&dir);
    let (part, _, first_module) = d
        .parts
        .first()
        .cloned()
        .expect("server/build.cfg has a part");
    let mut sources = part_sources(&dir, &d, &part);
    for x in &d.extra {
        println!("cargo:rerun-if-changed={}", x.display());
        sources.push(x.clone());
    }
    let mut build = cc::Build::new();
    build
        .files(&sources)
        .std(&d.std)
        .opt_level(2)
        .warnings(false)
        .define("SL_VERSION_STRING", format!("\"{version}\"").as_str())
        .define("SL_WITH_SERVER", None)
        .flag_if_supported("-fvisibility=hidden");
    for inc in d.include.iter().chain(&d.private) {
        build.include(dir.join(inc));
    }
    for def in &d.defines {
        match def.split_once('=') {
            Some((k, v)) => build.define(k, v),
            None => build.define(def, None),
        };
    }
    let mut libs = Vec::new();
    for m in first_module.iter().chain(&d.modules) {
        let (cflags, l) = pkg_config(m).unwrap_or_else(|| {
            panic!("slotlane-sys: feature `server` needs {m} (pkg-config; Debian: libuv1-dev liblua5.1-0-dev lua-cjson-dev lua-bitop-dev)")
        });
        add_cflags(&mut build, &cflags);
        libs.extend(l);
    }
    build.compile("slotlane_server");
    link_libs(&libs);
    println!("cargo:rustc-link-lib=m");
}
