/**
 * The default revision as istioctl 1.28 resolves it (the istio-revision-tag-default webhook), and the
 * VM bundle built for it (CA_ADDR and hosts name istiod-REV).
 */
import {mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {resolveRevision} from '../../../src/lib/istiod/revision.js'
import {openSession} from '../../../src/lib/kube/session.js'
import {runCli} from '../../helpers/cli.js'
import {startCluster, type TestCluster} from '../../helpers/cluster.js'

describe('resolveRevision', () => {
  let cluster: TestCluster
  let work: string
  beforeAll(async () => {
    cluster = await startCluster()
    work = mkdtempSync(join(tmpdir(), 'meshvm-rev-'))
  })
  afterAll(async () => {
    await cluster?.stop()
    rmSync(work, {recursive: true, force: true})
  })
  const resolve = async (flag: string | undefined, kubeconfig = cluster.kubeconfigPath) => {
    const session = await openSession({kubeconfig})
    try {
      return await resolveRevision(session.client, flag)
    } finally {
      session.client.close()
    }
  }

  it('no default tag: no revision; a tag: its istio.io/rev; --revision always wins', async () => {
    expect(await resolve(undefined)).toEqual({source: 'none'})
    cluster.mesh.setDefaultTag('canary')
    try {
      expect(await resolve(undefined)).toEqual({revision: 'canary', source: 'default-tag'})
      expect(await resolve('stable')).toEqual({revision: 'stable', source: 'flag'})
      expect(await resolve('default')).toEqual({revision: 'default', source: 'flag'})
      // A user who may not list webhooks gets the unrevisioned default, as when the lookup fails in istioctl.
      const token = cluster.addUser('no-webhooks', {rules: [{verbs: ['get', 'list'], apiGroups: [''], resources: ['*']}]})
      expect(await resolve(undefined, cluster.kubeconfigFor(token))).toEqual({source: 'none'})
    } finally {
      cluster.mesh.setDefaultTag(undefined)
    }
  })

  it('the VM bundle follows the default tag: CA_ADDR and hosts name istiod-canary', async () => {
    cluster.mesh.installIstio({revision: 'canary', gatewayIp: '203.0.113.10'})
    cluster.mesh.watchNamespace('apps')
    const onboard = await runCli(['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '-s', 'web-vm', '--create-service-account', '--apply'], {env: cluster.env})
    expect(onboard.code, onboard.stderr).toBe(0)
    cluster.mesh.setDefaultTag('canary')
    try {
      const out = join(work, 'bundle')
      const res = await runCli(['bundle', 'web', '-n', 'apps', '-d', out], {env: cluster.env})
      expect(res.code, res.stderr).toBe(0)
      expect(readFileSync(join(out, 'cluster.env'), 'utf8')).toMatch(/^CA_ADDR='?istiod-canary\.istio-system\.svc:15012'?$/m)
      expect(readFileSync(join(out, 'hosts'), 'utf8')).toMatch(/^203\.0\.113\.10 istiod-canary\.istio-system\.svc$/m)
    } finally {
      cluster.mesh.setDefaultTag(undefined)
    }
  })
})
