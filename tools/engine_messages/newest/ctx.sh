#!/bin/bash
# ctx.sh path:line [before] [after]  -- print source around a candidate in the 0.34.0 tree
f=${1%%:*}; l=${1##*:}; b=${2:-12}; a=${3:-4}
echo "----- $1"; awk -v s=$((l-b)) -v e=$((l+a)) 'NR>=s && NR<=e {printf "%5d %s\n", NR, $0}' src/v34/$f
