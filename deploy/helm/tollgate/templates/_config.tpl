{{/*
tollgate.toml: the user's `config`, or the file built from the values.
Paths are relative to the file, mounted at /etc/tollgate/config/.
*/}}
{{- define "tollgate.configText" -}}
{{- if .Values.config }}
{{- .Values.config }}
{{- else }}
{{- include "tollgate.builtConfig" . }}
{{- end }}
{{- end }}

{{- define "tollgate.builtConfig" -}}
{{- if not .Values.servers }}
{{- fail "set `servers` (at least one upstream), or give the whole file as `config` or `existingConfigMap`" }}
{{- end -}}
# tollgate.toml, written by the Helm chart from its values
# (docs/configuration.md). Paths are relative to this file.
{{ include "tollgate.config.listen" . }}

[admin]
token = { env = "TOLLGATE_ADMIN_TOKEN" }

{{ include "tollgate.config.sessions" . }}

[shutdown]
grace = "{{ int .Values.shutdown.grace }}s"
{{- with .Values.workerThreads }}

[runtime]
worker_threads = {{ int . }}
{{- end }}

{{ include "tollgate.config.audit" . }}
{{- include "tollgate.config.policy" . }}
{{- include "tollgate.config.catalog" . }}
{{- include "tollgate.config.redis" . }}
{{- include "tollgate.config.store" . }}
{{- include "tollgate.config.console" . }}
{{- range .Values.servers }}

{{ include "tollgate.config.server" . }}
{{- end }}
{{- with .Values.extraConfig }}

{{ . }}
{{- end }}
{{- end }}

{{- define "tollgate.config.listen" -}}
{{- $host := .Values.listenAddress | default "0.0.0.0" }}
{{- if contains ":" $host }}{{ $host = printf "[%s]" $host }}{{ end -}}
[listen]
public = "{{ $host }}:{{ int .Values.ports.public }}"
admin = "{{ $host }}:{{ int .Values.ports.admin }}"
{{- range $table, $name := dict "tls" "public" "admin_tls" "admin" }}
{{- if (get $.Values.tls $name).enabled }}

[listen.{{ $table }}]
cert = "../tls/{{ $name }}/tls.crt"
key = "../tls/{{ $name }}/tls.key"
{{- with $.Values.tls.reloadInterval }}
reload_interval = {{ toJson . }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{- define "tollgate.config.sessions" -}}
{{- $previous := concat .Values.sessions.previousKeys .Values.sessions.existingSecretPreviousKeys -}}
[sessions]
key = { env = "TOLLGATE_SESSION_KEY" }
{{- if $previous }}
previous_keys = [
{{- range $i, $_ := $previous }}{{ if $i }}, {{ end }}{ env = "TOLLGATE_SESSION_PREVIOUS_KEY_{{ $i }}" }{{ end -}}
]
{{- end }}
{{- with .Values.sessions.ttl }}
ttl = {{ toJson . }}
{{- end }}
{{- end }}

{{- define "tollgate.config.audit" -}}
{{- $cp := .Values.checkpoint -}}
[audit]
enabled = {{ .Values.audit.enabled }}
{{- if .Values.audit.enabled }}
directory = "/var/lib/tollgate/audit"
durability = {{ toJson .Values.audit.durability }}
{{- end }}
{{- with $cp.interval }}
checkpoint_interval = {{ toJson . }}
{{- end }}
{{- if $cp.existingSecret }}
checkpoint_key = { env = "TOLLGATE_CHECKPOINT_KEY" }
{{- end }}
{{- with $cp.publicKeys }}
checkpoint_public_keys = {{ include "tollgate.toml.value" . }}
{{- end }}
{{- end }}

{{- define "tollgate.config.policy" -}}
{{- if .Values.policies.enabled }}

[policy]
dir = "../policies"
mode = {{ toJson .Values.policies.mode }}
{{- with .Values.policies.utcOffset }}
utc_offset = {{ toJson . }}
{{- end }}
{{- end }}
{{- end }}

{{- define "tollgate.config.catalog" -}}
{{- $c := .Values.catalog }}
{{- if or $c.mode (include "tollgate.catalogLock" .) }}

[catalog]
{{- with $c.mode }}
mode = {{ toJson . }}
{{- end }}
{{- if include "tollgate.catalogLock" . }}
lock = "../catalog/catalog.lock"
{{- end }}
{{- with $c.syncInterval }}
sync_interval = {{ toJson . }}
{{- end }}
{{- end }}
{{- end }}

{{- define "tollgate.config.redis" -}}
{{- $r := .Values.redis }}
{{- if $r.enabled }}
{{- $replicas := .Values.replicaCount }}
{{- if .Values.autoscaling.enabled }}{{ $replicas = .Values.autoscaling.minReplicas }}{{ end }}

[limits.redis]
url = {{ required "redis.url is required with redis.enabled" $r.url | toJson }}
{{- if include "tollgate.redisPassword" . }}
password = { env = "TOLLGATE_REDIS_PASSWORD" }
{{- end }}
{{- with $r.timeout }}
timeout = {{ toJson . }}
{{- end }}
replicas = {{ $r.replicas | default $replicas | int }}
{{- with $r.keyPrefix }}
key_prefix = {{ toJson . }}
{{- end }}
{{- if $r.tls.enabled }}
{{- $tls := list }}
{{- if $r.tls.ca }}{{ $tls = append $tls "ca = \"../redis-tls/ca.crt\"" }}{{ end }}
{{- if $r.tls.clientCertificate }}
{{- $tls = concat $tls (list "cert = \"../redis-tls/tls.crt\"" "key = \"../redis-tls/tls.key\"") }}
{{- end }}
tls = { {{ join ", " $tls }} }
{{- end }}
{{- end }}
{{- end }}

{{/* `[store]`: the fleet store, when `store.postgres.url` is set. */}}
{{- define "tollgate.config.store" -}}
{{- $s := .Values.store }}
{{- $pg := $s.postgres }}
{{- if $pg.url }}
{{- $settings := list (printf "url = %s" (toJson $pg.url)) }}
{{- if include "tollgate.storePassword" . }}
{{- $settings = append $settings "password = { env = \"TOLLGATE_STORE_PASSWORD\" }" }}
{{- end }}
{{- if $pg.tls.enabled }}
{{- if $pg.tls.ca }}{{ $settings = append $settings "ca_file = \"../store-tls/ca.crt\"" }}{{ end }}
{{- if $pg.tls.clientCertificate }}
{{- $settings = concat $settings (list "cert_file = \"../store-tls/tls.crt\"" "key_file = \"../store-tls/tls.key\"") }}
{{- end }}
{{- end }}
{{- with $pg.poolSize }}{{ $settings = append $settings (printf "pool_size = %d" (int .)) }}{{ end }}
{{- with $pg.statementTimeout }}{{ $settings = append $settings (printf "statement_timeout = %s" (toJson .)) }}{{ end }}

# No `replica`: each replica is named in the store by its host name, its
# pod's name (stable in a StatefulSet).
[store]
migrate = {{ $s.migrate }}
postgres = { {{ join ", " $settings }} }
{{- end }}
{{- end }}

{{- define "tollgate.config.console" -}}
{{- $c := .Values.console }}
{{- if $c.enabled }}

[console]
enabled = true
{{- with $c.url }}
url = {{ toJson . }}
{{- end }}
{{- with $c.issuer }}
issuer = {{ toJson . }}
{{- end }}
{{- with $c.audiences }}
audiences = {{ include "tollgate.toml.value" . }}
{{- end }}
client_id = {{ toJson $c.clientId }}
{{- if include "tollgate.consoleSecret" . }}
client_secret = { env = "TOLLGATE_CONSOLE_SECRET" }
{{- end }}
{{- with $c.scopes }}
scopes = {{ include "tollgate.toml.value" . }}
{{- end }}
{{- with $c.sessionTtl }}
session_ttl = {{ toJson . }}
{{- end }}

[console.roles]
{{- range $role := list "viewer" "auditor" "approver" "admin" }}
{{- with get $c.roles $role }}
{{ $role }} = {{ include "tollgate.toml.value" . }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/* One [[servers]] table: name and url first, then the other keys. */}}
{{- define "tollgate.config.server" -}}
[[servers]]
name = {{ required "every server needs a name" .name | toJson }}
url = {{ required "every server needs a url" .url | toJson }}
{{- range $key := keys . | sortAlpha }}
{{- $value := get $ $key }}
{{- if and (ne $key "name") (ne $key "url") (not (kindIs "invalid" $value)) }}
{{ include "tollgate.toml.key" $key }} = {{ include "tollgate.toml.value" $value }}
{{- end }}
{{- end }}
{{- end }}

{{/* A TOML key: bare when it can be, else quoted. */}}
{{- define "tollgate.toml.key" -}}
{{- if regexMatch "^[A-Za-z0-9_-]+$" . }}{{ . }}{{ else }}{{ toJson . }}{{ end }}
{{- end }}

{{/*
A value as TOML on one line: tables become inline tables, lists arrays;
strings, numbers and booleans are written as JSON, which TOML reads the
same way (whole numbers without a fraction).
*/}}
{{- define "tollgate.toml.value" -}}
{{- if kindIs "map" . }}
{{- $parts := list }}
{{- range $key := keys . | sortAlpha }}
{{- $value := get $ $key }}
{{- if not (kindIs "invalid" $value) }}
{{- $parts = append $parts (printf "%s = %s" (include "tollgate.toml.key" $key) (include "tollgate.toml.value" $value)) }}
{{- end }}
{{- end }}
{{- if $parts }}{ {{ join ", " $parts }} }{{ else }}{}{{ end }}
{{- else if kindIs "slice" . }}
{{- $parts := list }}
{{- range . }}{{ $parts = append $parts (include "tollgate.toml.value" .) }}{{ end -}}
[{{ join ", " $parts }}]
{{- else }}
{{- toJson . }}
{{- end }}
{{- end }}
