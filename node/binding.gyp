{
  # The addon compiles the core's sources: ../core in the monorepo, else the copy that
  # ci/vendor-core.sh wrote into vendor/core (what `npm pack` carries). It is compiled
  # against Node's own uv.h (node-gyp's include path) and links no libuv: the symbols are
  # the node binary's.
  "variables": {
    "core_dir": "<!(node -p \"require('fs').existsSync('../core/src/batch.c') ? '../core' : 'vendor/core'\")",
    "version_file": "<!(node -p \"require('fs').existsSync('../core/src/batch.c') ? '../VERSION' : 'vendor/core/VERSION'\")"
  },
  "targets": [
    {
      "target_name": "slotlane",
      "sources": [
        "src/addon.c",
        "<!@(node -p \"require('fs').readdirSync('<(core_dir)/src').filter(f => f.endsWith('.c')).map(f => '<(core_dir)/src/' + f).join(' ')\")",
        "<!@(node -p \"require('fs').readdirSync('<(core_dir)/src/uv').filter(f => f.endsWith('.c')).map(f => '<(core_dir)/src/uv/' + f).join(' ')\")"
      ],
      "include_dirs": ["<(core_dir)/include", "<(core_dir)/src"],
      "defines": ["NAPI_VERSION=8", "_POSIX_C_SOURCE=200809L", "_DEFAULT_SOURCE",
                  "SL_VERSION_STRING=\"<!(node -p \"require('fs').readFileSync('<(version_file)', 'utf8').trim()\")\""],
      "cflags_c": ["-std=gnu11", "-O2", "-fvisibility=hidden", "-Wall", "-Wno-unused-parameter"],
      "cflags!": ["-O3"],
      "cflags_c!": ["-O3"],
      "libraries": ["-lpthread"]
    }
  ]
}
