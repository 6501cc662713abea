#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Load and unload 50 times, with the device node opened and the debugfs
# files read on each round, and an rxe device removed and re-added every
# tenth round while loaded.  The run_tests wrapper fails the test on any
# splat in the kernel log.
. "$(dirname "$0")/lib.sh"

krpc_loaded && ktap_skip_all "krpc already loaded"
rounds=${KRPC_LOOP_ROUNDS:-50}

restore() {
	rdma link show "$KRPC_RXE/1" > /dev/null 2>&1 ||
		rdma link add "$KRPC_RXE" type rxe netdev "$KRPC_NETDEV"
	krpc_unload
}
trap restore EXIT

round() {
	krpc_load || return 1
	cat /sys/kernel/debug/krpc/stats /sys/kernel/debug/krpc/devices > /dev/null || return 1
	"$KRPC_TOP/build/user/tools/krpcctl" info > /dev/null || return 1
	if [ $(($1 % 10)) = 0 ]; then
		rdma link del "$KRPC_RXE" || return 1
		rdma link add "$KRPC_RXE" type rxe netdev "$KRPC_NETDEV" || return 1
		[ "$(krpc_devices)" = "$KRPC_RXE" ] || return 1
	fi
	krpc_unload || return 1
	krpc_assert_gone
}

ok=0
for i in $(seq 1 "$rounds"); do
	round "$i" || { log "round $i failed"; break; }
	ok=$i
done
ktap_check "$rounds load/unload rounds" test "$ok" = "$rounds"
ktap_finish
