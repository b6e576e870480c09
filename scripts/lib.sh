# Shared helpers for scripts/* (bash): Debian packages, a free port, the origin started and waited for.

# ensure_packages PACKAGE...: installs the missing Debian packages (as root or with sudo).
ensure_packages() {
    local missing=()
    for package in "$@"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    echo "installing: ${missing[*]}" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# A TCP port on 127.0.0.1 nobody listens on (the kernel's choice; free until someone binds it).
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_origin_process BINARY CONFIG DATA_DIR LOG_DIR [PORT]: starts hlsorigin on 127.0.0.1 (port 0: it chooses),
# stdout and stderr to LOG_DIR/stdout and LOG_DIR/stderr, and waits up to 30 s for its "listening on" line. Sets
# origin_pid and origin_port; returns 1 if the process exits or does not listen in time (origin_pid is still set).
start_origin_process() {
    local binary=$1 config=$2 data=$3 logs=$4 port=${5:-0}
    mkdir -p "$logs"
    "$binary" --config "$config" --host 127.0.0.1 --port "$port" --data-dir "$data" \
        >"$logs/stdout" 2>"$logs/stderr" &
    origin_pid=$!
    origin_port=""
    for _ in $(seq 300); do
        origin_port=$(grep -o 'listening on 127.0.0.1:[0-9]*' "$logs/stdout" 2>/dev/null | cut -d: -f2 || true)
        [ -n "$origin_port" ] && return 0
        kill -0 "$origin_pid" 2>/dev/null || break
        sleep 0.1
    done
    return 1
}

# wait_for_url URL PID [TRIES]: polls URL every 0.1 s until it answers (any status), TRIES times (default 50);
# returns 1 early if PID exits, or when the tries run out.
wait_for_url() {
    local url=$1 pid=$2 tries=${3:-50}
    for _ in $(seq "$tries"); do
        curl -s -o /dev/null "$url" && return 0
        kill -0 "$pid" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}
