# The Spark master and worker of the Parity stack (docker-compose.yaml): the official
# apache/spark image (Spark 4.3, Java 17), plus the Python the Airflow image runs (3.11:
# PySpark refuses a driver and workers of different minor versions) with the packages the
# matcher's Python code needs on the workers, pinned as in uv.lock. The project is mounted
# at /opt/parity and on PYTHONPATH, so the workers import the same `matcher` as the driver.
#
#   docker compose build
ARG SPARK_IMAGE=apache/spark:4.3.0-scala2.13-java17-ubuntu
FROM ${SPARK_IMAGE}
ARG PYTHON_VERSION=3.11

USER root
RUN set -ex; \
    apt-get update; \
    apt-get install -y --no-install-recommends "python${PYTHON_VERSION}" "python${PYTHON_VERSION}-venv"; \
    rm -rf /var/lib/apt/lists/*; \
    "python${PYTHON_VERSION}" -m venv /opt/parity-python; \
    /opt/parity-python/bin/pip install --no-cache-dir \
        pandas==2.3.3 pyarrow==26.0.1 pydantic==2.14.3 pyyaml==6.0.3
ENV PATH=/opt/parity-python/bin:${PATH} \
    PYTHONPATH=/opt/parity
USER spark
