#!/usr/bin/env bash
# `npm run cluster`: the system as a cluster on this machine, every process on its own port (range 31xxx, below the ephemeral ports, away
# from the dev and test stacks):
#
#   3 Kafka brokers (KRaft, each broker and controller; topics with 3 copies, 2 in sync)   31091-31093
#   Redis master 31379 and a replica 31380, watched by 3 Sentinels 31381-31383 (quorum 2)
#   MongoDB: one process 31017 (production runs a replica set or a managed service instead)
#   2 replicas of every service (31101-31105 and 31111-31115) and 2 gateways (31100, 31110)
#   nginx on 31000 in front of both gateways, passing X-Forwarded-For, and on 31201-31205 in front of each
#   service's two replicas (the gateways' service URLs, as Kubernetes Services would be)
#
#   cluster.sh up        start everything, wait until ready, print the URL and a development API key
#   cluster.sh down      stop everything this script started (by the pids it recorded)
#   cluster.sh status    show what runs
#
# The machine's other work shares its cores: the cluster is heavy (four JVMs, twelve Node processes), so
# stop it when done. Files: .local/cluster/ (data, logs, pids, cluster.env).
set -Eeuo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd -- "$HERE/../.." && pwd)
JARS="$ROOT/.cache/jars"
BASE="$ROOT/.local/cluster"
LOGS="$BASE/logs"
PIDS="$BASE/pids"
NGINX_PORT=31000
KAFKA_PORTS=(31091 31092 31093)
KAFKA_CTRL_PORTS=(31191 31192 31193)
REDIS_MASTER=31379
REDIS_REPLICA=31380
SENTINEL_PORTS=(31381 31382 31383)
MONGO_PORT=31017
READY_TIMEOUT=${CLUSTER_READY_TIMEOUT:-180}

say() { printf '[cluster] %s\n' "$*"; }
die() {
  printf '[cluster] FAILED: %s\n' "$*" >&2
  exit 1
}
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
pid_of() { [[ -s $PIDS/$1.pid ]] && kill -0 "$(<"$PIDS/$1.pid")" 2>/dev/null && cat "$PIDS/$1.pid"; }

# spawn <name> <log> <command…>: runs it detached in its own session and records its pid.
spawn() {
  local name=$1 out=$2
  shift 2
  # shellcheck disable=SC2016  # expanded by the inner bash, on purpose
  nohup setsid bash -c 'echo $$ >"$0" && exec "$@"' "$PIDS/$name.pid" "$@" >>"$out" 2>&1 </dev/null &
  for _ in $(seq 50); do
    [[ -s $PIDS/$name.pid ]] && return 0
    sleep 0.1
  done
  die "$name did not record its pid"
}

# wait_ready <name> <file>: until process <name> (started by spawn) writes <file>; if it exits first, its log's
# last lines say why (CI keeps no files).
wait_ready() {
  local name=$1 file=$2 deadline=$((SECONDS + READY_TIMEOUT))
  until [[ -s $file ]]; do
    if ! pid_of "$name" >/dev/null; then
      tail -n 30 "$LOGS/$name.log" >&2 || true
      die "the $name did not start (the last lines of $LOGS/$name.log above)"
    fi
    ((SECONDS < deadline)) || die "the $name were not ready within ${READY_TIMEOUT}s; see $LOGS/$name.log"
    sleep 0.5
  done
}

wait_port() {
  local name=$1 port=$2 deadline=$((SECONDS + READY_TIMEOUT))
  until port_open "$port"; do
    pid_of "$name" >/dev/null || die "$name exited; see $LOGS/$name.log"
    ((SECONDS < deadline)) || die "$name did not listen on $port within ${READY_TIMEOUT}s; see $LOGS/$name.log"
    sleep 0.5
  done
}

kafka_tool() { java -Xms32m -Xmx128m -Dlog4j.configuration="file:$HERE/kafka-tools-log4j.properties" -cp "$JARS/kafka/*" "$@"; }

start_kafka() {
  local voters="" i cid
  for i in 0 1 2; do voters+="${voters:+,}$((i + 1))@127.0.0.1:${KAFKA_CTRL_PORTS[i]}"; done
  [[ -s $BASE/kafka.cluster.id ]] || kafka_tool kafka.tools.StorageTool random-uuid >"$BASE/kafka.cluster.id"
  cid=$(<"$BASE/kafka.cluster.id")
  for i in 0 1 2; do
    local d="$BASE/kafka-$((i + 1))"
    mkdir -p "$d/data"
    cat >"$d/server.properties" <<PROPS
process.roles=broker,controller
node.id=$((i + 1))
controller.quorum.voters=$voters
controller.listener.names=CONTROLLER
listeners=PLAINTEXT://127.0.0.1:${KAFKA_PORTS[i]},CONTROLLER://127.0.0.1:${KAFKA_CTRL_PORTS[i]}
advertised.listeners=PLAINTEXT://127.0.0.1:${KAFKA_PORTS[i]}
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$d/data
auto.create.topics.enable=false
default.replication.factor=3
min.insync.replicas=2
offsets.topic.replication.factor=3
transaction.state.log.replication.factor=3
transaction.state.log.min.isr=2
unclean.leader.election.enable=false
group.initial.rebalance.delay.ms=0
PROPS
    [[ -f $d/data/meta.properties ]] || kafka_tool kafka.tools.StorageTool format -t "$cid" -c "$d/server.properties" --ignore-formatted >>"$LOGS/kafka-tool.log" 2>&1
    spawn "kafka-$((i + 1))" "$LOGS/kafka-$((i + 1)).log" java -Xms192m -Xmx384m -XX:+UseG1GC -Djava.awt.headless=true \
      -Dkafka.logs.dir="$d" -Dlog4j.configuration="file:$HERE/kafka-log4j.properties" -cp "$JARS/kafka/*" kafka.Kafka "$d/server.properties"
  done
}

start_redis() {
  mkdir -p "$BASE/redis-master" "$BASE/redis-replica" "$BASE/sentinels"
  spawn redis-master "$LOGS/redis-master.log" redis-server --port "$REDIS_MASTER" --bind 127.0.0.1 --dir "$BASE/redis-master" --appendonly yes --save ''
  spawn redis-replica "$LOGS/redis-replica.log" redis-server --port "$REDIS_REPLICA" --bind 127.0.0.1 --dir "$BASE/redis-replica" --appendonly yes --save '' \
    --replicaof 127.0.0.1 "$REDIS_MASTER"
  local i
  for i in 0 1 2; do
    local conf="$BASE/sentinels/sentinel-$((i + 1)).conf"
    # Sentinel rewrites its file with what it learns (the current master, the other Sentinels): keep it.
    [[ -s $conf ]] || printf '%s\n' "port ${SENTINEL_PORTS[i]}" 'bind 127.0.0.1' "dir $BASE/sentinels" \
      "sentinel monitor dap 127.0.0.1 $REDIS_MASTER 2" 'sentinel down-after-milliseconds dap 2000' 'sentinel failover-timeout dap 10000' >"$conf"
    spawn "sentinel-$((i + 1))" "$LOGS/sentinel-$((i + 1)).log" redis-server "$conf" --sentinel
  done
}

start_mongo() {
  mkdir -p "$BASE/mongo"
  if command -v mongod >/dev/null; then
    spawn mongo "$LOGS/mongo.log" mongod --port "$MONGO_PORT" --bind_ip 127.0.0.1 --dbpath "$BASE/mongo"
  else
    spawn mongo "$LOGS/mongo.log" java -Xms128m -Xmx768m -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
      -Dorg.slf4j.simpleLogger.log.de.bwaldvogel.mongo.wire.MongoWireProtocolHandler=warn \
      -cp "$JARS/mongo/*:$JARS/mongo-launcher" MongoLauncher 127.0.0.1 "$MONGO_PORT" "$BASE/mongo/mongo.h2"
  fi
}

# Each service's two replicas behind one address (as a Kubernetes Service does), so a gateway reaches whichever
# replica is alive: accounts 31201, sources 31202, analytics 31203, models 31204, webhooks 31205.
service_balancers() {
  local i=1 name
  for name in accounts sources analytics models webhooks; do
    cat <<BLOCK
  upstream $name {
    server 127.0.0.1:$((31100 + i)) max_fails=1 fail_timeout=5s;
    server 127.0.0.1:$((31110 + i)) max_fails=1 fail_timeout=5s;
    keepalive 16;
  }
  server {
    listen 127.0.0.1:$((31200 + i));
    location / {
      proxy_pass http://$name;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_next_upstream error timeout http_502;
      proxy_connect_timeout 2s;
      proxy_read_timeout 70s;
    }
  }
BLOCK
    i=$((i + 1))
  done
}

start_nginx() {
  mkdir -p "$BASE/nginx"
  cat >"$BASE/nginx/nginx.conf" <<CONF
worker_processes 1;
pid $BASE/nginx/nginx.pid;
error_log $LOGS/nginx-error.log warn;
daemon off;
events { worker_connections 1024; }
http {
  access_log $LOGS/nginx-access.log;
  client_body_temp_path $BASE/nginx/body;
  proxy_temp_path $BASE/nginx/proxy;
  fastcgi_temp_path $BASE/nginx/fastcgi;
  uwsgi_temp_path $BASE/nginx/uwsgi;
  scgi_temp_path $BASE/nginx/scgi;
  client_max_body_size 11m;
  upstream gateways {
    server 127.0.0.1:31100 max_fails=1 fail_timeout=5s;
    server 127.0.0.1:31110 max_fails=1 fail_timeout=5s;
    keepalive 32;
  }
$(service_balancers)
  server {
    listen 127.0.0.1:$NGINX_PORT;
    location / {
      proxy_pass http://gateways;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host \$host;
      # The gateway trusts this hop (TRUST_PROXY=1) to name the client.
      proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto \$scheme;
      # A gateway that is down: the request goes to the other one (a POST only when nothing was sent yet).
      proxy_next_upstream error timeout;
      proxy_connect_timeout 2s;
      proxy_read_timeout 70s;
    }
  }
}
CONF
  spawn nginx "$LOGS/nginx.log" nginx -c "$BASE/nginx/nginx.conf" -p "$BASE/nginx"
}

cmd_up() {
  # A fresh clone has no node_modules (nor Node 24, which the services run on): npm ci first, as npm start does.
  bash "$HERE/bootstrap.sh"
  command -v nginx >/dev/null || die "nginx is not installed (apt-get install -y nginx)"
  command -v redis-server >/dev/null || die "redis-server is not installed (apt-get install -y redis-server)"
  [[ -d $JARS/kafka ]] || bash "$HERE/stack.sh" install
  mkdir -p "$LOGS" "$PIDS"
  local p
  for p in "$NGINX_PORT" 31201 31202 31203 31204 31205 "${KAFKA_PORTS[@]}" "${KAFKA_CTRL_PORTS[@]}" "$REDIS_MASTER" "$REDIS_REPLICA" "${SENTINEL_PORTS[@]}" "$MONGO_PORT"; do
    if port_open "$p"; then die "port $p is in use (is the cluster up already? cluster.sh status)"; fi
  done
  # A start that fails stops what it started (the logs stay): four JVMs left behind would load the machine
  # and hold the ports the next attempt needs.
  trap 'rc=$?; if ((rc != 0)); then say "stopping what this start launched"; cmd_down; fi; exit $rc' EXIT
  say "starting 3 Kafka brokers, Redis with a replica and 3 Sentinels, MongoDB"
  start_kafka
  start_redis
  start_mongo
  local i
  for i in 0 1 2; do wait_port "kafka-$((i + 1))" "${KAFKA_PORTS[i]}"; done
  wait_port redis-master "$REDIS_MASTER"
  wait_port mongo "$MONGO_PORT"
  for i in 0 1 2; do wait_port "sentinel-$((i + 1))" "${SENTINEL_PORTS[i]}"; done
  cat >"$BASE/cluster.env" <<ENV
KAFKA_BROKERS=127.0.0.1:${KAFKA_PORTS[0]},127.0.0.1:${KAFKA_PORTS[1]},127.0.0.1:${KAFKA_PORTS[2]}
KAFKA_EVENTS_REPLICATION_FACTOR=3
KAFKA_EVENTS_MIN_INSYNC_REPLICAS=2
KAFKA_DLQ_REPLICATION_FACTOR=3
KAFKA_DLQ_MIN_INSYNC_REPLICAS=2
REDIS_URL=redis+sentinel://127.0.0.1:${SENTINEL_PORTS[0]},127.0.0.1:${SENTINEL_PORTS[1]},127.0.0.1:${SENTINEL_PORTS[2]}/dap
MONGO_URL=mongodb://127.0.0.1:$MONGO_PORT
TRUST_PROXY=1
ENV
  start_nginx
  wait_port nginx "$NGINX_PORT"
  say "starting 2 replicas of every service and 2 gateways"
  rm -f "$BASE/ready.env"
  spawn services "$LOGS/services.log" "$ROOT/node_modules/.bin/node" --no-warnings "$HERE/cluster.ts" "$BASE"
  wait_ready services "$BASE/ready.env"
  trap - EXIT
  say "up: $(tr '\n' ' ' <"$BASE/ready.env")"
  say "stop with: bash deploy/local/cluster.sh down"
}

cmd_down() {
  local name pid
  # The gateways and services first (their supervisor drains them), then nginx and the infrastructure.
  for name in services nginx sentinel-1 sentinel-2 sentinel-3 redis-replica redis-master kafka-1 kafka-2 kafka-3 mongo; do
    pid=$(pid_of "$name") || continue
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
    # Each was started as the leader of its own process group (setsid): what it left behind goes too.
    kill -KILL -- "-$pid" 2>/dev/null || true
    rm -f "$PIDS/$name.pid"
    say "stopped $name ($pid)"
  done
}

cmd_status() {
  local name rc=0
  for name in kafka-1 kafka-2 kafka-3 redis-master redis-replica sentinel-1 sentinel-2 sentinel-3 mongo services nginx; do
    if pid=$(pid_of "$name"); then say "$name: running (pid $pid)"; else say "$name: down"; rc=3; fi
  done
  [[ -s $BASE/ready.env ]] && say "$(tr '\n' ' ' <"$BASE/ready.env")"
  return $rc
}

# Sourced (by its unit test), it only defines the functions.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  case ${1:-} in
    up) cmd_up ;;
    down) cmd_down ;;
    status) cmd_status ;;
    *) sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
  esac
fi
