/**
 * oclif's parser errors in meshvm's one-line style (issue 27): each wording oclif has, made by oclif's
 * own parser, then read by toReport as the top level prints it.
 */
import * as Args from '@oclif/core/args'
import * as Flags from '@oclif/core/flags'
import {parse} from '@oclif/core/parser'
import {describe, expect, it} from 'vitest'
import {toReport} from '../../src/lib/errors.js'

const flags = {
  namespace: Flags.string({char: 'n'}),
  'all-namespaces': Flags.boolean({char: 'A', exclusive: ['namespace']}),
  'chunk-size': Flags.integer({min: 0}),
  source: Flags.option({options: ['all', 'war'] as const})(),
  'dry-run': Flags.option({options: ['none', 'client', 'server'] as const, default: 'none' as const})(),
  fix: Flags.boolean({exclusive: ['dry-run']}),
  yes: Flags.boolean({char: 'y', dependsOn: ['fix']}),
  from: Flags.string({}),
  port: Flags.string({char: 'p', multiple: true}),
}

async function reportOf(argv: string[], options: {args?: Record<string, unknown>; required?: boolean; strict?: boolean} = {}) {
  const f = options.required ? {...flags, from: Flags.string({required: true})} : flags
  try {
    await parse(argv, {flags: f, args: (options.args ?? {}) as never, strict: options.strict ?? true})
  } catch (err) {
    return toReport(err)
  }
  throw new Error(`${argv.join(' ')} parsed`)
}

const NAME = {name: Args.string({description: 'NAME or TYPE/NAME (as -o name prints it) of the registration; several may be given.', required: true})}
const SHELL = {shell: Args.string({description: 'The shell.', options: ['bash', 'zsh', 'fish'], required: true})}
const FLAGS = 'see --help for the flags this command takes'
const ARGS = 'see --help for the arguments this command takes'

describe('oclif parse errors, in meshvm words: one line naming the flag or argument and what would be valid', () => {
  it.each([
    ['missing argument', [], {args: NAME}, 'missing NAME: NAME or TYPE/NAME (as -o name prints it) of the registration; several may be given', [ARGS]],
    ['missing argument with options', [], {args: SHELL}, 'missing SHELL: the shell; expected one of bash, zsh, fish', [ARGS]],
    ['argument not one of its options', ['tcsh'], {args: SHELL}, 'argument "tcsh": expected one of bash, zsh, fish', [ARGS]],
    ['extra argument', ['a', 'b'], {args: {name: Args.string()}}, 'Unexpected argument: b', [ARGS]],
    ['extra argument holding a carriage return', ['a', 'b\rc'], {args: {name: Args.string()}}, 'Unexpected argument: b\rc', [ARGS]],
    ['unknown flag, a close one', ['--chunk-sise', '3'], {}, 'unknown flag --chunk-sise', ['did you mean --chunk-size?', FLAGS]],
    ['unknown flag, none close', ['--bogus'], {}, 'unknown flag --bogus', [FLAGS]],
    ['not an integer', ['--chunk-size', 'abc'], {}, '--chunk-size "abc": expected a whole number', [FLAGS]],
    ['integer below the minimum', ['--chunk-size', '-1'], {}, '--chunk-size "-1": expected a whole number of at least 0', [FLAGS]],
    ['option not one of its values', ['--source', 'nope'], {}, '--source "nope": expected one of all, war', [FLAGS]],
    ['option without a value', ['--source'], {}, '--source: needs a value, one of all, war', [FLAGS]],
    ['flag without a value', ['-n'], {}, '--namespace: needs a value', [FLAGS]],
    ['flag given twice', ['-n', 'a', '-n', 'b'], {}, '--namespace: given more than once; it takes one value', [FLAGS]],
    ['exclusive flags', ['--fix', '--dry-run=client'], {}, '--fix and --dry-run=client cannot be combined: give one of them', [FLAGS]],
    ['exclusive flags (boolean)', ['-A', '-n', 'x'], {}, '--all-namespaces and --namespace=x cannot be combined: give one of them', [FLAGS]],
    ['a flag that depends on another', ['-y'], {}, '--yes: only applies with --fix', [FLAGS]],
    ['required flag', [], {required: true}, 'missing required flag --from', [FLAGS]],
  ] as const)('%s', async (_title, argv, options, message, hints) => {
    const r = await reportOf([...argv], options)
    expect(r).toMatchObject({exit: 2, code: 'Usage', message, hints})
    expect(r.message).not.toMatch(/\n|Nonexistent|Parsing|Missing \d|Expected|cannot also be provided|See more help/)
  })

  it.each([
    ['exactly one of', {a: Flags.boolean({exactlyOne: ['a', 'b']}), b: Flags.boolean({exactlyOne: ['a', 'b']})}, [], /^give exactly one of --a, --b$/],
    ['at least one of', {a: Flags.boolean({atLeastOne: ['a', 'b']}), b: Flags.boolean()}, [], /^give at least one of --a, --b$/],
    ['only combinable with', {a: Flags.boolean({combinable: ['b']}), b: Flags.boolean(), c: Flags.boolean()}, ['--a', '--c'], /^--a: can only be combined with --b$/],
    ['one of, when using', {a: Flags.boolean({relationships: [{type: 'some', flags: ['b', 'c']}]}), b: Flags.boolean(), c: Flags.boolean()}, ['--a'], /^--a: only applies with one of --b, --c$/],
  ] as const)('flag relationship: %s', async (_title, f, argv, message) => {
    const r = await parse([...argv], {flags: f as never}).then(
      () => undefined,
      (err: unknown) => toReport(err),
    )
    expect(r).toMatchObject({exit: 2, code: 'Usage', hints: [FLAGS]})
    expect(r!.message).toMatch(message)
  })

  it('several relationship problems: the first is the message, the others hints', async () => {
    const r = await reportOf(['-y', '--fix', '--dry-run=server'], {required: true})
    expect(r.exit).toBe(2)
    expect(r.message).toBe('--fix and --dry-run=server cannot be combined: give one of them')
    expect(r.hints).toEqual(['missing required flag --from', FLAGS])
  })
})
