#!/usr/bin/env python3
"""Reads core/build.cfg (the one description of the core's build) for recipes that are
scripts: python/build_ffi.py imports it; node/binding.gyp, java/build-native.sh,
csharp/build-native.sh and ci/vendor-core.sh run it. Standard library only.

  describe.py [--core DIR] [--relative-to DIR] QUESTION [PART...]
  (--core server: the server library's server/build.cfg, part "server"; the same
   questions; its `module`, `exclude` and `extra` statements are in that file)
    sources PART...   the .c files of those parts (default: core), one per line
    files PART...     what a copy of the core for those parts holds: the public include
                      folders' files and the .c, .h and .inc files of the parts
    parts             every part: NAME FOLDER [MODULE]
    modules PART...   the pkg-config modules those parts need
    includes          public then private include directories
    defines PART...   NAME[=VALUE] of every definition but the version, with SL_WITH_<PART>
                      for each of those parts but core
    version           the version string
    std               the C standard (c11)
    cflags PART...    -std=, -I and -D flags (SL_VERSION_STRING included), one per line
    check             fails when the file cannot be read, the core part has no sources or
                      no version file exists
DIR defaults to the folder of this script; paths are absolute unless --relative-to.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


class Core:
    def __init__(self, core_dir=HERE):
        self.dir = os.path.abspath(core_dir)
        self.parts = []      # (name, folder, module or None), in file order
        self.include = []
        self.private = []
        self.defines = []
        self.std = None
        self.version_files = []
        self.more_modules = {}  # part -> [module]: `module` statements
        self.exclude = set()    # absolute paths: `exclude`
        self.extra = []         # (part, absolute path): `extra`
        with open(os.path.join(self.dir, "build.cfg"), encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                words = line.split("#", 1)[0].split()
                if not words:
                    continue
                key, args = words[0], words[1:]
                if key == "part" and len(args) in (2, 3):
                    self.parts.append((args[0], args[1].rstrip("/"), args[2] if len(args) == 3 else None))
                elif key == "include":
                    self.include += args
                elif key == "private":
                    self.private += args
                elif key == "define":
                    self.defines += args
                elif key == "std" and len(args) == 1:
                    self.std = args[0]
                elif key == "version" and args:
                    self.version_files += args
                elif key == "module" and len(args) >= 2:
                    self.more_modules.setdefault(args[0], []).extend(args[1:])
                elif key == "exclude" and args:
                    self.exclude.update(self.path(a) for a in args)
                elif key == "extra" and len(args) >= 2:
                    self.extra += [(args[0], self.path(a)) for a in args[1:]]
                else:
                    raise SystemExit("%s/build.cfg:%d: cannot read %r" % (self.dir, n, line.strip()))

    def path(self, rel):
        return os.path.normpath(os.path.join(self.dir, rel))

    def part_of(self, rel):
        """The part a source (path relative to the core) belongs to: the longest folder."""
        best = None
        for name, folder, _ in self.parts:
            if rel.startswith(folder + "/") and (best is None or len(folder) > len(best[1])):
                best = (name, folder)
        return best[0] if best else None

    def all_sources(self, endings=(".c",)):
        """(part, absolute path) of every file with one of those endings under any part's
        folder, sorted."""
        out = set()
        for _, folder, _ in self.parts:
            root = self.path(folder)
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames.sort()
                for fn in filenames:
                    if fn.endswith(endings):
                        p = os.path.join(dirpath, fn)
                        if p not in self.exclude:
                            out.add((self.part_of(os.path.relpath(p, self.dir)), p))
        for part, p in self.extra:
            if p.endswith(endings):
                out.add((part, p))
        return sorted(out, key=lambda x: x[1])

    def files(self, parts=("core",)):
        """What a copy of the core for those parts needs besides build.cfg, describe.py and
        the version: every file of the public include folders, and the parts' .c, .h, .inc."""
        out = set()
        for d in self.include:
            for dirpath, _, filenames in os.walk(self.path(d)):
                out.update(os.path.join(dirpath, fn) for fn in filenames)
        out.update(p for part, p in self.all_sources((".c", ".h", ".inc")) if part in parts)
        return sorted(out)

    def sources(self, parts=("core",)):
        unknown = set(parts) - {p[0] for p in self.parts}
        if unknown:
            raise SystemExit("describe.py: no part %s in build.cfg" % ", ".join(sorted(unknown)))
        return [p for part, p in self.all_sources() if part in parts]

    def modules(self, parts=("core",)):
        return [m for name, _, m in self.parts if name in parts and m] + [
            m for name, _, _ in self.parts if name in parts for m in self.more_modules.get(name, [])]

    def includes(self):
        return [self.path(d) for d in self.include + self.private]

    def version(self):
        for v in self.version_files:
            p = self.path(v)
            if os.path.isfile(p):
                with open(p, encoding="utf-8") as f:
                    return f.read().strip()
        raise SystemExit("describe.py: none of %s exists beside %s" % (", ".join(self.version_files), self.dir))

    def part_defines(self, parts=("core",)):
        """build.cfg's definitions, and SL_WITH_<PART> for every listed part but core."""
        return list(self.defines) + ["SL_WITH_" + p.upper() for name, _, _ in self.parts
                                     for p in [name] if p in parts and p != "core"]

    def cflags(self, show=lambda p: p, parts=("core",)):
        return (["-std=" + self.std] + ["-I" + show(d) for d in self.includes()]
                + ["-D" + d for d in self.part_defines(parts)] + ['-DSL_VERSION_STRING="%s"' % self.version()])


def main(argv):
    core_dir, rel = HERE, None
    while argv and argv[0].startswith("--"):
        if argv[0] == "--core" and len(argv) > 1:
            core_dir, argv = argv[1], argv[2:]
        elif argv[0] == "--relative-to" and len(argv) > 1:
            rel, argv = argv[1], argv[2:]
        else:
            raise SystemExit(__doc__)
    if not argv:
        raise SystemExit(__doc__)
    if core_dir == "server":  # the server library beside the core
        core_dir = os.path.join(HERE, "..", "server")
    c = Core(core_dir)
    q, parts = argv[0], tuple(argv[1:]) or (c.parts[0][0] if c.parts else "core",)
    show = (lambda p: os.path.relpath(p, rel)) if rel else (lambda p: p)
    if q == "sources":
        out = [show(p) for p in c.sources(parts)]
    elif q == "files":
        out = [show(p) for p in c.files(parts)]
    elif q == "parts":
        out = [" ".join(x for x in p if x) for p in c.parts]
    elif q == "modules":
        out = c.modules(parts)
    elif q == "includes":
        out = [show(p) for p in c.includes()]
    elif q == "defines":
        out = c.part_defines(parts)
    elif q == "version":
        out = [c.version()]
    elif q == "std":
        out = [c.std]
    elif q == "cflags":
        out = c.cflags(show, parts)
    elif q == "check":
        first = c.parts[0][0] if c.parts else "core"
        if not c.sources((first,)):
            raise SystemExit("describe.py: the %s part has no sources" % first)
        c.version()
        out = ["build.cfg: %d parts, %d sources, version %s" % (len(c.parts), len(c.all_sources()), c.version())]
    else:
        raise SystemExit(__doc__)
    for line in out:
        print(line)


if __name__ == "__main__":
    main(sys.argv[1:])
