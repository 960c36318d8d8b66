#!/usr/bin/env bash
# Local Redis + Kafka 3.9 (KRaft, single node) + MongoDB-wire server + PostgreSQL + MariaDB, per profile.
#
#   stack.sh install                        fetch/compile everything into <repo>/.cache (cached)
#   stack.sh up       <dev|test>            start all components and wait until ready
#   stack.sh down     <dev|test>            stop the processes recorded in that profile's pid files
#   stack.sh status   <dev|test>            show what runs (exit 3 if something is down)
#   stack.sh start-one <dev|test> <redis|kafka|mongo|postgres|mariadb>
#   stack.sh stop-one  <dev|test> <redis|kafka|mongo|postgres|mariadb>
#
# Profiles have their own ports and <repo>/.local/<profile>/ tree, so tests never touch a
# running dev stack. PostgreSQL and MariaDB run as their system users, which cannot enter a checkout
# under a private directory (/root, a `mktemp -d` folder), so their data lives under
# /var/tmp/dap-stack/<checkout hash>/<profile>/ instead (STACK_SYSTEM_DIR overrides /var/tmp/dap-stack). Port overrides: STACK_REDIS_PORT, STACK_KAFKA_PORT,
# STACK_KAFKA_CONTROLLER_PORT, STACK_MONGO_PORT, STACK_POSTGRES_PORT, STACK_MARIADB_PORT.
# A preset MONGO_URL means "use that MongoDB, start none". PostgreSQL and MariaDB (Debian
# packages, for the source connectors) run as their system users with a known login,
# written to stack.env as POSTGRES_URL and MYSQL_URL.
set -Eeuo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd -- "$HERE/../.." && pwd)
CACHE="$ROOT/.cache"
JARS="$CACHE/jars"
LOCAL="$ROOT/.local"
COMPONENTS=(redis kafka mongo postgres mariadb)
# The connector tests' login on both databases (local only; the servers listen on loopback).
DB_USER=dap
DB_PASSWORD=dap-local-pw
DB_NAME=dap
READY_TIMEOUT=${STACK_READY_TIMEOUT:-90}
STOP_TIMEOUT=10

# ---------------------------------------------------------------- output / failure

STEP="init"
STEP_LOGS=()   # files whose tail is shown if the current step fails
FAIL_HINT=""   # extra advice printed after a failure

say() { printf '[stack] %s\n' "$*"; }
step() { STEP=$1; STEP_LOGS=("${@:2}"); say "$1..."; }

die() {
  trap - ERR
  printf '[stack] FAILED at %s: %s\n' "$STEP" "$*" >&2
  local f
  for f in "${STEP_LOGS[@]}"; do
    [[ -s $f ]] || continue
    # Kafka logs pages of shutdown noise after the real error, so surface the first errors too.
    if grep -qE '\b(ERROR|FATAL)\b' -- "$f"; then
      printf -- '----- first errors in %s -----\n' "$f" >&2
      grep -m 3 -A 3 -E '\b(ERROR|FATAL)\b' -- "$f" | cut -c1-400 >&2 || true
    fi
    printf -- '----- last 30 lines of %s -----\n' "$f" >&2
    tail -n 30 -- "$f" >&2
  done
  if [[ -n $FAIL_HINT ]]; then printf '[stack] hint: %s\n' "$FAIL_HINT" >&2; fi
  exit 1
}
# Anything failing that we did not anticipate still gets the "[stack] FAILED at" line.
trap 'die "command failed (exit $?) at line $LINENO: $BASH_COMMAND"' ERR

usage() {
  sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# ---------------------------------------------------------------- profile layout

load_profile() {
  PROFILE=${1:-}
  case $PROFILE in
    dev)  REDIS_PORT=16379 KAFKA_PORT=19092 KAFKA_CTRL_PORT=19093 MONGO_PORT=27117 PG_PORT=15432 MARIADB_PORT=13306 ;;
    test) REDIS_PORT=26379 KAFKA_PORT=29092 KAFKA_CTRL_PORT=29093 MONGO_PORT=27217 PG_PORT=25432 MARIADB_PORT=23306 ;;
    *) STEP="arguments"; die "profile must be 'dev' or 'test', got '${PROFILE}'" ;;
  esac
  REDIS_PORT=${STACK_REDIS_PORT:-$REDIS_PORT}
  KAFKA_PORT=${STACK_KAFKA_PORT:-$KAFKA_PORT}
  KAFKA_CTRL_PORT=${STACK_KAFKA_CONTROLLER_PORT:-$KAFKA_CTRL_PORT}
  MONGO_PORT=${STACK_MONGO_PORT:-$MONGO_PORT}
  PG_PORT=${STACK_POSTGRES_PORT:-$PG_PORT}
  MARIADB_PORT=${STACK_MARIADB_PORT:-$MARIADB_PORT}
  EXTERNAL_MONGO_URL=${MONGO_URL:-}
  BASE="$LOCAL/$PROFILE"
  LOGS="$BASE/logs"
  PIDS="$BASE/pids"
  mkdir -p "$LOGS" "$PIDS"
  system_base
}

# The directory for what the postgres and mysql users must reach: every directory above it is
# traversable (o+x) whatever the checkout's own permissions are. One per checkout and profile.
system_base() {
  local top=${STACK_SYSTEM_DIR:-/var/tmp/dap-stack} hash
  hash=$(printf '%s' "$ROOT" | sha256sum | cut -c1-12)
  SYS_BASE="$top/$hash/$PROFILE"
  mkdir -p "$SYS_BASE"
  chmod 0711 "$top" "$top/$hash" "$SYS_BASE"
  # Says which checkout the directory belongs to, for whoever finds it.
  printf '%s\n' "$ROOT" >"$top/$hash/checkout"
}

check_component() {
  case ${1:-} in
    redis|kafka|mongo|postgres|mariadb) ;;
    *) STEP="arguments"; die "component must be redis, kafka, mongo, postgres or mariadb, got '${1:-}'" ;;
  esac
}

port_of() {
  case $1 in
    redis) echo "$REDIS_PORT" ;; kafka) echo "$KAFKA_PORT" ;; mongo) echo "$MONGO_PORT" ;;
    postgres) echo "$PG_PORT" ;; mariadb) echo "$MARIADB_PORT" ;;
  esac
}
pidfile_of() { echo "$PIDS/$1.pid"; }
logfile_of() { echo "$LOGS/$1.log"; }
# step_for <component> <step text>: like step, with that component's logs as failure context
# (kafka's stdout file only carries JVM-level errors; kafka-tool.log has format/probe output).
step_for() {
  local c=$1
  shift
  step "$*"
  if [[ $c == kafka ]]; then
    STEP_LOGS=("$LOGS/kafka.log" "$LOGS/kafka.out" "$LOGS/kafka-tool.log")
  else
    STEP_LOGS=("$(logfile_of "$c")")
  fi
}

# A string that must appear in /proc/<pid>/cmdline, so a recycled pid is never mistaken
# for (or killed as) ours. Redis rewrites its title to "redis-server 127.0.0.1:<port>".
marker_of() {
  case $1 in
    redis) echo "redis-server" ;;
    kafka) echo "$BASE/kafka/server.properties" ;;
    mongo) echo "$BASE/mongo" ;;
    postgres) echo "$SYS_BASE/postgres/data" ;;
    mariadb) echo "$SYS_BASE/mariadb/data" ;;
  esac
}

# ---------------------------------------------------------------- process helpers

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

alive() {
  local stat
  kill -0 "$1" 2>/dev/null || return 1
  # A zombie still answers kill -0; field 3 of /proc/<pid>/stat (after "(comm)") is the state.
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [[ ${stat%% *} != Z ]]
}

# Prints the pid of this profile's <component> if its pid file names a live process of ours.
live_pid() {
  local f pid
  f=$(pidfile_of "$1")
  [[ -f $f ]] || return 1
  pid=$(<"$f")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  alive "$pid" || return 1
  grep -qaF -- "$(marker_of "$1")" "/proc/$pid/cmdline" 2>/dev/null || return 1
  echo "$pid"
}

# spawn <component> <stdout-file> <cmd...>
# setsid+nohup detach the service from this shell's session/terminal so it outlives
# `stack.sh`; the wrapper writes its own pid then execs, so the pid file is the service.
# fds 8/9 are our flock fds: a service inheriting them would hold the locks forever.
spawn() {
  local c=$1 out=$2 pf i
  shift 2
  pf=$(pidfile_of "$c")
  rm -f -- "$pf"
  # shellcheck disable=SC2016  # expanded by the inner bash, on purpose
  nohup setsid bash -c 'echo $$ >"$0.tmp" && mv -f "$0.tmp" "$0" && exec "$@"' "$pf" "$@" \
    >>"$out" 2>&1 </dev/null 8>&- 9>&- &
  for ((i = 0; i < 50; i++)); do
    [[ -s $pf ]] && return 0
    sleep 0.1
  done
  die "$c did not record its pid in $pf"
}

# Keep the previous run's log next to the new one for post-mortems.
rotate() {
  local f
  for f in "$@"; do
    if [[ -f $f ]]; then mv -f -- "$f" "$f.prev"; fi
  done
}

lock_profile() {
  exec 9>"$BASE/.lock"
  flock -w 300 9 || die "another stack.sh is busy with profile $PROFILE (lock $BASE/.lock)"
}

# ---------------------------------------------------------------- install

apt_install() {
  local log="$CACHE/logs/apt.log"
  STEP_LOGS=("$log")
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y "$@" >>"$log" 2>&1; then
    say "apt-get install failed, running apt-get update and retrying..."
    apt-get update >>"$log" 2>&1 || die "apt-get update failed"
    apt-get install -y "$@" >>"$log" 2>&1 || die "apt-get install $* failed"
  fi
}

install_redis() {
  step "install redis"
  if command -v redis-server >/dev/null; then
    say "redis-server present: $(redis-server --version | awk '{print $3}')"
    return
  fi
  apt_install redis-server
  # We run our own redis per profile; the distro's service on 6379 is not needed.
  # Best effort only: containers usually have no service manager (and policy-rc.d blocks it).
  if [[ -d /run/systemd/system ]] && command -v systemctl >/dev/null; then
    systemctl disable --now redis-server >/dev/null 2>&1 || true
  elif command -v service >/dev/null && service redis-server status >/dev/null 2>&1; then
    service redis-server stop >/dev/null 2>&1 || true
  fi
  say "redis-server installed: $(redis-server --version | awk '{print $3}')"
}

# maven_fetch <name> <pom> <out-dir>: copy the pom's runtime classpath, cached by the pom's sha256.
maven_fetch() {
  local name=$1 pom=$2 out=$3 want tmp log="$CACHE/logs/mvn-$1.log"
  want=$(sha256sum <"$pom" | cut -d' ' -f1)
  if [[ -f $out/.stamp && $(<"$out/.stamp") == "$want" ]]; then
    say "$name jars cached ($(find "$out" -name '*.jar' | wc -l) jars)"
    return
  fi
  STEP_LOGS=("$log")
  tmp="$out.tmp.$$"
  rm -rf -- "$tmp"
  mvn -q -B --no-transfer-progress -f "$pom" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$tmp" >"$log" 2>&1 \
    || { rm -rf -- "$tmp"; die "mvn dependency:copy-dependencies failed for $pom"; }
  echo "$want" >"$tmp/.stamp"
  # Swap in whole so a half-finished download never looks cached.
  rm -rf -- "$out"
  mv -- "$tmp" "$out"
  say "$name jars fetched ($(find "$out" -name '*.jar' | wc -l) jars)"
}

install_kafka() {
  step "install kafka jars"
  maven_fetch kafka "$HERE/jvm/kafka/pom.xml" "$JARS/kafka"
}

install_mongo() {
  step "install mongo"
  if command -v mongod >/dev/null; then
    say "mongod present on PATH, using it"
    return
  fi
  maven_fetch mongo "$HERE/jvm/mongo/pom.xml" "$JARS/mongo"

  step "compile MongoLauncher"
  local src="$HERE/jvm/mongo/MongoLauncher.java" out="$JARS/mongo-launcher" want tmp
  local log="$CACHE/logs/javac-mongo.log"
  want=$(cat "$src" "$JARS/mongo/.stamp" | sha256sum | cut -d' ' -f1)
  if [[ -f $out/.stamp && $(<"$out/.stamp") == "$want" ]]; then
    say "MongoLauncher cached"
    return
  fi
  STEP_LOGS=("$log")
  tmp="$out.tmp.$$"
  rm -rf -- "$tmp"
  javac --release 17 -d "$tmp" -cp "$JARS/mongo/*" "$src" >"$log" 2>&1 \
    || { rm -rf -- "$tmp"; die "javac failed"; }
  echo "$want" >"$tmp/.stamp"
  rm -rf -- "$out"
  mv -- "$tmp" "$out"
  say "MongoLauncher compiled"
}

# Newest installed PostgreSQL server's bin dir (Debian keeps them under /usr/lib/postgresql/<major>/bin).
pg_bindir() {
  local d best=""
  for d in /usr/lib/postgresql/*/bin; do
    [[ -x $d/postgres && -x $d/initdb ]] && best=$d
  done
  [[ -n $best ]] && echo "$best"
}

mariadbd_bin() {
  local b
  for b in "$(command -v mariadbd 2>/dev/null || true)" /usr/sbin/mariadbd; do
    [[ -n $b && -x $b ]] && { echo "$b"; return 0; }
  done
  return 1
}

# The distro packages start their own server on the default port; ours run per profile instead.
stop_distro_service() {
  if [[ -d /run/systemd/system ]] && command -v systemctl >/dev/null; then
    systemctl disable --now "$1" >/dev/null 2>&1 || true
  elif command -v service >/dev/null; then
    service "$1" stop >/dev/null 2>&1 || true
  fi
}

install_postgres() {
  step "install postgresql"
  if [[ -z $(pg_bindir) ]]; then
    apt_install postgresql
    stop_distro_service postgresql
  fi
  [[ -n $(pg_bindir) ]] || die "postgresql is installed but no /usr/lib/postgresql/*/bin/postgres was found"
  getent passwd postgres >/dev/null || die "the postgres system user is missing (the postgresql package creates it)"
  say "postgresql present: $("$(pg_bindir)/postgres" --version)"
}

install_mariadb() {
  step "install mariadb"
  if ! mariadbd_bin >/dev/null || ! command -v mariadb-install-db >/dev/null; then
    apt_install mariadb-server
    stop_distro_service mariadb
  fi
  mariadbd_bin >/dev/null || die "mariadb-server is installed but mariadbd was not found"
  getent passwd mysql >/dev/null || die "the mysql system user is missing (the mariadb-server package creates it)"
  say "mariadb present: $("$(mariadbd_bin)" --version | awk '{print $3}')"
}

cmd_install() {
  mkdir -p "$CACHE/logs" "$JARS"
  # Concurrent `up dev` / `up test` both install; serialise so they don't race on .cache.
  exec 8>"$CACHE/.install.lock"
  flock -w 900 8 || die "timed out waiting for another install (lock $CACHE/.install.lock)"
  install_redis
  install_kafka
  install_mongo
  install_postgres
  install_mariadb
  exec 8>&-
}

# ---------------------------------------------------------------- kafka helpers

# Short-lived JVM for Kafka CLI classes (StorageTool, TopicCommand); logs only warnings.
kafka_tool() {
  java -Xms64m -Xmx256m -Dlog4j.configuration="file:$HERE/kafka-tools-log4j.properties" \
    -cp "$JARS/kafka/*" "$@"
}

write_kafka_props() {
  cat >"$1" <<EOF
# Generated by deploy/local/stack.sh on every start of profile $PROFILE; edits are overwritten.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$KAFKA_CTRL_PORT
controller.listener.names=CONTROLLER
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CTRL_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$BASE/kafka/data
auto.create.topics.enable=true
num.partitions=3
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
min.insync.replicas=1
group.initial.rebalance.delay.ms=0
EOF
}

# ---------------------------------------------------------------- start / ready / stop

launch_redis() {
  mkdir -p "$BASE/redis"
  rotate "$LOGS/redis.log"
  spawn redis "$LOGS/redis.log" redis-server --port "$REDIS_PORT" --bind 127.0.0.1 \
    --dir "$BASE/redis" --appendonly yes --save '' --daemonize no
}

launch_kafka() {
  local d="$BASE/kafka" props="$BASE/kafka/server.properties" cid
  local toollog="$LOGS/kafka-tool.log"
  mkdir -p "$d/data"
  : >"$toollog"
  # One cluster id per data dir, kept so restarts reuse the formatted storage.
  if [[ ! -s $d/cluster.id ]]; then
    kafka_tool kafka.tools.StorageTool random-uuid >"$d/cluster.id.tmp" 2>>"$toollog" \
      || die "StorageTool random-uuid failed"
    mv -f -- "$d/cluster.id.tmp" "$d/cluster.id"
  fi
  cid=$(<"$d/cluster.id")
  write_kafka_props "$props"
  if [[ ! -f $d/data/meta.properties ]]; then
    kafka_tool kafka.tools.StorageTool format -t "$cid" -c "$props" --ignore-formatted \
      >>"$toollog" 2>&1 || die "StorageTool format failed"
  fi
  rotate "$LOGS/kafka.log" "$LOGS/kafka.out"
  spawn kafka "$LOGS/kafka.out" java -Xms256m -Xmx1536m -XX:+UseG1GC -Djava.awt.headless=true \
    -Dkafka.logs.dir="$LOGS" -Dlog4j.configuration="file:$HERE/kafka-log4j.properties" \
    -cp "$JARS/kafka/*" kafka.Kafka "$props"
}

launch_mongo() {
  mkdir -p "$BASE/mongo"
  rotate "$LOGS/mongo.log"
  if command -v mongod >/dev/null; then
    spawn mongo "$LOGS/mongo.log" mongod --port "$MONGO_PORT" --bind_ip 127.0.0.1 \
      --dbpath "$BASE/mongo"
  else
    # Per-connection INFO lines from the wire handler would drown the log (and every probe).
    # G1 with a pause goal and room to grow: SerialGC in 384 MB paused it for up to 100 ms under test load.
    # MONGO_JAVA_OPTS adds JVM options (-Ddap.mongo.logScans=true logs every collection scan).
    # shellcheck disable=SC2086
    spawn mongo "$LOGS/mongo.log" java -Xms256m -Xmx1g -XX:+UseG1GC -XX:MaxGCPauseMillis=20 ${MONGO_JAVA_OPTS:-} \
      -Dorg.slf4j.simpleLogger.showDateTime=true \
      -Dorg.slf4j.simpleLogger.dateTimeFormat="yyyy-MM-dd'T'HH:mm:ss.SSS" \
      -Dorg.slf4j.simpleLogger.log.de.bwaldvogel.mongo.wire.MongoWireProtocolHandler=warn \
      -cp "$JARS/mongo/*:$JARS/mongo-launcher" MongoLauncher 127.0.0.1 "$MONGO_PORT" \
      "$BASE/mongo/mongo.h2"
  fi
}

# PostgreSQL refuses to run as root: its data and socket dirs belong to the postgres system user,
# and setpriv drops to it and execs, so the pid file names the postmaster itself.
# From /: the postgres user may not enter the checkout (a 0700 folder), and its tools would warn that they cannot.
as_postgres() { (cd / && exec setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"); }

launch_postgres() {
  local d="$SYS_BASE/postgres" bin
  bin=$(pg_bindir)
  mkdir -p "$d/run"
  if [[ ! -s $d/data/PG_VERSION ]]; then
    rm -rf -- "$d/data"
    mkdir -p "$d/data"
    chown -R postgres:postgres "$d"
    chmod 700 "$d/data"
    # trust over the socket (only this profile's tree can reach it), passwords over TCP.
    as_postgres "$bin/initdb" -D "$d/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
      --encoding=UTF8 --no-locale >"$LOGS/postgres-initdb.log" 2>&1 \
      || { STEP_LOGS=("$LOGS/postgres-initdb.log"); die "initdb failed"; }
  fi
  chown -R postgres:postgres "$d"
  as_postgres test -w "$d/data" \
    || die "the postgres user cannot write $d/data; every directory above it must be traversable (o+x)"
  rotate "$LOGS/postgres.log"
  spawn postgres "$LOGS/postgres.log" setpriv --reuid=postgres --regid=postgres --init-groups -- \
    "$bin/postgres" -D "$d/data" -p "$PG_PORT" -c listen_addresses=127.0.0.1 \
    -c unix_socket_directories="$d/run" -c max_connections=60 -c shared_buffers=32MB -c fsync=off \
    -c synchronous_commit=off -c full_page_writes=off
}

launch_mariadb() {
  local d="$SYS_BASE/mariadb" bin
  bin=$(mariadbd_bin)
  mkdir -p "$d/run"
  if [[ ! -d $d/data/mysql ]]; then
    rm -rf -- "$d/data"
    mkdir -p "$d/data"
    chown -R mysql:mysql "$d"
    mariadb-install-db --no-defaults --datadir="$d/data" --user=mysql --auth-root-authentication-method=socket \
      --skip-test-db >"$LOGS/mariadb-install.log" 2>&1 \
      || { STEP_LOGS=("$LOGS/mariadb-install.log"); die "mariadb-install-db failed"; }
  fi
  chown -R mysql:mysql "$d"
  rotate "$LOGS/mariadb.log"
  # mariadbd drops to --user itself without forking, so the pid file still names it.
  spawn mariadb "$LOGS/mariadb.log" "$bin" --no-defaults --datadir="$d/data" --port="$MARIADB_PORT" \
    --bind-address=127.0.0.1 --socket="$d/run/mysqld.sock" --pid-file="$d/run/mysqld.pid" --user=mysql \
    --skip-name-resolve --innodb-buffer-pool-size=32M --innodb-log-file-size=16M --max-connections=60 \
    --innodb-flush-log-at-trx-commit=0
}

psql_admin() {
  as_postgres "$(pg_bindir)/psql" -h "$SYS_BASE/postgres/run" -p "$PG_PORT" -U postgres -d postgres \
    -v ON_ERROR_STOP=1 -qAt "$@"
}
mariadb_admin() { mariadb --no-defaults --socket="$SYS_BASE/mariadb/run/mysqld.sock" -u root "$@"; }

ready_postgres() {
  port_open "$PG_PORT" || return 1
  "$(pg_bindir)/pg_isready" -q -h "$SYS_BASE/postgres/run" -p "$PG_PORT" -U postgres 2>/dev/null
}

ready_mariadb() {
  port_open "$MARIADB_PORT" || return 1
  mariadb_admin -e 'SELECT 1' >/dev/null 2>&1
}

# Idempotent: the connector tests' login and database, on every `up`.
setup_postgres() {
  step_for postgres "$PROFILE: postgres login $DB_USER"
  if [[ $(psql_admin -c "SELECT 1 FROM pg_roles WHERE rolname = '$DB_USER'") != 1 ]]; then
    psql_admin -c "CREATE ROLE $DB_USER LOGIN PASSWORD '$DB_PASSWORD'" >/dev/null
  fi
  if [[ $(psql_admin -c "SELECT 1 FROM pg_database WHERE datname = '$DB_NAME'") != 1 ]]; then
    psql_admin -c "CREATE DATABASE $DB_NAME OWNER $DB_USER" >/dev/null
  fi
}

setup_mariadb() {
  step_for mariadb "$PROFILE: mariadb login $DB_USER"
  mariadb_admin -e "CREATE USER IF NOT EXISTS '$DB_USER'@'%' IDENTIFIED BY '$DB_PASSWORD';
    CREATE DATABASE IF NOT EXISTS $DB_NAME CHARACTER SET utf8mb4;
    GRANT ALL PRIVILEGES ON $DB_NAME.* TO '$DB_USER'@'%';" \
    >>"$LOGS/mariadb.log" 2>&1 || die "could not create the mariadb login"
}

# Raw RESP PING over /dev/tcp: no redis-cli needed, and "-LOADING" (AOF replay) counts as not ready.
ready_redis() {
  (
    exec 3<>"/dev/tcp/127.0.0.1/$REDIS_PORT" && printf 'PING\r\n' >&3 &&
      IFS= read -r -t 2 reply <&3 && [[ $reply == +PONG* ]]
  ) 2>/dev/null
}

# "Kafka Server started" only says the JVM finished booting; an Admin metadata round trip
# (what kafka-topics.sh --list does) proves a client can actually talk to the broker.
ready_kafka() {
  port_open "$KAFKA_PORT" || return 1
  grep -q 'Kafka Server started' "$LOGS/kafka.log" 2>/dev/null || return 1
  timeout 30 java -Xms32m -Xmx128m -XX:TieredStopAtLevel=1 \
    -Dlog4j.configuration="file:$HERE/kafka-tools-log4j.properties" -cp "$JARS/kafka/*" \
    org.apache.kafka.tools.TopicCommand --bootstrap-server "127.0.0.1:$KAFKA_PORT" --list \
    >>"$LOGS/kafka-tool.log" 2>&1
}

ready_mongo() {
  port_open "$MONGO_PORT" || return 1
  grep -qE 'MongoLauncher: listening on|Waiting for connections' "$LOGS/mongo.log" 2>/dev/null
}

launch_component() {
  local c=$1 port pid
  port=$(port_of "$c")
  step_for "$c" "$PROFILE: start $c (port $port)"
  if pid=$(live_pid "$c"); then
    say "$c already running (pid $pid)"
    return
  fi
  if port_open "$port"; then
    die "port $port is in use by a process that is not this profile's $c"
  fi
  if [[ $c == kafka ]] && port_open "$KAFKA_CTRL_PORT"; then
    die "kafka controller port $KAFKA_CTRL_PORT is already in use"
  fi
  "launch_$c"
  say "$c launched (pid $(<"$(pidfile_of "$c")"))"
}

wait_component() {
  local c=$1 pid started=$SECONDS
  step_for "$c" "$PROFILE: wait for $c"
  while ((SECONDS - started < READY_TIMEOUT)); do
    pid=$(live_pid "$c") || die "$c exited during startup"
    if "ready_$c"; then
      say "$c ready (pid $pid, port $(port_of "$c"), $((SECONDS - started))s)"
      if declare -F "setup_$c" >/dev/null; then "setup_$c"; fi
      return
    fi
    sleep 0.5
  done
  die "$c not ready after ${READY_TIMEOUT}s"
}

stop_component() {
  local c=$1 pf pid i
  pf=$(pidfile_of "$c")
  step_for "$c" "$PROFILE: stop $c"
  if ! pid=$(live_pid "$c"); then
    [[ -f $pf ]] && say "$c: stale pid file removed"
    rm -f -- "$pf"
    say "$c not running"
    return
  fi
  # PostgreSQL's SIGTERM waits for every client to leave; SIGINT is its fast shutdown.
  if [[ $c == postgres ]]; then kill -INT "$pid" 2>/dev/null || true; else kill -TERM "$pid" 2>/dev/null || true; fi
  for ((i = 0; i < STOP_TIMEOUT * 10; i++)); do
    alive "$pid" || break
    sleep 0.1
  done
  if alive "$pid"; then
    say "$c (pid $pid) ignored SIGTERM for ${STOP_TIMEOUT}s, sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do alive "$pid" || break; sleep 0.1; done
  fi
  alive "$pid" && die "$c (pid $pid) is still alive after SIGKILL"
  rm -f -- "$pf"
  say "$c stopped (pid $pid)"
}

managed_components() {
  local c
  for c in "${COMPONENTS[@]}"; do
    [[ $c == mongo && -n $EXTERNAL_MONGO_URL ]] && continue
    echo "$c"
  done
}

write_env() {
  local mongo_url=${EXTERNAL_MONGO_URL:-mongodb://127.0.0.1:$MONGO_PORT}
  step "$PROFILE: write $BASE/stack.env"
  printf 'REDIS_URL=redis://127.0.0.1:%s\nKAFKA_BROKERS=127.0.0.1:%s\nMONGO_URL=%s\n' \
    "$REDIS_PORT" "$KAFKA_PORT" "$mongo_url" >"$BASE/stack.env.tmp"
  printf 'POSTGRES_URL=postgres://%s:%s@127.0.0.1:%s/%s\nMYSQL_URL=mysql://%s:%s@127.0.0.1:%s/%s\n' \
    "$DB_USER" "$DB_PASSWORD" "$PG_PORT" "$DB_NAME" "$DB_USER" "$DB_PASSWORD" "$MARIADB_PORT" "$DB_NAME" \
    >>"$BASE/stack.env.tmp"
  mv -f -- "$BASE/stack.env.tmp" "$BASE/stack.env"
}

# The test profile always starts from empty data, but never pulls data from under a live process.
wipe_test_data() {
  local c port
  for c in "${COMPONENTS[@]}"; do
    live_pid "$c" >/dev/null && return 0
    port=$(port_of "$c")
    port_open "$port" && return 0
  done
  step "test: wipe data dirs"
  rm -rf -- "$BASE/redis" "$BASE/kafka" "$BASE/mongo" "$SYS_BASE/postgres" "$SYS_BASE/mariadb"
}

# ---------------------------------------------------------------- commands

cmd_up() {
  load_profile "$1"
  lock_profile
  # `up` does not roll back on failure: leaving the rest running helps debugging.
  FAIL_HINT="components already started keep running; 'stack.sh down $PROFILE' stops them"
  # Cached, so this costs well under a second; keeps `up` working on a fresh clone.
  step "$PROFILE: check install"
  cmd_install >/dev/null
  local c
  [[ $PROFILE == test ]] && wipe_test_data
  [[ -n $EXTERNAL_MONGO_URL ]] && say "MONGO_URL is set, not starting mongo"
  # Launch everything first and wait afterwards: the JVMs boot in parallel.
  for c in $(managed_components); do launch_component "$c"; done
  for c in $(managed_components); do wait_component "$c"; done
  write_env
  say "$PROFILE is up: $(tr '\n' ' ' <"$BASE/stack.env")"
}

cmd_down() {
  load_profile "$1"
  lock_profile
  local c
  # Reverse start order. Mongo is stopped even if MONGO_URL is set now: a live pid file
  # means an earlier `up` started one.
  for c in mariadb postgres mongo kafka redis; do stop_component "$c"; done
  say "$PROFILE is down"
}

cmd_start_one() {
  load_profile "$1"
  check_component "$2"
  lock_profile
  if [[ $2 == mongo && -n $EXTERNAL_MONGO_URL ]]; then
    say "MONGO_URL is set, not starting mongo"
    return
  fi
  step "$PROFILE: check install"
  cmd_install >/dev/null
  launch_component "$2"
  wait_component "$2"
  write_env
}

cmd_stop_one() {
  load_profile "$1"
  check_component "$2"
  lock_profile
  stop_component "$2"
}

cmd_status() {
  load_profile "$1"
  local c pid port rc=0
  for c in "${COMPONENTS[@]}"; do
    port=$(port_of "$c")
    if [[ $c == mongo && -n $EXTERNAL_MONGO_URL ]] && ! live_pid mongo >/dev/null; then
      say "$PROFILE $c: external ($EXTERNAL_MONGO_URL)"
    elif pid=$(live_pid "$c"); then
      if port_open "$port"; then
        say "$PROFILE $c: running (pid $pid, port $port)"
      else
        say "$PROFILE $c: starting or hung (pid $pid, port $port closed)"
        rc=3
      fi
    else
      say "$PROFILE $c: stopped (port $port)"
      rc=3
    fi
  done
  [[ -f $BASE/stack.env ]] && say "env file: $BASE/stack.env"
  return "$rc"
}

main() {
  local cmd=${1:-}
  case $cmd in
    install) [[ $# -eq 1 ]] || usage; cmd_install ;;
    up | down) [[ $# -eq 2 ]] || usage; "cmd_$cmd" "$2" ;;
    status) [[ $# -eq 2 ]] || usage; cmd_status "$2" || exit $? ;;
    start-one) [[ $# -eq 3 ]] || usage; cmd_start_one "$2" "$3" ;;
    stop-one) [[ $# -eq 3 ]] || usage; cmd_stop_one "$2" "$3" ;;
    *) usage ;;
  esac
}

main "$@"
