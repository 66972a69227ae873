/**
 * Text that came from a cluster, a VM or a server (names, annotations, versions, syncz fields, error
 * messages) is shown only through terminalSafe: C0 and C1 control characters (ESC included, so no
 * escape sequence can move the cursor, retitle the window or hide text) and DEL become visible escapes.
 * Tab and newline are kept only where the caller allows them (multi-line describe values).
 * Machine formats (-o json|yaml) never go through this: they stay exact.
 */

// C0 (U+0000–U+001F), DEL (U+007F), C1 (U+0080–U+009F), and the Unicode line/paragraph separators and
// bidi overrides that can reorder what a terminal shows.
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g
const UNSAFE_KEEP_LINES = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g
const NAMED: Record<string, string> = {'\n': '\\n', '\r': '\\r', '\t': '\\t', '\u001b': '\\e'}

function escapeChar(ch: string): string {
  const named = NAMED[ch]
  if (named) return named
  const code = ch.charCodeAt(0)
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`
}

/** Replaces what `unsafe` matches with visible escapes; text without any is returned as it is. */
function escaping(unsafe: RegExp): (text: string) => string {
  return (text) => {
    unsafe.lastIndex = 0
    return unsafe.test(text) ? text.replace(unsafe, escapeChar) : text
  }
}

/** One line of untrusted text, safe to print: every control character is shown as an escape. */
export const terminalSafe = escaping(UNSAFE)

/** Like terminalSafe, but keeps newlines and tabs (for multi-line values in describe views). */
export const terminalSafeLines = escaping(UNSAFE_KEEP_LINES)
