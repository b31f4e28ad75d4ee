# The CFFI extension is declared here (setuptools reads cffi_modules only from setup()),
# with the version (the core's, from core/build.cfg's version files) and the sdist step
# that puts the pack-time copy of the core into the sdist. Everything else is in
# pyproject.toml.
import os
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.sdist import sdist

HERE = os.path.dirname(os.path.abspath(__file__))
VENDOR_SCRIPT = os.path.join(HERE, "..", "ci", "vendor-core.sh")


class sdist_with_core(sdist):
    """An sdist carries vendor/core: in the monorepo ci/vendor-core.sh writes it into the
    release tree (never into python/); an sdist made from an unpacked sdist already has it
    through MANIFEST.in."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        dest = os.path.join(base_dir, "vendor", "core")
        if os.path.isfile(VENDOR_SCRIPT):
            subprocess.check_call(["bash", VENDOR_SCRIPT, os.path.abspath(dest)])
            # the embeddable server beside it (slotlane.testing): its build.cfg names the
            # core's slot leaf as ../core/src/slot.c, which the copy of the core holds
            subprocess.check_call(["bash", VENDOR_SCRIPT, "--server", os.path.abspath(os.path.join(base_dir, "vendor", "server"))])
        elif not os.path.isfile(os.path.join(dest, "build.cfg")):
            raise SystemExit("slotlane: no core to put into the sdist (neither ../ci/vendor-core.sh nor vendor/core)")


def version():
    sys.path.insert(0, HERE)
    import build_ffi
    return build_ffi.load_description(build_ffi.core_dir()).version()


# slotlane._pages: a scan page's keys built in C (src/slotlane/_pages.c; the CPython C API,
# where making the objects in C pays — a Python loop per key costs more than the SCAN).
PAGES = Extension("slotlane._pages", ["src/slotlane/_pages.c"], extra_compile_args=["-O2"])

def cffi_modules():
    """The client, and slotlane._server (the embedded server of slotlane.testing) when its
    sources and libraries are there (build_ffi.make_server_ffi)."""
    sys.path.insert(0, HERE)
    import build_ffi
    return ["build_ffi.py:ffi"] + (["build_ffi.py:server_ffi"] if build_ffi.server_ffi is not None else [])


setup(version=version(), cffi_modules=cffi_modules(), ext_modules=[PAGES], cmdclass={"sdist": sdist_with_core})
