#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The ib_client sees RDMA devices come and go while krpc is loaded
# (rdma link add/del), including the test bed's own rxe0.
. "$(dirname "$0")/lib.sh"

krpc_loaded && ktap_skip_all "krpc already loaded"

cleanup() {
	rdma link del rxe1 2>/dev/null
	ip link del krpc1 2>/dev/null
	rdma link show "$KRPC_RXE/1" > /dev/null 2>&1 ||
		rdma link add "$KRPC_RXE" type rxe netdev "$KRPC_NETDEV"
	krpc_unload
}
trap cleanup EXIT

devs() { krpc_devices | sort | tr '\n' ' '; }

ktap_check "insmod krpc.ko" krpc_load
pp ip link add krpc1 type dummy
pp ip addr add 198.51.100.1/24 dev krpc1
pp ip link set krpc1 up
ktap_check "rdma link add rxe1" pp rdma link add rxe1 type rxe netdev krpc1
ktap_check "both devices seen" test "$(devs)" = "rxe0 rxe1 "
ktap_check "rdma link del rxe1" pp rdma link del rxe1
ktap_check "rxe1 gone" test "$(devs)" = "rxe0 "
ktap_check "rdma link del $KRPC_RXE" pp rdma link del "$KRPC_RXE"
ktap_check "no device left" test -z "$(devs)"
ktap_check "removals counted" test "$(krpc_stat devices_removed)" = 2
ktap_check "rdma link add $KRPC_RXE again" \
	pp rdma link add "$KRPC_RXE" type rxe netdev "$KRPC_NETDEV"
ktap_check "$KRPC_RXE seen again" test "$(devs)" = "rxe0 "
ktap_check "additions counted" test "$(krpc_stat devices_added)" = 3
ktap_check "rmmod krpc" krpc_unload
ktap_check "nothing left after rmmod" krpc_assert_gone
ktap_finish
