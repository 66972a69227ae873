/**
 * Test-side helpers around the test API server: every credential it issues goes to the secret
 * scan, and kubectl runs asynchronously (the server lives in the test's own event loop).
 */
import {execFile} from 'node:child_process'
import {startTestCluster, type TestCluster, type TestClusterOptions} from '../cluster/index.js'
import {OUTER_ENV} from './cli.js'
import {recordSecret} from './secrets.js'

export type {TestCluster} from '../cluster/index.js'

export function startCluster(options: TestClusterOptions = {}): Promise<TestCluster> {
  return startTestCluster({onSecret: recordSecret, ...options})
}

export interface KubectlResult {
  code: number
  stdout: string
  stderr: string
}

export function kubectl(cluster: TestCluster, args: string[], options: {input?: string; env?: Record<string, string>} = {}): Promise<KubectlResult> {
  return new Promise((resolve) => {
    const child = execFile('kubectl', args, {env: {...OUTER_ENV, ...cluster.env, ...options.env}, encoding: 'utf8', timeout: 30_000}, (err, stdout, stderr) => {
      resolve({code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr})
    })
    child.stdin?.end(options.input ?? '')
  })
}

/** A kubeconfig for `cluster` (its URL and CA) with context c and one user u whose fields are `userLines`; the context's namespace when given. */
export function kubeconfigForUser(cluster: Pick<TestCluster, 'url' | 'caPem'>, userLines: string[], namespace?: string): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    `clusters: [{name: c, cluster: {server: "${cluster.url}", certificate-authority-data: ${Buffer.from(cluster.caPem).toString('base64')}}}]`,
    `contexts: [{name: c, context: {cluster: c, user: u${namespace ? `, namespace: ${namespace}` : ''}}}]`,
    'current-context: c',
    'users:',
    '- name: u',
    '  user:',
    ...userLines.map((l) => `    ${l}`),
    '',
  ].join('\n')
}
