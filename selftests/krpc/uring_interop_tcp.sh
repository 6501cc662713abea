#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# uring_interop.sh over the TCP transport: the same checks, the same script.
KRPC_TRANSPORT=tcp exec bash "$(dirname "$0")/uring_interop.sh" "$@"
