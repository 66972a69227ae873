import {execFile} from 'node:child_process'
import {generateKeyPairSync} from 'node:crypto'
import forge from 'node-forge'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {kubectl, startCluster, type TestCluster} from '../helpers/cluster.js'
import {certificateIdentity, signCsr} from './ca.js'
import {selectorMatches} from './namespaces.js'
import {boundToken} from './tokens.js'
import {testPki} from './pki.js'

let cluster: TestCluster
beforeAll(async () => {
  cluster = await startCluster({rootCertDelayMs: 50})
})
afterAll(() => cluster?.stop())

const waitFor = async <T>(fn: () => T | undefined, what: string): Promise<T> => {
  for (let i = 0; i < 200; i++) {
    const v = fn()
    if (v !== undefined) return v
    await new Promise((r) => setTimeout(r, 25))
  }
  throw new Error(`timed out waiting for ${what}`)
}

function csr(commonName = ''): string {
  const {privateKey, publicKey} = generateKeyPairSync('rsa', {modulusLength: 2048})
  const req = forge.pki.createCertificationRequest()
  req.publicKey = forge.pki.publicKeyFromPem(publicKey.export({type: 'spki', format: 'pem'}) as string)
  req.setSubject(commonName ? [{name: 'commonName', value: commonName}] : [])
  req.setAttributes([{name: 'extensionRequest', extensions: [{name: 'subjectAltName', altNames: [{type: 6, value: 'spiffe://cluster.local/ns/kube-system/sa/admin'}]}]}])
  req.sign(forge.pki.privateKeyFromPem(privateKey.export({type: 'pkcs1', format: 'pem'}) as string), forge.md.sha256.create())
  return forge.pki.certificationRequestToPem(req)
}

describe('mesh root CA', () => {
  it('signs a CSR with the caller identity as the only SAN (not the SANs the CSR asks for), chained to the published root', () => {
    const signed = signCsr(cluster.ca, csr(), 'spiffe://cluster.local/ns/apps/sa/web-vm', 3600)
    expect(signed).toHaveLength(2)
    expect(signed[1]).toBe(cluster.ca.rootPem.replace(/\r\n/g, '\n'))
    expect(certificateIdentity(signed[0]!)).toBe('spiffe://cluster.local/ns/apps/sa/web-vm')
    const root = forge.pki.certificateFromPem(cluster.ca.rootPem)
    expect(root.verify(forge.pki.certificateFromPem(signed[0]!))).toBe(true)
    expect(cluster.store.get('/configmaps', 'istio-system', 'istio-ca-root-cert')!.data).toEqual({'root-cert.pem': cluster.ca.rootPem})
  })

  it('refuses what is not a CSR', () => {
    expect(() => signCsr(cluster.ca, 'not a csr', 'spiffe://cluster.local/ns/a/sa/b')).toThrow('CSR signing error (failed to parse CSR)')
  })

  it('is verified by openssl (a client nobody here wrote)', async () => {
    const signed = signCsr(cluster.ca, csr(), 'spiffe://cluster.local/ns/apps/sa/web-vm')
    const {mkdtempSync, writeFileSync, rmSync} = await import('node:fs')
    const {join} = await import('node:path')
    const dir = mkdtempSync(join(cluster.dir, 'ca-'))
    writeFileSync(join(dir, 'root.pem'), cluster.ca.rootPem)
    writeFileSync(join(dir, 'leaf.pem'), signed[0]!)
    const out = await new Promise<string>((resolve) => execFile('openssl', ['verify', '-CAfile', join(dir, 'root.pem'), join(dir, 'leaf.pem')], (_e, stdout, stderr) => resolve(stdout + stderr)))
    rmSync(dir, {recursive: true, force: true})
    expect(out).toContain(': OK')
  })
})

describe("istiod's namespace controller", () => {
  it('writes istio-ca-root-cert into a new namespace a moment after it appears, not at once', async () => {
    const res = await kubectl(cluster, ['create', '-f', '-'], {input: JSON.stringify({apiVersion: 'v1', kind: 'Namespace', metadata: {name: 'fresh'}})})
    expect(res.stderr).toBe('')
    const cm = await waitFor(() => cluster.store.get('/configmaps', 'fresh', 'istio-ca-root-cert'), 'the root cert in namespace fresh')
    expect(cm.data).toEqual({'root-cert.pem': cluster.ca.rootPem})
    expect(cm.metadata.labels).toEqual({'istio.io/config': 'true'})
    const nsCreated = cluster.store.get('/namespaces', undefined, 'fresh')!.metadata.resourceVersion!
    expect(Number(cm.metadata.resourceVersion)).toBeGreaterThan(Number(nsCreated))
  })

  it('skips kube-system and, when discoverySelectors are set, the namespaces they do not select', async () => {
    expect(cluster.store.get('/configmaps', 'kube-system', 'istio-ca-root-cert')).toBeUndefined()
    const mesh = cluster.store.get('/configmaps', 'istio-system', 'istio')!
    cluster.store.update('/configmaps', {...mesh, data: {mesh: `${(mesh.data as {mesh: string}).mesh}discoverySelectors:\n- matchLabels:\n    mesh: 'on'\n`}})
    cluster.store.create('/namespaces', 'Namespace', {metadata: {name: 'outside', labels: {'kubernetes.io/metadata.name': 'outside'}}})
    cluster.store.create('/namespaces', 'Namespace', {metadata: {name: 'inside', labels: {'kubernetes.io/metadata.name': 'inside', mesh: 'on'}}})
    await waitFor(() => cluster.store.get('/configmaps', 'inside', 'istio-ca-root-cert'), 'the root cert in namespace inside')
    await new Promise((r) => setTimeout(r, 150))
    expect(cluster.store.get('/configmaps', 'outside', 'istio-ca-root-cert')).toBeUndefined()
    // Labelled into the selectors later: written then.
    const outside = cluster.store.get('/namespaces', undefined, 'outside')!
    cluster.store.update('/namespaces', {...outside, metadata: {...outside.metadata, labels: {...outside.metadata.labels, mesh: 'on'}}})
    await waitFor(() => cluster.store.get('/configmaps', 'outside', 'istio-ca-root-cert'), 'the root cert in namespace outside')
    cluster.store.update('/configmaps', mesh)
  })

  it('matches label selectors as metav1 does', () => {
    expect(selectorMatches({}, {})).toBe(true)
    expect(selectorMatches({matchExpressions: [{key: 'env', operator: 'In', values: ['prod']}]}, {env: 'prod'})).toBe(true)
    expect(selectorMatches({matchExpressions: [{key: 'env', operator: 'NotIn', values: ['prod']}]}, {})).toBe(true)
    expect(selectorMatches({matchExpressions: [{key: 'env', operator: 'DoesNotExist'}]}, {env: ''})).toBe(false)
  })
})

describe('TokenReview (authentication.k8s.io/v1)', () => {
  const review = async (token: string, audiences?: string[]) => {
    const body = JSON.stringify({apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: {token, ...(audiences ? {audiences} : {})}})
    const res = await kubectl(cluster, ['create', '-o', 'json', '-f', '-'], {input: body})
    expect(res.stderr).toBe('')
    return (JSON.parse(res.stdout) as {status: {authenticated?: boolean; user?: {username?: string; groups?: string[]}; audiences?: string[]; error?: string}}).status
  }
  const sa = () => cluster.store.get('/serviceaccounts', 'default', 'default')!

  it('authenticates a bound service-account token for its audience (kubectl create -f)', async () => {
    const {token} = boundToken(testPki(), {namespace: 'default', name: 'default', uid: sa().metadata.uid!}, ['istio-ca'], 600)
    const status = await review(token, ['istio-ca'])
    expect(status).toMatchObject({
      authenticated: true,
      audiences: ['istio-ca'],
      user: {username: 'system:serviceaccount:default:default', groups: ['system:serviceaccounts', 'system:serviceaccounts:default', 'system:authenticated']},
    })
  })

  it('refuses another audience, an expired token, a deleted service account and a forged token', async () => {
    const s = {namespace: 'default', name: 'default', uid: sa().metadata.uid!}
    const {token} = boundToken(testPki(), s, ['other'], 600)
    expect(await review(token, ['istio-ca'])).toEqual({authenticated: false, user: {}, error: '[invalid bearer token, token audiences ["other"] is invalid for the target audiences ["istio-ca"]]'})
    const expired = boundToken(testPki(), s, ['istio-ca'], -10).token
    expect((await review(expired, ['istio-ca'])).error).toBe('[invalid bearer token, service account token has expired]')
    const gone = boundToken(testPki(), {...s, name: 'ghost'}, ['istio-ca'], 600).token
    expect((await review(gone, ['istio-ca'])).error).toBe('[invalid bearer token, service account default/ghost has been deleted]')
    const parts = token.split('.')
    expect((await review(`${parts[0]}.${Buffer.from('{"sub":"x"}').toString('base64url')}.${parts[2]}`, ['istio-ca'])).authenticated).toBe(false)
  })

  it('is served to the Python client too', async () => {
    const {token} = boundToken(testPki(), {namespace: 'default', name: 'default', uid: sa().metadata.uid!}, ['istio-ca'], 600)
    const script = [
      'import os, sys, kubernetes',
      'kubernetes.config.load_kube_config()',
      'api = kubernetes.client.AuthenticationV1Api()',
      'r = api.create_token_review(kubernetes.client.V1TokenReview(spec=kubernetes.client.V1TokenReviewSpec(token=sys.stdin.read(), audiences=["istio-ca"])))',
      'print(r.status.authenticated, r.status.user.username)',
    ].join('\n')
    const out = await new Promise<string>((resolve) => {
      const child = execFile('/usr/bin/python3', ['-c', script], {env: {...process.env, ...cluster.env}}, (_e, stdout, stderr) => resolve(stdout + stderr))
      child.stdin!.end(token)
    })
    expect(out.trim()).toBe('True system:serviceaccount:default:default')
  })
})
