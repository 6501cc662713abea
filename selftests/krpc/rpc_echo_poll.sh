#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rpc_echo.sh with polled completion queues (poll_usecs=50): the same checks,
# and every completion reaped by the krpc_poll thread.
KRPC_POLL_USECS=50 exec bash "$(dirname "$0")/rpc_echo.sh" "$@"
