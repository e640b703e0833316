#!/bin/sh
# Fuzzes what iopulsed reads from others with libFuzzer (clang, AddressSanitizer, UBSan):
#   config    the YAML config loader and the serving checks (tests/fuzz/fuzz_config.c)
#   requests  a client's MarkPhase, Subscribe and GetSnapshot bytes (fuzz_requests.c)
#   sysfs     the sysfs and Ceph OSD directory readers, on trees the input describes
#
#   scripts/fuzz.sh [SECONDS [TARGET...]]   each target (default all three) for SECONDS
#                                (default 600), then a summary line per target: executions,
#                                coverage (edges), features, corpus
#
# Starts from tests/fuzz/corpus/TARGET and keeps what it finds in build-fuzz/corpus/TARGET
# (the repository's corpus changes only by hand). A crash, leak, UB report or timeout saves
# its input in build-fuzz/crashes/TARGET/ and fails the script. Run as root on Debian 12.
set -eu
cd "$(dirname "$0")/.."
secs=${1:-600}
case $secs in *[!0-9]* | '') echo "usage: $0 [SECONDS [config|requests|sysfs ...]]" >&2; exit 2 ;; esac
[ $# -gt 0 ] && shift
targets=${*:-config requests sysfs}
if ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		clang libclang-rt-14-dev >/dev/null
fi
[ -f build-fuzz/build.ninja ] || CC=clang meson setup build-fuzz -Dfuzz=true -Dtests=false \
	-Dman=disabled -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
ninja -C build-fuzz fuzz_config fuzz_requests fuzz_sysfs >/dev/null
status=0
for t in $targets; do
	case $t in config | requests | sysfs) ;; *) echo "$0: no target '$t'" >&2; exit 2 ;; esac
	mkdir -p "build-fuzz/corpus/$t" "build-fuzz/crashes/$t"
	log="build-fuzz/fuzz_$t.log"
	if ! UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 "build-fuzz/fuzz_$t" \
		-max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="build-fuzz/crashes/$t/" "build-fuzz/corpus/$t" \
		"tests/fuzz/corpus/$t" >"$log" 2>&1; then
		echo "fuzz_$t: FAILED, input saved in build-fuzz/crashes/$t/; the log's end:" >&2
		tail -40 "$log" >&2
		status=1
		continue
	fi
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	done_line=$(grep '^#[0-9]*[[:space:]]*DONE' "$log" | tail -1)
	cov=$(echo "$done_line" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
	ft=$(echo "$done_line" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
	corp=$(echo "$done_line" | sed -n 's/.*corp: \([0-9]*\/[0-9a-zA-Z]*\).*/\1/p')
	echo "fuzz_$t: ${secs}s, $execs executions, cov $cov edges, ft $ft, corpus $corp, no crash"
done
exit $status
