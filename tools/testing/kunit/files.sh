# SPDX-License-Identifier: GPL-2.0
#
# Sourced by run_kunit.sh (UML) and check-debug.sh (visock_kunit.ko):
# the visock sources without kernel subsystem dependencies that the KUnit
# suites (net/visock/tests/*_test.c) test, and the headers they include.
# shellcheck disable=SC2034 # used by the scripts that source this
pure_srcs="visock_tcpopt.c visock_hs_codec.c visock_ring.c visock_cdc_codec.c
	   visock_policy_match.c visock_xform.c visock_comp.c visock_record.c
	   visock_kdf.c
	   visock_auth.c"
pure_hdrs="visock_wire.h visock_policy.h visock_xform.h visock_comp.h
	   visock_record.h
	   visock_kdf.h visock_compat.h visock_auth.h"
