/**
 * The CEL rules (x-kubernetes-validations) of Istio's networking CRDs, as plain predicates over the
 * JSON value the rule sees, keyed by the rule's text. validate.ts runs a rule only on a value that
 * passed the structural checks, so each predicate has to agree with CEL on such values only:
 * test/lib/schema/istio-rules.test.ts checks every one against the CEL library (@bufbuild/cel) on
 * values shaped by the CRDs of test/fixtures/crds, and that the CRDs have no rule missing here.
 * Where CEL fails to evaluate (a substring past the end), the predicate throws RuleEvalError with the
 * library's message, which validate.ts reports as `evaluation failed: …`, as before.
 */
import {isRecord} from '../util/records.js'

/** A rule that failed to evaluate (not a verdict of false): its message is the CEL library's. */
export class RuleEvalError extends Error {}

/** CEL's `has(self.field)` on a JSON object. */
const has = (self: unknown, field: string): boolean => isRecord(self) && Object.hasOwn(self, field)
const field = (self: unknown, name: string): unknown => (isRecord(self) ? self[name] : undefined)
const str = (value: unknown): string => (typeof value === 'string' ? value : '')

const PORT_NAME = /^[a-zA-Z0-9](?:[-a-zA-Z0-9]*[a-zA-Z0-9])?$/
const validPort = (self: unknown): boolean => typeof self === 'number' && self > 0 && self <= 65535
/** `self.startsWith("unix://") ? !has(self.ports) : true`, with self's address. */
const udsWithoutPorts = (self: unknown): boolean => !str(field(self, 'address')).startsWith('unix://') || !has(self, 'ports')

export const ISTIO_RULES: ReadonlyMap<string, (self: unknown) => boolean> = new Map<string, (self: unknown) => boolean>([
  [
    'self.startsWith("unix://") ? (self.substring(7, 8) == "/" || self.substring(7, 8) == "@") : true',
    (self) => {
      const s = str(self)
      if (!s.startsWith('unix://')) return true
      if (s.length === 7) throw new RuleEvalError('index 8 out of bounds [0, 7)')
      return s[7] === '/' || s[7] === '@'
    },
  ],
  ['self.startsWith("unix://") ? !self.endsWith("/") : true', (self) => !str(self).startsWith('unix://') || !str(self).endsWith('/')],
  ['0 < self && self <= 65535', validPort],
  [
    'self.all(key, size(key) < 63 && key.matches("^[a-zA-Z0-9](?:[-a-zA-Z0-9]*[a-zA-Z0-9])?$"))',
    // The pattern is ASCII-only, so a matching key's length is its size in code points.
    (self) => isRecord(self) && Object.keys(self).every((key) => key.length < 63 && PORT_NAME.test(key)),
  ],
  ['has(self.address) || has(self.network)', (self) => has(self, 'address') || has(self, 'network')],
  ['(has(self.address) ? self.address : "").startsWith("unix://") ? !has(self.ports) : true', udsWithoutPorts],
  ['self != "*"', (self) => self !== '*'],
  ['self.all(l1, self.exists_one(l2, l1.number == l2.number))', (self) => Array.isArray(self) && self.every((l1) => self.filter((l2) => field(l1, 'number') === field(l2, 'number')).length === 1)],
  ['!self.contains("*")', (self) => !str(self).includes('*')],
  ['(has(self.workloadSelector) ? 1 : 0) + (has(self.endpoints) ? 1 : 0) <= 1', (self) => !(has(self, 'workloadSelector') && has(self, 'endpoints'))],
  [
    '!((has(self.addresses) ? self.addresses : []).exists(k, k.contains("/")) && !((has(self.resolution) ? self.resolution : "NONE") in ["STATIC", "NONE"]))',
    (self) => {
      const addresses = field(self, 'addresses')
      const cidr = Array.isArray(addresses) && addresses.some((k) => str(k).includes('/'))
      const resolution = has(self, 'resolution') ? field(self, 'resolution') : 'NONE'
      return !(cidr && resolution !== 'STATIC' && resolution !== 'NONE')
    },
  ],
  [
    '((has(self.resolution) ? self.resolution : "NONE") == "NONE") ? !has(self.endpoints) : true',
    (self) => (has(self, 'resolution') ? field(self, 'resolution') : 'NONE') !== 'NONE' || !has(self, 'endpoints'),
  ],
  [
    '((has(self.resolution) ? self.resolution : "") == "DNS_ROUND_ROBIN") ? ((has(self.endpoints) ? self.endpoints : []).size() <= 1) : true',
    (self) => field(self, 'resolution') !== 'DNS_ROUND_ROBIN' || !Array.isArray(field(self, 'endpoints')) || (field(self, 'endpoints') as unknown[]).length <= 1,
  ],
  ['self in ["", "HTTP", "HTTPS"]', (self) => self === '' || self === 'HTTP' || self === 'HTTPS'],
])
