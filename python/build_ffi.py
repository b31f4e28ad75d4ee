"""CFFI (API, out-of-line mode) build of slotlane._native: the core's C sources compiled
into the extension, with the declarations generated from core/include/slotlane.h and
slotlane_uv.h. What is compiled and how comes from the core's one build description,
core/build.cfg, read through the core's own describe.py: its "core" part (the
synchronous API) and its "uv" part (the core's loop thread and completion queues, which
slotlane.asyncio uses), whose libuv comes from the system through pkg-config and is
linked dynamically (core/README.md, "one linkage rule": Debian's libuv1-dev to build,
libuv1 to run). And its
"tls" part, OpenSSL 3 linked the same way, when pkg-config finds openssl (SLOTLANE_TLS=0
leaves it out, and TLS then answers SL_EUNSUPPORTED).

Where the core comes from, first match wins:
  1. $SLOTLANE_CORE_DIR (a directory holding build.cfg and describe.py);
  2. vendor/core — the copy an sdist carries (setup.py's sdist step writes it with
     ci/vendor-core.sh; it is never committed);
  3. ../core — the monorepo's own core (``pip install ./python`` inside the repository).
"""
import importlib.util
import os
import re
import shutil
import subprocess
import sys

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))


def find_source(env, name, required):
    """A description's folder (holding build.cfg), first match wins: $env, vendor/<name> (an
    sdist's copy, written by ci/vendor-core.sh), ../<name> (the monorepo's own)."""
    candidates = [os.environ[env]] if os.environ.get(env) else []
    candidates += [os.path.join(HERE, "vendor", name), os.path.join(HERE, "..", name)]
    for c in candidates:
        if os.path.isfile(os.path.join(c, "build.cfg")):
            return os.path.abspath(c)
    if required:
        raise RuntimeError("slotlane: cannot find the C %s (tried %s): build from the repository or an sdist"
                           % (name, ", ".join(candidates)))
    return None


def core_dir():
    return find_source("SLOTLANE_CORE_DIR", "core", True)


def server_dir():
    """The embeddable server's sources (server/build.cfg), like the core's:
    $SLOTLANE_SERVER_DIR, vendor/server, ../server; None when absent."""
    return find_source("SLOTLANE_SERVER_DIR", "server", False)


def load_description(core, described=None):
    """The core's describe.Core for the copy at core (its own reader of build.cfg)."""
    spec = importlib.util.spec_from_file_location("slotlane_core_describe", os.path.join(core, "describe.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.Core(described or core)


def cdef_from_header(text):
    """The declarations of slotlane.h for ffi.cdef: comments, preprocessor lines (with
    their continuations) and the SL_EXTERN marker removed; integer #defines kept as
    ``#define NAME ...`` so cffi reads their values from the real header."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    out = []
    lines = text.split("\n")
    skip = []  # one entry per open #if: True inside a C++-only block (extern "C" {...})
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("#"):
            full = line
            while full.rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                full = full.rstrip()[:-1] + " " + lines[i]
            d = full.strip()[1:].strip()
            if re.match(r"if(n?def)?\b", d):
                skip.append("__cplusplus" in d and not d.startswith("ifndef"))
            elif d.startswith("endif"):
                skip.pop()
            elif not any(skip):
                m = re.match(r"define\s+(SL_[A-Z0-9_]+)\s+(\d+)\s*$", d)
                if m:
                    out.append("#define %s ..." % m.group(1))
        elif not any(skip):
            out.append(line)
        i += 1
    body = "\n".join(out)
    body = body.replace("SL_EXTERN ", "").replace("SL_SERVER_EXTERN ", "")
    # extern "C" braces are inside #ifdef __cplusplus blocks; a stray "}" from them is
    # removed with the preprocessor lines above. Nothing else is rewritten.
    return body


# slotlane_uv.h's declarations name uv_loop_t (the caller's-loop API, which Python does not
# use): opaque to cffi.
UV_PRELUDE = """
typedef struct uv_loop_s uv_loop_t;
"""

# A few lines of glue in the extension (not core logic): one crossing per pipeline runs the
# batch and returns where its records and data are; one crossing submits a batch to the
# core's loop thread (reset, append, submit).
GLUE_CDEF = """
int slpy_run(sl_batch *batch, const void *cmds, size_t len, size_t count, int timeout_ms,
             sl_sizes *sizes, const sl_reply **records, const uint8_t **data);
int slpy_submit(sl_loop *loop, sl_batch *batch, const void *cmds, size_t len, size_t count,
                int timeout_ms, sl_cq *cq, void *token);
int slpy_submit_script(sl_loop *loop, sl_batch *batch, const void *cmd, size_t len, const void *body,
                       size_t body_len, sl_cq *cq, void *token);
"""
GLUE_SRC = r"""
static int slpy_run(sl_batch *batch, const void *cmds, size_t len, size_t count, int timeout_ms,
                    sl_sizes *sizes, const sl_reply **records, const uint8_t **data)
{
    int rc = sl_batch_run(batch, cmds, len, count, timeout_ms, NULL, 0, NULL, 0, sizes);
    *records = sl_batch_replies(batch, NULL, data, NULL);
    return rc;
}

static int slpy_submit(sl_loop *loop, sl_batch *batch, const void *cmds, size_t len, size_t count,
                       int timeout_ms, sl_cq *cq, void *token)
{
    sl_batch_reset(batch);
    int rc = sl_batch_append(batch, NULL, cmds, len, count);
    if (rc == 0) rc = sl_loop_submit_cq(loop, batch, timeout_ms, cq, token, SL_SUBMIT_FAIL_FAST);
    return rc;
}

static int slpy_submit_script(sl_loop *loop, sl_batch *batch, const void *cmd, size_t len, const void *body,
                              size_t body_len, sl_cq *cq, void *token)
{
    sl_batch_reset(batch);
    int rc = sl_batch_append(batch, NULL, cmd, len, 1);
    if (rc == 0) rc = sl_loop_submit_script_cq(loop, batch, body, body_len, 0, cq, token, SL_SUBMIT_FAIL_FAST);
    return rc;
}
"""


def pkg_config(module):
    """(cflags, libs) of a system library from pkg-config, or None when it is not there."""
    if not shutil.which("pkg-config"):
        return None
    try:
        cflags = subprocess.run(["pkg-config", "--cflags", module], check=True, capture_output=True, text=True).stdout
        libs = subprocess.run(["pkg-config", "--libs", module], check=True, capture_output=True, text=True).stdout
    except subprocess.CalledProcessError:
        return None
    return cflags.split(), libs.split()


def make_ffi():
    core = core_dir()
    with open(os.path.join(core, "include", "slotlane.h")) as f:
        header = f.read()
    with open(os.path.join(core, "include", "slotlane_uv.h")) as f:
        uv_header = f.read()
    ffi = FFI()
    ffi.cdef(cdef_from_header(header) + UV_PRELUDE + cdef_from_header(uv_header) + GLUE_CDEF)
    desc = load_description(core)
    # The "core" part (the synchronous API), "uv" (the loop thread and completion queues of
    # slotlane.asyncio, with the system's libuv) and "tls" with the system's OpenSSL.
    parts = ["core", "uv"]
    cflags, libs = [], []
    for module in desc.modules(("uv",)):
        flags = pkg_config(module)
        if flags is None:
            raise RuntimeError("slotlane: pkg-config finds no %s: install its development package "
                               "(Debian: libuv1-dev)" % module)
        cflags += flags[0]
        libs += flags[1]
    if os.environ.get("SLOTLANE_TLS", "1") != "0":
        modules = desc.modules(("tls",))
        flags = pkg_config(modules[0]) if modules else None
        if flags is None and os.environ.get("SLOTLANE_TLS") == "1":
            raise RuntimeError("slotlane: SLOTLANE_TLS=1 but pkg-config finds no openssl (Debian: apt install libssl-dev)")
        if flags is not None and desc.sources(("tls",)):  # a copy of the core without src/tls/: no TLS
            parts.append("tls")
            cflags += flags[0]
            libs += flags[1]
    sources = desc.sources(tuple(parts))
    # setuptools wants source paths relative to setup.py when they are inside the project.
    sources = [os.path.relpath(s, HERE) if s.startswith(HERE + os.sep) else s for s in sources]
    defines = [tuple(d.split("=", 1)) if "=" in d else (d, None) for d in desc.part_defines(tuple(parts))]
    ffi.set_source(
        "slotlane._native",
        '#include "slotlane.h"\n#include "slotlane_uv.h"\n' + GLUE_SRC,
        sources=sources,
        include_dirs=desc.includes(),
        define_macros=[("SL_VERSION_STRING", '"%s"' % desc.version())] + defines,
        extra_compile_args=["-O2", "-std=" + desc.std, "-fvisibility=hidden", "-Wno-unused-parameter"] + cflags,
        extra_link_args=libs,
        libraries=["pthread"] if sys.platform != "win32" else [],
    )
    return ffi


def make_server_ffi():
    """slotlane._server: the embeddable slotlane-server (server/build.cfg, read by the core's
    describe.py), for slotlane.testing. None when the server's sources or its system
    libraries (libuv, Lua 5.1 with cjson and bit: Debian's liblua5.1-0-dev, lua-cjson-dev,
    lua-bitop-dev) are not there, or SLOTLANE_SERVER=0: the client is built alone and
    slotlane.testing says what is missing."""
    if os.environ.get("SLOTLANE_SERVER", "1") == "0":
        return None
    server = server_dir()
    if server is None:
        return None
    desc = load_description(core_dir(), server)
    cflags, libs = [], []
    for module in desc.modules(("server",)):
        flags = pkg_config(module)
        if flags is None:
            if os.environ.get("SLOTLANE_SERVER") == "1":
                raise RuntimeError("slotlane: SLOTLANE_SERVER=1 but pkg-config finds no %s" % module)
            sys.stderr.write("slotlane: no %s (pkg-config): slotlane.testing's server is not built\n" % module)
            return None
        cflags += flags[0]
        libs += flags[1]
    with open(os.path.join(server, "include", "slotlane_server.h")) as f:
        header = f.read()
    ffi = FFI()
    ffi.cdef(cdef_from_header(header))
    sources = desc.sources(("server",))
    sources = [os.path.relpath(s, HERE) if s.startswith(HERE + os.sep) else s for s in sources]
    ffi.set_source(
        "slotlane._server",
        '#include "slotlane_server.h"\n',
        sources=sources,
        include_dirs=desc.includes(),
        define_macros=[tuple(d.split("=", 1)) if "=" in d else (d, None) for d in desc.part_defines(("server",))],
        extra_compile_args=["-O2", "-std=" + desc.std, "-fvisibility=hidden", "-Wno-unused-parameter"] + cflags,
        extra_link_args=libs + ["-lm"],
        libraries=["pthread"],
    )
    return ffi


ffi = make_ffi()
server_ffi = make_server_ffi()

if __name__ == "__main__":
    ffi.compile(verbose=True)
    if server_ffi is not None:
        server_ffi.compile(verbose=True)
