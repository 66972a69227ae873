/**
 * The cluster a doctor fix acts on. meshvm's own command lines keep the user's --kubeconfig and
 * --context (cli/invocation.ts); the kubectl command lines of a fix get the same, or the context that
 * holds the VM when several were read, so that a `kubectl patch` or `kubectl delete` never acts on
 * another cluster than the one doctor read.
 */
import {shellQuote} from '../cli/prompt.js'

export function kubectlInCluster(fix: string, kube: {kubeconfig?: string; context?: string}): string {
  const flags = [...(kube.kubeconfig !== undefined ? ['--kubeconfig', shellQuote(kube.kubeconfig)] : []), ...(kube.context !== undefined ? ['--context', shellQuote(kube.context)] : [])]
  if (flags.length === 0) return fix
  // A kubectl that starts a command (line start, after && || ; | { or a space), not `kubectl meshvm` (kept by keepInvocation).
  return fix.replace(/(^|[;&|{(]\s*|\s)kubectl (?!meshvm )/g, (_m, lead: string) => `${lead}kubectl ${flags.join(' ')} `)
}
