#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rpc_teardown.sh with polled completion queues (poll_usecs=50): connections
# die mid-call, the device goes away mid-call, while a poller thread owns
# the CQs; the thread is gone after rmmod (krpc_assert_gone).
KRPC_POLL_USECS=50 exec bash "$(dirname "$0")/rpc_teardown.sh" "$@"
