// SPDX-License-Identifier: GPL-2.0
/*
 * krpc_peer.ko: the same test code as krpc_test.ko under another name, so
 * that a server can run in a module of its own and be removed mid-call.
 */
#include "krpc_test.c"
