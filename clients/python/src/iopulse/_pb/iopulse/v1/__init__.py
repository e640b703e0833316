"""Generated stubs for the proto package iopulse.v1 (see clients/python/gen_stubs.py)."""
