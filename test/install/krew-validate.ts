/**
 * krew's own checks of a plugin manifest, as `kubectl krew install --manifest=…` runs them, ported
 * from kubernetes-sigs/krew:
 * - internal/index/validation/validate.go (ValidatePlugin, validatePlatform, validateFiles,
 *   validateSelector, IsSafePluginName);
 * - internal/installation/semver/version.go (Parse: a leading "v", then k8s.io/apimachinery's
 *   ParseSemantic: MAJOR.MINOR.PATCH with optional -pre and +build);
 * - internal/installation/move.go (findMoveTargets: a `to` must be a clean path);
 * - pkg/constants (CurrentAPIVersion, PluginKind).
 * Returns the first error krew would report, or undefined.
 */
import {posix} from 'node:path'

const API_VERSION = 'krew.googlecontainertools.github.com/v1alpha2'
const SAFE_NAME = /^[\w-]+$/
const SHA256 = /^[a-f0-9]{64}$/
const WINDOWS_FORBIDDEN = ['CON', 'PRN', 'AUX', 'NUL', ...Array.from({length: 9}, (_, i) => `COM${i + 1}`), ...Array.from({length: 9}, (_, i) => `LPT${i + 1}`)]
// apimachinery's semantic version: no leading zeros in numbers, dot-separated pre-release and build identifiers.
const SEMVER = /^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$/

interface Selector {
  matchLabels?: Record<string, string> | null
  matchExpressions?: {key: string; operator: string; values?: string[]}[] | null
}
export interface KrewPlatform {
  uri?: string
  sha256?: string
  bin?: string
  files?: {from?: string; to?: string}[] | null
  selector?: Selector | null
}
export interface KrewPlugin {
  apiVersion?: string
  kind?: string
  metadata?: {name?: string}
  spec?: {version?: string; shortDescription?: string; description?: string; platforms?: KrewPlatform[]}
}

export function isSafePluginName(name: string): boolean {
  return SAFE_NAME.test(name) && !WINDOWS_FORBIDDEN.some((f) => f.toLowerCase() === name.toLowerCase())
}

/** validate.go's ValidatePlugin for a manifest installed under `name` (the file's base name). */
export function validatePlugin(name: string, p: KrewPlugin): string | undefined {
  if (p.apiVersion !== API_VERSION) return `plugin manifest has apiVersion="${p.apiVersion}", not supported`
  if (p.kind !== 'Plugin') return `plugin manifest has kind="${p.kind}", but only "Plugin" is supported`
  if (!isSafePluginName(name)) return `the plugin name "${name}" is not allowed`
  if (p.metadata?.name !== name) return `plugin should be named "${name}", not "${p.metadata?.name}"`
  const spec = p.spec ?? {}
  if (!spec.shortDescription) return 'should have a short description'
  if (/[\r\n]/.test(spec.shortDescription)) return 'should not have line breaks in short description'
  if (!spec.platforms || spec.platforms.length === 0) return 'should have a platform specified'
  if (!spec.version) return 'should have a version specified'
  if (!SEMVER.test(spec.version)) return `failed to parse plugin version "${spec.version}"`
  for (const pl of spec.platforms) {
    const err = validatePlatform(pl)
    if (err) return `platform is badly constructed: ${err}`
  }
  return undefined
}

function validatePlatform(p: KrewPlatform): string | undefined {
  if (!p.uri) return '`uri` has to be set'
  if (!p.sha256) return '`sha256` sum has to be set'
  if (!SHA256.test(p.sha256)) return `\`sha256\` value ${p.sha256} is not valid`
  if (!p.bin) return '`bin` has to be set'
  if (p.files !== undefined && p.files !== null) {
    if (p.files.length === 0) return '`files` has to be unspecified or non-empty'
    for (const op of p.files) {
      if (!op.from) return '`from` field has to be set'
      if (!op.to) return '`to` field has to be set'
      // move.go refuses a `to` that is not clean (checked at install time).
      if (op.to !== posix.normalize(op.to).replace(/\/$/, '')) return `the provided path is not clean, "${op.to}"`
    }
  }
  return validateSelector(p.selector)
}

function validateSelector(sel: Selector | null | undefined): string | undefined {
  if (!sel) return 'nil selector is not supported'
  if ((sel.matchLabels === undefined || sel.matchLabels === null) && (sel.matchExpressions ?? []).length === 0) return 'empty selector is not supported'
  const keys = [...Object.keys(sel.matchLabels ?? {}), ...(sel.matchExpressions ?? []).map((e) => e.key)]
  for (const key of keys) if (key !== 'os' && key !== 'arch') return `key "${key}" not supported`
  if (sel.matchLabels && Object.keys(sel.matchLabels).length === 0) return '`matchLabels` specified but empty'
  if (sel.matchExpressions && sel.matchExpressions.length === 0) return '`matchExpressions` specified but empty'
  return undefined
}
