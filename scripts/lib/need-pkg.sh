# Sourced by the test scripts: `need_pkg WHAT [DEBIAN_PACKAGE]` installs the Debian package that
# provides WHAT (a command, or an absolute path to a file) when it is missing (as root, with
# apt-get; `apt-get update` once per script), else fails naming the package. The package comes
# from scripts/lib/debian-packages (the one list, also read by scripts/setup --test-packages)
# unless given (e.g. for a $CC the list does not name). Needs a `log` function.
apt_updated=0
_need_pkg_list=$(dirname -- "${BASH_SOURCE[0]}")/debian-packages
_have() { if [[ $1 == /* ]]; then [[ -e $1 ]]; else command -v "$1" >/dev/null 2>&1; fi; }
need_pkg() {
    _have "$1" && return 0
    local pkg=${2:-}
    [[ -n $pkg ]] || pkg=$(awk -v w="$1" '$1 == w { print $2; exit }' "$_need_pkg_list")
    [[ -n $pkg ]] || { log "missing $1, and scripts/lib/debian-packages names no package for it"; exit 1; }
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
        if [[ $apt_updated -eq 0 ]]; then
            log "apt-get update"
            DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
            apt_updated=1
        fi
        log "apt-get install $pkg"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$pkg" >&2
    fi
    _have "$1" || { log "missing $1 (Debian package $pkg)"; exit 1; }
}
