{{/* Names, labels and the names of the objects the pod reads. */}}

{{- define "tollgate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "tollgate.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "tollgate.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "tollgate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "tollgate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tollgate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "tollgate.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "tollgate.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "tollgate.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{/* The ConfigMap holding tollgate.toml. */}}
{{- define "tollgate.configMapName" -}}
{{- .Values.existingConfigMap | default (printf "%s-config" (include "tollgate.fullname" .)) }}
{{- end }}

{{- define "tollgate.policiesConfigMapName" -}}
{{- .Values.policies.existingConfigMap | default (printf "%s-policies" (include "tollgate.fullname" .)) }}
{{- end }}

{{- define "tollgate.catalogConfigMapName" -}}
{{- .Values.catalog.existingConfigMap | default (printf "%s-catalog" (include "tollgate.fullname" .)) }}
{{- end }}

{{/* Whether a catalog lock is mounted. */}}
{{- define "tollgate.catalogLock" -}}
{{- if or .Values.catalog.lock .Values.catalog.existingConfigMap }}true{{ end }}
{{- end }}

{{- define "tollgate.sessionSecretName" -}}
{{- .Values.sessions.existingSecret | default (printf "%s-session" (include "tollgate.fullname" .)) }}
{{- end }}

{{- define "tollgate.adminSecretName" -}}
{{- .Values.admin.existingSecret | default (printf "%s-admin-token" (include "tollgate.fullname" .)) }}
{{- end }}

{{- define "tollgate.credentialsSecretName" -}}
{{- .Values.credentials.existingSecret | default (printf "%s-credentials" (include "tollgate.fullname" .)) }}
{{- end }}

{{- define "tollgate.redisSecretName" -}}
{{- .Values.redis.existingSecret | default (printf "%s-redis" (include "tollgate.fullname" .)) }}
{{- end }}

{{- define "tollgate.consoleSecretName" -}}
{{- .Values.console.existingSecret | default (printf "%s-console" (include "tollgate.fullname" .)) }}
{{- end }}

{{/* Whether the console has a client secret, from the values or an existing Secret. */}}
{{- define "tollgate.consoleSecret" -}}
{{- if and .Values.console.enabled (or .Values.console.clientSecret .Values.console.existingSecret) }}true{{ end }}
{{- end }}

{{/*
The console's public host, from console.url, for its Ingress or HTTPRoute;
they route /console, where the gateway serves it, so the URL's path must
be /console.
*/}}
{{- define "tollgate.consoleHost" -}}
{{- $c := .Values.console }}
{{- if not $c.enabled }}
{{- fail "console.ingress and console.httpRoute need console.enabled" }}
{{- end }}
{{- $url := urlParse (required "console.url is required with console.ingress or console.httpRoute" $c.url) }}
{{- if ne (trimSuffix "/" $url.path) "/console" }}
{{- fail "console.url must end in the host and /console (e.g. https://tollgate.example.com/console) for console.ingress or console.httpRoute, which route /console" }}
{{- end }}
{{- $url.hostname }}
{{- end }}

{{/* Whether Redis has a password, from the values or an existing Secret. */}}
{{- define "tollgate.redisPassword" -}}
{{- if and .Values.redis.enabled (or .Values.redis.password .Values.redis.existingSecret) }}true{{ end }}
{{- end }}

{{/* http or https: the admin listener's scheme, for probes and scrapes. */}}
{{- define "tollgate.adminScheme" -}}
{{- if .Values.tls.admin.enabled }}https{{ else }}http{{ end }}
{{- end }}

{{- define "tollgate.terminationGracePeriod" -}}
{{- add .Values.shutdown.preStopSleep .Values.shutdown.grace .Values.shutdown.margin }}
{{- end }}

{{- define "tollgate.storeSecretName" -}}
{{- .Values.store.existingSecret | default (printf "%s-store" (include "tollgate.fullname" .)) }}
{{- end }}

{{/* Whether the store has a password, from the values or an existing Secret. */}}
{{- define "tollgate.storePassword" -}}
{{- if and .Values.store.postgres.url (or .Values.store.password .Values.store.existingSecret) }}true{{ end }}
{{- end }}
