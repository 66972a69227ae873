/**
 * Cluster cases for `npm run bench`: the test API server runs in this process and the commands
 * (meshvm and its kubectl baseline) run as child processes against it, so both pay the same server.
 * The seeding is test/cluster/scale.ts, which `npm run demo:cluster -- --scale …` uses too.
 */
import {mkdtempSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {startTestCluster, type TestCluster} from '../test/cluster/index.js'
import {seedProxies, seedWars} from '../test/cluster/scale.js'

export async function clusterWithWars(count: number): Promise<TestCluster> {
  const cluster = await startTestCluster()
  seedWars(cluster, count)
  return cluster
}

/** `count` proxies over `istiods` istiods (the only ones: the test cluster's default istiod is removed). */
export async function clusterWithProxies(count: number, istiods = 3, contextName?: string): Promise<TestCluster> {
  const cluster = await startTestCluster(contextName ? {contextName} : {})
  cluster.store.delete('/pods', 'istio-system', 'istiod-7d4b9c6f8-x2k9p')
  cluster.mesh.istiods.clear()
  seedProxies(cluster, count, istiods)
  return cluster
}

/** The 4 objects of `meshvm onboard web -n apps -p http=8080 -s web-vm --create-namespace --create-service-account`, for kubectl. */
export function onboardObjectsFile(yaml: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'meshvm-bench-'))
  const file = join(dir, 'objects.yaml')
  writeFileSync(file, yaml)
  return file
}
