#!/bin/sh
# Demo deploy tool: the arguments JSON arrives on stdin; stdout is the result.
# It deploys nothing; it only says what it would have done.
args=$(cat)
env=$(printf '%s' "$args" | sed -n 's/.*"environment":"\([a-z]*\)".*/\1/p')
echo "Deployed build 1042 to $env. (Demo: nothing was really deployed.)"
