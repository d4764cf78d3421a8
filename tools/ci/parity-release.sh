#!/usr/bin/env bash
# parity-release.sh: may this build ship? Validate it with `parity run` and block on the answer.
#
#   VALIDATION=taxi_parallel VERSION="$GIT_SHA" \
#   ARTIFACT_URL="s3a://artifacts/etl/etl-$GIT_SHA.py" tools/ci/parity-release.sh
#
# What the CI recipes in docs/how-to/ci.md call. It runs
#
#   parity run "$VALIDATION" --candidate-application "$ARTIFACT_URL" \
#       --candidate-version "$VERSION" --wait --timeout "$PARITY_TIMEOUT"
#
# and exits with its code, after one line saying what it means:
#
#   0  ship: the gate is open
#   1  blocked by the verdict (or its expectations): the candidate's output differs
#   3  blocked, no usable verdict: the run failed, was rejected, or did not end in time
#   2  error: Parity could not answer (unknown validation, Airflow or the store unreachable)
#
# Environment:
#   VALIDATION          the validation's name (required)
#   VERSION             the candidate version the verdict is stored under (required)
#   ARTIFACT_URL        the candidate application (a path or any URL spark-submit takes);
#                       unset: the spec's own application
#   PARITY_TIMEOUT      how long to wait for the verdict (default 2h)
#   PARITY_AIRFLOW_URL  the Airflow to run it on, with PARITY_AIRFLOW_TOKEN, or
#                       PARITY_AIRFLOW_USERNAME and PARITY_AIRFLOW_PASSWORD; unset: the
#                       validation runs here with dag.test() (a Parity checkout)
#   PARITY              the parity command (default: parity)
set -u

fail() {
    echo "parity-release: error: $1" >&2
    exit 2
}

[ -n "${VALIDATION:-}" ] || fail "VALIDATION is not set (the validation's name)"
[ -n "${VERSION:-}" ] || fail "VERSION is not set (the candidate version, e.g. the commit)"
timeout="${PARITY_TIMEOUT:-2h}"
parity="${PARITY:-parity}"

args=(run "$VALIDATION" --candidate-version "$VERSION" --wait --timeout "$timeout")
if [ -n "${ARTIFACT_URL:-}" ]; then
    args+=(--candidate-application "$ARTIFACT_URL")
fi

"$parity" "${args[@]}"
code=$?

build="$VALIDATION, candidate $VERSION"
case "$code" in
    0) echo "parity-release: SHIP: $build: the gate is open" >&2 ;;
    1) echo "parity-release: BLOCKED: $build: the verdict closed the gate" \
            "(an intended change? parity approve RUN_ID --reason ...)" >&2 ;;
    3) echo "parity-release: BLOCKED: $build: no usable verdict" \
            "(the run failed, was rejected, or did not end within $timeout)" >&2 ;;
    *) echo "parity-release: ERROR: $build: Parity could not answer (exit $code)" >&2
       code=2 ;;
esac
exit "$code"
