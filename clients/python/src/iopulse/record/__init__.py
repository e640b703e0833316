"""Recording runs: the run file (writer, reader) and the recorder."""
from .reader import Host, Run, RunFileError, load
from .writer import RunWriter

__all__ = ["Run", "Host", "RunFileError", "RunWriter", "load"]
