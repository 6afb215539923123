#!/bin/sh
# A person asked with curl alone: create a request, long-poll until it settles, print it.
# HITL_URL: where `serve` listens; HITL_TOKEN: from `hitl-bridge tokens create`;
# HITL_TO: who is asked (slack:U0123ABCD, teams:<conversation>, email:<address>).
set -eu
auth="Authorization: Bearer $HITL_TOKEN"

created=$(curl -sS --fail-with-body -X POST "$HITL_URL/api/v1/requests" -H "$auth" \
  -H 'Content-Type: application/json' \
  -d "{\"tool\": \"requestApproval\", \"to\": \"$HITL_TO\",
       \"arguments\": {\"action\": \"Deploy v2\", \"reason\": \"Release day\"}}")
id=$(printf '%s' "$created" | sed -E 's/.*"id": ?"([^"]+)".*/\1/')
echo "asked: request $id" >&2

# Each poll is held up to 60 s and answered as soon as the request settles.
request=$created
while printf '%s' "$request" | grep -q '"status": \?"pending"'; do
  request=$(curl -sS --fail-with-body "$HITL_URL/api/v1/requests/$id?wait=60" -H "$auth")
done
printf '%s\n' "$request"
