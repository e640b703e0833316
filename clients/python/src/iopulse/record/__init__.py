"""Recording runs: the run file (writer, reader) and the recorder."""
from .reader import Host, Run, RunFileError, load
from ..analysis.settings import HostSettings, settings_changes
from .writer import RunWriter

__all__ = ["Run", "Host", "HostSettings", "RunFileError", "RunWriter", "load",
           "settings_changes"]
