# Sourced by resume.sh and stream.sh: start_mock NAME SCENARIO MAX_TOKENS makes $WORK (removed on
# exit), starts `filo-mock-server SCENARIO` (stopped on exit by closing its stdin), sets $URL and
# writes $WORK/home/agent/models.json naming it as provider `mock`, model `mock-model`.
start_mock() {
    local name=$1 scenario=$2 max_tokens=$3
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/filo-$name.XXXXXX")
    exec {MOCK_FD}> >("$ROOT/target/release/filo-mock-server" "$scenario" >"$WORK/url" 2>/dev/null)
    trap 'exec {MOCK_FD}>&-; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT
    for _ in $(seq 100); do
        [ -s "$WORK/url" ] && break
        sleep 0.05
    done
    URL=$(cat "$WORK/url")
    [ -n "$URL" ] || { echo "the mock did not start" >&2; exit 1; }
    mkdir -p "$WORK/project" "$WORK/home/agent"
    printf '{"providers":{"mock":{"baseUrl":"%s/v1","api":"openai-completions","apiKey":"MOCK_API_KEY","models":[{"id":"mock-model","contextWindow":1000000,"maxTokens":%s}]}}}\n' \
        "$URL" "$max_tokens" >"$WORK/home/agent/models.json"
}
