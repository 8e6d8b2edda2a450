# syntax=docker/dockerfile:1
#
# The headrace image: the `headrace` command, whose default is the built-in broker.
#
#   docker build -t headrace:0.1.0 .
#   docker run --rm -p 127.0.0.1:9092:9092 -v headrace-data:/data headrace:0.1.0
#
# The broker reads /etc/headrace/broker.properties (deploy/broker.properties): clients on
# the machine reach it at 127.0.0.1:9092, other containers at broker:29092.
# compose.yaml runs it with its schema registry and web console, beside an example app:
#
#   docker compose up --build
#
# Any other command runs the same way: docker run --rm headrace:0.1.0 headrace --help.
# tests/test_container_files.py checks this file and compose.yaml: each instruction, the
# pinned base image, and every flag of every `headrace` command line in them.

# The wheel is built apart, with a C compiler for the broker's record walker and
# many-file fsync (optional extensions: without them it runs slower, not wrong).
FROM python:3.11.11-slim-bookworm AS wheel
RUN apt-get update \
    && apt-get install --yes --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

FROM python:3.11.11-slim-bookworm
ENV PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
COPY --from=wheel /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl \
    && rm -rf /wheels \
    && useradd --create-home --uid 10001 headrace \
    && mkdir /data \
    && chown headrace /data
COPY deploy/broker.properties /etc/headrace/broker.properties
USER headrace
WORKDIR /data
VOLUME /data
# The broker (HOST, DOCKER listeners), the schema registry, the console and an app's HTTP.
EXPOSE 9092 29092 8081 8080 8090
CMD ["headrace", "broker", "--config", "/etc/headrace/broker.properties"]
