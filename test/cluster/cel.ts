/**
 * CEL rules evaluated by the CEL library (@bufbuild/cel, with the strings extension that
 * kube-apiserver enables), for the CRDs whose rules meshvm does not transpile at build time (the
 * test API server serves any CRD). Same contract as a transpiled rule: a bool, or a thrown
 * CelEvalError with the library's message. Values come in as validate.ts converts them (maps, bigint ints).
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
