/** The one rule for empty flag values (issue 27): kubectl's meaning where it has one, else a usage error. */
import {describe, expect, it} from 'vitest'
import {applyEmptyValueRule, EMPTY_MEANS_DEFAULT, type FlagShape} from '../../../src/lib/cli/empty-values.js'
import {UsageError} from '../../../src/lib/errors.js'

const flags: Record<string, FlagShape> = {
  namespace: {type: 'option', char: 'n'},
  'istio-namespace': {type: 'option', char: 'i', aliases: ['istioNamespace']},
  output: {type: 'option', char: 'o'},
  selector: {type: 'option', char: 'l', aliases: ['labels']},
  'sort-by': {type: 'option'},
  group: {type: 'option'},
  'chunk-size': {type: 'option'},
  'dry-run': {type: 'option', options: ['none', 'client', 'server']},
  port: {type: 'option', char: 'p'},
  yes: {type: 'boolean', char: 'y'},
}

describe('empty values kubectl reads as "not given" are dropped, so the default applies', () => {
  it.each([
    [['-n', ''], []],
    [['-n='], []],
    [['--namespace', ''], []],
    [['--namespace='], []],
    [
      ['war', '-n', '', '-o', 'wide'],
      ['war', '-o', 'wide'],
    ],
    [['--istioNamespace='], []],
    [['-i', '', '-y'], ['-y']],
    [
      ['-l', '', '-l', 'app=x'],
      ['-l', 'app=x'],
    ],
    [['--labels', ''], []],
    [['-o', '', '--sort-by='], []],
    // Values that are not empty, and everything after --, stay as they are.
    [
      ['-n', 'apps', '-napps', '-n=apps'],
      ['-n', 'apps', '-napps', '-n=apps'],
    ],
    [
      ['--', '-n', ''],
      ['--', '-n', ''],
    ],
    // A flag's value is never read as a flag: `-l -n` gives -l the value -n (oclif then says so).
    [
      ['-o', '-n', ''],
      ['-o', '-n', ''],
    ],
    // Unknown flags and a trailing flag without a value are oclif's to report.
    [
      ['--bogus', '', '-n'],
      ['--bogus', '', '-n'],
    ],
    // A bare --dry-run (client) followed by an empty argument: the argument is not the flag's value.
    [
      ['--dry-run', ''],
      ['--dry-run', ''],
    ],
  ])('%j → %j', (argv, expected) => {
    expect(applyEmptyValueRule(argv, flags)).toEqual(expected)
  })
})

describe('an empty value of any other flag is a usage error naming it', () => {
  it.each([
    [['--group', ''], '--group "": must not be empty; give a value, or leave the flag out'],
    [['--chunk-size='], '--chunk-size "": must not be empty; give a value, or leave the flag out'],
    [['-p', ''], '-p/--port "": must not be empty; give a value, or leave the flag out'],
    [['-p='], '-p/--port "": must not be empty; give a value, or leave the flag out'],
    [['--dry-run='], '--dry-run "": must not be empty; expected one of none, client, server'],
  ])('%j', (argv, message) => {
    let thrown: unknown
    try {
      applyEmptyValueRule(argv, flags)
    } catch (err) {
      thrown = err
    }
    expect(thrown).toBeInstanceOf(UsageError)
    expect((thrown as Error).message).toBe(message)
  })

  it('names every flag it drops, each with its kubectl meaning (the table in docs/conventions.md)', () => {
    expect(Object.keys(EMPTY_MEANS_DEFAULT).sort()).toEqual([
      'context',
      'istio-namespace',
      'kubeconfig',
      'label-columns',
      'namespace',
      'output',
      'request-timeout',
      'revision',
      'selector',
      'server',
      'sort-by',
      'tls-server-name',
    ])
  })
})
