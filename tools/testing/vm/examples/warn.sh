#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Negative test for the log scan: host a puts a fake warning into the
# kernel log, so vm.sh must report a failure although the script succeeds.

set -euo pipefail

if [ "$VISOCK_HOST" = a ]; then
	echo 'WARNING: fake' >/dev/kmsg
fi
echo "host $VISOCK_HOST done"
