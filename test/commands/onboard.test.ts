import {execFileSync} from 'node:child_process'
import {existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, describe, expect, it} from 'vitest'
import {parse, parseAllDocuments} from 'yaml'
import {validateIstioObject} from '../../src/lib/schema/istio.js'
import {compileSchema, type SchemaValidator} from '../../src/lib/schema/validate.js'
import {compileCelRule} from '../cluster/cel.js'
import {ISTIO_CRDS} from '../cluster/index.js'
import {dns1035Label, labelValue, qualifiedName} from '../../src/lib/validation/kube.js'
import {expectDirMatchesGolden, expectMatchesGoldenFile} from '../helpers/golden.js'
import {REPO_ROOT, STACK_TRACE} from '../helpers/cli.js'
import {runCommand} from '../helpers/in-process.js'

const GOLDEN = join(REPO_ROOT, 'test/golden/onboard')

/** Validators for the served v1 schemas of test/fixtures/crds, with every CEL rule run by the CEL library. */
const referenceValidators = new Map<string, SchemaValidator>(
  parseAllDocuments(readFileSync(ISTIO_CRDS, 'utf8'))
    .map((d) => d.toJS())
    .filter((crd) => crd?.kind === 'CustomResourceDefinition')
    .map((crd) => [
      crd.spec.names.kind,
      compileSchema(crd.spec.versions.find((v: {name: string}) => v.name === 'v1').schema.openAPIV3Schema, {unknownFields: 'report', preferTranspiled: false, compileRule: compileCelRule}),
    ]),
)
const work = mkdtempSync(join(tmpdir(), 'meshvm-onboard-'))
afterAll(() => rmSync(work, {recursive: true, force: true}))

/** The flag matrix: each case is one golden directory. */
const CASES: Record<string, string[]> = {
  minimal: ['web', '-n', 'apps', '-p', 'http=8080'],
  'probe-http': ['web', '-n', 'apps', '-p', 'http=8080', '--probe-http', '8080/healthz'],
  'probe-https-full': [
    'web',
    '-n',
    'apps',
    '-p',
    'https=8443/HTTPS',
    '--probe-https',
    '8443/ready',
    '--probe-header',
    'Host:web.example.com',
    '--probe-period',
    '10s',
    '--probe-timeout',
    '2',
    '--probe-initial-delay',
    '5',
    '--probe-success-threshold',
    '1',
    '--probe-failure-threshold',
    '3',
  ],
  'probe-tcp-host': ['db', '-n', 'data', '-p', 'tcp-postgres=5432', '--probe-tcp', '5432', '--probe-host', '10.0.0.1'],
  'probe-exec': ['batch', '-n', 'jobs', '-p', 'http=8080', '--probe-exec', "/usr/local/bin/check --quick 'two words'"],
  'ports-target-protocol': ['web', '-n', 'apps', '-p', 'http=80:8080,grpc=9090:19090/GRPC', '-p', 'tcp-db=5432', '--port', 'metrics=9102/http'],
  'labels-annotations': [
    'web',
    '-n',
    'apps',
    '-p',
    'http=8080',
    '-l',
    'app=web,version=v1',
    '-l',
    'tier=frontend',
    '-a',
    'proxy.istio.io/config={"holdApplicationUntilProxyStarts": true}',
    '-a',
    'team=payments,owner=ops',
  ],
  'istioctl-compatible': ['--name', 'foo', '--namespace', 'bar', '--labels', 'app=foo,bar=baz', '--annotations', 'annotation=foobar', '--ports', 'grpc=3550,http=8080', '--serviceAccount', 'test'],
  'service-entry-default-host': ['db', '-n', 'data', '-p', 'tcp=5432', '--service-entry'],
  'service-entry-hosts': ['legacy', '-n', 'data', '-p', 'https=443/TLS', '--service-entry', '--host', 'db.legacy.example.com', '--host', '*.db.example.com'],
  'create-namespace-sa': ['web', '-n', 'apps', '-p', 'http=8080', '-s', 'web-vm', '--create-namespace', '--create-service-account'],
  'network-locality-weight': ['web', '-n', 'apps', '-p', 'http=8080', '--network', 'vm-network', '--locality', 'us-east-1/us-east-1a', '-w', '10'],
  'canonical-name-label': ['web', '-n', 'apps', '-p', 'http=8080', '-l', 'app.kubernetes.io/name=storefront,app.kubernetes.io/version=2.1'],
  everything: [
    'shop',
    '-n',
    'retail',
    '-p',
    'http=80:8080,grpc-api=9090/GRPC',
    '-l',
    'app=shop,version=v2',
    '-a',
    'owner=retail',
    '-s',
    'shop-vm',
    '--create-namespace',
    '--create-service-account',
    '--network',
    'net-2',
    '--locality',
    'eu-west-1/eu-west-1b/rack-3',
    '--weight',
    '5',
    '--service-entry',
    '--host',
    'shop.retail.example.com',
    '--probe-http',
    '8080/healthz',
    '--probe-period',
    '15',
    '--probe-failure-threshold',
    '2',
  ],
}

/** Kubernetes' own Service rules (apimachinery validation) for what meshvm generates. */
function serviceProblems(svc: {
  metadata: {name: string; labels?: Record<string, string>}
  spec: {selector: Record<string, string>; ports: {name: string; port: number; targetPort: number; protocol: string}[]}
}): string[] {
  const problems: string[] = []
  if (dns1035Label(svc.metadata.name)) problems.push('metadata.name')
  for (const [k, v] of Object.entries({...svc.spec.selector, ...svc.metadata.labels})) if (qualifiedName(k) || labelValue(v)) problems.push(`label ${k}`)
  const names = new Set<string>()
  const ports = new Set<string>()
  svc.spec.ports.forEach((p, i) => {
    if (svc.spec.ports.length > 1 && !p.name) problems.push(`spec.ports[${i}].name required`)
    if (names.has(p.name) || ports.has(`${p.port}/${p.protocol}`)) problems.push(`spec.ports[${i}] duplicate`)
    names.add(p.name)
    ports.add(`${p.port}/${p.protocol}`)
    if (!(p.port >= 1 && p.port <= 65535) || !(p.targetPort >= 1 && p.targetPort <= 65535)) problems.push(`spec.ports[${i}] range`)
    if (!['TCP', 'UDP', 'SCTP'].includes(p.protocol)) problems.push(`spec.ports[${i}].protocol`)
  })
  return problems
}

function objectsOf(yamlText: string): Record<string, unknown>[] {
  return parseAllDocuments(yamlText)
    .map((d) => d.toJS() as Record<string, unknown>)
    .filter(Boolean)
}

describe.concurrent('meshvm onboard: golden matrix', () => {
  for (const [name, args] of Object.entries(CASES)) {
    it(name, async () => {
      const dir = join(work, name)
      const files = await runCommand(['onboard', ...args, '--output-dir', dir])
      expect(files.stderr).not.toMatch(STACK_TRACE)
      expect(files.code, files.stderr).toBe(0)
      expect(files.stdout).toBe('')
      expect(files.stderr).toMatch(/^Wrote \d+ files to /)
      expectDirMatchesGolden(dir, join(GOLDEN, name))

      // Printing and writing produce the same objects, in the same order.
      const printed = await runCommand(['onboard', ...args])
      expect(printed.code, printed.stderr).toBe(0)
      const fromFiles = readdirSync(dir)
        .filter((f) => f !== 'kustomization.yaml')
        .sort()
        .map((f) => readFileSync(join(dir, f), 'utf8'))
      expect(printed.stdout).toBe(fromFiles.join('---\n'))

      // Every object passes the official CRD schema with its CEL rules, or Kubernetes' Service rules:
      // as meshvm checks it (transpiled rules), and straight from the reference CRDs with the CEL library.
      for (const obj of objectsOf(printed.stdout)) {
        const causes = validateIstioObject(obj)
        if (causes) {
          expect(causes, `${obj.kind} against the CRD schema`).toEqual([])
          expect(referenceValidators.get(obj.kind as string)!.validate(structuredClone(obj)), `${obj.kind} against the reference CRD, CEL library`).toEqual([])
        } else if (obj.kind === 'Service') expect(serviceProblems(obj as never)).toEqual([])
      }

      // Round trip through the real kubectl: kustomize reads every file and accepts every object.
      const built = execFileSync('kubectl', ['kustomize', dir], {encoding: 'utf8'})
      const fromKubectl = objectsOf(built)
        .map((o) => `${o.kind}/${(o.metadata as {name: string}).name}`)
        .sort()
      const generated = objectsOf(printed.stdout)
        .map((o) => `${o.kind}/${(o.metadata as {name: string}).name}`)
        .sort()
      expect(fromKubectl).toEqual(generated)
      expect(objectsOf(built)).toEqual(expect.arrayContaining(objectsOf(printed.stdout)))
    })
  }
})

describe.concurrent('meshvm onboard: output formats', () => {
  const args = ['web', '-n', 'apps', '-p', 'http=8080', '--probe-http', '8080/healthz']
  it('-o yaml prints a kubectl List', async () => {
    const r = await runCommand(['onboard', ...args, '-o', 'yaml'])
    expect(r.code).toBe(0)
    expectMatchesGoldenFile(r.stdout, join(GOLDEN, 'formats/list.yaml'))
    const list = parse(r.stdout)
    expect(list.kind).toBe('List')
    expect(list.items.map((i: {kind: string}) => i.kind)).toEqual(['WorkloadGroup', 'Service'])
  })
  it('-o json prints the same List as JSON', async () => {
    const [j, y] = await Promise.all([runCommand(['onboard', ...args, '-o', 'json']), runCommand(['onboard', ...args, '-o', 'yaml'])])
    expect(j.code).toBe(0)
    expectMatchesGoldenFile(j.stdout, join(GOLDEN, 'formats/list.json'))
    expect(JSON.parse(j.stdout)).toEqual(parse(y.stdout))
  })
  it('-o name prints kind.group/name', async () => {
    const r = await runCommand(['onboard', ...args, '-o', 'name', '--create-namespace'])
    expect(r.stdout).toBe('namespace/apps\nworkloadgroup.networking.istio.io/web\nservice/web\n')
  })
  it('the default YAML stream has no leading separator and ends with a newline', async () => {
    const r = await runCommand(['onboard', ...args])
    expect(r.stdout.startsWith('apiVersion: networking.istio.io/v1\n')).toBe(true)
    expect(r.stdout.endsWith('\n')).toBe(true)
    expect(r.stdout.split('\n---\n')).toHaveLength(2)
  })
  it('is deterministic: flag order does not change the output', async () => {
    const a = await runCommand(['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '-l', 'b=2', '-l', 'a=1', '-a', 'y=1', '-a', 'x=2'])
    const b = await runCommand(['onboard', '-a', 'x=2', '-l', 'a=1', '-a', 'y=1', 'web', '-p', 'http=8080', '-l', 'b=2', '-n', 'apps'])
    expect(a.code).toBe(0)
    expect(a.stdout).toBe(b.stdout)
  })
  it('overwrites its own files in an existing directory and leaves other files alone', async () => {
    const dir = join(work, 'rerun')
    await runCommand(['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '-d', dir])
    const second = await runCommand(['onboard', 'web', '-n', 'apps', '-p', 'http=9090', '-d', dir])
    expect(second.code).toBe(0)
    expect(readFileSync(join(dir, '02-service.yaml'), 'utf8')).toContain('port: 9090')
    expect(readdirSync(dir).filter((f) => f.includes('.tmp'))).toEqual([])
  })
})

/** Bad input: exact one-line message, exit 2, no stack trace, nothing written. */
const BAD: [string, string[], string][] = [
  ['no name, no tty', ['-n', 'apps', '-p', 'http=80'], 'Error: missing NAME: meshvm onboard needs a name, a namespace and at least one port'],
  ['no namespace', ['web', '-p', 'http=80'], 'Error: missing --namespace: meshvm onboard needs a name, a namespace and at least one port'],
  ['no port', ['web', '-n', 'apps'], 'Error: missing --port: meshvm onboard needs a name, a namespace and at least one port'],
  ['nothing at all', [], 'Error: missing NAME, --namespace, --port: meshvm onboard needs a name, a namespace and at least one port'],
  [
    'upper-case name',
    ['Web', '-n', 'apps', '-p', 'http=80'],
    `Error: NAME "Web": must be a DNS-1123 label: lower case letters, digits and '-', starting and ending with a letter or digit (e.g. 'my-name')`,
  ],
  ['name starting with a digit (Service)', ['1web', '-n', 'apps', '-p', 'http=80'], `Error: NAME "1web": must start with a letter to be a Service name (DNS-1035 label, e.g. 'web-1')`],
  ['name too long', ['a'.repeat(64), '-n', 'apps', '-p', 'http=80'], `Error: NAME "${'a'.repeat(64)}": must be no more than 63 characters (got 64)`],
  [
    'name with a dot',
    ['web.v1', '-n', 'apps', '-p', 'http=80'],
    `Error: NAME "web.v1": must be a DNS-1123 label: lower case letters, digits and '-', starting and ending with a letter or digit (e.g. 'my-name')`,
  ],
  [
    'namespace with underscore',
    ['web', '-n', 'my_ns', '-p', 'http=80'],
    `Error: --namespace "my_ns": must be a DNS-1123 label: lower case letters, digits and '-', starting and ending with a letter or digit (e.g. 'my-name')`,
  ],
  ['port without name', ['web', '-n', 'apps', '-p', '8080'], 'Error: --port "8080": expected name=port[:targetPort][/PROTOCOL], e.g. http=8080 or grpc=9090:19090/GRPC'],
  ['port 0', ['web', '-n', 'apps', '-p', 'http=0'], 'Error: --port "http=0": port must be a whole number between 1 and 65535'],
  ['port too big', ['web', '-n', 'apps', '-p', 'http=65536'], 'Error: --port "http=65536": port must be a whole number between 1 and 65535'],
  ['port not a number', ['web', '-n', 'apps', '-p', 'http=eighty'], 'Error: --port "http=eighty": port must be a whole number between 1 and 65535'],
  ['bad target port', ['web', '-n', 'apps', '-p', 'http=80:99999'], 'Error: --port "http=80:99999": target port must be a whole number between 1 and 65535'],
  ['unknown protocol', ['web', '-n', 'apps', '-p', 'http=80/QUIC'], 'Error: --port "http=80/QUIC": unknown protocol "QUIC"; valid protocols: HTTP, HTTPS, GRPC, HTTP2, MONGO, TCP, TLS'],
  ['duplicate port name', ['web', '-n', 'apps', '-p', 'http=80,http=81'], 'Error: --port "http=81": port name "http" is used twice; port names must be unique'],
  ['duplicate port number', ['web', '-n', 'apps', '-p', 'http=80,web=80'], 'Error: --port "web=80": port 80 is used twice; port numbers must be unique'],
  [
    'upper-case port name',
    ['web', '-n', 'apps', '-p', 'HTTP=80'],
    `Error: --port "HTTP=80": port name must be a DNS-1123 label: lower case letters, digits and '-', starting and ending with a letter or digit (e.g. 'my-name')`,
  ],
  ['port name too long', ['web', '-n', 'apps', '-p', `${'p'.repeat(63)}=80`], `Error: --port "${'p'.repeat(63)}=80": port name must be no more than 62 characters (got 63)`],
  ['label without =', ['web', '-n', 'apps', '-p', 'http=80', '-l', 'app'], 'Error: --label "app": expected key=value'],
  [
    'label value with space',
    ['web', '-n', 'apps', '-p', 'http=80', '-l', 'app=my app'],
    `Error: --label "app=my app": value must be empty or consist of letters, digits, '-', '_' or '.', and start and end with a letter or digit`,
  ],
  ['label value too long', ['web', '-n', 'apps', '-p', 'http=80', '-l', `v=${'x'.repeat(64)}`], `Error: --label "v=${'x'.repeat(64)}": value must be no more than 63 characters (got 64)`],
  [
    'label key with bad prefix',
    ['web', '-n', 'apps', '-p', 'http=80', '-l', 'Example.com/app=web'],
    `Error: --label "Example.com/app=web": key prefix "Example.com" must be a DNS-1123 subdomain: lower case letters, digits, '-' and '.', starting and ending with a letter or digit (e.g. 'example.com')`,
  ],
  ['label key twice', ['web', '-n', 'apps', '-p', 'http=80', '-l', 'app=a', '-l', 'app=b'], 'Error: --label "app=b": key "app" is given twice with different values'],
  ['annotation key with two slashes', ['web', '-n', 'apps', '-p', 'http=80', '-a', 'a/b/c=1'], `Error: --annotation "a/b/c=1": key may contain at most one '/' (prefix/name)`],
  [
    'two probe handlers',
    ['web', '-n', 'apps', '-p', 'http=80', '--probe-http', '80', '--probe-tcp', '80'],
    'Error: --probe-http and --probe-tcp: a probe has exactly one handler; choose one of --probe-http, --probe-https, --probe-tcp, --probe-exec',
  ],
  [
    'probe timing without handler',
    ['web', '-n', 'apps', '-p', 'http=80', '--probe-period', '10'],
    'Error: --probe-period: needs a probe; add one of --probe-http, --probe-https, --probe-tcp or --probe-exec',
  ],
  ['probe-http bad path', ['web', '-n', 'apps', '-p', 'http=80', '--probe-http', 'healthz'], 'Error: --probe-http "healthz": expected PORT[/PATH], e.g. 8080/healthz'],
  ['probe-http port out of range', ['web', '-n', 'apps', '-p', 'http=80', '--probe-http', '70000/x'], 'Error: --probe-http "70000/x": port must be a whole number between 1 and 65535'],
  ['probe-tcp not a port', ['web', '-n', 'apps', '-p', 'http=80', '--probe-tcp', 'db'], 'Error: --probe-tcp "db": expected PORT: must be a whole number between 1 and 65535'],
  ['probe-exec empty', ['web', '-n', 'apps', '-p', 'http=80', '--probe-exec', '  '], `Error: --probe-exec "  ": expected a command, e.g. '/usr/local/bin/check --quick'`],
  ['probe-exec unterminated quote', ['web', '-n', 'apps', '-p', 'http=80', '--probe-exec', "check 'oops"], `Error: --probe-exec "check 'oops": unterminated ' quote`],
  [
    'probe period zero',
    ['web', '-n', 'apps', '-p', 'http=80', '--probe-http', '80', '--probe-period', '0'],
    'Error: --probe-period "0": expected a whole number of seconds of at least 1, e.g. 10 or 10s',
  ],
  [
    'probe timeout longer than period',
    ['web', '-n', 'apps', '-p', 'http=80', '--probe-http', '80', '--probe-period', '5', '--probe-timeout', '10'],
    'Error: --probe-timeout "10": must not be longer than --probe-period (5s)',
  ],
  [
    'probe failure threshold zero',
    ['web', '-n', 'apps', '-p', 'http=80', '--probe-tcp', '80', '--probe-failure-threshold', '0'],
    'Error: --probe-failure-threshold "0": expected a whole number of at least 1',
  ],
  ['probe host on exec', ['web', '-n', 'apps', '-p', 'http=80', '--probe-exec', 'true', '--probe-host', '10.0.0.1'], 'Error: --probe-host: an exec probe runs a command and has no host'],
  ['probe header on tcp', ['web', '-n', 'apps', '-p', 'http=80', '--probe-tcp', '80', '--probe-header', 'A:b'], 'Error: --probe-header: headers apply to --probe-http and --probe-https only'],
  [
    'probe header syntax',
    ['web', '-n', 'apps', '-p', 'http=80', '--probe-http', '80', '--probe-header', 'no colon'],
    'Error: --probe-header "no colon": expected Name:Value, e.g. Host:web.example.com',
  ],
  ['bare * host', ['web', '-n', 'apps', '-p', 'http=80', '--service-entry', '--host', '*'], `Error: --host "*": a bare '*' would capture all traffic; use a wildcard domain such as '*.example.com'`],
  [
    'host with upper case',
    ['web', '-n', 'apps', '-p', 'http=80', '--service-entry', '--host', 'DB.example.com'],
    `Error: --host "DB.example.com": must be a DNS name, optionally with a leading '*.' (must be a DNS-1123 subdomain: lower case letters, digits, '-' and '.', starting and ending with a letter or digit (e.g. 'example.com'))`,
  ],
  ['host without --service-entry', ['web', '-n', 'apps', '-p', 'http=80', '--host', 'db.example.com'], 'Error: --host: hosts are set on a ServiceEntry; add --service-entry'],
  ['default SA creation', ['web', '-n', 'apps', '-p', 'http=80', '--create-service-account'], 'Error: --create-service-account: every namespace already has the "default" ServiceAccount'],
  [
    'bad service account',
    ['web', '-n', 'apps', '-p', 'http=80', '-s', 'Web_SA'],
    `Error: --service-account "Web_SA": must be a DNS-1123 subdomain: lower case letters, digits, '-' and '.', starting and ending with a letter or digit (e.g. 'example.com')`,
  ],
  ['bad locality', ['web', '-n', 'apps', '-p', 'http=80', '--locality', 'us//a'], 'Error: --locality "us//a": expected region[/zone[/subzone]], e.g. us-east-1/us-east-1a'],
  ['negative weight', ['web', '-n', 'apps', '-p', 'http=80', '--weight', '-1'], 'Error: --weight "-1": must be a whole number between 0 and 4294967295'],
  ['empty network', ['web', '-n', 'apps', '-p', 'http=80', '--network', ''], 'Error: --network "": must not be empty; give a value, or leave the flag out'],
  ['name and --name disagree', ['web', '--name', 'api', '-n', 'apps', '-p', 'http=80'], 'Error: NAME "web" and --name "api" disagree; give one of them'],
  ['unknown flag', ['web', '-n', 'apps', '-p', 'http=80', '--prot', 'x'], 'Error: unknown flag --prot'],
  // (every case here runs with -d DIR)
  ['-o with --output-dir', ['web', '-n', 'apps', '-p', 'http=80', '-o', 'json'], 'Error: -o json cannot be combined with --output-dir: the directory gets one YAML file per object'],
  ['-o with --diff', ['web', '-n', 'apps', '-p', 'http=80', '-o', 'name', '--diff'], 'Error: -o name cannot be combined with --diff: --diff prints a unified diff'],
  ['a bad --dry-run', ['web', '-n', 'apps', '-p', 'http=80', '--dry-run=yes'], 'Error: --dry-run "yes": expected one of none, client, server'],
  [
    'bad -o',
    ['web', '-n', 'apps', '-p', 'http=80', '-o', 'table'],
    'Error: -o/--output "table": expected one of yaml, json, name, jsonpath=TEMPLATE, jsonpath-as-json=TEMPLATE, custom-columns=HEADER:PATH,…',
  ],
  ['too many arguments', ['web', 'api', '-n', 'apps', '-p', 'http=80'], 'Error: Unexpected argument: api'],
]

const WG_FILE_DIR = join(work, 'wg-files')
const wgFile = (name: string, text: string): string => {
  mkdirSync(WG_FILE_DIR, {recursive: true})
  writeFileSync(join(WG_FILE_DIR, name), text)
  return join(WG_FILE_DIR, name)
}

describe.concurrent('meshvm onboard -f', () => {
  it('derives the Service from a WorkloadGroup file and keeps the file as the group', async () => {
    const file = wgFile(
      'ok.yaml',
      'apiVersion: networking.istio.io/v1\nkind: WorkloadGroup\nmetadata: {name: web, namespace: apps}\nspec:\n  metadata: {labels: {app: web}}\n  template: {ports: {http: 8080}, serviceAccount: web-vm}\n',
    )
    const r = await runCommand(['onboard', '-f', file])
    expect(r.code, r.stderr).toBe(0)
    const [wg, svc] = objectsOf(r.stdout) as {kind: string; spec: Record<string, unknown>; metadata: {name: string}}[]
    expect(wg!.spec).toEqual({metadata: {labels: {app: 'web'}}, template: {ports: {http: 8080}, serviceAccount: 'web-vm'}})
    expect(svc!.kind).toBe('Service')
    expect(svc!.spec.selector).toEqual({app: 'web'})
  })
  it.each([
    ['a missing file', ['-f', '/nonexistent/wg.yaml'], 'Error: -f "/nonexistent/wg.yaml": file not found'],
    ['a file without a WorkloadGroup', ['-f', 'svc.yaml'], 'Error: -f "FILE": expected exactly one WorkloadGroup, found 0 (and 1 other document(s))'],
    ['invalid YAML', ['-f', 'broken.yaml'], 'Error: FILE:3:1: invalid YAML: Flow sequence in block collection must be sufficiently indented and end with a ]'],
    ['a schema violation', ['-f', 'invalid.yaml'], 'Error: FILE: WorkloadGroup.networking.istio.io "web" is invalid: spec.template.ports.http: Invalid value: "integer": port must be between 1-65535'],
    ['no namespace anywhere', ['-f', 'nons.yaml'], 'Error: FILE: metadata.namespace is not set; pass -n NAMESPACE'],
    ['workload flags with -f', ['-f', 'ok2.yaml', '-p', 'http=80'], 'Error: --port cannot be combined with -f: the WorkloadGroup file defines the group; edit the file instead'],
  ])('rejects %s', async (_t, args, message) => {
    const files: Record<string, string> = {
      'svc.yaml': 'apiVersion: v1\nkind: Service\nmetadata: {name: x}\n',
      'broken.yaml': 'kind: WorkloadGroup\nmetadata: [\n',
      'invalid.yaml': 'apiVersion: networking.istio.io/v1\nkind: WorkloadGroup\nmetadata: {name: web, namespace: apps}\nspec:\n  template: {ports: {http: 0}}\n',
      'nons.yaml': 'kind: WorkloadGroup\nmetadata: {name: web}\nspec: {template: {}}\n',
      'ok2.yaml': 'kind: WorkloadGroup\nmetadata: {name: web, namespace: apps}\nspec: {template: {}}\n',
    }
    const name = args[1]!
    const path = files[name] ? wgFile(name, files[name]) : name
    const r = await runCommand(['onboard', ...args.map((a) => (a === name ? path : a))])
    expect(r.code).toBe(2)
    expect(r.stderr.split('\n')[0]).toBe(message.replace('FILE', path))
    expect(r.stderr).not.toMatch(STACK_TRACE)
  })
})

describe.concurrent('meshvm onboard: bad input', () => {
  it('has at least 30 cases', () => {
    expect(BAD.length).toBeGreaterThanOrEqual(30)
  })
  for (const [title, args, message] of BAD) {
    it(title, async () => {
      const dir = join(work, 'bad', title.replace(/\W+/g, '-'))
      const r = await runCommand(['onboard', ...args, '-d', dir])
      expect(r.code).toBe(2)
      expect(r.stdout).toBe('')
      expect(r.stderr.split('\n')[0]).toBe(message)
      expect(r.stderr).not.toMatch(STACK_TRACE)
      expect(existsSync(dir), 'no files may be written').toBe(false)
    })
  }
})

describe.concurrent('meshvm onboard: every problem of the invocation at once, one line each (issue 27)', () => {
  it('flags, ports, probe, output and bundle problems together, then the hints', async () => {
    const dir = join(work, 'bad', 'all-at-once')
    const r = await runCommand([
      'onboard',
      'Web',
      '-p',
      'x=99999',
      '-p',
      'http=80/FOO',
      '--weight',
      '-1',
      '--locality',
      'us//a',
      '-l',
      'app=a b',
      '--probe-tcp',
      'abc',
      '--probe-period',
      '0',
      '-o',
      'table',
      '--token-duration',
      '1m',
      '--bundle',
      join(dir, 'bundle'),
      '--host',
      'db.example.com',
      '-d',
      dir,
    ])
    expect(r.code).toBe(2)
    expect(r.stdout).toBe('')
    expect(r.stderr).not.toMatch(STACK_TRACE)
    expect(r.stderr.split('\n')).toEqual([
      'Error: -o/--output "table": expected one of yaml, json, name, jsonpath=TEMPLATE, jsonpath-as-json=TEMPLATE, custom-columns=HEADER:PATH,…',
      'Error: --token-duration "1m": expected a duration of at least 10m, e.g. 1h or 24h',
      'Error: missing --namespace: meshvm onboard needs a name, a namespace and at least one port',
      `Error: NAME "Web": must be a DNS-1123 label: lower case letters, digits and '-', starting and ending with a letter or digit (e.g. 'my-name')`,
      `Error: --label "app=a b": value must be empty or consist of letters, digits, '-', '_' or '.', and start and end with a letter or digit`,
      'Error: --locality "us//a": expected region[/zone[/subzone]], e.g. us-east-1/us-east-1a',
      'Error: --weight "-1": must be a whole number between 0 and 4294967295',
      'Error: --port "x=99999": port must be a whole number between 1 and 65535',
      'Error: --port "http=80/FOO": unknown protocol "FOO"; valid protocols: HTTP, HTTPS, GRPC, HTTP2, MONGO, TCP, TLS',
      'Error: --host: hosts are set on a ServiceEntry; add --service-entry',
      'Error: --probe-period "0": expected a whole number of seconds of at least 1, e.g. 10 or 10s',
      'Error: --probe-tcp "abc": expected PORT: must be a whole number between 1 and 65535',
      'Hint: meshvm onboard web -n apps --port http=8080   (or run it in a terminal to be asked)',
      'Hint: meshvm onboard Web -n NAMESPACE --service-entry --host db.example.com ...',
      '',
    ])
    expect(existsSync(dir), 'no files may be written').toBe(false)
  })
})
