// Time zones as Graph names them. Outlook stores and answers Windows zone names ("W. Europe
// Standard Time"); Graph also accepts IANA names on input. Arithmetic happens in IANA zones, with
// one offset lookup per zone and quarter hour cached (asking Intl costs tens of microseconds, and a
// bulk seed or a calendar view expands thousands of times).
import { IANAZone } from 'luxon'
import { cachedZoneOffsets } from '../stand-in/zones.js'

// Windows zone -> IANA zone: the "001" (primary) rows of CLDR's windowsZones mapping, which is what
// Windows and Exchange use to translate.
const WINDOWS_TO_IANA: Record<string, string> = {
  'Dateline Standard Time': 'Etc/GMT+12',
  'UTC-11': 'Etc/GMT+11',
  'Aleutian Standard Time': 'America/Adak',
  'Hawaiian Standard Time': 'Pacific/Honolulu',
  'Marquesas Standard Time': 'Pacific/Marquesas',
  'Alaskan Standard Time': 'America/Anchorage',
  'UTC-09': 'Etc/GMT+9',
  'Pacific Standard Time (Mexico)': 'America/Tijuana',
  'UTC-08': 'Etc/GMT+8',
  'Pacific Standard Time': 'America/Los_Angeles',
  'US Mountain Standard Time': 'America/Phoenix',
  'Mountain Standard Time (Mexico)': 'America/Mazatlan',
  'Mountain Standard Time': 'America/Denver',
  'Yukon Standard Time': 'America/Whitehorse',
  'Central America Standard Time': 'America/Guatemala',
  'Central Standard Time': 'America/Chicago',
  'Easter Island Standard Time': 'Pacific/Easter',
  'Central Standard Time (Mexico)': 'America/Mexico_City',
  'Canada Central Standard Time': 'America/Regina',
  'SA Pacific Standard Time': 'America/Bogota',
  'Eastern Standard Time (Mexico)': 'America/Cancun',
  'Eastern Standard Time': 'America/New_York',
  'Haiti Standard Time': 'America/Port-au-Prince',
  'Cuba Standard Time': 'America/Havana',
  'US Eastern Standard Time': 'America/Indiana/Indianapolis',
  'Turks And Caicos Standard Time': 'America/Grand_Turk',
  'Paraguay Standard Time': 'America/Asuncion',
  'Atlantic Standard Time': 'America/Halifax',
  'Venezuela Standard Time': 'America/Caracas',
  'Central Brazilian Standard Time': 'America/Cuiaba',
  'SA Western Standard Time': 'America/La_Paz',
  'Pacific SA Standard Time': 'America/Santiago',
  'Newfoundland Standard Time': 'America/St_Johns',
  'Tocantins Standard Time': 'America/Araguaina',
  'E. South America Standard Time': 'America/Sao_Paulo',
  'SA Eastern Standard Time': 'America/Cayenne',
  'Argentina Standard Time': 'America/Argentina/Buenos_Aires',
  'Greenland Standard Time': 'America/Nuuk',
  'Montevideo Standard Time': 'America/Montevideo',
  'Magallanes Standard Time': 'America/Punta_Arenas',
  'Saint Pierre Standard Time': 'America/Miquelon',
  'Bahia Standard Time': 'America/Bahia',
  'UTC-02': 'Etc/GMT+2',
  'Mid-Atlantic Standard Time': 'Etc/GMT+2',
  'Azores Standard Time': 'Atlantic/Azores',
  'Cape Verde Standard Time': 'Atlantic/Cape_Verde',
  UTC: 'Etc/UTC',
  'GMT Standard Time': 'Europe/London',
  'Greenwich Standard Time': 'Atlantic/Reykjavik',
  'Sao Tome Standard Time': 'Africa/Sao_Tome',
  'Morocco Standard Time': 'Africa/Casablanca',
  'W. Europe Standard Time': 'Europe/Berlin',
  'Central Europe Standard Time': 'Europe/Budapest',
  'Romance Standard Time': 'Europe/Paris',
  'Central European Standard Time': 'Europe/Warsaw',
  'W. Central Africa Standard Time': 'Africa/Lagos',
  'Jordan Standard Time': 'Asia/Amman',
  'GTB Standard Time': 'Europe/Bucharest',
  'Middle East Standard Time': 'Asia/Beirut',
  'Egypt Standard Time': 'Africa/Cairo',
  'E. Europe Standard Time': 'Europe/Chisinau',
  'Syria Standard Time': 'Asia/Damascus',
  'West Bank Standard Time': 'Asia/Hebron',
  'South Africa Standard Time': 'Africa/Johannesburg',
  'FLE Standard Time': 'Europe/Kiev',
  'Israel Standard Time': 'Asia/Jerusalem',
  'South Sudan Standard Time': 'Africa/Juba',
  'Kaliningrad Standard Time': 'Europe/Kaliningrad',
  'Sudan Standard Time': 'Africa/Khartoum',
  'Libya Standard Time': 'Africa/Tripoli',
  'Namibia Standard Time': 'Africa/Windhoek',
  'Arabic Standard Time': 'Asia/Baghdad',
  'Turkey Standard Time': 'Europe/Istanbul',
  'Arab Standard Time': 'Asia/Riyadh',
  'Belarus Standard Time': 'Europe/Minsk',
  'Russian Standard Time': 'Europe/Moscow',
  'E. Africa Standard Time': 'Africa/Nairobi',
  'Volgograd Standard Time': 'Europe/Volgograd',
  'Iran Standard Time': 'Asia/Tehran',
  'Arabian Standard Time': 'Asia/Dubai',
  'Astrakhan Standard Time': 'Europe/Astrakhan',
  'Azerbaijan Standard Time': 'Asia/Baku',
  'Russia Time Zone 3': 'Europe/Samara',
  'Mauritius Standard Time': 'Indian/Mauritius',
  'Saratov Standard Time': 'Europe/Saratov',
  'Georgian Standard Time': 'Asia/Tbilisi',
  'Caucasus Standard Time': 'Asia/Yerevan',
  'Afghanistan Standard Time': 'Asia/Kabul',
  'West Asia Standard Time': 'Asia/Tashkent',
  'Ekaterinburg Standard Time': 'Asia/Yekaterinburg',
  'Pakistan Standard Time': 'Asia/Karachi',
  'Qyzylorda Standard Time': 'Asia/Qyzylorda',
  'India Standard Time': 'Asia/Kolkata',
  'Sri Lanka Standard Time': 'Asia/Colombo',
  'Nepal Standard Time': 'Asia/Kathmandu',
  'Central Asia Standard Time': 'Asia/Almaty',
  'Bangladesh Standard Time': 'Asia/Dhaka',
  'Omsk Standard Time': 'Asia/Omsk',
  'Myanmar Standard Time': 'Asia/Yangon',
  'SE Asia Standard Time': 'Asia/Bangkok',
  'Altai Standard Time': 'Asia/Barnaul',
  'W. Mongolia Standard Time': 'Asia/Hovd',
  'North Asia Standard Time': 'Asia/Krasnoyarsk',
  'N. Central Asia Standard Time': 'Asia/Novosibirsk',
  'Tomsk Standard Time': 'Asia/Tomsk',
  'China Standard Time': 'Asia/Shanghai',
  'North Asia East Standard Time': 'Asia/Irkutsk',
  'Singapore Standard Time': 'Asia/Singapore',
  'W. Australia Standard Time': 'Australia/Perth',
  'Taipei Standard Time': 'Asia/Taipei',
  'Ulaanbaatar Standard Time': 'Asia/Ulaanbaatar',
  'Aus Central W. Standard Time': 'Australia/Eucla',
  'Transbaikal Standard Time': 'Asia/Chita',
  'Tokyo Standard Time': 'Asia/Tokyo',
  'North Korea Standard Time': 'Asia/Pyongyang',
  'Korea Standard Time': 'Asia/Seoul',
  'Yakutsk Standard Time': 'Asia/Yakutsk',
  'Cen. Australia Standard Time': 'Australia/Adelaide',
  'AUS Central Standard Time': 'Australia/Darwin',
  'E. Australia Standard Time': 'Australia/Brisbane',
  'AUS Eastern Standard Time': 'Australia/Sydney',
  'West Pacific Standard Time': 'Pacific/Port_Moresby',
  'Tasmania Standard Time': 'Australia/Hobart',
  'Vladivostok Standard Time': 'Asia/Vladivostok',
  'Lord Howe Standard Time': 'Australia/Lord_Howe',
  'Bougainville Standard Time': 'Pacific/Bougainville',
  'Russia Time Zone 10': 'Asia/Srednekolymsk',
  'Magadan Standard Time': 'Asia/Magadan',
  'Norfolk Standard Time': 'Pacific/Norfolk',
  'Sakhalin Standard Time': 'Asia/Sakhalin',
  'Central Pacific Standard Time': 'Pacific/Guadalcanal',
  'Russia Time Zone 11': 'Asia/Kamchatka',
  'New Zealand Standard Time': 'Pacific/Auckland',
  'UTC+12': 'Etc/GMT-12',
  'Fiji Standard Time': 'Pacific/Fiji',
  'Chatham Islands Standard Time': 'Pacific/Chatham',
  'UTC+13': 'Etc/GMT-13',
  'Tonga Standard Time': 'Pacific/Tongatapu',
  'Samoa Standard Time': 'Pacific/Apia',
  'Line Islands Standard Time': 'Pacific/Kiritimati'
}

const IANA_TO_WINDOWS = new Map<string, string>()
for (const [windows, iana] of Object.entries(WINDOWS_TO_IANA)) if (!IANA_TO_WINDOWS.has(iana)) IANA_TO_WINDOWS.set(iana, windows)
IANA_TO_WINDOWS.set('UTC', 'UTC')

/** Every Windows zone name the stand-in knows, with its IANA zone. */
export const windowsZones = (): ReadonlyArray<[string, string]> => Object.entries(WINDOWS_TO_IANA)

/**
 * The IANA zone a Graph time zone name stands for: a Windows name, an IANA name, or Exchange's
 * `tzone://Microsoft/Utc`. Undefined for anything else (Graph: TimeZoneNotSupportedException).
 */
export function ianaZone (name: string): string | undefined {
  const windows = WINDOWS_TO_IANA[name]
  if (windows !== undefined) return windows
  if (name === 'tzone://Microsoft/Utc') return 'Etc/UTC'
  if (name === '' || name.startsWith('tzone://')) return undefined
  return IANAZone.isValidZone(name) ? name : undefined
}

/** The Windows name Outlook would use for an IANA zone (the zone itself when there is none). */
export function windowsName (iana: string): string {
  return IANA_TO_WINDOWS.get(iana) ?? iana
}

/** The zone's offset from UTC at the instant, in minutes. */
export const offsetMinutes = cachedZoneOffsets(200_000)

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
