# The Airflow image the Parity stack runs in (docker-compose.yaml): Airflow 3.3 on Python
# 3.11, the Java of the Spark image (spark-submit runs in client mode, so each Spark job's
# driver runs in the Airflow task's container and talks to the Spark workers), and Parity's
# Python dependencies exactly as uv.lock pins them (docker/install-locked.sh). The project itself is mounted at
# /opt/parity, not copied: edit a DAG or a spec and the DAG processor sees it.
#
#   docker compose build
ARG SPARK_IMAGE=apache/spark:4.3.0-scala2.13-java17-ubuntu
ARG AIRFLOW_IMAGE=apache/airflow:3.3.2-python3.11
FROM ${SPARK_IMAGE} AS spark

FROM ${AIRFLOW_IMAGE}
# The very JRE the Spark master and workers run (Temurin, from the official Spark image).
COPY --from=spark /opt/java/openjdk /opt/java/openjdk
ENV JAVA_HOME=/opt/java/openjdk \
    PATH=/opt/java/openjdk/bin:${PATH}

# Exactly uv.lock's versions, with a uv that installs a pylock.toml (0.9 and later; pip
# upgrades the image's own if it is older): docker/install-locked.sh says why not
# pip install -r, and fails the build unless pyspark's version is its jars'.
COPY --chown=airflow:0 pyproject.toml uv.lock docker/install-locked.sh /tmp/parity/
RUN pip install --no-cache-dir --quiet 'uv>=0.9' \
 && UV_NO_CACHE=1 /tmp/parity/install-locked.sh /tmp/parity \
 && rm -rf /tmp/parity
