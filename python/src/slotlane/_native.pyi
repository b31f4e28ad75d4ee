# The CFFI extension built by build_ffi.py (declarations generated from slotlane.h).
from typing import Any

ffi: Any
lib: Any
