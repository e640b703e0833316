"""Benchmark phases: from the daemons' marks, from fio, rados bench and CBT."""
from .model import Edges, Phase, phases_of_run

__all__ = ["Phase", "Edges", "phases_of_run"]
