/** The completion engine and the scripts it generates (issue 27: aliases, paths, proxies, remote secrets). */
import {fileURLToPath} from 'node:url'
import {describe, expect, it} from 'vitest'
import {cobraOutput, complete, completionScript, selfCommand, SHELLS, type CompletionCommand} from '../../src/lib/completion.js'
import {istioNamespaceOf} from '../../src/commands/__complete.js'
import {expectMatchesGoldenFile} from '../helpers/golden.js'

const GOLDEN = fileURLToPath(new URL('../golden/completion/', import.meta.url))

describe('completion scripts', () => {
  // A path with a space and a quote: the scripts must pass it as one word.
  const command = ['/usr/bin/node', "/opt/mesh vm's/bin/run.js"]
  it.each(SHELLS)('%s: golden', (shell) => {
    expectMatchesGoldenFile(completionScript(shell, 'meshvm', command), `${GOLDEN}meshvm.${shell}`)
  })

  it('call the meshvm that generated them: node and its script, or the standalone executable alone', () => {
    expect(selfCommand('/usr/bin/node', '/usr/lib/node_modules/meshvm/bin/run.js')).toEqual(['/usr/bin/node', '/usr/lib/node_modules/meshvm/bin/run.js'])
    expect(selfCommand('/usr/local/bin/meshvm', '/usr/local/bin/meshvm')).toEqual(['/usr/local/bin/meshvm'])
    expect(selfCommand('/usr/local/bin/meshvm', undefined)).toEqual(['/usr/local/bin/meshvm'])
  })
})

describe('complete()', () => {
  const flag = (name: string, char?: string) => ({name, char, takesValue: true})
  const commands: CompletionCommand[] = [
    {words: 'bundle verify', flags: [flag('archive')]},
    {words: 'onboard', flags: [flag('filename', 'f'), flag('output-dir', 'd'), flag('bundle'), flag('kubeconfig')]},
    {words: 'create-remote-secret', flags: [flag('output-file')]},
    {words: 'proxy-status', flags: [flag('namespace', 'n')]},
    {words: 'ps', flags: [flag('namespace', 'n')], aliasOf: 'proxy-status'},
    {words: 'remote-secret status', flags: []},
    {words: 'remote-secret rotate', flags: [flag('from')]},
  ]
  it.each([
    [['bundle', 'verify', ''], {files: 'dir'}],
    [['bundle', 'verify', 'DIR', ''], {}],
    [['bundle', 'verify', '--archive', ''], {files: 'file'}],
    [['onboard', '-f', 'x'], {files: 'file'}],
    [['onboard', '-d', ''], {files: 'dir'}],
    [['onboard', '--bundle='], {files: 'dir'}],
    [['onboard', '--kubeconfig', ''], {files: 'file'}],
    [['create-remote-secret', '--output-file', ''], {files: 'file'}],
    [['proxy-status', ''], {dynamic: 'proxies'}],
    [['ps', '-n', 'apps', 'w'], {dynamic: 'proxies'}],
    [['remote-secret', 'status', ''], {dynamic: 'remote-secrets'}],
    [['remote-secret', 'rotate', '--from', 'east', ''], {dynamic: 'remote-secrets'}],
    [['remote-secret', 'rotate', '--from', ''], {}],
  ])('%j', (words, expected) => {
    const c = complete(words, commands)
    expect({files: c.files, dynamic: c.dynamic}).toEqual({files: undefined, dynamic: undefined, ...expected})
  })

  it("cobra's directives: 0 files, 16 directories, 4 nothing more", () => {
    expect(cobraOutput([], 'file')).toBe(':0\n')
    expect(cobraOutput([], 'dir')).toBe(':16\n')
    expect(cobraOutput(['a'], undefined)).toBe('a\n:4\n')
  })

  it('remote secrets are looked up in the -i typed', () => {
    expect(istioNamespaceOf(['remote-secret', 'status', '-i', 'mesh'])).toBe('mesh')
    expect(istioNamespaceOf(['remote-secret', 'status', '--istio-namespace=mesh'])).toBe('mesh')
    expect(istioNamespaceOf(['remote-secret', 'status', '-imesh'])).toBe('mesh')
    expect(istioNamespaceOf(['remote-secret', 'status', '--istioNamespace', 'mesh'])).toBe('mesh')
    expect(istioNamespaceOf(['remote-secret', 'status', '-i', 'mesh', '-i', ''])).toBe('mesh')
    expect(istioNamespaceOf(['remote-secret', 'status', '--', '-i', 'mesh'])).toBe(process.env.MESHVM_ISTIO_NAMESPACE || 'istio-system')
    expect(istioNamespaceOf(['remote-secret', 'status'])).toBe(process.env.MESHVM_ISTIO_NAMESPACE || 'istio-system')
  })
})
