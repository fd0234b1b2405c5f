#!/bin/sh
# Demo preview of deploy_code (its dry run): the arguments JSON arrives on
# stdin; stdout is a unified diff of what the deploy would change, shown to
# whoever approves it. It changes nothing: a preview must be free of side
# effects (docs/previews.md).
args=$(cat)
env=$(printf '%s' "$args" | sed -n 's/.*"environment":"\([a-z]*\)".*/\1/p')
cat <<DIFF
--- $env/release.yaml (running now)
+++ $env/release.yaml (after the deploy)
@@ -1,3 +1,3 @@
 service: shop
-build: 1041
+build: 1042
 replicas: 3
DIFF
