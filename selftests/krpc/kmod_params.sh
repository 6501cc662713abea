#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Module parameters are validated: a bad value refuses the load with -EINVAL
# and a log line naming the parameter; a good one takes effect.
. "$(dirname "$0")/lib.sh"

krpc_loaded && ktap_skip_all "krpc already loaded"

# expect_refused PARAM=VALUE LOGLINE
expect_refused() {
	local out
	dmesg -C
	out=$(krpc_load "$1" 2>&1) && { krpc_unload; log "loaded with $1"; return 1; }
	log "$out"
	# kmod prints EINVAL from init_module(2) as "Invalid parameters".
	grep -q 'Invalid parameters' <<< "$out" || { log "not EINVAL"; return 1; }
	grep -qF "$2" <(dmesg) || { log "no log line '$2'"; return 1; }
	krpc_assert_gone
}

ktap_check "dev_mode=0666 refused (world bits)" \
	expect_refused dev_mode=0666 "dev_mode: 0666 has bits outside 0660"
ktap_check "dev_mode=01660 refused (sticky bit)" \
	expect_refused dev_mode=01660 "dev_mode: 01660 has bits outside 0660"
ktap_check "dev_mode=rw refused (not octal)" \
	expect_refused dev_mode=rw "dev_mode: 'rw' is not an octal mode"
ktap_check "dev_mode=99999999 refused (overflow)" \
	expect_refused dev_mode=99999999 "dev_mode: '99999999' is not an octal mode"

ktap_check "dev_mode=0660 loads" krpc_load dev_mode=0660
ktap_check "/dev/krpc has mode 0660" test "$(stat -c %a /dev/krpc)" = 660
ktap_check "parameter reads back" test "$(cat /sys/module/krpc/parameters/dev_mode)" = 0660
ktap_check "rmmod krpc" krpc_unload
ktap_check "nothing left after rmmod" krpc_assert_gone
ktap_finish
