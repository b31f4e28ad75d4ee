# The CFFI extension is declared here (setuptools reads cffi_modules only from setup()).
# Everything else is in pyproject.toml.
from setuptools import setup

setup(cffi_modules=["build_ffi.py:ffi"])
