/**
 * CEL rules evaluated by the CEL library (@bufbuild/cel, with the strings extension that
 * kube-apiserver enables), as a `compileRule` for meshvm's own validator (src/lib/schema/validate.ts)
 * in its tests: the same contract as a transpiled rule, a bool or a thrown CelEvalError with the
 * library's message. Values come in as validate.ts converts them (maps, bigint ints). The test API
 * server does not use this: its schema checker (schema.ts) calls the library itself.
 */
import {celEnv, isCelError, parse, plan} from '@bufbuild/cel'
import {strings} from '@bufbuild/cel/ext'
import {RuleEvalError as CelEvalError, type CelRule} from '../../src/lib/schema/validate.js'

const env = celEnv({funcs: strings})

/** Throws (the library's parse error) when the rule does not compile. */
export function compileCelRule(rule: string): CelRule {
  const program = plan(env, parse(rule))
  return (self: unknown): boolean => {
    const result = program({self} as never) as unknown
    if (isCelError(result)) throw new CelEvalError((result as Error).message)
    return result === true
  }
}
