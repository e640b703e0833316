"""The plots of a run, one module per figure kind. shape reads a run into plain data (no
matplotlib); each figure module draws that data into a matplotlib Figure; common holds what
the figures share (units, the phase strip and the numbered phase key, the layout in inches).
report.plots writes them to files."""
