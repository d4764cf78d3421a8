#!/usr/bin/env bash
# Install uv.lock's packages, exactly the lock's versions, into the Python environment uv
# targets (the active virtual environment, VIRTUAL_ENV; the Airflow image's own), then check
# that PySpark's Python files are the version of its jars.
#
#   docker/install-locked.sh PROJECT_DIR     (PROJECT_DIR holds pyproject.toml and uv.lock)
#
# docker/airflow.Dockerfile runs it; tests/test_docker_compose.py runs it in a clean virtual
# environment from the local uv cache (UV_OFFLINE=1). The lock is exported as a PEP 751
# pylock.toml: every package with the URL and hash of its file, uv's override included
# (pyspark-client is exported under a marker that is never true). uv installs exactly those
# files: it neither resolves again nor asks an index, so what `uv sync` downloaded is all it
# needs. An installer that resolved the requirements again (pip install -r) would follow the
# Spark provider's own requirement, pyspark-client, whose pyspark/ package (4.2 files) lands
# over pyspark 4.3's.
set -euo pipefail
project=$1
uv export --frozen --no-dev --no-emit-project --format pylock.toml --quiet \
  --project "$project" -o "$project/pylock.toml"
uv pip install --quiet --preview-features pylock -r "$project/pylock.toml"
python - <<'PY'
import pathlib
import sys

import pyspark

jars = sorted((pathlib.Path(pyspark.__file__).parent / "jars").glob("spark-core_*.jar"))
versions = [jar.stem.rpartition("-")[2] for jar in jars]
if versions != [pyspark.__version__]:
    sys.exit(f"pyspark {pyspark.__version__} with the jars of Spark {versions}: not one version")
print(f"pyspark {pyspark.__version__}, jars {jars[0].name}")
PY
