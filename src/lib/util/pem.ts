/**
 * The PEM CERTIFICATE blocks of a text, in order, BEGIN and END lines included. What lies between
 * the blocks (keys, comments) is not looked at, and a block is not parsed: callers that need a
 * certificate hand each block to X509Certificate. An empty block is a block (that X509Certificate
 * refuses), so it cannot swallow the block after it.
 */
export function pemCertificates(text: string): string[] {
  return text.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? []
}
