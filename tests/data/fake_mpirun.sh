#!/usr/bin/env bash
# Stands in for mpirun in the test of run_script.sh's argument passing (MPIRUN=this file): prints
# every argument it was given on a line of its own, in brackets so that spaces show, then the
# NCCL_SOCKET_IFNAME it inherited. Runs nothing.
for arg in "$@"; do printf '[%s]\n' "$arg"; done
echo "NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME-(unset)}"
