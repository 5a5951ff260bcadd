// Time zones as Graph names them. Outlook stores and answers Windows zone names ("W. Europe
// Standard Time"); Graph also accepts IANA names on input. Arithmetic happens in IANA zones, with
// one offset lookup per zone and quarter hour cached (asking Intl costs tens of microseconds, and a
// bulk seed or a calendar view expands thousands of times).
import { IANAZone } from 'luxon'
import { cachedZoneOffsets } from '../stand-in/zones.js'
import cldrWindowsZones from 'cldr-core/supplemental/windowsZones.json' with { type: 'json' }

// Windows zone names as Windows and Exchange translate them: Unicode CLDR's windowsZones data
// (the `cldr-core` package), each name's primary ("001") row. Read from CLDR itself rather than
// from the Sync service's table, so that a wrong row there is caught here, not mirrored.
const PRIMARY_ROWS = cldrWindowsZones.supplemental.windowsZones.mapTimezones.map((row) => row.mapZone).filter((zone) => zone._territory === '001')
const WINDOWS_TO_IANA: ReadonlyMap<string, string> = new Map(PRIMARY_ROWS.map((zone) => [zone._other, zone._type.split(' ')[0] as string]))
// Outlook writes the Windows name of the first row naming a zone.
const IANA_TO_WINDOWS: ReadonlyMap<string, string> = new Map([...WINDOWS_TO_IANA].reverse().map(([windows, iana]) => [iana, windows]))

/** Every Windows zone name the stand-in knows, with its IANA zone. */
export const windowsZones = (): ReadonlyArray<[string, string]> => [...WINDOWS_TO_IANA]

/**
 * The IANA zone a Graph time zone name stands for: a Windows name, an IANA name, or Exchange's
 * `tzone://Microsoft/Utc`. Undefined for anything else (Graph: TimeZoneNotSupportedException).
 */
export function ianaZone (name: string): string | undefined {
  const windows = WINDOWS_TO_IANA.get(name)
  if (windows !== undefined) return windows
  if (name === 'tzone://Microsoft/Utc') return 'Etc/UTC'
  if (name === '' || name.startsWith('tzone://')) return undefined
  return IANAZone.isValidZone(name) ? name : undefined
}

/** The Windows name Outlook would use for an IANA zone (the zone itself when there is none). */
export function windowsName (iana: string): string {
  if (iana === 'UTC' || iana === 'Etc/UTC') return 'UTC'
  return IANA_TO_WINDOWS.get(iana) ?? iana
}

/** The zone's offset from UTC at the instant, in minutes. */
const offsetMinutes = cachedZoneOffsets(200_000)

/** A wall-clock time as its parts. Months are 1-based. */
export interface Wall {
  y: number
  m: number
  d: number
  h: number
  min: number
  s: number
}

/** The instant of a wall-clock time in the zone (in a repeated hour the later reading, as luxon). */
export function wallToMillis (zone: string, wall: Wall): number {
  const asUtc = Date.UTC(wall.y, wall.m - 1, wall.d, wall.h, wall.min, wall.s)
  const guess = asUtc - offsetMinutes(zone, asUtc) * 60_000
  return asUtc - offsetMinutes(zone, guess) * 60_000
}

/** The wall-clock reading of an instant in the zone. */
export function millisToWall (zone: string, ms: number): Wall {
  const local = new Date(ms + offsetMinutes(zone, ms) * 60_000)
  return {
    y: local.getUTCFullYear(),
    m: local.getUTCMonth() + 1,
    d: local.getUTCDate(),
    h: local.getUTCHours(),
    min: local.getUTCMinutes(),
    s: local.getUTCSeconds()
  }
}

const pad = (value: number, width = 2): string => String(value).padStart(width, '0')

/** `YYYY-MM-DD` of a wall-clock time. */
export const wallDate = (wall: Wall): string => `${pad(wall.y, 4)}-${pad(wall.m)}-${pad(wall.d)}`

/** Graph's dateTime: local time with seven fractional digits and no offset, `2024-05-01T09:00:00.0000000`. */
export const graphDateTime = (wall: Wall): string => `${wallDate(wall)}T${pad(wall.h)}:${pad(wall.min)}:${pad(wall.s)}.0000000`

const LOCAL_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,7})?)?$/

/** Reads a dateTime without offset, as Graph takes them beside a timeZone. */
export function parseLocalDateTime (text: string): Wall | undefined {
  const match = LOCAL_DATE_TIME.exec(text)
  if (match === null) return undefined
  const [y, m, d, h, min, s] = match.slice(1, 7).map((part) => Number(part ?? 0)) as [number, number, number, number, number, number]
  const check = new Date(Date.UTC(y, m - 1, d, h, min, s))
  if (check.getUTCMonth() !== m - 1 || check.getUTCDate() !== d || h > 23 || min > 59 || s > 59) return undefined
  return { y, m, d, h, min, s }
}

/** An ISO 8601 instant as query parameters carry them; without an offset it is read as UTC. */
export function parseInstant (text: string): number | undefined {
  const local = parseLocalDateTime(text)
  if (local !== undefined) return Date.UTC(local.y, local.m - 1, local.d, local.h, local.min, local.s)
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?([zZ]|[+-]\d{2}:\d{2})$/.test(text)) return undefined
  const ms = Date.parse(text)
  return Number.isNaN(ms) ? undefined : ms
}

/** A UTC instant as Graph writes DateTimeOffset values: `2024-05-01T09:00:00Z`. */
export const utcText = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')
