# SPDX-License-Identifier: GPL-2.0
#
# Helpers for krpc's shell selftests.  A test sources this file, prints TAP
# lines for its checks with ktap_ok/ktap_fail, and ends with ktap_finish:
# exit 0 when every check passed, 1 when one failed, 4 (kselftest's skip)
# when it called ktap_skip_all.  Tests run as root inside a test-bed guest
# (tools/vm/run), where KRPC_* describe the set-up (tools/vm/guest-init).

set -u

KSFT_PASS=0
KSFT_FAIL=1
KSFT_SKIP=4

ktap_n=0
ktap_failed=0

ktap_ok() {
	ktap_n=$((ktap_n + 1))
	echo "ok $ktap_n $*"
}

ktap_fail() {
	ktap_n=$((ktap_n + 1))
	ktap_failed=$((ktap_failed + 1))
	echo "not ok $ktap_n $*"
}

# ktap_check DESCRIPTION COMMAND...: ok when COMMAND succeeds.
ktap_check() {
	local what=$1
	shift
	if "$@"; then
		ktap_ok "$what"
	else
		ktap_fail "$what"
	fi
}

# Nothing to test here (no device, no controller).  A check that failed
# before still fails the test.
ktap_skip_all() {
	echo "# SKIP: $*"
	[ "$ktap_failed" -eq 0 ] || exit $KSFT_FAIL
	exit $KSFT_SKIP
}

# Something the test needs and that must work failed (loading a module):
# the test fails, it is not skipped.
ktap_bail() {
	ktap_fail "$*"
	ktap_finish
}

# The kernel log is never cleared by a test (run_tests judges all of it):
# klog_mark writes a unique line to it, klog_since prints what follows the
# last mark.
klog_mark() {
	klog_marker="krpc-selftest mark $$.$RANDOM.$(date +%s%N)"
	echo "$klog_marker" > /dev/kmsg
}

klog_since() {
	dmesg | awk -v m="$klog_marker" 'seen { print } index($0, m) { seen = 1 }'
}

ktap_finish() {
	echo "# $ktap_n checks, $ktap_failed failed"
	[ "$ktap_failed" -eq 0 ] && exit $KSFT_PASS
	exit $KSFT_FAIL
}

log() { sed 's/^/# /' <<< "$*"; }

# Run a command and show it, the way wireguard's netns.sh does.
pp() { echo "# + $*"; "$@"; }

krpc_ko() { echo "$KRPC_BUILD/kmod/krpc.ko"; }

krpc_loaded() { [ -d /sys/module/krpc ]; }

# krpc_load [PARAM=VALUE...]: insmod the freshly built module.
krpc_load() {
	insmod "$(krpc_ko)" "$@"
}

krpc_unload() {
	krpc_loaded || return 0
	rmmod krpc
}

# Nothing of krpc may remain after rmmod: module, device node, debugfs
# directory, slab caches, sysfs class entries.
krpc_assert_gone() {
	local bad=0
	krpc_loaded && { log "module still loaded"; bad=1; }
	[ -e /dev/krpc ] && { log "/dev/krpc still present"; bad=1; }
	[ -e /sys/class/misc/krpc ] && { log "misc class entry still present"; bad=1; }
	[ -e /sys/kernel/debug/krpc ] && { log "debugfs krpc/ still present"; bad=1; }
	if [ "$(krpc_pollers)" != 0 ]; then
		log "poller threads left: $(krpc_pollers)"
		bad=1
	fi
	if grep -q '^krpc' /proc/slabinfo 2>/dev/null; then
		log "slab caches left: $(grep '^krpc' /proc/slabinfo | cut -d' ' -f1 | tr '\n' ' ')"
		bad=1
	fi
	return $bad
}

# krpc_pollers: how many krpc_poll/N threads run (rdma_poll.c)
krpc_pollers() { grep -lx 'krpc_poll/[0-9]*' /proc/[0-9]*/comm 2>/dev/null | wc -l; }

# debugfs counter value: krpc_stat NAME
krpc_stat() {
	awk -v n="$1" '$1 == n { print $2 }' /sys/kernel/debug/krpc/stats
}

krpc_devices() {
	cat /sys/kernel/debug/krpc/devices
}
