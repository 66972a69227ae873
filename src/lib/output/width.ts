/**
 * The one display-width function of every table and aligned view: how many terminal columns a text
 * takes. Wide (CJK) characters and emoji take two, combining marks and zero-width joiners none, colour
 * codes none (string-width: grapheme clusters and East Asian Width). Printable ASCII, nearly every
 * cell, is counted directly: string-width (and its Intl.Segmenter) loads on the first other text.
 */
import stringWidth from 'string-width'

const PLAIN = /^[\x20-\x7e]*$/

export function displayWidth(text: string): number {
  return PLAIN.test(text) ? text.length : stringWidth(text)
}

/** Printable ASCII only: one column per character, and nothing for terminalSafe to escape. */
export function isPrintableAscii(text: string): boolean {
  return PLAIN.test(text)
}

/** `text` padded with spaces to `width` columns. */
export function padEnd(text: string, width: number): string {
  const w = displayWidth(text)
  return w >= width ? text : text + ' '.repeat(width - w)
}
