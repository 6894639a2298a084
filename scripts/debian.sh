# Sourced by the cross-target scripts (arm64.sh, windows.sh): Debian packages installed only when
# `need_packages` (defined by the caller) says something is missing. With `--download` as the
# script's first argument they are only fetched into apt's cache and the script stops there.
# Callers set `packages` and may set `before_update` (a command run before `apt-get update`).
apt_get() {
  ${before_update:-true}
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" "${packages[@]}" >/dev/null
}
ensure_packages() {
  if [ "${1:-}" = --download ]; then
    if need_packages; then apt_get --download-only; fi
    exit 0
  fi
  if need_packages; then apt_get; fi
}
