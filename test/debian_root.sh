# Sourced by test/major.sh and test/package/: the Debian suite that ships PostgreSQL MAJOR, how mmdebstrap reaches
# it from the mirror the host's apt sources name (nothing but Debian packages is fetched), and running in a root.

# debian_mirror: the first Debian mirror of the host's apt sources (deb822 or one-line).
debian_mirror() {
    local url
    url=$(cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null |
        grep -oE 'https?://[^ ]+/debian/?( |$)' | head -n 1 | tr -d ' ') || true
    echo "${url:-http://deb.debian.org/debian}"
}

# debian_suite MAJOR: sets suite (15 bookworm, the host's; 17 trixie; 18 sid; 19 experimental), url (the mirror),
# base (the suite mmdebstrap makes: experimental is layered on sid) and sources (its apt lines; bookworm's with
# its updates and security, where the host's 15 comes from). Returns 1 for a major no suite is known for.
debian_suite() {
    case $1 in
        15) suite=bookworm ;;
        17) suite=trixie ;;
        18) suite=sid ;;
        19) suite=experimental ;;
        *) return 1 ;;
    esac
    url=$(debian_mirror)
    base=${suite/experimental/sid}
    case $suite in
        bookworm) sources=("deb $url bookworm main" "deb $url bookworm-updates main"
            "deb ${url%/debian*}/debian-security bookworm-security main") ;;
        experimental) sources=("deb $url sid main" "deb $url experimental main") ;;
        *) sources=("deb $url $suite main") ;;
    esac
}

# server_packages MAJOR: the server's packages for mmdebstrap's --include (19's from experimental, with its libpq).
server_packages() {
    if [[ $suite == experimental ]]; then
        echo "postgresql-$1/experimental postgresql-client-$1/experimental libpq5/experimental"
    else
        echo "postgresql-$1"
    fi
}

# recipe_fresh FILE RECIPE: FILE records RECIPE and is younger than CK_ROOT_MAX_DAYS days (7): what it marks, a
# cached root or root tarball, was made by this recipe and recently enough to keep.
recipe_fresh() {
    [[ -f $1 && $(cat "$1") == "$2" && -z $(find "$1" -mtime "+${CK_ROOT_MAX_DAYS:-7}") ]]
}

# ensure_mmdebstrap: installs mmdebstrap when it is missing; prints why and fails when it cannot.
ensure_mmdebstrap() {
    command -v mmdebstrap >/dev/null && return
    echo "== installing mmdebstrap" >&2
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q mmdebstrap; } >/dev/null 2>&1 ||
        { echo "mmdebstrap could not be installed"; return 1; }
}

# in_root ROOT CMD...: CMD chrooted into ROOT with /dev, /proc, /dev/shm and /sys mounted in a private mount
# namespace: the mounts vanish with it, whatever way the run ends.
in_root() {
    unshare --mount --propagation private bash -c '
        root=$1; shift
        mount --rbind /dev "$root/dev" && mount -t proc proc "$root/proc" && mount -t tmpfs tmpfs "$root/dev/shm" &&
            mount -t sysfs sysfs "$root/sys" || exit 1
        exec chroot "$root" "$@"' in_root "$@"
}
