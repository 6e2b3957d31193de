{{/*
The pod template, the same for the Deployment and the StatefulSet
(`workload`). In a StatefulSet the audit volume comes from the pod's own
claim (volumeClaimTemplates), not from `audit.volume`.
*/}}
{{- define "tollgate.podTemplate" -}}
metadata:
  labels:
    {{- include "tollgate.labels" . | nindent 4 }}
    {{- with .Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- $annotations := deepCopy .Values.podAnnotations }}
  {{- if .Values.metrics.podAnnotations }}
  {{- $_ := set $annotations "prometheus.io/scrape" "true" }}
  {{- $_ := set $annotations "prometheus.io/port" (toString .Values.ports.admin) }}
  {{- $_ := set $annotations "prometheus.io/path" "/metrics" }}
  {{- $_ := set $annotations "prometheus.io/scheme" (include "tollgate.adminScheme" .) }}
  {{- end }}
  {{- with $annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  serviceAccountName: {{ include "tollgate.serviceAccountName" . }}
  automountServiceAccountToken: {{ .Values.automountServiceAccountToken }}
  {{- with .Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.priorityClassName }}
  priorityClassName: {{ . }}
  {{- end }}
  securityContext:
    {{- toYaml .Values.podSecurityContext | nindent 4 }}
  # The preStop sleep, then [shutdown] grace for calls and streams to
  # finish, then a margin before SIGKILL.
  terminationGracePeriodSeconds: {{ include "tollgate.terminationGracePeriod" . }}
  containers:
    - name: tollgate
      image: {{ include "tollgate.image" . }}
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      args:
        - serve
        - --config
        - /etc/tollgate/config/tollgate.toml
        - --log
        - {{ .Values.log.level | quote }}
        - --log-format
        - {{ .Values.log.format }}
      env:
        {{- include "tollgate.env" . | trim | nindent 8 }}
      ports:
        - name: mcp
          containerPort: {{ .Values.ports.public }}
          protocol: TCP
        - name: admin
          containerPort: {{ .Values.ports.admin }}
          protocol: TCP
      {{- $scheme := include "tollgate.adminScheme" . | upper }}
      livenessProbe:
        httpGet: { path: /healthz, port: admin, scheme: {{ $scheme }} }
        {{- toYaml .Values.livenessProbe | nindent 8 }}
      readinessProbe:
        httpGet: { path: /readyz, port: admin, scheme: {{ $scheme }} }
        {{- toYaml .Values.readinessProbe | nindent 8 }}
      {{- if .Values.startupProbe.enabled }}
      startupProbe:
        httpGet: { path: /healthz, port: admin, scheme: {{ $scheme }} }
        {{- toYaml (omit .Values.startupProbe "enabled") | nindent 8 }}
      {{- end }}
      lifecycle:
        # Endpoints are removed while the pod sleeps; SIGTERM follows.
        preStop:
          sleep:
            seconds: {{ .Values.shutdown.preStopSleep }}
      securityContext:
        {{- toYaml .Values.securityContext | nindent 8 }}
      resources:
        {{- toYaml .Values.resources | nindent 8 }}
      volumeMounts:
        {{- include "tollgate.volumeMounts" . | trim | nindent 8 }}
  volumes:
    {{- include "tollgate.volumes" . | trim | nindent 4 }}
  {{- with .Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.topologySpreadConstraints }}
  topologySpreadConstraints:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}

{{/* Whether the workload is a StatefulSet. */}}
{{- define "tollgate.statefulset" -}}
{{- if eq .Values.workload "statefulset" }}true{{ end }}
{{- end }}

{{/* The workload's kind, for the autoscaler. */}}
{{- define "tollgate.workloadKind" -}}
{{- if include "tollgate.statefulset" . }}StatefulSet{{ else }}Deployment{{ end }}
{{- end }}

{{/* The headless Service that governs a StatefulSet's pod names. */}}
{{- define "tollgate.headlessServiceName" -}}
{{- printf "%s-headless" (include "tollgate.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
