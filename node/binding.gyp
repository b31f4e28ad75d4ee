{
  # The addon compiles the core as its one build description says (core/build.cfg, read
  # by the core's describe.py): the "core", "uv" and "tls" parts, the include folders, the
  # definitions, the standard and the version. Which core: ../core in the monorepo (where
  # ../ci/vendor-core.sh exists), else vendor/core, the copy `npm pack` carries (prepack
  # writes it with ci/vendor-core.sh, postpack removes it; never committed). The uv part is
  # compiled against Node's own uv.h (node-gyp's include path) and links no libuv: the
  # symbols are the node binary's. Likewise the tls part is compiled against Node's own
  # OpenSSL headers (node-gyp's include/node/openssl) and links no libssl: the node binary
  # carries OpenSSL and exports it to addons (core/README.md: the one exception to the
  # linkage rule — two OpenSSLs in one process would not share state).
  # The second addon, slotlane_server, is the embedded slotlane-server of
  # require('slotlane/testing'), compiled as the server's one build description says
  # (server/build.cfg, read by the same describe.py): ../server in the monorepo, else
  # vendor/server (prepack writes it beside vendor/core). Its libuv is the node binary's
  # too; Lua 5.1 with cjson and bit comes from the system through pkg-config (Debian:
  # liblua5.1-0-dev lua-cjson-dev lua-bitop-dev).
  "variables": {
    "core_dir": "<!(node -p \"require('fs').existsSync('../ci/vendor-core.sh') ? '../core' : 'vendor/core'\")",
    "server_dir": "<!(node -p \"require('fs').existsSync('../ci/vendor-core.sh') ? '../server' : 'vendor/server'\")"
  },
  "targets": [
    {
      "target_name": "slotlane",
      "sources": [
        "src/addon.c",
        "src/pubsub.c",
        "<!@(python3 <(core_dir)/describe.py --relative-to . sources core uv tls)"
      ],
      "include_dirs": ["<!@(python3 <(core_dir)/describe.py --relative-to . includes)"],
      "defines": ["NAPI_VERSION=8", "<!@(python3 <(core_dir)/describe.py defines core uv tls)",
                  "SL_VERSION_STRING=\"<!(python3 <(core_dir)/describe.py version)\""],
      "cflags_c": ["-std=<!(python3 <(core_dir)/describe.py std)", "-O2", "-fvisibility=hidden", "-Wall", "-Wno-unused-parameter"],
      "cflags!": ["-O3"],
      "cflags_c!": ["-O3"],
      "libraries": ["-lpthread"]
    },
    {
      "target_name": "slotlane_server",
      "sources": [
        "src/server_addon.c",
        "<!@(python3 <(core_dir)/describe.py --core <(server_dir) --relative-to . sources server)"
      ],
      "include_dirs": ["<!@(python3 <(core_dir)/describe.py --core <(server_dir) --relative-to . includes)"],
      "defines": ["NAPI_VERSION=8", "<!@(python3 <(core_dir)/describe.py --core <(server_dir) defines server)",
                  "SL_VERSION_STRING=\"<!(python3 <(core_dir)/describe.py version)\""],
      "cflags_c": ["-std=<!(python3 <(core_dir)/describe.py std)", "-O2", "-fvisibility=hidden", "-Wno-unused-parameter",
                   "<!@(pkg-config --cflags $(python3 <(core_dir)/describe.py --core <(server_dir) modules server | grep -v '^libuv$'))"],
      "cflags!": ["-O3"],
      "cflags_c!": ["-O3"],
      "libraries": ["-lpthread", "-lm",
                    "<!@(pkg-config --libs $(python3 <(core_dir)/describe.py --core <(server_dir) modules server | grep -v '^libuv$'))"]
    }
  ]
}
