/**
 * The README's `meshvm war` examples, run on the demo mesh (`npm run demo:cluster`) as written. The
 * demo's TSB-style VMs run an onboarding agent (test/cluster/onboarding-agent.ts), so a rollout that
 * deletes a stale WorkloadAutoRegistration sees it come back from the current group, as on TSB.
 */
import {readFileSync} from 'node:fs'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {seedDemoMesh} from '../cluster/demo-mesh.js'
import type {OnboardingAgents} from '../cluster/onboarding-agent.js'
import {REPO_ROOT, STACK_TRACE} from '../helpers/cli.js'
import {runCommand} from '../helpers/in-process.js'
import {startCluster, type TestCluster} from '../helpers/cluster.js'
import {waitUntil} from '../helpers/spawn.js'

const WAR = 'runtime.onboarding.tetrate.io/workloadautoregistrations'
const WG = 'networking.istio.io/workloadgroups'
const STALE = 'recommender-aws-aws-123456789012-us-east-2b-ec2-i-0a1b2c3d4e5f60002'

let cluster: TestCluster
let agents: OnboardingAgents
beforeAll(async () => {
  cluster = await startCluster()
  ;({agents} = seedDemoMesh(cluster))
})
afterAll(async () => {
  agents?.stop()
  await cluster?.stop()
})

/** The README's example lines of the war section, without the `meshvm` word. */
function readmeExample(start: string): string[] {
  const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8')
  const line = readme.split('\n').find((l) => l.startsWith(`meshvm ${start}`))
  expect(line, `README line "meshvm ${start}…"`).toBeDefined()
  return line!.split(/\s+/).slice(1)
}

describe('README war examples on the demo', () => {
  it('war rollout recommender -n shop --max-unavailable 2: the stale registration is re-onboarded by its agent, from the current group', async () => {
    const args = readmeExample('war rollout recommender')
    expect(args).toEqual(['war', 'rollout', 'recommender', '-n', 'shop', '--max-unavailable', '2'])
    const before = cluster.store.get(WAR, 'shop', STALE)!
    const group = cluster.store.get(WG, 'shop', 'recommender')!
    expect((before.status as {workloadGroupSnapshot: unknown}).workloadGroupSnapshot).not.toEqual(group.spec)
    const res = await runCommand(args, {env: cluster.env, timeoutMs: 60_000})
    expect(res.stderr).not.toMatch(STACK_TRACE)
    expect(res.code, res.stderr).toBe(0)
    expect(res.stderr).toMatch(/^Rolling out workloadgroup shop\/recommender \(generation 1\): 1 of 4 registration\(s\) are stale; re-onboarding 1, up to 2 at a time, waiting up to 5m for each$/m)
    expect(res.stdout).toMatch(new RegExp(`^${STALE} +re-onboarded +\\d+\\.\\ds +connected to onboarding-plane-istiod-6c9f8d7b5-k2x4p, healthy$`, 'm'))
    expect(res.stderr.trimEnd().split('\n').pop()).toBe('Rollout of workloadgroup shop/recommender complete: 1 re-onboarded, 3 already up to date.')
    const after = cluster.store.get(WAR, 'shop', STALE)!
    expect(after.metadata.uid).not.toBe(before.metadata.uid)
    expect((after.status as {workloadGroupSnapshot: unknown}).workloadGroupSnapshot).toEqual(group.spec)
    expect(agents.reonboarded).toEqual([`shop/${STALE}`])
    // Run again: nothing is stale any more.
    const again = await runCommand(args, {env: cluster.env})
    expect(again.code, again.stderr).toBe(0)
    expect(again.stdout).toBe('')
  })

  it('war list -A -o wide shows the re-onboarded registration up to date', async () => {
    const res = await runCommand(readmeExample('war list'), {env: cluster.env})
    expect(res.code, res.stderr).toBe(0)
    expect(res.stdout).toMatch(new RegExp(`^shop +${STALE} +True .* false +- +- +war$`, 'm'))
  })

  it('a disconnected VM has no running agent: its deleted registration stays gone', async () => {
    const away = 'recommender-aws-aws-123456789012-us-east-2a-ec2-i-0a1b2c3d4e5f60004'
    const res = await runCommand(['war', 'delete', away, '-n', 'shop', '--yes'], {env: cluster.env})
    expect(res.code, res.stderr).toBe(0)
    // The agents act after a delay: by the time a connected VM would be back, this one is still gone.
    const connected = 'recommender-aws-aws-123456789012-us-east-2a-ec2-i-0a1b2c3d4e5f60001'
    const del = await runCommand(['war', 'delete', connected, '-n', 'shop', '--yes'], {env: cluster.env})
    expect(del.code, del.stderr).toBe(0)
    await waitUntil(() => agents.reonboarded.includes(`shop/${connected}`), `${connected} to be re-onboarded`, 15_000)
    expect(cluster.store.get(WAR, 'shop', connected)).toBeDefined()
    expect(cluster.store.get(WAR, 'shop', away)).toBeUndefined()
  })

  it('precheck on the demo: the classic east-west gateway passes; the ambient one (istio-eastwest) is named as the mismatch', async () => {
    const ok = await runCommand(['precheck', 'recommender', '-n', 'shop', '-o', 'json'], {env: cluster.env})
    const okChecks = (JSON.parse(ok.stdout) as {checks: {check: string; status: string; message: string}[]}).checks
    expect(okChecks.find((c) => c.check === 'east-west gateway')).toMatchObject({
      status: 'pass',
      message: 'istio-system/istio-eastwestgateway at 203.0.113.10 is a classic east-west gateway exposing 15012, 15017 and 15443',
    })
    // The default istiod, not the 1-23 one, is the one probed.
    expect(okChecks.find((c) => c.check === 'istiod answers')!.message).toMatch(/^istiod istio-system\/istiod-6c9f8d7b5-k2x4p answers/)
    const res = await runCommand(['precheck', 'recommender', '-n', 'shop', '--ingress-service', 'istio-eastwest'], {env: cluster.env})
    expect(res.code).toBe(8)
    expect(res.stdout).toMatch(
      /^east-west gateway +FAIL +Service istio-system\/istio-eastwest is an ambient east-west gateway \(class istio-east-west, HBONE on 15008\): a sidecar VM needs the classic one/m,
    )
    expect(res.stderr).toContain('Fix (east-west gateway): VMs join as sidecars (there is no ztunnel on VMs): deploy a classic east-west gateway beside the ambient one')
  })
})
