/**
 * A credential written inside a git work tree that does not ignore it is one `git add -A` away from
 * a commit. The check is cheap where it does not apply: lstat calls up the path until a `.git` is
 * found; git itself is asked (`git check-ignore`) only inside a work tree. It never fails a write: no
 * git, a broken repository or any other doubt means no warning.
 */
import {spawnSync} from 'node:child_process'
import {lstatSync, realpathSync} from 'node:fs'
import {dirname, join, relative} from 'node:path'

/** The nearest ancestor of `dir` (itself included) that holds a `.git` (a directory, or a file in a linked work tree). */
export function gitWorkTreeOf(dir: string): string | undefined {
  for (let at = dir; ; ) {
    try {
      lstatSync(join(at, '.git'))
      return at
    } catch {
      // Not here: one level up.
    }
    const up = dirname(at)
    if (up === at) return undefined
    at = up
  }
}

/**
 * A one-line warning when `file` (just written, holding a token or kubeconfig) lies inside a git work
 * tree that does not ignore it; `shown` is the path as the user gave it. Through meshvm's bundle
 * link, the file that would be committed is the one in the version directory, which is what git is
 * asked about.
 */
export function unignoredCredentialWarning(file: string, shown = file): string | undefined {
  try {
    const real = realpathSync(file)
    const root = gitWorkTreeOf(dirname(real))
    if (root === undefined) return undefined
    const inTree = relative(root, real)
    const res = spawnSync('git', ['-C', root, 'check-ignore', '-q', '--', inTree], {stdio: 'ignore', timeout: 10_000})
    // 0: ignored; 1: not ignored; anything else (128, git missing, a time-out): cannot tell.
    if (res.status !== 1) return undefined
    return `${shown} holds a credential inside the git work tree ${root}, which does not ignore ${inTree}: \`git add -A\` would commit it (add it to .gitignore, or write it outside the work tree)`
  } catch {
    return undefined
  }
}
