{{/* The name of every object, and its labels. */}}
{{- define "gwsim.name" -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}

{{- define "gwsim.labels" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}

{{- define "gwsim.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if eq $tag "latest" }}{{ fail "image.tag: a version tag, not latest" }}{{ end -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}:{{ $tag }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ $tag }}
{{- end -}}
{{- end -}}

{{/* The pod and container security contexts of Pod Security "restricted". */}}
{{- define "gwsim.podSecurity" -}}
runAsNonRoot: true
runAsUser: {{ .uid }}
runAsGroup: {{ .uid }}
fsGroup: {{ .uid }}
seccompProfile: {type: RuntimeDefault}
{{- end -}}

{{- define "gwsim.containerSecurity" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities: {drop: ["ALL"]}
{{- end -}}

{{/* The --store URL. */}}
{{- define "gwsim.store" -}}
{{- $n := include "gwsim.name" . -}}
{{- if eq .Values.redis.mode "single" -}}
redis://{{ $n }}-redis:6379/0
{{- else if eq .Values.redis.mode "sentinel" -}}
redis+sentinel://{{ $n }}-sentinel-0.{{ $n }}-sentinel:26379,{{ $n }}-sentinel-1.{{ $n }}-sentinel:26379,{{ $n }}-sentinel-2.{{ $n }}-sentinel:26379/gwsim/0
{{- else if eq .Values.redis.mode "external" -}}
{{ required "redis.url: the --store URL of your Redis (redis.mode external)" .Values.redis.url }}
{{- else -}}
{{ fail (printf "redis.mode must be single, sentinel or external, not %q" .Values.redis.mode) }}
{{- end -}}
{{- end -}}
