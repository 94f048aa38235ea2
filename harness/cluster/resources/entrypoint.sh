#!/bin/bash
# Starts one Kafka KRaft node in a kafka-replay image. Like the official apache/kafka image,
# it takes broker properties from KAFKA_* variables (KAFKA_LOG_DIRS -> log.dirs; "__" stands
# for "_" and "___" for "-") and the cluster id from CLUSTER_ID.
set -euo pipefail
props=/opt/kafka/server.properties
: > "$props"
while IFS= read -r -d '' entry; do
  name=${entry%%=*}
  value=${entry#*=}
  case "$name" in
    KAFKA_HEAP_OPTS|KAFKA_OPTS|KAFKA_REPLAY_*) continue ;;
    KAFKA_*) ;;
    *) continue ;;
  esac
  key=${name#KAFKA_}
  key=${key,,}
  key=${key//___/-}
  key=${key//__/@}
  key=${key//_/.}
  key=${key//@/_}
  printf '%s=%s\n' "$key" "$value" >> "$props"
done < <(env -0)

# The options the image's class-data archive was dumped with (see jvm-options), then the heap.
read -ra java_opts < /opt/kafka/jvm-options || true  # no newline at its end is fine
java_opts+=(${KAFKA_HEAP_OPTS:--Xms128m -Xmx768m} -Dlog4j2.configurationFile=/opt/kafka/log4j2.properties)
if [ -s /opt/kafka/kafka.jsa ]; then
  java_opts=(-XX:SharedArchiveFile=/opt/kafka/kafka.jsa "${java_opts[@]}")
fi
classpath=$(cat /opt/kafka/classpath)
data=${KAFKA_LOG_DIRS:?KAFKA_LOG_DIRS must be set}
if [ -d /opt/kafka/storage-template ] && [ ! -f "$data/meta.properties" ]; then
  # A storage directory formatted once by the harness (the same for every node but for
  # meta.properties), instead of a formatter JVM at every start.
  mkdir -p "$data"
  cp -r /opt/kafka/storage-template/. "$data/"
  rm -f "$data/.complete"
  printf 'version=1\ncluster.id=%s\nnode.id=%s\ndirectory.id=%s\n' \
    "${CLUSTER_ID:?CLUSTER_ID must be set}" "${KAFKA_NODE_ID:?KAFKA_NODE_ID must be set}" \
    "${KAFKA_REPLAY_DIRECTORY_ID:?KAFKA_REPLAY_DIRECTORY_ID must be set}" > "$data/meta.properties"
else
  java "${java_opts[@]}" -cp "$classpath" kafka.tools.StorageTool format \
    -t "${CLUSTER_ID:?CLUSTER_ID must be set}" -c "$props" --ignore-formatted
fi
exec java "${java_opts[@]}" -cp "$classpath" kafka.Kafka "$props"
