/**
 * The one door to interactive prompts. Prompts are written to stderr, so they run when stdin and
 * stderr are terminals even if stdout is piped (`meshvm onboard > web.yaml` still asks); otherwise
 * callers must fail with a usage error that names the flags to pass (a piped newline would silently
 * accept a default). @inquirer/prompts is imported lazily: most runs never prompt.
 */
import {InterruptedError} from '../errors.js'

export function canPrompt(streams: {stdin: {isTTY?: boolean}; stderr: {isTTY?: boolean}} = process): boolean {
  return Boolean(streams.stdin.isTTY && streams.stderr.isTTY)
}

export interface Prompter {
  input(message: string, options?: {default?: string; validate?: (value: string) => string | true}): Promise<string>
  confirm(message: string, options?: {default?: boolean}): Promise<boolean>
  select<T extends string>(message: string, choices: {value: T; name: string; description?: string}[], options?: {default?: T}): Promise<T>
}

async function guard<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run()
  } catch (err) {
    if ((err as {name?: string}).name === 'ExitPromptError') throw new InterruptedError('interrupted: nothing was written')
    throw err
  }
}

export async function terminalPrompter(): Promise<Prompter> {
  const prompts = await import('@inquirer/prompts')
  const context = {output: process.stderr}
  return {
    input: (message, options = {}) => guard(() => prompts.input({message, default: options.default, validate: options.validate}, context)),
    confirm: (message, options = {}) => guard(() => prompts.confirm({message, default: options.default}, context)),
    select: (message, choices, options = {}) => guard(() => prompts.select({message, choices, default: options.default}, context)),
  }
}

/** POSIX single-quoting, used to print equivalent command lines people can paste. */
export function shellQuote(word: string): string {
  if (word !== '' && /^[A-Za-z0-9_@%+=:,./-]+$/.test(word)) return word
  return `'${word.replace(/'/g, `'"'"'`)}'`
}
