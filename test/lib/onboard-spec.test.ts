import {describe, expect, it} from 'vitest'
import {generateOnboardObjects} from '../../src/lib/onboard/generate.js'
import {parseOnboardInput, parsePorts, protocolFromName, splitCommand, splitKeyValueList} from '../../src/lib/onboard/spec.js'
import {onboardCommandLine} from '../../src/lib/onboard/wizard.js'

describe('splitKeyValueList', () => {
  it('splits istioctl comma lists', () => {
    expect(splitKeyValueList(['app=foo,bar=baz'])).toEqual(['app=foo', 'bar=baz'])
  })
  it('keeps commas that belong to a value', () => {
    expect(splitKeyValueList(['proxy.istio.io/config={"a": 1, "b": 2}', 'x=1,2,y=3'])).toEqual(['proxy.istio.io/config={"a": 1, "b": 2}', 'x=1,2', 'y=3'])
  })
})

describe('parsePorts', () => {
  it('parses name=port[:target][/PROTOCOL]', () => {
    expect(parsePorts(['http=80:8080', 'grpc=9090/grpc', 'db=5432'])).toEqual([
      {name: 'http', port: 80, targetPort: 8080, protocol: 'HTTP'},
      {name: 'grpc', port: 9090, targetPort: 9090, protocol: 'GRPC'},
      {name: 'db', port: 5432, targetPort: 5432, protocol: 'TCP'},
    ])
  })
  it('infers the protocol from Istio port-name prefixes', () => {
    expect(protocolFromName('http-web')).toBe('HTTP')
    expect(protocolFromName('http2')).toBe('HTTP2')
    expect(protocolFromName('tls-db')).toBe('TLS')
    expect(protocolFromName('web')).toBe('TCP')
  })
})

describe('splitCommand', () => {
  it('splits like a shell for simple quoting', () => {
    expect(splitCommand(`/bin/check --name 'two words' "a \\"b\\"" c\\ d ''`)).toEqual(['/bin/check', '--name', 'two words', 'a "b"', 'c d', ''])
  })
})

describe('parseOnboardInput', () => {
  const base = {name: 'web', namespace: 'apps', ports: ['http=8080']}
  it('defaults app=NAME, the default service account and the Service host', () => {
    const spec = parseOnboardInput(base)
    expect(spec.labels).toEqual({app: 'web'})
    expect(spec.serviceAccount).toBe('default')
    expect(spec.serviceKind).toBe('Service')
    expect(spec.hosts).toEqual(['web.apps.svc.cluster.local'])
  })
  it('does not add app when app.kubernetes.io/name is given', () => {
    expect(parseOnboardInput({...base, labels: ['app.kubernetes.io/name=shop']}).labels).toEqual({'app.kubernetes.io/name': 'shop'})
  })
  it('a probe defaults to host 127.0.0.1 and path /', () => {
    const spec = parseOnboardInput({...base, probe: {http: '8080'}})
    expect(spec.probe?.handler).toEqual({kind: 'httpGet', port: 8080, path: '/', host: '127.0.0.1', scheme: 'HTTP', headers: []})
  })
  it('allows names starting with a digit for ServiceEntry-only groups', () => {
    expect(parseOnboardInput({...base, name: '1db', serviceEntry: true}).name).toBe('1db')
    expect(() => parseOnboardInput({...base, name: '1db'})).toThrow(/must start with a letter/)
  })
})

describe('generateOnboardObjects', () => {
  it('matches istioctl x workload group create for the same inputs (spec part)', () => {
    // istioctl: --name foo --namespace bar --labels app=foo,bar=baz --annotations annotation=foobar --ports grpc=3550,http=8080 --serviceAccount test
    const spec = parseOnboardInput({name: 'foo', namespace: 'bar', labels: ['app=foo,bar=baz'], annotations: ['annotation=foobar'], ports: ['grpc=3550,http=8080'], serviceAccount: 'test'})
    const wg = generateOnboardObjects(spec)[0]!
    expect(wg.spec).toEqual({
      metadata: {annotations: {annotation: 'foobar'}, labels: {app: 'foo', bar: 'baz'}},
      template: {ports: {grpc: 3550, http: 8080}, serviceAccount: 'test'},
    })
  })
  it('orders objects for apply: Namespace, ServiceAccount, WorkloadGroup, ServiceEntry', () => {
    const spec = parseOnboardInput({name: 'web', namespace: 'apps', ports: ['http=80'], serviceAccount: 'vm', createNamespace: true, createServiceAccount: true, serviceEntry: true})
    expect(generateOnboardObjects(spec).map((o) => o.kind)).toEqual(['Namespace', 'ServiceAccount', 'WorkloadGroup', 'ServiceEntry'])
  })
})

describe('onboardCommandLine', () => {
  it('quotes words a shell would split or expand', () => {
    expect(onboardCommandLine({name: 'web', namespace: 'apps', ports: ['http=80'], probe: {exec: "check 'x'"}})).toBe(`meshvm onboard web -n apps --port http=80 --probe-exec 'check '"'"'x'"'"''`)
  })
})
