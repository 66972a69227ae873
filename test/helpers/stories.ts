/**
 * What the real-control-plane tests and the simulated-VM tests share: the stories' onboard argv and
 * a condition predicate. Kept apart from test/real/control-plane.ts, which starts and stops real
 * processes (and registers an exit hook) on import.
 */

/**
 * The stories' `meshvm onboard` (real and simulated VMs): WorkloadGroup web (HTTP on 8080, readiness /ready, service account
 * web-vm) in `namespace`, applied, with an auto-registering bundle written to `bundleDir`.
 */
export function onboardWebWithBundle(namespace: string, bundleDir: string): string[] {
  return [
    'onboard',
    'web',
    '-n',
    namespace,
    '-p',
    'http=8080',
    '--probe-http',
    '8080/ready',
    '-s',
    'web-vm',
    '--create-namespace',
    '--create-service-account',
    '--apply',
    '--bundle',
    bundleDir,
    '--autoregister',
  ]
}

/** What hasCondition reads of an object. */
export interface WithConditions {
  status?: {conditions?: {type: string; status: string}[]}
}

/** A waitFor predicate: the object's status condition `type` is `status`. */
export function hasCondition(type: string, status = 'True'): (o: WithConditions | undefined) => boolean {
  return (o) => (o?.status?.conditions ?? []).some((c) => c.type === type && c.status === status)
}
