# Sourced by the test scripts: `need_pkg COMMAND DEBIAN_PACKAGE` installs the Debian package that
# provides COMMAND when it is missing (as root, with apt-get; `apt-get update` once per script),
# else fails naming the package. Needs a `log` function.
apt_updated=0
need_pkg() {
    command -v "$1" >/dev/null 2>&1 && return 0
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
        if [[ $apt_updated -eq 0 ]]; then
            log "apt-get update"
            DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
            apt_updated=1
        fi
        log "apt-get install $2"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$2" >&2
    fi
    command -v "$1" >/dev/null 2>&1 || { log "missing $1 (Debian package $2)"; exit 1; }
}
