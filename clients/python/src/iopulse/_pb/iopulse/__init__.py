"""Generated stubs for the proto package iopulse (see clients/python/gen_stubs.py)."""
