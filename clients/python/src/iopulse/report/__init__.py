"""Reports of recorded runs: per-phase numbers (metrics), tables and files."""
