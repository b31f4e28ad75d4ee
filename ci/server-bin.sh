#!/usr/bin/env bash
# ci/server-bin.sh — prints the path of slotlane-server ($SL_SERVER_BIN, else
# build/server/slotlane-server), building it with cmake first when it is missing; for test
# helpers in every language that start the bundled server on their own.
SL_SUITE=server-bin
. "$(dirname "$0")/lib.sh"
sl_server_bin
