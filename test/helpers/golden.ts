/**
 * Golden directories, as istioctl keeps them: each case directory holds the expected files.
 * `UPDATE_GOLDEN=1 npm test` rewrites them; otherwise any difference, missing or extra file fails.
 */
import {mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync, existsSync} from 'node:fs'
import {join} from 'node:path'
import {expect} from 'vitest'

export const UPDATE = process.env.UPDATE_GOLDEN === '1'

/** Compares every file of `actualDir` with `goldenDir`, both ways. */
export function expectDirMatchesGolden(actualDir: string, goldenDir: string): void {
  const actual = readdirSync(actualDir).sort()
  if (UPDATE) {
    rmSync(goldenDir, {recursive: true, force: true})
    mkdirSync(goldenDir, {recursive: true})
    for (const f of actual) writeFileSync(join(goldenDir, f), readFileSync(join(actualDir, f)))
    return
  }
  expect(existsSync(goldenDir), `golden directory ${goldenDir} is missing (run UPDATE_GOLDEN=1 npm test)`).toBe(true)
  const expected = readdirSync(goldenDir).sort()
  expect(actual, `files written to ${actualDir}`).toEqual(expected)
  for (const f of expected) {
    expect(readFileSync(join(actualDir, f), 'utf8'), `${f} differs from ${join(goldenDir, f)}`).toBe(readFileSync(join(goldenDir, f), 'utf8'))
  }
}

export function expectMatchesGoldenFile(actual: string, goldenFile: string): void {
  if (UPDATE) {
    mkdirSync(join(goldenFile, '..'), {recursive: true})
    writeFileSync(goldenFile, actual)
    return
  }
  expect(existsSync(goldenFile), `golden file ${goldenFile} is missing (run UPDATE_GOLDEN=1 npm test)`).toBe(true)
  expect(actual).toBe(readFileSync(goldenFile, 'utf8'))
}
