{{/* The container's environment: every secret the configuration reads. */}}
{{- define "tollgate.env" -}}
{{- $s := .Values.sessions }}
{{- $sessionSecret := include "tollgate.sessionSecretName" . }}
- name: TOLLGATE_SESSION_KEY
  valueFrom:
    secretKeyRef:
      name: {{ $sessionSecret }}
      key: {{ ternary $s.existingSecretKey "session-key" (ne $s.existingSecret "") }}
{{- if $s.existingSecret }}
{{- range $i, $key := $s.existingSecretPreviousKeys }}
- name: TOLLGATE_SESSION_PREVIOUS_KEY_{{ $i }}
  valueFrom:
    secretKeyRef:
      name: {{ $sessionSecret }}
      key: {{ $key }}
{{- end }}
{{- else }}
{{- range $i, $_ := $s.previousKeys }}
- name: TOLLGATE_SESSION_PREVIOUS_KEY_{{ $i }}
  valueFrom:
    secretKeyRef:
      name: {{ $sessionSecret }}
      key: previous-key-{{ $i }}
{{- end }}
{{- end }}
- name: TOLLGATE_ADMIN_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ include "tollgate.adminSecretName" . }}
      key: {{ ternary .Values.admin.existingSecretKey "admin-token" (ne .Values.admin.existingSecret "") }}
{{- if include "tollgate.consoleSecret" . }}
- name: TOLLGATE_CONSOLE_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ include "tollgate.consoleSecretName" . }}
      key: {{ ternary .Values.console.existingSecretKey "client-secret" (ne .Values.console.existingSecret "") }}
{{- end }}
{{- range $var, $key := .Values.credentials.env }}
- name: {{ $var }}
  valueFrom:
    secretKeyRef:
      name: {{ include "tollgate.credentialsSecretName" $ }}
      key: {{ $key }}
{{- end }}
{{- if include "tollgate.redisPassword" . }}
- name: TOLLGATE_REDIS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "tollgate.redisSecretName" . }}
      key: {{ ternary .Values.redis.existingSecretPasswordKey "redis-password" (ne .Values.redis.existingSecret "") }}
{{- end }}
{{- if include "tollgate.storePassword" . }}
- name: TOLLGATE_STORE_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "tollgate.storeSecretName" . }}
      key: {{ ternary .Values.store.existingSecretPasswordKey "password" (ne .Values.store.existingSecret "") }}
{{- end }}
{{- with .Values.checkpoint.existingSecret }}
- name: TOLLGATE_CHECKPOINT_KEY
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.checkpoint.existingSecretKey }}
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Where each file the configuration names is mounted (values.yaml lists them). */}}
{{- define "tollgate.volumeMounts" -}}
- name: config
  mountPath: /etc/tollgate/config
  readOnly: true
{{- if .Values.policies.enabled }}
- name: policies
  mountPath: /etc/tollgate/policies
  readOnly: true
{{- end }}
{{- if include "tollgate.catalogLock" . }}
- name: catalog
  mountPath: /etc/tollgate/catalog
  readOnly: true
{{- end }}
{{- range $name := list "public" "admin" }}
{{- if (get $.Values.tls $name).enabled }}
- name: tls-{{ $name }}
  mountPath: /etc/tollgate/tls/{{ $name }}
  readOnly: true
{{- end }}
{{- end }}
{{- if and .Values.redis.enabled .Values.redis.tls.enabled }}
- name: redis-tls
  mountPath: /etc/tollgate/redis-tls
  readOnly: true
{{- end }}
{{- if and .Values.store.postgres.url .Values.store.postgres.tls.enabled }}
- name: store-tls
  mountPath: /etc/tollgate/store-tls
  readOnly: true
{{- end }}
{{- if .Values.audit.enabled }}
- name: audit
  mountPath: /var/lib/tollgate/audit
{{- end }}
{{- with .Values.extraVolumeMounts }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "tollgate.volumes" -}}
- name: config
  configMap:
    name: {{ include "tollgate.configMapName" . }}
    items:
      - { key: tollgate.toml, path: tollgate.toml }
{{- if .Values.policies.enabled }}
- name: policies
  configMap:
    name: {{ include "tollgate.policiesConfigMapName" . }}
{{- end }}
{{- if include "tollgate.catalogLock" . }}
- name: catalog
  configMap:
    name: {{ include "tollgate.catalogConfigMapName" . }}
    items:
      - { key: catalog.lock, path: catalog.lock }
{{- end }}
{{- range $name := list "public" "admin" }}
{{- $tls := get $.Values.tls $name }}
{{- if $tls.enabled }}
- name: tls-{{ $name }}
  secret:
    secretName: {{ required (printf "tls.%s.secretName is required with tls.%s.enabled" $name $name) $tls.secretName }}
    items:
      - { key: tls.crt, path: tls.crt }
      - { key: tls.key, path: tls.key }
{{- end }}
{{- end }}
{{- $redisTls := .Values.redis.tls }}
{{- if and .Values.redis.enabled $redisTls.enabled }}
{{- if not (or $redisTls.ca $redisTls.clientCertificate) }}
{{- fail "redis.tls needs ca or clientCertificate (rediss:// with a public CA needs no files: leave redis.tls off)" }}
{{- end }}
- name: redis-tls
  secret:
    secretName: {{ required "redis.tls.secretName is required with redis.tls.enabled" $redisTls.secretName }}
    items:
      {{- if $redisTls.ca }}
      - { key: ca.crt, path: ca.crt }
      {{- end }}
      {{- if $redisTls.clientCertificate }}
      - { key: tls.crt, path: tls.crt }
      - { key: tls.key, path: tls.key }
      {{- end }}
{{- end }}
{{- $storeTls := .Values.store.postgres.tls }}
{{- if and .Values.store.postgres.url $storeTls.enabled }}
{{- if not (or $storeTls.ca $storeTls.clientCertificate) }}
{{- fail "store.postgres.tls needs ca or clientCertificate (a server with a public CA needs no files: leave store.postgres.tls off)" }}
{{- end }}
- name: store-tls
  secret:
    secretName: {{ required "store.postgres.tls.secretName is required with store.postgres.tls.enabled" $storeTls.secretName }}
    items:
      {{- if $storeTls.ca }}
      - { key: ca.crt, path: ca.crt }
      {{- end }}
      {{- if $storeTls.clientCertificate }}
      - { key: tls.crt, path: tls.crt }
      - { key: tls.key, path: tls.key }
      {{- end }}
{{- end }}
{{- if and .Values.audit.enabled (not (include "tollgate.statefulset" .)) }}
- name: audit
  {{- toYaml .Values.audit.volume | nindent 2 }}
{{- end }}
{{- with .Values.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end }}
