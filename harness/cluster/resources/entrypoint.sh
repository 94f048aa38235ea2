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

java_opts=(${KAFKA_HEAP_OPTS:--Xms128m -Xmx768m} -XX:+UseG1GC -XX:MaxGCPauseMillis=20
           -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true
           -Dlog4j2.configurationFile=/opt/kafka/log4j2.properties)
java "${java_opts[@]}" -cp '/opt/kafka/libs/*' kafka.tools.StorageTool format \
  -t "${CLUSTER_ID:?CLUSTER_ID must be set}" -c "$props" --ignore-formatted
exec java "${java_opts[@]}" -cp '/opt/kafka/libs/*' kafka.Kafka "$props"
