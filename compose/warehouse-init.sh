#!/bin/sh
# One-shot set-up of a catalog that wants tokens, run by docker compose once the catalog answers /health (with
# nothing but sh, curl, sed and grep, as in the curl image):
#   1. a token for ADMIN_CLIENT by OAuth2 client credentials at TOKEN_ENDPOINT;
#   2. bootstrap, unless done, with the admin as server operator (project admin of every project);
#   3. the warehouse WAREHOUSE_JSON names, created by the admin (who then owns it), unless it exists;
#   4. for each `client:secret` of ENGINE_CLIENTS: its user (provisioned by whoami), granted create and modify on
#      the warehouse, so every engine creates namespaces and tables there and reads and writes the others' tables.
# Every step is safe to run again: a second start changes nothing.
set -eu

: "${CATALOG:=http://lakeledger:8181}"
: "${TOKEN_ENDPOINT:=http://keycloak:8080/realms/lakeledger/protocol/openid-connect/token}"
: "${SCOPE:=lakeledger}"
: "${ADMIN_CLIENT:=spark}"
: "${ADMIN_SECRET:?the admin client's secret}"
: "${ENGINE_CLIENTS:=}"
: "${WAREHOUSE_JSON:?the warehouse to create (the management API's JSON)}"

fail() { echo "warehouse-init: $*" >&2; exit 1; }

# token CLIENT SECRET: an access token for the client
token() {
  answer=$(curl -sS -X POST "$TOKEN_ENDPOINT" --data-urlencode grant_type=client_credentials \
    --data-urlencode "client_id=$1" --data-urlencode "client_secret=$2" --data-urlencode "scope=$SCOPE")
  value=$(printf '%s' "$answer" | sed -n 's/.*"access_token" *: *"\([^"]*\)".*/\1/p')
  [ -n "$value" ] || fail "no token for client $1: $answer"
  printf '%s' "$value"
}

# call TOKEN METHOD PATH [BODY]: sets $code (the HTTP status) and $answer (the body)
body_file=$(mktemp)
call() {
  if [ $# -ge 4 ]; then
    code=$(curl -sS -o "$body_file" -w '%{http_code}' -X "$2" "$CATALOG$3" -H "Authorization: Bearer $1" \
      -H 'Content-Type: application/json' -d "$4")
  else
    code=$(curl -sS -o "$body_file" -w '%{http_code}' -X "$2" "$CATALOG$3" -H "Authorization: Bearer $1")
  fi
  answer=$(cat "$body_file")
}

# field NAME: the first string value of NAME in the JSON on stdin
field() { sed -n "s/.*\"$1\" *: *\"\\([^\"]*\\)\".*/\\1/p" | head -n 1; }

admin=$(token "$ADMIN_CLIENT" "$ADMIN_SECRET")

call "$admin" GET /management/v1/info
[ "$code" = 200 ] || fail "GET /management/v1/info answered $code: $answer"
if printf '%s' "$answer" | grep -q '"bootstrapped" *: *true'; then
  echo "already bootstrapped"
else
  call "$admin" POST /management/v1/bootstrap '{"accept-terms-of-use": true, "is-operator": true}'
  [ "$code" = 204 ] || fail "bootstrap answered $code: $answer"
  echo "bootstrapped: $ADMIN_CLIENT is the server's operator"
fi

name=$(printf '%s' "$WAREHOUSE_JSON" | field warehouse-name)
call "$admin" GET "/catalog/v1/config?warehouse=$name"
if [ "$code" = 200 ]; then
  warehouse=$(printf '%s' "$answer" | field prefix)
  echo "warehouse $name exists: $warehouse"
else
  call "$admin" POST /management/v1/warehouse "$WAREHOUSE_JSON"
  [ "$code" = 201 ] || fail "warehouse creation answered $code: $answer"
  warehouse=$(printf '%s' "$answer" | field warehouse-id)
  echo "warehouse $name created: $warehouse"
fi
[ -n "$warehouse" ] || fail "no id for warehouse $name"

for pair in $ENGINE_CLIENTS; do
  client=${pair%%:*}
  engine=$(token "$client" "${pair#*:}")
  call "$engine" GET /management/v1/whoami
  [ "$code" = 200 ] || fail "whoami for $client answered $code: $answer"
  user=$(printf '%s' "$answer" | field id)
  call "$admin" POST "/management/v1/permissions/warehouse/$warehouse/assignments" \
    "{\"writes\": [{\"type\": \"create\", \"user\": \"$user\"}, {\"type\": \"modify\", \"user\": \"$user\"}]}"
  [ "$code" = 204 ] || fail "granting $client ($user) answered $code: $answer"
  echo "granted create and modify on $name to $client ($user)"
done
rm -f "$body_file"
