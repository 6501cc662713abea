#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Module parameters are validated: a bad value refuses the load with -EINVAL
# and a log line naming the parameter; a good one takes effect.
. "$(dirname "$0")/lib.sh"

krpc_loaded && ktap_skip_all "krpc already loaded"

# expect_refused PARAM=VALUE ERRNO-TEXT LOGLINE: insmod fails with that
# errno (as kmod prints it: EINVAL is "Invalid parameters", ERANGE
# "Numerical result out of range") and the kernel log names the problem.
expect_refused() {
	local out
	klog_mark
	out=$(krpc_load "$1" 2>&1) && { krpc_unload; log "loaded with $1"; return 1; }
	log "$out"
	grep -qF "$2" <<< "$out" || { log "not '$2'"; return 1; }
	grep -qF "$3" <(klog_since) || { log "no log line '$3'"; return 1; }
	krpc_assert_gone
}

ktap_check "dev_mode=0666 refused (world bits)" \
	expect_refused dev_mode=0666 "Invalid parameters" "dev_mode: 0666 has bits outside 0660"
ktap_check "dev_mode=01660 refused (sticky bit)" \
	expect_refused dev_mode=01660 "Invalid parameters" "dev_mode: 01660 has bits outside 0660"
ktap_check "dev_mode=rw refused (not octal)" \
	expect_refused dev_mode=rw "Invalid parameters" "dev_mode: 'rw' is not an octal mode"
ktap_check "dev_mode=99999999 refused (overflow)" \
	expect_refused dev_mode=99999999 "Invalid parameters" "dev_mode: '99999999' is not an octal mode"

# Range-checked numeric parameters (kmod/params.c): one below and one above.
for p in "depth 1 1024" "buf_size 1024 65536" "max_msg 65536 67108864" \
	 "call_timeout_ms 10 3600000" "ka_timeout_ms 200 600000" \
	 "rnr_retry 0 7" "upool_max_mb 1 1048576" "transport 1 3" \
	 "poll_usecs 0 1000000" "poll_threads 1 64" "cq_shared 0 1" \
	 "unsignaled 0 1" "max_conns 1 65536"; do
	set -- $p
	[ "$2" -gt 0 ] &&
	ktap_check "$1=$(($2 - 1)) refused" expect_refused "$1=$(($2 - 1))" \
		"Numerical result out of range" "$1=$(($2 - 1)) is outside [$2, $3]"
	ktap_check "$1=$(($3 + 1)) refused" expect_refused "$1=$(($3 + 1))" \
		"Numerical result out of range" "$1=$(($3 + 1)) is outside [$2, $3]"
done
ktap_check "depth=12x refused (not a number)" \
	expect_refused depth=12x "Invalid parameters" "invalid for parameter \`depth'"

ktap_check "dev_mode=0660 loads" krpc_load dev_mode=0660
ktap_check "/dev/krpc has mode 0660" test "$(stat -c %a /dev/krpc)" = 660
ktap_check "parameter reads back" test "$(cat /sys/module/krpc/parameters/dev_mode)" = 0660

# The keepalive pair at run time: the timeout stays at least twice the
# interval (defaults 1000 and 5000), whichever of the two is written.
# ka_write PARAM VALUE: 0 if the write was taken.
ka_write() { echo "$2" > "/sys/module/krpc/parameters/$1" 2>/dev/null; }
ka_read() { cat "/sys/module/krpc/parameters/$1"; }
klog_mark
ktap_check "ka_interval_ms=2600 refused at run time" \
	eval '! ka_write ka_interval_ms 2600'
ktap_check "ka_interval_ms unchanged" test "$(ka_read ka_interval_ms)" = 1000
ktap_check "the refusal is logged" grep -qF \
	"ka_interval_ms=2600 refused: ka_timeout_ms (5000) must stay at least twice ka_interval_ms (2600)" \
	<(klog_since)
ktap_check "ka_interval_ms=2500 taken" ka_write ka_interval_ms 2500
ktap_check "ka_timeout_ms=4999 refused" eval '! ka_write ka_timeout_ms 4999'
ktap_check "ka_timeout_ms unchanged" test "$(ka_read ka_timeout_ms)" = 5000
ktap_check "ka_timeout_ms=6000 taken" ka_write ka_timeout_ms 6000
ktap_check "rmmod krpc" krpc_unload
# At load the pair is checked once, whatever the order of the two.
ktap_check "ka_interval_ms=5000 ka_timeout_ms=20000 loads" \
	krpc_load ka_interval_ms=5000 ka_timeout_ms=20000
ktap_check "rmmod krpc" krpc_unload
ktap_check "ka_interval_ms=5000 alone refused at load" \
	expect_refused ka_interval_ms=5000 "Invalid" \
	"ka_timeout_ms must be at least twice ka_interval_ms"
# 64 KiB messages live in the medium class: a pool without one has no
# buffer for them, and every handshake would fail.
ktap_check "max_msg=65536 pool_medium=0 refused" \
	expect_refused "max_msg=65536 pool_medium=0" "Invalid" \
	"max_msg=65536 needs pool_medium > 0"
ktap_check "max_msg=65536 pool_medium=0 buf_size=65536 loads" \
	krpc_load max_msg=65536 pool_medium=0 buf_size=65536
ktap_check "rmmod krpc" krpc_unload
ktap_check "nothing left after rmmod" krpc_assert_gone
ktap_finish
