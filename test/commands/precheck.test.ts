/**
 * Integration: `meshvm precheck` against the test API server, one test per failing check.
 */
import {afterEach, beforeEach, describe, expect, it} from 'vitest'
import {runCommand} from '../helpers/in-process.js'
import {startCluster, type TestCluster} from '../helpers/cluster.js'

let cluster: TestCluster
const meshvm = (args: string[], env: Record<string, string> = {}) => runCommand(['precheck', ...args], {env: {...cluster.env, ...env}})

interface Check {
  check: string
  status: 'pass' | 'warn' | 'fail'
  message: string
  hint?: string
}

async function checks(args: string[] = ['web', '-n', 'apps'], env: Record<string, string> = {}): Promise<{code: number; checks: Record<string, Check>}> {
  const res = await meshvm([...args, '-o', 'json'], env)
  const parsed = JSON.parse(res.stdout) as {checks: Check[]}
  return {code: res.code, checks: Object.fromEntries(parsed.checks.map((c) => [c.check, c]))}
}

beforeEach(async () => {
  cluster = await startCluster()
  cluster.mesh.watchNamespace('apps')
  const onboard = await runCommand(['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '-s', 'web-vm', '--create-service-account', '--apply'], {env: cluster.env})
  expect(onboard.code).toBe(0)
})
afterEach(() => cluster?.stop())

describe('precheck', () => {
  it('passes every check on a ready cluster, as a table', async () => {
    const res = await meshvm(['web', '-n', 'apps'])
    expect(res.code).toBe(0)
    expect(res.stdout.split('\n')[0]).toMatch(/^CHECK\s+STATUS\s+MESSAGE$/)
    expect(res.stdout).not.toMatch(/FAIL|WARN/)
    const {checks: all} = await checks()
    expect(Object.values(all).every((c) => c.status === 'pass')).toBe(true)
    expect(all['istiod answers']!.message).toBe('istiod istio-system/istiod-7d4b9c6f8-x2k9p answers: HTTP /debug/syncz over port-forward to :15014')
  })

  it('reads istiod over xDS when its HTTP debug is off, and warns when it cannot be reached', async () => {
    cluster.mesh.setIstiod('istiod-7d4b9c6f8-x2k9p', {debugHttp: false})
    const {checks: xds} = await checks()
    expect(xds['istiod answers']).toMatchObject({
      status: 'pass',
      message: 'istiod istio-system/istiod-7d4b9c6f8-x2k9p answers: xDS over port-forward to :15012 (TLS verified for istiod.istio-system.svc)',
    })
    cluster.mesh.setIstiod('istiod-7d4b9c6f8-x2k9p', {down: true})
    const {checks: down} = await checks()
    expect(down['istiod answers']).toMatchObject({
      status: 'warn',
      message: 'istiod istio-system/istiod-7d4b9c6f8-x2k9p: port-forward refused on :15014 (HTTP debug) and :15012 (xDS): dial tcp4 127.0.0.1:15012: connect: connection refused',
    })
    expect(cluster.requests.some((r) => r.path.includes('/proxy/'))).toBe(false)
  })

  it('without --revision, checks the revision of the default tag (istio-revision-tag-default), as istioctl 1.28', async () => {
    cluster.mesh.setDefaultTag('canary')
    const {checks: c} = await checks()
    expect(c['istiod running']).toMatchObject({status: 'fail', message: 'no ready istiod pod with labels app=istiod,istio.io/rev=canary in istio-system'})
    cluster.mesh.addIstiod({name: 'istiod-canary-6c5d4-abcde', revision: 'canary'})
    const {checks: ok} = await checks()
    expect(ok['istiod running']).toMatchObject({status: 'pass', message: '1 ready istiod pod(s) in istio-system (revision canary)'})
    expect(ok['istiod answers']!.message).toBe('istiod istio-system/istiod-canary-6c5d4-abcde answers: HTTP /debug/syncz over port-forward to :15014')
  })

  it('without --revision or with -r default, checks the default istiod only: a broken default istiod fails even when another revision is ready', async () => {
    // A second revision, ready; the default istiod's pod is not ready (crash-looping, say).
    cluster.mesh.addIstiod({name: 'istiod-1-23-5f7c9b8d4-q8w2n', revision: '1-23', version: '1.23.4'})
    const pod = cluster.store.get('/pods', 'istio-system', 'istiod-7d4b9c6f8-x2k9p')!
    cluster.store.update('/pods', {...pod, status: {...(pod.status as object), conditions: [{type: 'Ready', status: 'False'}]}})
    for (const args of [
      ['web', '-n', 'apps'],
      ['web', '-n', 'apps', '-r', 'default'],
    ]) {
      const {code, checks: c} = await checks(args)
      expect(code).toBe(8)
      expect(c['istiod running']).toMatchObject({
        status: 'fail',
        message: 'no ready istiod pod of the default revision in istio-system (labels app=istiod, istio.io/rev absent or "default": 1 not ready); ready revision(s): 1-23',
        hint: 'fix the default istiod (kubectl describe pods -l app=istiod -n istio-system), or check the revision VMs will use with --revision 1-23 (make it the default with: istioctl tag set default --revision 1-23)',
      })
      // The 1-23 istiod is not probed in its place.
      expect(c['istiod answers']).toBeUndefined()
    }
    // -r 1-23 checks that one.
    const rev = await checks(['web', '-n', 'apps', '-r', '1-23'])
    expect(rev.checks['istiod running']).toMatchObject({status: 'pass', message: '1 ready istiod pod(s) in istio-system (revision 1-23)'})
    expect(rev.checks['istiod answers']!.message).toBe('istiod istio-system/istiod-1-23-5f7c9b8d4-q8w2n answers: HTTP /debug/syncz over port-forward to :15014')
    // Both ready, the default one not answering: the default one is probed (and warned about), not the 1-23 one.
    cluster.store.update('/pods', {...cluster.store.get('/pods', 'istio-system', 'istiod-7d4b9c6f8-x2k9p')!, status: pod.status})
    cluster.mesh.setIstiod('istiod-7d4b9c6f8-x2k9p', {down: true})
    const {checks: down} = await checks()
    expect(down['istiod running']).toMatchObject({status: 'pass', message: '1 ready istiod pod(s) in istio-system (revision default)'})
    expect(down['istiod answers']).toMatchObject({status: 'warn'})
    expect(down['istiod answers']!.message).toMatch(/^istiod istio-system\/istiod-7d4b9c6f8-x2k9p: port-forward refused/)
  })

  it('a namespace that does not exist is said not to exist, with how to create it', async () => {
    const res = await meshvm(['-n', 'nosuchns'])
    expect(res.code).toBe(8)
    expect(res.stdout).toMatch(/^namespace +FAIL +namespace nosuchns does not exist$/m)
    expect(res.stderr).toContain('Fix (namespace): create it: meshvm onboard NAME -n nosuchns --create-namespace --apply (or kubectl create namespace nosuchns)\n')
    expect(res.stdout + res.stderr).not.toMatch(/does namespace/)
    const {checks: c} = await checks(['web', '-n', 'nosuchns'])
    expect(c['root certificate']).toMatchObject({status: 'fail', message: 'ConfigMap nosuchns/istio-ca-root-cert not found: namespace nosuchns does not exist'})
    expect(c['root certificate']!.hint).toContain('meshvm onboard web -n nosuchns --create-namespace --apply')
    expect(c['service account']!.message).toBe('ServiceAccount nosuchns/default not found: namespace nosuchns does not exist')
    expect(c['workload group']!.message).toBe('WorkloadGroup nosuchns/web not found: namespace nosuchns does not exist')
    // An existing namespace gets no namespace row.
    expect((await checks()).checks).not.toHaveProperty('namespace')
  })

  it('tells an ambient east-west gateway (istio-east-west, HBONE on 15008) from the classic one, and fails a sidecar VM on it with the fix', async () => {
    const svc = cluster.store.get('/services', 'istio-system', 'istio-eastwestgateway')!
    // What an ambient multicluster install deploys: a Gateway of class istio-east-west, HBONE on 15008 only.
    cluster.store.update('/services', {
      ...svc,
      metadata: {...svc.metadata, labels: {'gateway.networking.k8s.io/gateway-name': 'istio-eastwestgateway', 'gateway.networking.k8s.io/gateway-class-name': 'istio-east-west'}},
      spec: {
        ...(svc.spec as object),
        ports: [
          {name: 'status-port', port: 15021, protocol: 'TCP'},
          {name: 'mesh', port: 15008, protocol: 'TCP'},
        ],
      },
    })
    const {code, checks: c} = await checks()
    expect(code).toBe(8)
    expect(c['east-west gateway']).toMatchObject({
      status: 'fail',
      message:
        'Service istio-system/istio-eastwestgateway is an ambient east-west gateway (class istio-east-west, HBONE on 15008): a sidecar VM needs the classic one, with 15443 (mTLS passthrough), 15012 (istiod) and 15017 (webhooks); it lacks 15012, 15017, 15443',
    })
    expect(c['east-west gateway']!.hint).toMatch(
      /^VMs join as sidecars \(there is no ztunnel on VMs\): deploy a classic east-west gateway beside the ambient one \(samples\/multicluster\/gen-eastwest-gateway\.sh/,
    )
    expect(c['east-west gateway']!.hint).toContain('--ingress-service NAME[.NAMESPACE]')
    // One gateway serving both (#60887): fine for a sidecar VM.
    cluster.store.update('/services', {
      ...cluster.store.get('/services', 'istio-system', 'istio-eastwestgateway')!,
      spec: {...(svc.spec as {ports: object[]}), ports: [...(svc.spec as {ports: object[]}).ports, {name: 'mesh', port: 15008, protocol: 'TCP'}]},
    })
    const both = await checks()
    expect(both.checks['east-west gateway']).toMatchObject({
      status: 'pass',
      message: 'istio-system/istio-eastwestgateway at 203.0.113.10 is a classic east-west gateway exposing 15012, 15017 and 15443 (and HBONE on 15008 for ambient, class istio-east-west)',
    })
  })

  it('prints through the one printer: -o jsonpath, custom-columns, --sort-by, --no-headers', async () => {
    const [names, cols, bad] = await Promise.all([
      meshvm(['web', '-n', 'apps', '-o', 'jsonpath={range .checks[*]}{.check}={.status}{"\\n"}{end}']),
      meshvm(['web', '-n', 'apps', '-o', 'custom-columns=CHECK:.check,STATUS:.status', '--sort-by', '.check', '--no-headers']),
      meshvm(['web', '-n', 'apps', '-o', 'name']),
    ])
    expect(names.code, names.stderr).toBe(0)
    const {checks: all} = await checks()
    expect(names.stdout).toBe(
      Object.values(all)
        .map((c) => `${c.check}=${c.status}\n`)
        .join(''),
    )
    expect(cols.code, cols.stderr).toBe(0)
    const rows = cols.stdout.trimEnd().split('\n')
    expect(rows.map((r) => r.replace(/ {3,}/, '|'))).toEqual(
      Object.keys(all)
        .sort()
        .map((c) => `${c}|pass`),
    )
    expect(bad.code).toBe(2)
    expect(bad.stderr.split('\n')[0]).toBe('Error: -o/--output "name": expected one of table, wide, json, yaml, jsonpath=TEMPLATE, jsonpath-as-json=TEMPLATE, custom-columns=HEADER:PATH,…')
  })

  it('fails "istiod running" without a running istiod pod, and hints at the namespace/revision', async () => {
    cluster.store.delete('/pods', 'istio-system', 'istiod-7d4b9c6f8-x2k9p')
    const {code, checks: c} = await checks()
    expect(code).toBe(8)
    expect(c['istiod running']).toMatchObject({status: 'fail', message: 'no ready istiod pod with labels app=istiod in istio-system'})
    expect(c['istiod running']!.hint).toMatch(/-i NAMESPACE or --revision REV/)
    const rev = await checks(['web', '-n', 'apps', '--revision', 'canary'])
    expect(rev.checks['istiod running']!.message).toBe('no ready istiod pod with labels app=istiod,istio.io/rev=canary in istio-system')
  })

  it('fails when auto-registration is disabled in the istiod Deployment', async () => {
    const d = cluster.store.get('apps/deployments', 'istio-system', 'istiod')!
    const spec = structuredClone(d.spec) as {template: {spec: {containers: {env: {name: string; value: string}[]}[]}}}
    spec.template.spec.containers[0]!.env = [{name: 'PILOT_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION', value: 'false'}]
    cluster.store.update('apps/deployments', {...d, spec})
    const {code, checks: c} = await checks()
    expect(code).toBe(8)
    expect(c['auto-registration enabled']!.status).toBe('fail')
    expect(c['auto-registration enabled']!.message).toContain('PILOT_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION')
  })

  it("reads the environment of the revision's istiod Deployment (istiod-REV), and warns naming it when there is none", async () => {
    cluster.mesh.addIstiod({name: 'istiod-canary-6c5d4-abcde', revision: 'canary'})
    const d = cluster.store.get('apps/deployments', 'istio-system', 'istiod-canary')!
    const spec = structuredClone(d.spec) as {template: {spec: {containers: {env: {name: string; value: string}[]}[]}}}
    spec.template.spec.containers[0]!.env = [{name: 'PILOT_ENABLE_WORKLOAD_ENTRY_HEALTHCHECKS', value: 'false'}]
    cluster.store.update('apps/deployments', {...d, spec})
    const canary = await checks(['web', '-n', 'apps', '--revision', 'canary'])
    expect(canary.checks['auto-registration enabled']).toMatchObject({status: 'fail', message: 'PILOT_ENABLE_WORKLOAD_ENTRY_HEALTHCHECKS set to "false" in istio-system/istiod-canary'})
    const {checks: byDefault} = await checks()
    expect(byDefault['auto-registration enabled']).toMatchObject({status: 'pass', message: 'workload entry auto-registration and health checks are on in istio-system/istiod'})
    cluster.store.delete('apps/deployments', 'istio-system', 'istiod')
    const {checks: none} = await checks()
    expect(none['auto-registration enabled']).toMatchObject({status: 'warn', message: 'no istiod Deployment istio-system/istiod found'})
  })

  it('fails without an east-west gateway, and when it lacks a port', async () => {
    const svc = cluster.store.get('/services', 'istio-system', 'istio-eastwestgateway')!
    const spec = structuredClone(svc.spec) as {ports: {port: number}[]}
    spec.ports = spec.ports.filter((p) => p.port !== 15443)
    cluster.store.update('/services', {...svc, spec})
    const missingPort = await checks()
    expect(missingPort.checks['east-west gateway']!.status).toBe('fail')
    expect(missingPort.checks['east-west gateway']!.message).toContain('15443')
    cluster.store.delete('/services', 'istio-system', 'istio-eastwestgateway')
    const {code, checks: c} = await checks()
    expect(code).toBe(8)
    expect(c['east-west gateway']!.status).toBe('fail')
    expect(c['east-west gateway']!.message).toContain('istio-system/istio-eastwestgateway')
  })

  it('fails when the WorkloadGroup is missing or selected by no Service/ServiceEntry', async () => {
    cluster.store.delete('/services', 'apps', 'web')
    const unselected = await checks()
    expect(unselected.checks['workload group']!.status).toMatch(/fail|warn/)
    expect(unselected.checks['workload group']!.message).toMatch(/no Service or ServiceEntry/)
    const missing = await checks(['nope', '-n', 'apps'])
    expect(missing.code).toBe(8)
    expect(missing.checks['workload group']!.status).toBe('fail')
    expect(missing.checks['workload group']!.message).toContain('apps/nope')
  })

  it('fails without the root certificate in the namespace', async () => {
    cluster.store.delete('/configmaps', 'apps', 'istio-ca-root-cert')
    const {code, checks: c} = await checks()
    expect(code).toBe(8)
    expect(c['root certificate']!.status).toBe('fail')
    expect(c['root certificate']!.message).toContain('apps/istio-ca-root-cert')
  })

  it('fails when the service account does not exist', async () => {
    cluster.store.delete('/serviceaccounts', 'apps', 'web-vm')
    const {code, checks: c} = await checks()
    expect(code).toBe(8)
    expect(c['service account']).toMatchObject({status: 'fail'})
    expect(c['service account']!.message).toContain('apps/web-vm')
  })

  it('fails the RBAC checks a restricted user lacks, via SelfSubjectAccessReview', async () => {
    const token = cluster.addUser('viewer', {rules: [{verbs: ['get', 'list'], apiGroups: ['*'], resources: ['*']}]})
    const {code, checks: c} = await checks(['web', '-n', 'apps'], {KUBECONFIG: cluster.kubeconfigFor(token)})
    expect(code).toBe(8)
    expect(c['RBAC: token request']).toMatchObject({status: 'fail'})
    expect(c['RBAC: apply workload groups']).toMatchObject({status: 'fail'})
    expect(c['RBAC: read mesh config']).toMatchObject({status: 'pass'})
    // war rollout's Lease: create and update are missing, get is there; the hint names leases, not workloadgroups.
    expect(c['RBAC: rollout lease (create)']).toMatchObject({
      status: 'fail',
      message: 'cannot create leases.coordination.k8s.io in apps',
      hint: 'ask for a Role in apps allowing "create" on "leases" in API group "coordination.k8s.io"',
    })
    expect(c['RBAC: rollout lease (update)']).toMatchObject({status: 'fail'})
    expect(c['RBAC: rollout lease (get)']).toMatchObject({status: 'pass'})
    expect(cluster.requests.filter((r) => r.path === '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews').length).toBeGreaterThanOrEqual(7)
  })
})
