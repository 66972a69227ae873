/**
 * kubectl's AGE cell as kube-apiserver's Table printer writes it: apimachinery's
 * `duration.HumanDuration` (k8s.io/apimachinery/pkg/util/duration), restated here from the Go source
 * for the simulated API server, apart from meshvm's own formatter (src/lib/output/age.ts) so that the
 * two can disagree. Go's integer conversions truncate toward zero.
 */
const SECOND = 1000
const MINUTE = 60 * SECOND
const HOUR = 60 * MINUTE

/** `fmt.Sprintf("%d<a>", a)` or `"%d<a>%d<b>"` when the remainder is not zero. */
function pair(major: number, majorUnit: string, minor: number, minorUnit: string): string {
  return minor === 0 ? `${major}${majorUnit}` : `${major}${majorUnit}${minor}${minorUnit}`
}

export function humanDurationGo(durationMs: number): string {
  const seconds = Math.trunc(durationMs / SECOND)
  // "Allow deviation no more than 2 seconds (excluded) to tolerate machine time inconsistence."
  if (seconds < -1) return '<invalid>'
  if (seconds < 0) return '0s'
  if (seconds < 120) return `${seconds}s`
  const minutes = Math.trunc(durationMs / MINUTE)
  if (minutes < 10) return pair(minutes, 'm', seconds % 60, 's')
  if (minutes < 180) return `${minutes}m`
  const hours = Math.trunc(durationMs / HOUR)
  if (hours < 8) return pair(hours, 'h', minutes % 60, 'm')
  if (hours < 48) return `${hours}h`
  const days = Math.trunc(hours / 24)
  if (hours < 24 * 8) return pair(days, 'd', hours % 24, 'h')
  if (hours < 24 * 365 * 2) return `${days}d`
  const years = Math.trunc(days / 365)
  if (hours < 24 * 365 * 8) return pair(years, 'y', days % 365, 'd')
  return `${years}y`
}

/** printers.translateTimestampSince: `<unknown>` for a missing time. */
export function ageOf(timestamp: string, now: Date): string {
  const t = Date.parse(timestamp)
  return Number.isNaN(t) ? '<unknown>' : humanDurationGo(now.getTime() - t)
}
