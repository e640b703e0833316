#!/bin/sh
# The Python client with the dependency versions its users have, installed the way they install
# it (pip install ./clients/python: a real wheel build) into fresh venvs of Debian's python3:
#   newest  the newest grpcio, protobuf and rich on PyPI, installed before the client as a
#           user's other packages would have them; pip must keep them (fails if it changed one,
#           or if any of them is not the newest release);
#           With the report extra (pandas, matplotlib, pyarrow, newest too).
#   oldest  the oldest versions pyproject.toml allows (clients/python/constraints-oldest.txt),
#           base install only: recording, reports as tables, compare need no analysis stack.
# In each: the client's unit tests and the gRPC and phase integration tests against the real
# daemon; in newest also the recording tests (hostile job names too) and the HTML, plot and
# export tests.
# Then Debian's route to Parquet: a venv over Debian's python3-pandas and python3-numpy (1.24)
# with pyarrow<26 (pyarrow 26 and later need NumPy 2), the client without dependencies, the export
# test.
# Needs build/iopulsed (scripts/test.sh builds it) and root. Run from anywhere.
set -eu
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
CONSTRAINTS=clients/python/constraints-oldest.txt
PIP="--quiet --disable-pip-version-check --no-input"

versions() { "$1/bin/python" - <<'PYEOF'
import importlib.metadata as m
print(" ".join(f"{p}=={m.version(p)}" for p in ("grpcio", "protobuf", "rich", "iopulse")
               if any(d.metadata["Name"].lower() == p for d in m.distributions())))
PYEOF
}

for kind in newest oldest; do
	V="build/venv-$kind"
	echo "== Python client, $kind dependencies ($V)"
	rm -rf "$V"
	"$PY" -m venv "$V"
	if [ "$kind" = newest ]; then
		"$V/bin/pip" install $PIP --upgrade pip
		"$V/bin/pip" install $PIP --upgrade grpcio protobuf rich
	else
		"$V/bin/pip" install $PIP -r "$CONSTRAINTS"
	fi
	before=$(versions "$V")
	if [ "$kind" = newest ]; then
		"$V/bin/pip" install $PIP "./clients/python[test,report]"
	else
		"$V/bin/pip" install $PIP -c "$CONSTRAINTS" "./clients/python[test]"
	fi
	after=$(versions "$V")
	echo "$kind: $after"
	case "$after" in
	"$before iopulse=="*) ;;
	*) echo "pip changed the dependencies installing the client: before: $before; after: $after" >&2
	   exit 1 ;;
	esac
	if [ "$kind" = newest ]; then
		outdated=$("$V/bin/pip" list $PIP --outdated --format=freeze 2>/dev/null |
			grep -iE '^(grpcio|protobuf|rich)==' || true)
		if [ -n "$outdated" ]; then
			echo "not the newest release: $outdated" >&2
			exit 1
		fi
	fi
	"$V/bin/iopulse" --version
	"$V/bin/python" -m pytest -q -p no:cacheprovider clients/python/tests
	# the recording and report tests in newest only: the integration stage runs them with
	# Debian's python3 packages, which are older than the oldest pins but for grpcio
	more=""
	[ "$kind" = newest ] && more="tests/integration/test_record.py \
		tests/integration/test_record_hostile.py tests/integration/test_report_files.py"
	# shellcheck disable=SC2086 # words or none
	"$V/bin/python" -m pytest -v -s -p no:cacheprovider tests/integration/test_grpc.py \
		tests/integration/test_phases.py $more
done

V=build/venv-debian
echo "== Python client, Debian's pandas and numpy with pyarrow<26 ($V)"
rm -rf "$V"
"$PY" -m venv --system-site-packages "$V"
"$V/bin/pip" install $PIP 'pyarrow<26'
"$V/bin/pip" install $PIP --no-deps ./clients/python
"$V/bin/python" -c 'import numpy, pandas, pyarrow; print("debian: numpy", numpy.__version__,
"pandas", pandas.__version__, "pyarrow", pyarrow.__version__)'
"$V/bin/python" -m pytest -v -s -p no:cacheprovider tests/integration/test_report_files.py \
	-k export_formats
