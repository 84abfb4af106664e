{{- define "berth-controller.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "berth-controller.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "berth-controller.labels" -}}
{{ include "berth-controller.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "berth-controller.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "berth-controller.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The rules the controller needs where it reconciles Berths. */}}
{{- define "berth-controller.rules" -}}
- apiGroups: [berth.dev]
  resources: [berths]
  verbs: [get, list, watch, patch, update]
- apiGroups: [berth.dev]
  resources: [berths/status]
  verbs: [get, patch, update]
# Owner references with blockOwnerDeletion on what it applies: the
# OwnerReferencesPermissionEnforcement admission plugin (on in OpenShift) asks for this.
- apiGroups: [berth.dev]
  resources: [berths/finalizers]
  verbs: [update]
# Sources (read and labelled), generated configs and CA bundles, apply records.
- apiGroups: [""]
  resources: [configmaps, secrets]
  verbs: [get, list, watch, create, patch, update, delete]
- apiGroups: [apps]
  resources: [deployments, statefulsets, daemonsets]
  verbs: [get, list, watch, create, patch, update, delete]
- apiGroups: [batch]
  resources: [jobs]
  verbs: [get, list, watch, create, patch, update, delete]
# What still uses a config generation kept for a GitOps engine (read only).
- apiGroups: [""]
  resources: [pods]
  verbs: [list]
- apiGroups: [apps]
  resources: [replicasets]
  verbs: [list]
- apiGroups: [batch]
  resources: [cronjobs]
  verbs: [list]
# An Event on a Berth when its reason changes.
- apiGroups: [events.k8s.io]
  resources: [events]
  verbs: [create, patch]
{{- end -}}
