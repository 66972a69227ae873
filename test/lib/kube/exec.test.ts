/** Exec credential plugins (kube/exec.ts): what each answer of a plugin gives, run as real processes. */
import {afterEach, describe, expect, it} from 'vitest'
import {MeshvmError} from '../../../src/lib/errors.js'
import {type ExecConfig, runExecPlugin} from '../../../src/lib/kube/exec.js'

const V1 = 'client.authentication.k8s.io/v1'
/** A plugin that prints `out` and exits with `code`. */
const plugin = (out: string, code = 0, extra: Partial<ExecConfig> = {}): ExecConfig => ({
  command: 'sh',
  args: ['-c', 'printf %s "$0"; exit "$1"', out, String(code)],
  apiVersion: V1,
  interactiveMode: 'Never',
  ...extra,
})
const credential = (status: unknown, apiVersion: unknown = V1) => JSON.stringify({apiVersion, kind: 'ExecCredential', status})
const failure = (config: ExecConfig) =>
  runExecPlugin(config, 'c', undefined, 10_000, false).then(
    () => expect.unreachable('the plugin was accepted'),
    (err: unknown) => {
      expect(err).toBeInstanceOf(MeshvmError)
      return err as MeshvmError
    },
  )
const prefix = 'cannot get credentials for context "c": the credential plugin (exec: sh)'

describe('runExecPlugin', () => {
  it('reads a token, a client certificate and key, and the expiry', async () => {
    expect(await runExecPlugin(plugin(credential({token: 't0k', expirationTimestamp: '2030-01-02T03:04:05Z'})), 'c', undefined, 10_000, false)).toEqual({
      token: 't0k',
      expiresAt: Date.parse('2030-01-02T03:04:05Z'),
    })
    expect(await runExecPlugin(plugin(credential({clientCertificateData: 'CERT', clientKeyData: 'KEY'})), 'c', undefined, 10_000, false)).toEqual({cert: 'CERT', key: 'KEY'})
  })

  it.each([
    ['nothing usable', plugin('not json'), 'printed something that is not an ExecCredential'],
    ['no status', plugin(JSON.stringify({apiVersion: V1})), 'printed an ExecCredential without a status'],
    ['no credential', plugin(credential({token: ''})), 'returned neither a token nor a client certificate and key'],
    ['a certificate without its key', plugin(credential({clientCertificateData: 'CERT'})), 'returned neither a token nor a client certificate and key'],
    ['another apiVersion', plugin(credential({token: 't'}, 'v\u0007x')), `is configured to use API version ${V1}, plugin returned version "v?x"`],
    ['no apiVersion', plugin(credential({token: 't'}, 7)), `is configured to use API version ${V1}, plugin returned version none`],
    ['a bad expiry', plugin(credential({token: 't', expirationTimestamp: 'tomorrow'})), 'printed an ExecCredential whose status.expirationTimestamp is not an RFC 3339 time'],
    ['a failure', plugin(credential({token: 't'}), 3), 'failed (exit 3)'],
  ])('refuses %s, never quoting what the plugin printed', async (_name, config, why) => {
    const err = await failure(config)
    expect(err.message).toBe(`${prefix} ${why}`)
    expect(err.exit).toBe(5)
  })

  it('names a missing command with its install hint, without control characters', async () => {
    const err = await failure({command: 'meshvm-no-such-plugin', apiVersion: V1, interactiveMode: 'Never', installHint: 'install it:\n\u001b[31mbrew install x'})
    expect(err.message).toBe('cannot get credentials for context "c": the credential plugin (exec: meshvm-no-such-plugin) was not found on PATH')
    expect(err.hints).toEqual(['install it: [31mbrew install x'])
  })

  it('does not run an Always-interactive plugin without a terminal', async () => {
    const err = await failure(plugin(credential({token: 't'}), 0, {interactiveMode: 'Always'}))
    expect(err.message).toBe(`${prefix} cannot support interactive mode: standard input is not a terminal`)
  })

  describe('MESHVM_EXEC_TIMEOUT', () => {
    const saved = process.env.MESHVM_EXEC_TIMEOUT
    afterEach(() => {
      if (saved === undefined) delete process.env.MESHVM_EXEC_TIMEOUT
      else process.env.MESHVM_EXEC_TIMEOUT = saved
    })
    const sleeper: ExecConfig = {command: 'sleep', args: ['30'], apiVersion: V1, interactiveMode: 'Never'}

    it('bounds the plugin instead of the request time-out when it is set', async () => {
      process.env.MESHVM_EXEC_TIMEOUT = '300ms'
      const err = await failure(sleeper)
      expect(err.message).toBe('cannot get credentials for context "c": the credential plugin (exec: sleep) did not finish within 300ms and was stopped')
    })

    it('is a usage error when it is not a duration, before the plugin runs', async () => {
      process.env.MESHVM_EXEC_TIMEOUT = 'soon'
      const err = await failure(sleeper)
      expect(err.message).toBe('MESHVM_EXEC_TIMEOUT "soon": expected a duration such as 30s or 2m')
      expect(err.exit).toBe(2)
    })
  })
})
