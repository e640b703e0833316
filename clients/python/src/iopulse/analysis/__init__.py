"""A run's numbers shaped for reading: Updates added up per phase (aggregate), every figure
computed from those sums (metrics), what rows are labelled with (labels), device settings
(settings), a live Update as the same sums (live), and runs compared (compare, stats).

Below the report (iopulse.report), the live view (iopulse.render) and the run reader
(iopulse.record): it reads Updates as wire messages and phases (iopulse.phases), and imports
none of those above it."""
