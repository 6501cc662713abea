#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rpc_echo.sh over the TCP transport: the same checks, the same script.
KRPC_TRANSPORT=tcp exec bash "$(dirname "$0")/rpc_echo.sh" "$@"
