#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
#
# Installs Debian's offline-capable Bazel 4.2.3 (bazel-bootstrap) plus the two rule
# repositories WORKSPACE points at, unless they are already there. Idempotent.
# Why this Bazel: no registry we can reach ships a newer one (docs/toolchain.md §1.1).
set -euo pipefail

# The paths WORKSPACE's local_repository() rules need, besides the binary itself.
needed=(/usr/share/bazel/rules/java /usr/share/bazel/tools/skylib)
have_all=1
command -v bazel >/dev/null 2>&1 || have_all=0
for dir in "${needed[@]}"; do [[ -d "$dir" ]] || have_all=0; done
[[ $have_all == 1 ]] && exit 0

sudo=""
[[ $(id -u) -ne 0 ]] && sudo="sudo"
echo "install_bazel: installing bazel-bootstrap bazel-rules-java bazel-skylib" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
  bazel-bootstrap bazel-rules-java bazel-skylib </dev/null >/dev/null
