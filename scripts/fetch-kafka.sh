#!/bin/sh
# Apache Kafka's broker (KRaft mode) for the CloudEvents-to-Kafka tests: the org.apache.kafka:kafka_2.13 artifact
# and everything it needs at run time, from Maven Central into $2/libs (run with Debian's Java 17).
#   scripts/fetch-kafka.sh <version> <dir>
set -eu
version="$1"
dir="$(mkdir -p "$2" && cd "$2" && pwd)"
mkdir -p "$dir"
cat > "$dir/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>lakeledger.tests</groupId>
  <artifactId>kafka-broker</artifactId>
  <version>1</version>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$version</version></dependency>
  </dependencies>
</project>
POM
rm -rf "$dir/libs.partial"
mvn -q -f "$dir/pom.xml" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$dir/libs.partial"
rm -rf "$dir/libs"
mv "$dir/libs.partial" "$dir/libs"
echo "Kafka $version: $(ls "$dir/libs" | wc -l) jars in $dir/libs"
