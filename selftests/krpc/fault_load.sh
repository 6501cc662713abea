#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Module load under slab-allocation failures: failslab, filtered to one task
# and armed only around its init_module(2) call (fault_insmod), fails
# allocations at random in the module loader and krpc's init.  Every load
# either succeeds or fails with -ENOMEM and leaves nothing behind; the
# run_tests wrapper adds the kernel-log (KASAN, lockdep, WARNING) and
# kmemleak checks.  Needs a kernel with FAILSLAB (make check-debug).
. "$(dirname "$0")/lib.sh"

fs=/sys/kernel/debug/failslab
[ -d $fs ] || ktap_skip_all "no failslab in this kernel (run make check-debug)"
krpc_loaded && ktap_skip_all "krpc already loaded"
rounds=${KRPC_FAULT_ROUNDS:-40}

restore() {
	echo 0 > $fs/probability
	echo 0 > $fs/times
	krpc_unload
}
trap restore EXIT

echo 1 > $fs/task-filter
echo N > $fs/ignore-gfp-wait	# GFP_KERNEL allocations too
echo 0 > $fs/verbose		# an injected failure is not a splat
echo 1 > $fs/interval
echo -1 > $fs/times

loaded=0 refused=0 bad=0
for i in $(seq 1 "$rounds"); do
	# From 2% to 40% of the task's allocations fail.
	echo $(( (i % 20 + 1) * 2 )) > $fs/probability
	if out=$("$KRPC_TOP/build/user/selftests/fault_insmod" "$(krpc_ko)"); then
		loaded=$((loaded + 1))
		echo 0 > $fs/probability
		krpc_unload || { log "round $i: rmmod failed"; bad=$((bad + 1)); }
	else
		refused=$((refused + 1))
		case "$out" in
		"refused: Cannot allocate memory") ;;
		*) log "round $i: $out"; bad=$((bad + 1)) ;;
		esac
	fi
	echo 0 > $fs/probability
	krpc_assert_gone || { log "round $i: left something behind"; bad=$((bad + 1)); }
done
log "loaded $loaded times, refused $refused times"
ktap_check "every faulted load unwound cleanly" test "$bad" = 0
ktap_check "some loads were refused (faults were injected)" test "$refused" -gt 0
ktap_check "module loads normally afterwards" krpc_load
ktap_check "rmmod krpc" krpc_unload
ktap_check "nothing left after rmmod" krpc_assert_gone
ktap_finish
