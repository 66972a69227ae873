/**
 * Kubernetes' duration.HumanDuration (apimachinery), used by kubectl's AGE column and istioctl's
 * proxy-status ages: 45s, 2m5s, 12m, 3h4m, 26h, 3d4h, 120d, 2y.
 */
export function humanDuration(ms: number): string {
  // Go's int(d.Seconds()) truncates toward zero: -1.5s is -1s, "0s" (clock skew), not "<invalid>".
  const seconds = Math.trunc(ms / 1000)
  if (seconds < -1) return '<invalid>'
  if (seconds < 0) return '0s'
  if (seconds < 60 * 2) return `${seconds}s`
  const minutes = Math.floor(seconds / 60)
  if (minutes < 10) return units(minutes, 'm', seconds % 60, 's')
  if (minutes < 60 * 3) return `${minutes}m`
  const hours = Math.floor(seconds / 3600)
  if (hours < 8) return units(hours, 'h', minutes % 60, 'm')
  if (hours < 48) return `${hours}h`
  const days = Math.floor(hours / 24)
  if (hours < 24 * 8) return units(days, 'd', hours % 24, 'h')
  if (hours < 24 * 365 * 2) return `${days}d`
  const years = Math.floor(days / 365)
  if (hours < 24 * 365 * 8) return units(years, 'y', days % 365, 'd')
  return `${years}y`
}

/** `3m5s`, or `3m` when the smaller unit is zero. */
function units(big: number, bigUnit: string, small: number, smallUnit: string): string {
  return small === 0 ? `${big}${bigUnit}` : `${big}${bigUnit}${small}${smallUnit}`
}

/** kubectl's AGE for a timestamp. */
export function age(timestamp: string | undefined, now: Date = new Date()): string {
  if (!timestamp) return '<unknown>'
  const t = Date.parse(timestamp)
  return Number.isNaN(t) ? '<unknown>' : humanDuration(now.getTime() - t)
}

/**
 * A duration as a user writes it in a flag (`1h`, `1h30m`, `5m`, `45s`, `1.5s`, `500ms`, `0s`): how
 * messages repeat a --timeout, --interval or --grace-period back. Exact, unlike humanDuration's ages.
 */
export function flagDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`
  if (ms % 1000 !== 0) return ms < 60_000 ? `${ms / 1000}s` : `${ms}ms`
  const h = Math.floor(ms / 3_600_000)
  const m = Math.floor((ms % 3_600_000) / 60_000)
  const sec = (ms % 60_000) / 1000
  return `${h ? `${h}h` : ''}${m ? `${m}m` : ''}${sec ? `${sec}s` : ''}`
}
