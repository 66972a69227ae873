/**
 * Byte-compatibility helpers for files istioctl writes with Go libraries: yaml.v2's key order,
 * encoding/json's string escaping, and Istio's shellescape.Quote (with its regex quirk).
 */

const isLetter = (c: string) => /\p{L}/u.test(c)
const isDigit = (c: string) => c >= '0' && c <= '9'

/**
 * yaml.v2's keyList.Less for string keys: at the first differing rune, a non-letter sorts before a
 * letter, runs of digits compare as numbers, and a prefix sorts first. (So `ISTIO_META_WORKLOAD_NAME`
 * comes before `ISTIO_METAJSON_LABELS`, unlike plain byte order.)
 */
export function goYamlKeyCompare(a: string, b: string): number {
  const ar = [...a]
  const br = [...b]
  for (let i = 0; i < ar.length && i < br.length; i++) {
    const ac = ar[i]!
    const bc = br[i]!
    if (ac === bc) continue
    const al = isLetter(ac)
    const bl = isLetter(bc)
    if (al && bl) return ac < bc ? -1 : 1
    if (al || bl) return bl ? -1 : 1
    let an = 0
    let bn = 0
    if (ac === '0' || bc === '0') {
      for (let j = i - 1; j >= 0 && isDigit(ar[j]!); j--) {
        if (ar[j] !== '0') {
          an = 1
          bn = 1
          break
        }
      }
    }
    let ai = i
    let bi = i
    for (; ai < ar.length && isDigit(ar[ai]!); ai++) an = an * 10 + Number(ar[ai])
    for (; bi < br.length && isDigit(br[bi]!); bi++) bn = bn * 10 + Number(br[bi])
    if (an !== bn) return an < bn ? -1 : 1
    if (ai !== bi) return ai < bi ? -1 : 1
    return ac < bc ? -1 : 1
  }
  return ar.length - br.length
}

/** Go's encoding/json for a string→string map: keys in byte order, HTML-safe escapes. */
export function goJsonStringMap(map: Record<string, string>): string {
  const keys = Object.keys(map).sort((x, y) => (x < y ? -1 : x > y ? 1 : 0))
  return `{${keys.map((k) => `${goJsonString(k)}:${goJsonString(map[k]!)}`).join(',')}}`
}

export function goJsonString(s: string): string {
  return JSON.stringify(s).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

/**
 * Istio's shellescape.Quote. Its pattern is the Go raw string `[^\\w@%+=:,./-]`, in which `\\` is a
 * literal backslash, so `w` is a literal letter too: any value with a character outside
 * {\, w, @, %, +, =, :, ,, ., /, -} is single-quoted. Almost every value is, which is harmless.
 */
export function istioShellQuote(value: string): string {
  if (value === '') return "''"
  if (/[^\\w@%+=:,./-]/.test(value)) return `'${value.replace(/'/g, `'"'"'`)}'`
  return value
}
