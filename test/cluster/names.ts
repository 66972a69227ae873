/**
 * kube-apiserver's checks of metadata.name (k8s.io/apimachinery/pkg/util/validation), with its own
 * wording as kube-apiserver 1.35 answers, written apart from meshvm's name checks
 * (src/lib/validation/kube.ts), whose messages are meshvm's own.
 */
const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/
const LABEL_1123 = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/
const LABEL_1035 = /^[a-z]([-a-z0-9]*[a-z0-9])?$/

/** The problem with a name, as the text after `Invalid value: "NAME": `, or undefined. */
export function nameProblem(resource: 'namespaces' | 'services' | string, name: string): string | undefined {
  if (resource === 'namespaces') {
    if (name.includes('.')) return 'must not contain dots'
    if (name.length > 63) return 'must be no more than 63 characters'
    if (!LABEL_1123.test(name))
      return "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
    return undefined
  }
  if (resource === 'services') {
    if (name.length > 63) return 'must be no more than 63 characters'
    if (!LABEL_1035.test(name))
      return "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
    return undefined
  }
  if (name.length > 253) return 'must be no more than 253 characters'
  if (!SUBDOMAIN.test(name))
    return "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
  return undefined
}
