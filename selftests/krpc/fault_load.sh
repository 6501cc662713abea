#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Module load under slab-allocation failures, armed for one task and only
# around its init_module(2) call (fault_insmod), so that failures hit the
# module loader and krpc's init:
#  - a sweep: fail-nth fails exactly the N-th allocation the load makes,
#    for N = 1, 1 + step, 1 + 2 * step, ... up to the number of allocation
#    sites one load reaches (counted first); KRPC_FAULT_NTH_STEP=1 tries
#    every one of them;
#  - random rounds: failslab fails 2% to 40% of the task's allocations.
# Every load either succeeds or fails with -ENOMEM and leaves nothing
# behind; the run_tests wrapper adds the kernel-log (KASAN, lockdep,
# WARNING) and kmemleak checks.  krpc_failguard.ko exempts the kernel's
# module notifiers (jump labels, static calls), which WARN by design when
# their allocations fail.  Needs a kernel with FAILSLAB (make check-debug).
. "$(dirname "$0")/lib.sh"

fs=/sys/kernel/debug/failslab
[ -d $fs ] || ktap_skip_all "no failslab in this kernel (run make check-debug)"
krpc_loaded && ktap_skip_all "krpc already loaded"
rounds=${KRPC_FAULT_ROUNDS:-20}
insmod_f="$KRPC_TOP/build/user/selftests/fault_insmod"

guard=$KRPC_BUILD/selftests/krpc/module/krpc_failguard.ko

restore() {
	echo 0 > $fs/probability
	echo 0 > $fs/times
	krpc_unload
	[ -d /sys/module/krpc_failguard ] && rmmod krpc_failguard
}
trap restore EXIT

if pp insmod "$guard"; then
	ktap_ok "insmod krpc_failguard.ko"
else
	ktap_fail "insmod krpc_failguard.ko"
	ktap_finish
fi

echo N > $fs/ignore-gfp-wait	# GFP_KERNEL allocations too
echo 0 > $fs/verbose		# an injected failure is not a splat
echo 1 > $fs/interval
echo 0 > $fs/probability	# fail-nth first: no random failures

loaded=0 refused=0 bad=0

# round WHAT [--nth N]: one faulted load, then unload; counts the outcome.
round() {
	local what=$1 out
	shift
	if out=$("$insmod_f" "$@" "$(krpc_ko)"); then
		loaded=$((loaded + 1))
		echo 0 > $fs/probability
		krpc_unload || { log "$what: rmmod failed"; bad=$((bad + 1)); }
	else
		refused=$((refused + 1))
		case "$out" in
		*"refused: Cannot allocate memory") ;;
		*) log "$what: $out"; bad=$((bad + 1)) ;;
		esac
	fi
	echo 0 > $fs/probability
	krpc_assert_gone || { log "$what: left something behind"; bad=$((bad + 1)); }
	last_out=$out
}

# How many fault-injection sites one load reaches: fail-nth counts them
# down without reaching zero.
big=1000000
round "count" --nth $big
left=${last_out#fail-nth left: }
left=${left%%$'\n'*}
sites=$((big - left))
log "one load reaches $sites fault-injection sites"
ktap_check "an unfaulted load succeeds and counts its sites" \
	test "$loaded" = 1 -a "$sites" -gt 0 -a "$sites" -lt $big

step=${KRPC_FAULT_NTH_STEP:-$(( (sites + 39) / 40 ))}
injected=0 nth_loaded=$loaded nth_refused=$refused
for n in $(seq 1 "$step" "$sites"); do
	round "fail-nth $n" --nth "$n"
	# A load that happened to reach fewer sites this time is no miss.
	case "$last_out" in "fail-nth left: 0"*) injected=$((injected + 1)) ;; esac
done
nth_loaded=$((loaded - nth_loaded)) nth_refused=$((refused - nth_refused))
log "fail-nth sweep, step $step: $injected faults injected; loaded $nth_loaded times, refused $nth_refused times"
ktap_check "fail-nth sweep injected its faults" test "$injected" -gt 0
ktap_check "fail-nth sweep: some loads were refused" test "$nth_refused" -gt 0

echo 1 > $fs/task-filter
echo -1 > $fs/times
for i in $(seq 1 "$rounds"); do
	# From 2% to 40% of the task's allocations fail.
	echo $(( (i % 20 + 1) * 2 )) > $fs/probability
	round "random round $i"
done
log "all rounds: loaded $loaded times, refused $refused times"
ktap_check "every faulted load unwound cleanly" test "$bad" = 0
ktap_check "some random loads were refused (faults were injected)" \
	test "$refused" -gt "$nth_refused"
ktap_check "module loads normally afterwards" krpc_load
ktap_check "rmmod krpc" krpc_unload
ktap_check "nothing left after rmmod" krpc_assert_gone
ktap_finish
