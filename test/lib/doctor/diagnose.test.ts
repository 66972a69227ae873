/**
 * doctor's diagnosis (pure) of the causes it must prove before it prints a fix: why a readiness probe
 * fails, which EnvoyFilter a NACK comes from, a mesh root the VM does not trust. What cannot be proven
 * is said to be unproven, with no fix. Fixes that reach the VM go through --vm-exec, quoted.
 */
import {execFileSync} from 'node:child_process'
import {describe, expect, it} from 'vitest'
import {diagnose, type Evidence} from '../../../src/lib/doctor/diagnose.js'
import type {VmProbe} from '../../../src/lib/doctor/probe.js'

const ns = 'apps'
const gatewayService = {
  metadata: {name: 'istio-eastwestgateway', namespace: 'istio-system'},
  spec: {type: 'LoadBalancer', ports: [15012, 15017, 15021, 15443].map((port) => ({name: `p${port}`, port}))},
  status: {loadBalancer: {ingress: [{ip: '203.0.113.10'}]}},
}

function evidence(
  o: {
    probe?: Record<string, unknown>
    app?: VmProbe['app']
    vmExec?: string
    healthy?: boolean
    nack?: string
    envoyFilters?: Evidence['envoyFilters']
    roots?: {mesh: string[]; vm: string[]}
    mesh?: VmProbe['mesh'] | null
  } = {},
): Evidence {
  const group = {
    metadata: {name: 'web', namespace: ns},
    spec: {metadata: {labels: {app: 'web'}}, template: {serviceAccount: 'default', ports: {http: 8080, metrics: 9100}}, ...(o.probe ? {probe: o.probe} : {})},
  }
  const entry = {
    metadata: {name: 'web-10.0.0.5', namespace: ns, annotations: {'istio.io/autoRegistrationGroup': 'web', 'istio.io/connectedAt': '2026-11-28T00:00:00Z'}},
    spec: {address: '10.0.0.5', labels: {app: 'web'}, serviceAccount: 'default'},
    status: {
      conditions: [
        {
          type: 'Healthy',
          status: o.healthy === false ? 'False' : 'True',
          ...(o.healthy === false ? {message: 'Get "http://127.0.0.1:9090/ready": dial tcp 127.0.0.1:9090: connect: connection refused'} : {}),
        },
      ],
    },
  }
  const vmProbe: VmProbe | undefined = o.vmExec
    ? {ready: '200', rootSerials: o.roots?.vm ?? [], sections: ['ready', 'end'], ...(o.mesh === null ? {} : {mesh: o.mesh ?? {dnsCapture: true}}), ...(o.app ? {app: o.app} : {})}
    : undefined
  return {
    now: new Date('2026-11-28T01:00:00Z'),
    namespace: ns,
    query: 'web-10.0.0.5',
    gateway: {name: 'istio-eastwestgateway', namespace: 'istio-system', service: gatewayService},
    istiod: {pods: [{name: 'istiod-1', ready: true}], env: {}},
    group,
    groupName: 'web',
    entry,
    duplicates: [],
    events: [],
    services: [{metadata: {name: 'web', namespace: ns}, spec: {selector: {app: 'web'}, ports: [{port: 80, targetPort: 8080}]}}],
    serviceEntries: [],
    sync: {connected: true, types: o.nack ? [{type: 'LDS', state: 'ERROR', error: o.nack}] : [{type: 'LDS', state: 'SYNCED'}]},
    ...(vmProbe ? {probe: {probe: vmProbe}} : {}),
    meshRootSerials: o.roots?.mesh ?? [],
    ...(o.envoyFilters !== undefined ? {envoyFilters: o.envoyFilters} : {}),
    ...(o.vmExec ? {vmExec: o.vmExec} : {}),
  }
}

const first = (e: Evidence) => diagnose(e).checks.find((c) => c.status === 'fail')
const VM_EXEC = `ssh -o 'ProxyJump=bastion' "$MESHVM_VM_ADDRESS"`

describe('doctor diagnosis: an unhealthy probe', () => {
  const probe = {httpGet: {port: 9090, path: '/ready'}}
  const refused = {port: 9090, code: '000', connected: false, exit: 7}

  it('the port the application answers on, proven on the VM, is the fix: patch the group, send the VM the new mesh.yaml', () => {
    const c = first(evidence({probe, healthy: false, vmExec: VM_EXEC, app: [refused, {port: 8080, code: '200', connected: true, exit: 0}, {port: 9100, code: '000', connected: false, exit: 7}]}))!
    expect(c).toMatchObject({step: 4, check: 'registration.healthy'})
    expect(c.detail).toContain(
      "nothing listens on the probe's port 9090, and the application accepts connections on the group's port http=8080, the only one of its ports that does: the probe names the wrong port (the fix points it there",
    )
    expect(c.fix).toBe(
      `kubectl patch workloadgroup web -n apps --type=json -p '[{"op":"replace","path":"/spec/probe/httpGet/port","value":8080}]' && meshvm bundle web -n apps -d web-vm --autoregister && test -s web-vm/mesh.yaml && { printf '%s\\n' 'base64 -d <<\\MESHVM_EOF | sudo tee /etc/istio/config/mesh >/dev/null || exit 1'; base64 < web-vm/mesh.yaml; printf '%s\\n' MESHVM_EOF; printf '%s\\n' 'sudo systemctl restart istio'; } | MESHVM_VM_NAME=web-10.0.0.5 MESHVM_VM_ADDRESS=10.0.0.5 MESHVM_VM_HOSTNAME=10.0.0.5 MESHVM_NAMESPACE=apps sh -c 'ssh -o '"'"'ProxyJump=bastion'"'"' "$MESHVM_VM_ADDRESS"'`,
    )
    // The fix is one valid shell command line, and the template reaches sh -c as it was given.
    execFileSync('/bin/sh', ['-n', '-c', c.fix!])
    const template = execFileSync('/bin/sh', ['-c', `set -- ${c.fix!.split(' sh -c ')[1]}; printf %s "$1"`], {encoding: 'utf8'})
    expect(template).toBe(VM_EXEC)
  })

  it("without --bundle, the new mesh.yaml keeps the VM's DNS capture and cluster ID (read from its mesh.yaml); unread, no fix but the cause and --bundle", () => {
    const app = [refused, {port: 8080, code: '000', connected: true, exit: 28}, {port: 9100, code: '000', connected: false, exit: 7}]
    const kept = first(evidence({probe, healthy: false, vmExec: VM_EXEC, app, mesh: {dnsCapture: false, clusterId: 'east-1'}}))!
    expect(kept.fix).toContain(' && meshvm bundle web -n apps -d web-vm --autoregister --no-capture-dns --cluster-id east-1 && test -s web-vm/mesh.yaml && ')
    const unknown = first(evidence({probe, healthy: false, vmExec: VM_EXEC, app, mesh: null}))!
    expect(unknown.fix).toBeUndefined()
    expect(unknown.detail).toMatch(
      /the probe names the wrong port \(kubectl patch workloadgroup web -n apps --type=json -p '.*' points it there\); no fix: a new mesh\.yaml made with default flags could change the VM's DNS capture and cluster ID, which doctor could not read from the VM's \/etc\/istio\/config\/mesh: run doctor with --bundle DIR/,
    )
    // A root certificate carries none of those settings: its fix does not need them.
    expect(first(evidence({vmExec: VM_EXEC, mesh: null, roots: {mesh: ['b2'], vm: ['a1']}}))!.fix).toMatch(/^meshvm bundle web -n apps -d web-vm --autoregister && /)
  })

  it('ports other than the probe\'s get a TCP connection only: none made and not refused is not proven to be "not running"', () => {
    const c = first(evidence({probe, healthy: false, vmExec: VM_EXEC, app: [refused, {port: 8080, code: '000', connected: false, exit: 1}, {port: 9100, code: '000', connected: false, exit: 7}]}))!
    expect(c.detail).toMatch(/cause not proven: nothing listens on 127\.0\.0\.1:9090, and the group's other ports gave no clear answer \(curl exit 8080: 1, 9100: 7\)$/)
    expect(c.fix).toBeUndefined()
  })

  it('a TCP probe: the tcpSocket port is patched', () => {
    const c = first(
      evidence({
        probe: {tcpSocket: {port: 9090}},
        healthy: false,
        vmExec: VM_EXEC,
        app: [refused, {port: 8080, code: '000', connected: true, exit: 52}, {port: 9100, code: '000', connected: false, exit: 7}],
      }),
    )!
    expect(c.fix).toContain(`'[{"op":"replace","path":"/spec/probe/tcpSocket/port","value":8080}]'`)
  })

  it('what cannot be proven is said, with no fix', () => {
    const cases: [Parameters<typeof evidence>[0], RegExp][] = [
      [{probe, healthy: false}, /; cause not proven: the probe's port 9090 is not one of the group's ports \(http=8080, metrics=9100\); run doctor with --vm-exec to see what answers on the VM$/],
      [{probe: {exec: {command: ['/opt/check']}}, healthy: false}, /; cause not proven: the probe is an exec command, which meshvm does not run on the VM/],
      [
        {probe, healthy: false, vmExec: VM_EXEC, app: [refused, {port: 8080, code: '200', connected: true, exit: 0}, {port: 9100, code: '200', connected: true, exit: 0}]},
        /the application answers on several of the group's ports \(http=8080, metrics=9100\): which one the probe should use is not proven$/,
      ],
      [
        {probe, healthy: false, vmExec: VM_EXEC, app: [refused, {port: 8080, code: '000', connected: false, exit: 7}, {port: 9100, code: '000', connected: false, exit: 7}]},
        /nothing listens on 127\.0\.0\.1:9090 nor answers on the group's other ports \(http=8080, metrics=9100\): the application is not running on the VM/,
      ],
      [
        {probe: {httpGet: {port: 8080, path: '/ready'}}, healthy: false, vmExec: VM_EXEC, app: [{port: 8080, code: '503', connected: true, exit: 0}]},
        /the application answers HTTP 503 at 127\.0\.0\.1:8080\/ready: it reports itself not ready/,
      ],
    ]
    for (const [o, detail] of cases) {
      const c = first(evidence(o))!
      expect(c.check).toBe('registration.healthy')
      expect(c.detail).toMatch(detail)
      expect(c.fix, c.detail).toBeUndefined()
    }
  })

  it("the VM probes another port than the group's, which answers: the VM's mesh.yaml is older; the fix sends it the group's", () => {
    const c = first(evidence({probe: {httpGet: {port: 8080, path: '/ready'}}, healthy: false, vmExec: VM_EXEC, app: [{port: 8080, code: '200', connected: true, exit: 0}]}))!
    expect(c.detail).toContain("the VM probes port 9090, but the group's probe is on 8080, where the application answers (HTTP 200): the VM runs an older probe")
    expect(c.fix).toMatch(/^meshvm bundle web -n apps -d web-vm --autoregister && test -s web-vm\/mesh\.yaml && \{ printf '%s\\n' 'base64 -d <<\\MESHVM_EOF \| sudo tee \/etc\/istio\/config\/mesh /)
  })

  it('a probe that answers now: the condition is an earlier report; the fix restarts the sidecar through --vm-exec', () => {
    const c = first(evidence({probe, healthy: false, vmExec: VM_EXEC, app: [{port: 9090, code: '200', connected: true, exit: 0}]}))!
    expect(c.detail).toContain("the probe's target 127.0.0.1:9090/ready answers now (HTTP 200)")
    expect(c.fix).toMatch(/^printf '%s\\n' 'sudo systemctl restart istio' \| MESHVM_VM_NAME=web-10\.0\.0\.5 /)
  })
})

describe('doctor diagnosis: a NACK', () => {
  const error = "Error adding/updating listener(s) virtualInbound: Didn't find a registered implementation for 'envoy.filters.http.lua' with type URL: 'envoy.extensions.filters.http.lua.v2.Lua'"
  const ef = (name: string, namespace: string, selector?: Record<string, string>, type = 'type.googleapis.com/envoy.extensions.filters.http.lua.v2.Lua') => ({
    metadata: {name, namespace},
    spec: {
      ...(selector ? {workloadSelector: {labels: selector}} : {}),
      configPatches: [{applyTo: 'HTTP_FILTER', patch: {operation: 'INSERT_BEFORE', value: {name: 'envoy.filters.http.lua', typed_config: {'@type': type}}}}],
    },
  })

  it('the EnvoyFilter that applies to the VM and adds what the error names is the cause; deleting it is the fix', () => {
    const c = first(evidence({nack: error, envoyFilters: [ef('other-app', ns, {app: 'api'}), ef('lua', ns, {app: 'web'})]}))!
    expect(c).toMatchObject({step: 6, check: 'sync', fix: 'kubectl delete envoyfilter lua -n apps'})
    expect(c.detail).toContain("EnvoyFilter apps/lua applies to the VM and adds 'envoy.filters.http.lua', 'envoy.extensions.filters.http.lua.v2.Lua', which the error names")
  })

  it('a filter that serves more than this workload (root namespace, no selector) is named with advice to scope it, never a delete', () => {
    for (const [filter, scope] of [
      [ef('mesh-lua', 'istio-system'), 'istio-system/mesh-lua applies to every workload of the mesh (istio-system is the root namespace)'],
      [ef('ns-lua', ns), 'apps/ns-lua applies to every workload of namespace apps'],
    ] as const) {
      const e = evidence({nack: error, envoyFilters: [filter]})
      e.sync = {...e.sync!, proxyVersion: '1.20.3'}
      const c = first(e)!
      expect(c.check).toBe('sync')
      expect(c.fix, c.detail).toBeUndefined()
      expect(c.detail).toContain(
        `not deleted, as ${scope}: scope it away from this VM instead (e.g. a match.proxy.proxyVersion on its patches that excludes the VM's proxy 1.20.3, or a workloadSelector)`,
      )
    }
    // The mesh's root namespace is the Istio namespace doctor read (-i), not always istio-system.
    const e = evidence({nack: error, envoyFilters: [ef('mesh-lua', 'mesh-root')]})
    e.istiod.namespace = 'mesh-root'
    expect(first(e)!.fix).toBeUndefined()
    expect(first(e)!.detail).toContain('(mesh-root is the root namespace)')
  })

  it('a filter attached by targetRefs, or whose patches match another proxy version, does not apply to the VM', () => {
    const targeted = ef('gw-lua', ns, {app: 'web'}) as ReturnType<typeof ef> & {spec: Record<string, unknown>}
    targeted.spec.targetRefs = [{kind: 'Gateway', group: 'gateway.networking.k8s.io', name: 'gw'}]
    const t = first(evidence({nack: error, envoyFilters: [targeted]}))!
    expect(t.fix).toBeUndefined()
    expect(t.detail).toMatch(/cause not proven: .* \(none applies\)$/)
    const versioned = ef('lua', ns, {app: 'web'})
    ;(versioned.spec.configPatches[0] as Record<string, unknown>).match = {proxy: {proxyVersion: '^1\\.2[4-9].*'}}
    const e = evidence({nack: error, envoyFilters: [versioned]})
    e.sync = {...e.sync!, proxyVersion: '1.20.3'}
    expect(first(e)!.fix).toBeUndefined()
    expect(first(e)!.detail).toMatch(/cause not proven: the error names nothing/)
    // The same patch matching the VM's version is the cause again.
    e.sync = {...e.sync, proxyVersion: '1.24.1'}
    expect(first(e)!.fix).toBe('kubectl delete envoyfilter lua -n apps')
  })

  it('no EnvoyFilter that applies is named by the error, or they cannot be listed: not proven, no fix', () => {
    for (const [envoyFilters, detail] of [
      [[ef('other-app', ns, {app: 'api'})], /; cause not proven: the error names nothing an EnvoyFilter that applies to the VM adds \(none applies\)$/],
      [[ef('fault', ns, undefined, 'type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault')], /cause not proven: .* \(those that apply: apps\/fault; run istioctl analyze -n apps\)$/],
      ['cannot list EnvoyFilters: the server could not find the requested resource', /; cause not proven: cannot list EnvoyFilters: /],
    ] as const) {
      const c = first(evidence({nack: error, envoyFilters: envoyFilters as Evidence['envoyFilters']}))!
      expect(c.check).toBe('sync')
      expect(c.detail).toMatch(detail)
      expect(c.fix).toBeUndefined()
    }
  })
})

describe('doctor diagnosis: the mesh root', () => {
  it("every root of istio-ca-root-cert must be trusted; the fix sends a new bundle's root-cert.pem to the VM, or says where it goes", () => {
    const c = first(evidence({vmExec: VM_EXEC, roots: {mesh: ['b2', 'a1'], vm: ['a1']}}))!
    expect(c).toMatchObject({step: 7, check: 'vm.root'})
    expect(c.detail).toBe("the VM's Envoy does not trust the mesh root b2 of istio-ca-root-cert (which holds b2, a1); it trusts a1")
    expect(c.fix).toMatch(
      /^meshvm bundle web -n apps -d web-vm --autoregister && test -s web-vm\/root-cert\.pem && \{ printf '%s\\n' 'base64 -d <<\\MESHVM_EOF \| sudo tee \/etc\/certs\/root-cert\.pem >\/dev\/null \|\| exit 1'; base64 < web-vm\/root-cert\.pem; /,
    )
    execFileSync('/bin/sh', ['-n', '-c', c.fix!])
    expect(first(evidence({vmExec: VM_EXEC, roots: {mesh: ['b2', 'a1'], vm: ['a1', 'b2']}}))).toBeUndefined()
  })
})

describe("doctor diagnosis: pilot-agent's connection to istiod", () => {
  const withIstiod = (istiod: VmProbe['istiod']): Evidence => {
    const e = evidence({vmExec: VM_EXEC})
    e.probe = {probe: {...e.probe!.probe!, ...(istiod ? {istiod} : {})}}
    return e
  }

  it('established connections to the discovery port pass; none fails; not read (no ss, no /proc): no check', () => {
    expect(diagnose(withIstiod({peers: ['203.0.113.10:15012'], port: 15012})).checks.find((c) => c.check === 'vm.xds')).toMatchObject({
      status: 'pass',
      detail: 'pilot-agent is connected to istiod at 203.0.113.10:15012',
    })
    expect(first(withIstiod({peers: [], port: 15012}))).toMatchObject({
      step: 7,
      check: 'vm.xds',
      detail: 'pilot-agent has no connection to istiod: no established TCP connection to port 15012 on the VM',
    })
    expect(diagnose(withIstiod(undefined)).checks.some((c) => c.check === 'vm.xds')).toBe(false)
  })
})

describe('doctor diagnosis: a proxy istiod reports with no registration', () => {
  it('istiod without auto-registration is named first (step 3); step 4 says istiod reports the proxy but registered nothing', () => {
    const e = evidence()
    delete e.entry
    e.sync = {connected: true, istiod: 'istiod-1', types: [{type: 'LDS', state: 'SYNCED'}]}
    e.proxy = {name: 'vm-7.apps', istiod: 'istiod-1'}
    e.query = 'vm-7.apps'
    e.istiod.env = {PILOT_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION: 'false'}
    const report = diagnose(e)
    expect(report.checks.find((c) => c.status === 'fail')).toMatchObject({step: 3, check: 'istiod.autoregistration'})
    expect(report.checks.find((c) => c.check === 'registration')!.detail).toBe(
      'no WorkloadEntry of WorkloadGroup apps/web matches vm-7.apps: istiod istiod-1 reports the proxy vm-7.apps connected, but registered no entry for it (auto-registration off, or a bundle made without --autoregister)',
    )
    expect(report.checks.find((c) => c.check === 'sync')).toMatchObject({status: 'pass'})
  })
})

describe('doctor diagnosis: no Service', () => {
  it("the fix applies the Service meshvm onboard makes for the group, with meshvm's field manager; a group onboard could not make gets no such Service", () => {
    const e = evidence()
    e.services = []
    const c = first(e)!
    expect(c).toMatchObject({step: 5, check: 'service'})
    const json = /^printf '%s\\n' '(.*)' \| kubectl apply --server-side --field-manager=meshvm -f -$/.exec(c.fix!)![1]!
    expect(JSON.parse(json)).toEqual({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {name: 'web', namespace: 'apps', labels: {app: 'web', 'app.kubernetes.io/managed-by': 'meshvm'}},
      spec: {
        type: 'ClusterIP',
        selector: {app: 'web'},
        ports: [
          {name: 'http', port: 8080, targetPort: 8080, protocol: 'TCP', appProtocol: 'http'},
          {name: 'metrics', port: 9100, targetPort: 9100, protocol: 'TCP', appProtocol: 'tcp'},
        ],
      },
    })
    execFileSync('/bin/sh', ['-n', '-c', c.fix!])
    // Its selector must select the entry: otherwise the fix only says what Service is needed.
    const other = evidence()
    other.services = []
    other.entry = {...other.entry!, spec: {...(other.entry!.spec as object), labels: {app: 'api'}}}
    expect(first(other)!.fix).toBe('kubectl apply -n apps -f SERVICE.yaml   # a Service whose selector is app=api')
  })
})
