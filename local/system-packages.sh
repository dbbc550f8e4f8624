#!/usr/bin/env bash
# The system packages `make test` needs beyond python3 and make: Debian's chromium (the inbox page
# tests launch /usr/bin/chromium through Playwright), node with npm (AG-UI's own client), and for the
# container tier (tests/sam/, `sam local invoke`): a Docker engine (docker.io), debootstrap (the
# Lambda-shaped base image is built from Debian, local/holdpoint_local/containers.py), and on a host
# that is not arm64, qemu-user-static with binfmt-support (the template's arm64 functions run under it).
# Installs what is missing with apt-get when it can; otherwise stops with one line naming them.
set -euo pipefail
need=()
[ -x /usr/bin/chromium ] || need+=(chromium)
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
for tool in curl jq openssl; do  # the README's walkthrough, which tests/e2e/test_readme_walkthrough.py runs
  command -v "$tool" >/dev/null 2>&1 || need+=("$tool")
done
if [ "$(uname -m)" != aarch64 ]; then
  command -v qemu-aarch64-static >/dev/null 2>&1 || need+=(qemu-user-static)
  command -v update-binfmts >/dev/null 2>&1 || need+=(binfmt-support)
fi
[ ${#need[@]} -eq 0 ] && exit 0
as_root=()
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  as_root=(sudo)
fi
if command -v apt-get >/dev/null 2>&1 && { [ "$(id -u)" = 0 ] || [ ${#as_root[@]} -gt 0 ]; }; then
  echo "installing ${need[*]} with apt-get (needed by the page, AG-UI and container tests)"
  "${as_root[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq "${need[@]}" >/dev/null
  exit 0
fi
echo "make test needs ${need[*]}; install them (Debian: apt-get install ${need[*]}) and run it again" >&2
exit 1
