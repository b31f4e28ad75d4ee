"""The CFFI declarations are generated from core/include/slotlane.h: check that every
function, enum value and struct of the header reached the extension, with the header's
layout (the compiled extension verified the declarations against the real header)."""
import os
import re

import pytest

import slotlane
from slotlane._native import ffi, lib

ROOT = os.environ.get("SL_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HEADER = os.path.join(ROOT, "core", "include", "slotlane.h")


@pytest.fixture(scope="module")
def header():
    if not os.path.isfile(HEADER):
        pytest.fail("core/include/slotlane.h not found at %s (set SL_ROOT)" % HEADER)
    with open(HEADER) as f:
        return re.sub(r"/\*.*?\*/", " ", f.read(), flags=re.S)


def test_every_function(header):
    names = re.findall(r"SL_EXTERN[^;(]*?\b(sl_\w+)\s*\(", header)
    assert len(names) >= 20
    missing = [n for n in names if not hasattr(lib, n)]
    assert not missing, "functions of slotlane.h missing from the extension: %s" % missing


def test_every_enum_value(header):
    values = re.findall(r"\b(SL_[A-Z0-9_]+)\s*=\s*(-?\d+)", header)
    assert len(values) >= 40
    for name, v in values:
        assert getattr(lib, name) == int(v), name


def test_defines(header):
    for name, v in re.findall(r"#define\s+(SL_[A-Z0-9_]+)\s+(\d+)\s*$", header, flags=re.M):
        assert getattr(lib, name) == int(v), name


def test_reply_record_layout():
    assert ffi.sizeof("sl_reply") == 24
    assert [ffi.offsetof("sl_reply", f) for f in ("type", "flags", "reserved", "len", "value", "offset")] == \
        [0, 1, 2, 4, 8, 16]
    assert ffi.sizeof("sl_client_options") > 0
    opts = ffi.new("sl_client_options *")
    assert lib.sl_client_options_init(opts, lib.SL_CLIENT_OPTIONS_VERSION) == 0
    assert opts.size == ffi.sizeof("sl_client_options") and opts.max_redirects == 5


def test_version_matches():
    with open(os.path.join(ROOT, "VERSION")) as f:
        assert slotlane.__version__ == f.read().strip()


def test_generated_cdef_has_no_preprocessor_left(header):
    import importlib.util
    spec = importlib.util.spec_from_file_location("build_ffi_mod", os.path.join(ROOT, "python", "build_ffi.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with open(HEADER) as f:
        cdef = mod.cdef_from_header(f.read())
    assert "extern \"C\"" not in cdef and "SL_EXTERN" not in cdef
    assert not [line for line in cdef.splitlines() if line.startswith("#") and not line.endswith("...")]
