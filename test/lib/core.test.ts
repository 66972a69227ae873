import {mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, chmodSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, describe, expect, it} from 'vitest'
import {ExitCode, MeshvmError, toReport, UsageError} from '../../src/lib/errors.js'
import {writeFilesAtomic} from '../../src/lib/fs/atomic.js'
import {colorEnabled, makeChalk} from '../../src/lib/output/color.js'
import {asList, resourceName} from '../../src/lib/output/render.js'
import {renderTable} from '../../src/lib/output/table.js'
import {parseDuration} from '../../src/lib/validation/kube.js'
import {parseYamlStream, toYaml, toYamlStream} from '../../src/lib/yaml.js'

const work = mkdtempSync(join(tmpdir(), 'meshvm-core-'))
afterAll(() => rmSync(work, {recursive: true, force: true}))

describe('errors', () => {
  it('keeps exit codes and hints of meshvm errors', () => {
    expect(toReport(new UsageError('--port: bad', ['try x']))).toMatchObject({exit: 2, message: '--port: bad', hints: ['try x']})
    expect(toReport(new MeshvmError('nope', {exit: ExitCode.NOT_FOUND}))).toMatchObject({exit: 4})
  })
  it('treats oclif parser errors as usage errors with one line', () => {
    const err = Object.assign(new Error('Nonexistent flag: --x\nSee more help with --help'), {oclif: {exit: 2}})
    expect(toReport(err)).toMatchObject({exit: 2, message: 'unknown flag --x', hints: ['see --help for the flags this command takes']})
  })
  it("takes the first problem of oclif's multi-line messages and names the flag", () => {
    const err = Object.assign(new Error('The following error occurred:\n  Missing required flag output-dir\nSee more help with --help'), {oclif: {exit: 2}})
    expect(toReport(err)).toMatchObject({exit: 2, message: 'missing required flag --output-dir'})
  })
  it('reports anything else as a bug (exit 10) without its stack in the message', () => {
    const r = toReport(new TypeError("Cannot read properties of undefined (reading 'x')"))
    expect(r.exit).toBe(ExitCode.BUG)
    expect(r.message).toBe("internal error: Cannot read properties of undefined (reading 'x')")
  })
  it('maps a Ctrl-C in a prompt to 130', () => {
    expect(toReport(Object.assign(new Error('User force closed the prompt'), {name: 'ExitPromptError'})).exit).toBe(130)
  })
})

describe('yaml', () => {
  it('quotes YAML 1.1 booleans and octals, never folds, never aliases', () => {
    const shared = {a: 1}
    const text = toYaml({on: 'yes', mode: '0755', long: 'x'.repeat(200), one: shared, two: shared})
    expect(text).toContain('"on": "yes"')
    expect(text).toContain('mode: "0755"')
    expect(text).toContain('x'.repeat(200))
    expect(text).not.toMatch(/[&*]a\d/)
  })
  it('joins streams with --- and parses them back, dropping empty documents', () => {
    const stream = toYamlStream([{a: 1}, {b: 2}])
    expect(stream).toBe('a: 1\n---\nb: 2\n')
    expect(parseYamlStream(`# c\n---\n${stream}---\n`, 'f.yaml').map((d) => d.value)).toEqual([{a: 1}, {b: 2}])
  })
  it('names file, line and column on a syntax error', () => {
    expect(() => parseYamlStream('a: 1\nb: [\n', 'wg.yaml')).toThrow(/^wg\.yaml:\d+:\d+: invalid YAML/)
  })
})

describe('output', () => {
  it('renders borderless kubectl tables without trailing spaces, wide columns only with wide', () => {
    const rows = [
      {n: 'a', s: 'SYNCED', x: 'w'},
      {n: 'bbbb', s: 'STALE', x: 'w2'},
    ]
    const cols = [
      {header: 'NAME', value: (r: (typeof rows)[number]) => r.n},
      {header: 'STATUS', value: (r: (typeof rows)[number]) => r.s},
      {header: 'EXTRA', wide: true, value: (r: (typeof rows)[number]) => r.x},
    ]
    expect(renderTable(rows, cols)).toBe('NAME   STATUS\na      SYNCED\nbbbb   STALE\n')
    expect(renderTable(rows, cols, {wide: true, gap: 5})).toBe('NAME     STATUS     EXTRA\na        SYNCED     w\nbbbb     STALE      w2\n')
    expect(renderTable(rows, cols, {noHeaders: true})).toBe('a      SYNCED\nbbbb   STALE\n')
  })
  it('honours NO_COLOR, TERM=dumb, --no-color and machine formats', () => {
    const tty = {isTTY: true}
    expect(colorEnabled({stream: tty, env: {}})).toBe(true)
    expect(colorEnabled({stream: tty, env: {NO_COLOR: '1'}})).toBe(false)
    expect(colorEnabled({stream: tty, env: {NO_COLOR: ''}})).toBe(true)
    expect(colorEnabled({stream: tty, env: {TERM: 'dumb'}})).toBe(false)
    expect(colorEnabled({stream: tty, env: {}, noColor: true})).toBe(false)
    expect(colorEnabled({stream: tty, env: {}, format: 'json'})).toBe(false)
    expect(colorEnabled({stream: {isTTY: false}, env: {}})).toBe(false)
    expect(makeChalk({stream: {isTTY: false}, env: {}}).red('x')).toBe('x')
  })
  it('wraps lists like kubectl and names objects like -o name', () => {
    expect(asList([])).toEqual({apiVersion: 'v1', kind: 'List', items: [], metadata: {resourceVersion: ''}})
    expect(resourceName({apiVersion: 'networking.istio.io/v1', kind: 'WorkloadGroup', metadata: {name: 'web'}})).toBe('workloadgroup.networking.istio.io/web')
    expect(resourceName({apiVersion: 'v1', kind: 'Service', metadata: {name: 'web'}})).toBe('service/web')
  })
})

describe('atomic files', () => {
  it('writes all files with exact modes and leaves no temporaries', () => {
    const dir = join(work, 'ok')
    writeFilesAtomic(dir, [
      {name: 'istio-token', data: 'secret', mode: 0o600},
      {name: 'hosts', data: 'x', mode: 0o644},
    ])
    expect(readdirSync(dir).sort()).toEqual(['hosts', 'istio-token'])
    expect(statSync(join(dir, 'istio-token')).mode & 0o777).toBe(0o600)
    expect(statSync(join(dir, 'hosts')).mode & 0o777).toBe(0o644)
  })
  it('writes none of the files when one of them fails', () => {
    const dir = join(work, 'fail')
    writeFilesAtomic(dir, [{name: 'a', data: 'old', mode: 0o644}])
    // A directory where a file should go makes the second write fail after the first succeeded.
    writeFilesAtomic(join(dir, 'b'), [{name: 'keep', data: '', mode: 0o644}])
    expect(() =>
      writeFilesAtomic(dir, [
        {name: 'a', data: 'new', mode: 0o644},
        {name: 'b/keep/x', data: 'y', mode: 0o644},
      ]),
    ).toThrow(/cannot write/)
    expect(readFileSync(join(dir, 'a'), 'utf8')).toBe('old')
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([])
  })
  it('reports a read-only directory as a one-line error', () => {
    if (process.getuid?.() === 0) return // root ignores directory permissions
    const dir = join(work, 'ro')
    writeFileSync(join(work, 'ro-marker'), '')
    writeFilesAtomic(dir, [])
    chmodSync(dir, 0o500)
    expect(() => writeFilesAtomic(dir, [{name: 'a', data: '', mode: 0o644}])).toThrow(/permission denied/)
  })
})

describe('parseDuration', () => {
  it('accepts kubectl-style durations and bare seconds', () => {
    expect(parseDuration('30s')).toBe(30_000)
    expect(parseDuration('1m30s')).toBe(90_000)
    expect(parseDuration('500ms')).toBe(500)
    expect(parseDuration('2')).toBe(2000)
    expect(parseDuration('1h')).toBe(3_600_000)
    expect(parseDuration('')).toBeUndefined()
    expect(parseDuration('10x')).toBeUndefined()
    expect(parseDuration('-1s')).toBeUndefined()
  })
})
